//! Caller-provided output buffers and the row writer that fills them.
//!
//! The pipeline writes token ids straight into the caller's memory (later:
//! pinned host buffers an engine reads from), one `[batch, seq_len]` row-major
//! tensor per [`InputSpec`]. Each row is written in place from the tokens
//! (see `rows`): no padded intermediate vector is ever built.

use crate::ElementType;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::rows::{Pad, Row, TokenElem};
use crate::spec::{InputRole, InputSpec};

/// A mutable slice of token elements, i32 or i64.
#[non_exhaustive]
pub enum TokenBuffer<'a> {
    /// An i32 tensor.
    I32(&'a mut [i32]),
    /// An i64 tensor.
    I64(&'a mut [i64]),
}

// By hand: the derived Debug would print every element.
impl std::fmt::Debug for TokenBuffer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenBuffer({}, len {})", self.dtype(), self.len())
    }
}

impl TokenBuffer<'_> {
    /// The element type.
    pub fn dtype(&self) -> ElementType {
        match self {
            Self::I32(_) => ElementType::I32,
            Self::I64(_) => ElementType::I64,
        }
    }

    /// Number of elements the buffer holds.
    pub fn len(&self) -> usize {
        match self {
            Self::I32(b) => b.len(),
            Self::I64(b) => b.len(),
        }
    }

    /// Whether the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> From<&'a mut [i32]> for TokenBuffer<'a> {
    fn from(b: &'a mut [i32]) -> Self {
        Self::I32(b)
    }
}

impl<'a> From<&'a mut [i64]> for TokenBuffer<'a> {
    fn from(b: &'a mut [i64]) -> Self {
        Self::I64(b)
    }
}

impl<'a> From<&'a mut Vec<i32>> for TokenBuffer<'a> {
    fn from(b: &'a mut Vec<i32>) -> Self {
        Self::I32(b)
    }
}

impl<'a> From<&'a mut Vec<i64>> for TokenBuffer<'a> {
    fn from(b: &'a mut Vec<i64>) -> Self {
        Self::I64(b)
    }
}

/// The tensors one [`encode_into`](crate::TokenizerPipeline::encode_into) call
/// fills: each an [`InputSpec`] bound to a caller-provided buffer.
///
/// Only the tensors bound here are written, so an engine without
/// `token_type_ids` simply does not bind one. Buffers may be larger than
/// needed (e.g. sized for `batch * max_len`); only the first
/// `batch * seq_len` elements are written.
///
/// ```
/// use trt_nlp::ElementType;
/// use trt_nlp::{EncodedBatch, InputRole, InputSpec};
///
/// let (mut ids, mut mask) = (vec![0i64; 4 * 128], vec![0i64; 4 * 128]);
/// let mut batch = EncodedBatch::new();
/// batch
///     .bind(InputSpec::new("input_ids", InputRole::InputIds, ElementType::I64)?, &mut ids)?
///     .bind(InputSpec::new("attention_mask", InputRole::AttentionMask, ElementType::I64)?, &mut mask)?;
/// assert_eq!(batch.len(), 2);
/// # Ok::<(), trt_nlp::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct EncodedBatch<'a> {
    tensors: Vec<(InputSpec, TokenBuffer<'a>)>,
}

impl<'a> EncodedBatch<'a> {
    /// An empty set of tensors.
    pub fn new() -> Self {
        Self::default()
    }

    /// Binds `buffer` as the tensor `spec` describes.
    ///
    /// Fails when the buffer's element type differs from `spec.dtype`, when
    /// `spec.dtype` is not i32/i64, or when the name is already bound.
    pub fn bind(&mut self, spec: InputSpec, buffer: impl Into<TokenBuffer<'a>>) -> Result<&mut Self> {
        let buffer = buffer.into();
        spec.check_dtype()?;
        if buffer.dtype() != spec.dtype {
            return Err(Error::DtypeMismatch { tensor: spec.name, declared: spec.dtype, buffer: buffer.dtype() });
        }
        if self.tensors.iter().any(|(s, _)| s.name == spec.name) {
            return Err(Error::DuplicateTensor(spec.name));
        }
        self.tensors.push((spec, buffer));
        Ok(self)
    }

