//! A batch's tokens between tokenizing and writing, and the row writer.
//!
//! Texts are tokenized in chunks (one rayon task each). A chunk keeps the ids
//! of its fast-path texts in one shared vector and the `tokenizers`
//! `Encoding` of the others, so no per-text vector is allocated by us. Once
//! the padded length is known, each [`Row`] writes itself into its slice of
//! every output tensor.
//!
//! For callers that tokenize at one moment and batch at another (the batching
//! scheduler: lengths must be known at submit, the batch is formed later), a
//! [`TokenRow`] is one text's tokens owned on their own, and a row of a later
//! batch borrows it.

use tokenizers::Encoding;

use crate::error::{Error, Result};
use crate::fast_path::Template;
use crate::spec::InputRole;

/// One text's tokens, owned: ids and type ids, special tokens included, no
/// padding. Made by [`TokenizerPipeline::tokenize`](crate::TokenizerPipeline::tokenize)
/// or from ready ids with [`TokenRow::new`]; packed into a batch with
/// [`TokenizerPipeline::pack`](crate::TokenizerPipeline::pack).
///
/// ```
/// let row = trt_nlp::TokenRow::new(vec![101, 7592, 102], None)?;
/// assert_eq!((row.len(), row.type_ids()), (3, &[0, 0, 0][..]));
/// # Ok::<(), trt_nlp::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    ids: Vec<u32>,
    type_ids: Vec<u32>,
    truncated: bool,
}

impl TokenRow {
    /// A row of ready ids; `type_ids` default to 0 and must otherwise be as
    /// long as `ids`. An empty row is refused (a model cannot attend to nothing).
    pub fn new(ids: Vec<u32>, type_ids: Option<Vec<u32>>) -> Result<Self> {
        if ids.is_empty() {
            return Err(Error::InvalidTokens("a token row needs at least one token".into()));
        }
        let type_ids = match type_ids {
            Some(t) if t.len() != ids.len() => {
                return Err(Error::Shape { what: "token row type ids vs ids", expected: vec![ids.len()], got: vec![t.len()] })
            }
            Some(t) => t,
            None => vec![0; ids.len()],
        };
        Ok(TokenRow { ids, type_ids, truncated: false })
    }

    /// Tokens in the row (its attention length).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the row holds no token (never, for rows made here).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Token ids.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Token type (segment) ids.
    pub fn type_ids(&self) -> &[u32] {
        &self.type_ids
    }

    /// Whether the text was cut to the pipeline's maximum length.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    pub(crate) fn set_truncated(&mut self, truncated: bool) {
        self.truncated = truncated;
    }
}

/// One text's tokens, as the chunk holds them.
// Not boxed: that would add an allocation per text on the slow path, and a
// chunk holds only a few dozen of these.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Tokens {
    /// Fast path: `ids[start..start + len]` of the chunk, special tokens
    /// excluded, not truncated.
    Fast { start: usize, len: usize },
    /// `tokenizers` path: the whole (already truncated) encoding, and
    /// whether truncation cut the text.
    Full(Encoding, bool),
}

/// The tokens of a contiguous run of texts.
#[derive(Default)]
pub(crate) struct Chunk {
    /// Fast-path ids of all the chunk's texts, back to back.
    pub ids: Vec<u32>,
    /// One entry per text, in order.
    pub items: Vec<Tokens>,
}

impl Chunk {
    /// Whether any text of the chunk went through `tokenizers`.
    pub fn has_encodings(&self) -> bool {
        self.items.iter().any(|t| matches!(t, Tokens::Full(..)))
    }
}

/// What a row of the output holds, borrowed from its chunk.
#[derive(Clone, Copy)]
pub(crate) enum Row<'a> {
    /// Template specials around `content` (already truncated).
    Fast { content: &'a [u32], template: &'a Template },
    /// An encoding from `tokenizers`.
    Full(&'a Encoding),
    /// Tokens owned by the caller, tokenized earlier.
    Owned(&'a TokenRow),
}

/// The values padding positions get.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pad {
    pub id: u32,
    pub type_id: u32,
}

/// An element of a token tensor. Ids are range-checked once per batch
/// (`EncodedBatch::check`), so the conversion is a plain cast.
pub(crate) trait TokenElem: Copy + Send + Sync {
    fn from_u32(v: u32) -> Self;
}

impl TokenElem for i32 {
    fn from_u32(v: u32) -> Self {
        v as i32
    }
}

impl TokenElem for i64 {
    fn from_u32(v: u32) -> Self {
        i64::from(v)
    }
}

impl Row<'_> {
    /// Tokens in the row, special tokens included.
    pub fn len(&self) -> usize {
        match self {
            Row::Fast { content, template } => content.len() + template.added(),
            Row::Full(e) => e.len(),
            Row::Owned(r) => r.len(),
        }
    }

    /// The row's tokens as an owned [`TokenRow`].
    pub fn to_token_row(self, truncated: bool) -> TokenRow {
        let (ids, type_ids) = match self {
            Row::Fast { content, template } => (template.ids(content).collect(), template.type_ids(content.len()).collect()),
            Row::Full(e) => (e.get_ids().to_vec(), e.get_type_ids().to_vec()),
            Row::Owned(r) => (r.ids.clone(), r.type_ids.clone()),
        };
        TokenRow { ids, type_ids, truncated }
    }

    /// Writes this row's `role` values into `dst` and pads the rest.
    /// `dst` must be at least `self.len()` long.
    pub fn write<T: TokenElem>(&self, role: InputRole, dst: &mut [T], pad: Pad) {
        let (head, tail) = dst.split_at_mut(self.len());
        let cast = T::from_u32;
        match (role, self) {
            // Our padding is the only padding, so every token of a row is real.
            (InputRole::AttentionMask, _) => head.fill(cast(1)),
            (InputRole::InputIds, Row::Full(e)) => copy(head, e.get_ids()),
            (InputRole::TokenTypeIds, Row::Full(e)) => copy(head, e.get_type_ids()),
            (InputRole::InputIds, Row::Owned(r)) => copy(head, &r.ids),
            (InputRole::TokenTypeIds, Row::Owned(r)) => copy(head, &r.type_ids),
            (InputRole::InputIds, Row::Fast { content, template: t }) => {
                head.iter_mut().zip(t.ids(content)).for_each(|(d, v)| *d = cast(v));
            }
            (InputRole::TokenTypeIds, Row::Fast { content, template: t }) => {
                head.iter_mut().zip(t.type_ids(content.len())).for_each(|(d, v)| *d = cast(v));
            }
        }
        let pad_value = match role {
            InputRole::InputIds => pad.id,
            InputRole::TokenTypeIds => pad.type_id,
            InputRole::AttentionMask => 0,
        };
        tail.fill(cast(pad_value));
    }
}

fn copy<T: TokenElem>(dst: &mut [T], src: &[u32]) {
    dst.iter_mut().zip(src).for_each(|(d, &s)| *d = T::from_u32(s));
}
