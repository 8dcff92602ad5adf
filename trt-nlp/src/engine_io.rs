//! What the classifier and embedder need to know about an engine, discovered
//! from its I/O: which inputs are token tensors (by their usual names), their
//! dtype, the largest batch and sequence the profile allows, and the outputs.
//!
//! Pure data in, pure data out: tested without a GPU on hand-made I/O lists and
//! on networks parsed from ONNX.

use trt::{DataType, IoMode, IoTensor};

use crate::{Error, InputRole, InputSpec, Result};

/// An output tensor of the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputSpec {
    /// Name.
    pub name: String,
    /// Element type (f32, f16 or bf16 for the helpers).
    pub dtype: DataType,
    /// Rank (2 for logits `[batch, labels]`, 3 for hidden states `[batch, seq, dim]`).
    pub rank: usize,
}

/// The token inputs and outputs of a BERT-like engine, and the profile's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineLayout {
    /// Token inputs, in engine order.
    pub inputs: Vec<InputSpec>,
    /// Outputs, in engine order.
    pub outputs: Vec<OutputSpec>,
    /// Largest batch the profile allows.
    pub max_batch: usize,
    /// Largest sequence length the profile allows.
    pub max_seq: usize,
}

impl EngineLayout {
    /// Discover the layout from an engine's I/O for optimization profile `profile`.
    /// Every input must be a `[batch, seq]` token tensor named `input_ids`,
    /// `attention_mask` or `token_type_ids`, of dtype i32 or i64.
    pub fn from_io(io: &[IoTensor], profile: usize) -> Result<Self> {
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        let (mut max_batch, mut max_seq) = (usize::MAX, usize::MAX);
        for t in io {
            match t.mode {
                IoMode::Input => {
                    let role = InputRole::from_name(&t.name).ok_or_else(|| {
                        Error::InvalidConfig(format!(
                            "engine input '{}' is not a token tensor (expected input_ids, attention_mask or token_type_ids)",
                            t.name
                        ))
                    })?;
                    if t.shape.len() != 2 {
                        return Err(Error::InvalidConfig(format!(
                            "engine input '{}' has shape {:?}; token tensors are [batch, sequence]",
                            t.name, t.shape
                        )));
                    }
                    let range = t.profiles.get(profile).ok_or_else(|| {
                        Error::InvalidConfig(format!("engine input '{}' has no optimization profile {profile}", t.name))
                    })?;
                    max_batch = max_batch.min(range.max[0].max(0) as usize);
                    max_seq = max_seq.min(range.max[1].max(0) as usize);
                    inputs.push(InputSpec::new(t.name.clone(), role, t.dtype)?);
                }
                IoMode::Output => {
                    if !matches!(t.dtype, DataType::Float | DataType::Half | DataType::BF16) {
                        return Err(Error::InvalidConfig(format!("engine output '{}' is {}, not a float tensor", t.name, t.dtype)));
                    }
                    outputs.push(OutputSpec { name: t.name.clone(), dtype: t.dtype, rank: t.shape.len() });
                }
            }
        }
        if !inputs.iter().any(|i| i.role == InputRole::InputIds) {
            return Err(Error::InvalidConfig("the engine has no input_ids input".into()));
        }
        if max_batch == 0 || max_seq == 0 {
            return Err(Error::InvalidConfig(format!("the profile allows batch {max_batch} x sequence {max_seq}")));
        }
        Ok(EngineLayout { inputs, outputs, max_batch, max_seq })
    }

    /// The output of rank `rank` (first such), e.g. 2 for logits, 3 for hidden states.
    pub fn output_of_rank(&self, rank: usize) -> Option<&OutputSpec> {
        self.outputs.iter().find(|o| o.rank == rank)
    }
}
