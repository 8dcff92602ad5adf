//! What an engine expects as token input: one [`InputSpec`] per tensor.
//!
//! A plain description (name, role, dtype) so that it can be written by hand
//! today and discovered from an engine's I/O tensors later.

use crate::ElementType;

use crate::error::{Error, Result};

/// What a token tensor holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InputRole {
    /// Token ids, padded with the tokenizer's pad id.
    InputIds,
    /// 1 for real tokens, 0 for padding.
    AttentionMask,
    /// Segment (type) ids, padded with the pad type id.
    TokenTypeIds,
}

impl InputRole {
    /// The role of a tensor called by its usual Hugging Face name
    /// (`input_ids`, `attention_mask`, `token_type_ids`), if it is one of them.
    ///
    /// ```
    /// use trt_nlp::InputRole;
    /// assert_eq!(InputRole::from_name("attention_mask"), Some(InputRole::AttentionMask));
    /// assert_eq!(InputRole::from_name("pixel_values"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "input_ids" => Some(Self::InputIds),
            "attention_mask" => Some(Self::AttentionMask),
            "token_type_ids" => Some(Self::TokenTypeIds),
            _ => None,
        }
    }

    /// The usual Hugging Face tensor name for this role.
    pub fn default_name(self) -> &'static str {
        match self {
            Self::InputIds => "input_ids",
            Self::AttentionMask => "attention_mask",
            Self::TokenTypeIds => "token_type_ids",
        }
    }
}

/// One token input tensor of an engine: its name, what it holds, its element type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InputSpec {
    /// The tensor's name in the engine.
    pub name: String,
    /// What the tensor holds.
    pub role: InputRole,
    /// Its element type: [`ElementType::I32`] or [`ElementType::I64`].
    pub dtype: ElementType,
}

impl InputSpec {
    /// A spec; fails unless `dtype` is i32 or i64.
    pub fn new(name: impl Into<String>, role: InputRole, dtype: ElementType) -> Result<Self> {
        let spec = Self { name: name.into(), role, dtype };
        spec.check_dtype()?;
        Ok(spec)
    }

    /// The three usual BERT inputs (`input_ids`, `attention_mask`,
    /// `token_type_ids`), all of `dtype`.
    ///
    /// ```
    /// let specs = trt_nlp::InputSpec::bert(trt_nlp::ElementType::I64)?;
    /// assert_eq!(specs[2].name, "token_type_ids");
    /// # Ok::<(), trt_nlp::Error>(())
    /// ```
    pub fn bert(dtype: ElementType) -> Result<[Self; 3]> {
        let spec = |role: InputRole| Self::new(role.default_name(), role, dtype);
        Ok([spec(InputRole::InputIds)?, spec(InputRole::AttentionMask)?, spec(InputRole::TokenTypeIds)?])
    }

    /// Fails with [`Error::UnsupportedDtype`] unless the dtype is i32 or i64
    /// (the fields are public, so this is checked again when a buffer is bound).
    pub(crate) fn check_dtype(&self) -> Result<()> {
        match self.dtype {
            ElementType::I32 | ElementType::I64 => Ok(()),
            dtype => Err(Error::UnsupportedDtype { tensor: self.name.clone(), dtype }),
        }
    }
}