    /// [`bind`](Self::bind), by value, for chaining.
    pub fn with(mut self, spec: InputSpec, buffer: impl Into<TokenBuffer<'a>>) -> Result<Self> {
        self.bind(spec, buffer)?;
        Ok(self)
    }

    /// Number of tensors bound.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether no tensor is bound.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// The specs of the bound tensors, in binding order.
    pub fn specs(&self) -> impl Iterator<Item = &InputSpec> {
        self.tensors.iter().map(|(s, _)| s)
    }

    /// Checks, before anything is written, that every buffer holds
    /// `batch * seq_len` elements and that ids fit i32 tensors.
    pub(crate) fn check(&self, batch: usize, seq_len: usize, max_id: u32) -> Result<()> {
        let needed = batch.saturating_mul(seq_len);
        for (spec, buffer) in &self.tensors {
            if buffer.len() < needed {
                return Err(Error::BufferTooSmall { tensor: spec.name.clone(), needed, len: buffer.len(), batch, seq_len });
            }
            let ids_overflow = i32::try_from(max_id).is_err();
            if ids_overflow && spec.role == InputRole::InputIds && matches!(buffer, TokenBuffer::I32(_)) {
                return Err(Error::IdOutOfRange { tensor: spec.name.clone(), id: max_id });
            }
        }
        Ok(())
    }

    /// Writes every bound tensor. With `tasks > 1`, rows are cut into that
    /// many blocks and each rayon task (on the current pool) writes its block
    /// of every tensor: one parallel pass, whatever the number of tensors.
    ///
    /// `check` must have passed and every row must be at most `seq_len`
    /// long (the pipeline guarantees both), so no slice index can fail.
    pub(crate) fn write(&mut self, rows: &[Row<'_>], seq_len: usize, pad: Pad, tasks: usize) {
        if rows.is_empty() || seq_len == 0 {
            return; // nothing to write; also keeps chunks_mut(0) from being called
        }
        let block = rows.len().div_ceil(tasks.max(1));
        let used = rows.len() * seq_len;
        // blocks[i]: block i of every tensor (disjoint sub-slices of the buffers).
        let mut blocks: Vec<Vec<(InputRole, BlockMut<'_>)>> =
            (0..rows.len().div_ceil(block)).map(|_| Vec::with_capacity(self.tensors.len())).collect();
        for (spec, buffer) in &mut self.tensors {
            match buffer {
                TokenBuffer::I32(b) => {
                    for (i, part) in b[..used].chunks_mut(block * seq_len).enumerate() {
                        blocks[i].push((spec.role, BlockMut::I32(part)));
                    }
                }
                TokenBuffer::I64(b) => {
                    for (i, part) in b[..used].chunks_mut(block * seq_len).enumerate() {
                        blocks[i].push((spec.role, BlockMut::I64(part)));
                    }
                }
            }
        }
        let write_block = |(tensors, rows): (Vec<(InputRole, BlockMut<'_>)>, &[Row<'_>])| {
            for (role, part) in tensors {
                match part {
                    BlockMut::I32(b) => write_rows(b, rows, seq_len, role, pad),
                    BlockMut::I64(b) => write_rows(b, rows, seq_len, role, pad),
                }
            }
        };
        if blocks.len() == 1 {
            blocks.into_iter().zip(rows.chunks(block)).for_each(write_block);
        } else {
            blocks.into_par_iter().zip(rows.par_chunks(block)).for_each(write_block);
        }
    }
}

/// Part of one output tensor.
enum BlockMut<'a> {
    I32(&'a mut [i32]),
    I64(&'a mut [i64]),
}

/// Each row into its own `seq_len` slice of `out`.
fn write_rows<T: TokenElem>(out: &mut [T], rows: &[Row<'_>], seq_len: usize, role: InputRole, pad: Pad) {
    out.chunks_mut(seq_len).zip(rows).for_each(|(dst, row)| row.write(role, dst, pad));
}
