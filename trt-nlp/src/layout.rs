//! What the classifier, the embedder and the scheduler need to know about a
//! model, whichever backend runs it: which inputs are token tensors (by their
//! usual names), their dtype, the batch and sequence ranges it accepts, and
//! its float outputs. A TensorRT engine's comes from its I/O and profiles
//! (`ModelLayout::from_io`, the `tensorrt` feature); an ONNX Runtime session's from its inputs and
//! the limits the caller chose ([`ModelLayout::new`]).
//!
//! Pure data in, pure data out: tested without a GPU on hand-made I/O lists and
//! on networks parsed from ONNX.

#[cfg(feature = "tensorrt")]
use trt::{IoMode, IoTensor};

use crate::{ElementType, Pooling};

use crate::{Error, InputRole, InputSpec, Result};

/// What an output computed inside the graph pools: the sentence embedding
/// of a `[batch, seq, dim]` output, as [`Pooling`] and normalisation say
/// (a backend adds it so a GPU hands back one row per text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PooledFrom {
    /// The hidden-state output it pools.
    pub(crate) hidden: String,
    /// How.
    pub(crate) pooling: Pooling,
    /// Whether its rows are L2-normalised.
    pub(crate) normalize: bool,
}

/// An output tensor of the engine.
///
/// ```
/// use trt_nlp::{ElementType, OutputSpec};
///
/// let logits = OutputSpec::new("logits", ElementType::F32, 2);
/// assert!(!logits.is_pooled());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutputSpec {
    /// Name.
    pub name: String,
    /// Element type (f32, f16 or bf16 for the helpers).
    pub dtype: ElementType,
    /// Rank (2 for logits `[batch, labels]`, 3 for hidden states `[batch, seq, dim]`).
    pub rank: usize,
    /// Set on an output the backend added to the model: the sentence
    /// embedding pooled inside the graph. Such an output stands in for
    /// pooling on the host ([`Selection`](crate::Selection)) and is never one
    /// of the model's own outputs (raw selections, logits).
    pub(crate) pooled: Option<PooledFrom>,
}

impl OutputSpec {
    /// One of the model's own outputs.
    pub fn new(name: impl Into<String>, dtype: ElementType, rank: usize) -> Self {
        OutputSpec { name: name.into(), dtype, rank, pooled: None }
    }

    /// Whether the backend added this output: the sentence embedding pooled
    /// inside the graph ([`ModelLayout::pooled_output`] finds it by pooling).
    pub fn is_pooled(&self) -> bool {
        self.pooled.is_some()
    }
}

/// The token inputs and outputs of a BERT-like engine, and the shapes every
/// optimization profile accepts (the intersection of their ranges, so any
/// execution context, whatever its profile, takes any batch the helpers make).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelLayout {
    /// Token inputs, in engine order.
    pub inputs: Vec<InputSpec>,
    /// Outputs, in engine order.
    pub outputs: Vec<OutputSpec>,
    /// Smallest batch every profile accepts.
    pub min_batch: usize,
    /// Largest batch every profile accepts.
    pub max_batch: usize,
    /// Smallest sequence length every profile accepts.
    pub min_seq: usize,
    /// Largest sequence length every profile accepts.
    pub max_seq: usize,
}

impl ModelLayout {
    /// Discover the layout from an engine's I/O. Every input must be a
    /// `[batch, seq]` token tensor named `input_ids`, `attention_mask` or
    /// `token_type_ids`, of dtype i32 or i64; outputs must be float tensors.
    #[cfg(feature = "tensorrt")]
    pub fn from_io(io: &[IoTensor]) -> Result<Self> {
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        let (mut min_batch, mut max_batch, mut min_seq, mut max_seq) = (0i64, i64::MAX, 0i64, i64::MAX);
        for t in io {
            match t.mode {
                IoMode::Input => {
                    let role = InputRole::from_name(&t.name).ok_or_else(|| {
                        Error::unsupported(format!(
                            "engine input '{}' is not a token tensor (expected input_ids, attention_mask or token_type_ids)",
                            t.name
                        ))
                    })?;
                    if t.shape.len() != 2 {
                        return Err(Error::unsupported(format!(
                            "engine input '{}' has shape {:?}; token tensors are [batch, sequence]",
                            t.name, t.shape
                        )));
                    }
                    if t.profiles.is_empty() {
                        return Err(Error::unsupported(format!("engine input '{}' has no optimization profile", t.name)));
                    }
                    for range in &t.profiles {
                        if range.min.len() != 2 || range.max.len() != 2 {
                            return Err(Error::unsupported(format!(
                                "engine input '{}' has a profile range of rank {} ({:?}..{:?})",
                                t.name,
                                range.min.len(),
                                range.min,
                                range.max
                            )));
                        }
                        min_batch = min_batch.max(range.min[0]);
                        max_batch = max_batch.min(range.max[0]);
                        min_seq = min_seq.max(range.min[1]);
                        max_seq = max_seq.min(range.max[1]);
                    }
                    let dtype = ElementType::try_from(t.dtype)
                        .map_err(|d| Error::unsupported(format!("engine input '{}' is {d}; token tensors are i32 or i64", t.name)))?;
                    inputs.push(InputSpec::new(t.name.clone(), role, dtype)?);
                }
                IoMode::Output => {
                    let dtype = ElementType::try_from(t.dtype)
                        .ok()
                        .filter(|d| d.is_float())
                        .ok_or_else(|| Error::unsupported(format!("engine output '{}' is {}, not a float tensor", t.name, t.dtype)))?;
                    outputs.push(OutputSpec { name: t.name.clone(), dtype, rank: t.shape.len(), pooled: None });
                }
            }
        }
        if !inputs.iter().any(|i| i.role == InputRole::InputIds) {
            return Err(Error::unsupported("the engine has no input_ids input"));
        }
        if max_batch < 1 || max_seq < 1 || min_batch > max_batch || min_seq > max_seq {
            return Err(Error::unsupported(format!(
                "the profiles have no batch and sequence length in common (batch {min_batch}..={max_batch}, sequence {min_seq}..={max_seq})"
            )));
        }
        Ok(ModelLayout {
            inputs,
            outputs,
            min_batch: min_batch.max(1) as usize,
            max_batch: max_batch as usize,
            min_seq: min_seq.max(1) as usize,
            max_seq: max_seq as usize,
        })
    }

    /// A layout from its parts (backends without profiles: the caller's limits),
    /// checked like [`from_io`](Self::from_io): an `input_ids` input, i32/i64
    /// token tensors, float outputs, non-empty ranges.
    pub fn new(
        inputs: Vec<InputSpec>,
        outputs: Vec<OutputSpec>,
        batch: std::ops::RangeInclusive<usize>,
        seq: std::ops::RangeInclusive<usize>,
    ) -> Result<Self> {
        for i in &inputs {
            i.check_dtype()?;
        }
        if let Some(o) = outputs.iter().find(|o| !o.dtype.is_float()) {
            return Err(Error::unsupported(format!("model output '{}' is {}, not a float tensor", o.name, o.dtype)));
        }
        if !inputs.iter().any(|i| i.role == InputRole::InputIds) {
            return Err(Error::unsupported("the model has no input_ids input"));
        }
        let (min_batch, max_batch, min_seq, max_seq) = (*batch.start(), *batch.end(), *seq.start(), *seq.end());
        if max_batch < 1 || max_seq < 1 || min_batch > max_batch || min_seq > max_seq {
            return Err(Error::unsupported(format!("empty shape range (batch {min_batch}..={max_batch}, sequence {min_seq}..={max_seq})")));
        }
        Ok(ModelLayout { inputs, outputs, min_batch: min_batch.max(1), max_batch, min_seq: min_seq.max(1), max_seq })
    }

    /// Fails unless a `[batch, seq_len]` batch lies within the ranges.
    pub fn check_batch(&self, batch: usize, seq_len: usize) -> Result<()> {
        if (self.min_batch..=self.max_batch).contains(&batch) && (self.min_seq..=self.max_seq).contains(&seq_len) {
            return Ok(());
        }
        Err(Error::BatchOutOfRange { batch, seq_len, batch_range: self.min_batch..=self.max_batch, seq_range: self.min_seq..=self.max_seq })
    }

    /// The output of rank `rank` (first such), e.g. 2 for logits, 3 for hidden states.
    pub fn output_of_rank(&self, rank: usize) -> Option<&OutputSpec> {
        self.model_outputs().find(|o| o.rank == rank)
    }

    /// The model's own outputs, without those a backend added ([`OutputSpec::is_pooled`]).
    pub fn model_outputs(&self) -> impl Iterator<Item = &OutputSpec> {
        self.outputs.iter().filter(|o| o.pooled.is_none())
    }

    /// The output that holds `hidden` pooled with `pooling` (normalised if
    /// `normalize`) inside the graph, where the backend added one.
    pub fn pooled_output(&self, hidden: &str, pooling: Pooling, normalize: bool) -> Option<&OutputSpec> {
        self.outputs
            .iter()
            .find(|o| o.pooled.as_ref().is_some_and(|p| p.hidden == hidden && p.pooling == pooling && p.normalize == normalize))
    }
}
