//! A text model: texts in, the engine's outputs (and a derived, pooled
//! `embedding`) out, one row per text. The server tokenizes; the backend
//! (TensorRT or ONNX Runtime, behind trt-nlp's [`Backend`]) runs the tokens.
//!
//! What the config declares decides what is exposed: every `output` entry
//! names an engine output, except `embedding`, which is computed from the
//! engine's `[batch, seq, hidden]` output with the model folder's pooling
//! (mean by default) and L2-normalised where the folder says so.
//!
//! Rank-3 outputs come back padded to the longest text of the batch that ran
//! them; pooled and rank-2 outputs do not depend on the batch.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ndarray::{Array2, ArrayD, ArrayViewD, Axis, Ix3};
use trt_nlp::batching::RowResult;
use trt_nlp::{l2_normalize, Backend, BatchLayout, Labels, OutputView, Outputs, Pooling, TokenRow, TokenizerPipeline};

use crate::config::ModelConfig;
use crate::error::{ServeError, ServeResult};
use crate::kserve::DataType;

/// The name of the derived, pooled output.
pub const EMBEDDING: &str = "embedding";

/// Where an exposed output comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// The engine output of that name.
    Engine(String),
    /// Pooled from the engine output of that name (`[batch, seq, hidden]`).
    Pooled(String),
}

/// An output the model exposes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExposedOutput {
    /// Its name in the protocol.
    pub name: String,
    source: Source,
}

/// One FP32 output of a batch (or of a request's rows of it).
#[derive(Debug, Clone, PartialEq)]
pub struct RowsTensor {
    /// Output name.
    pub name: String,
    /// Shape, the batch first.
    pub shape: Vec<usize>,
    /// Row-major values.
    pub values: Vec<f32>,
}

/// The outputs of one batch: per exposed output, its full shape and values.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchOutputs {
    /// In config order.
    pub tensors: Vec<RowsTensor>,
    /// Time spent tokenizing.
    pub tokenize: Duration,
    /// Time the backend spent on the batch (tokenizing excluded).
    pub compute: Duration,
}

impl BatchOutputs {
    /// Rows `range` of every tensor (a request's share of a batch).
    pub fn rows(&self, range: std::ops::Range<usize>) -> Vec<RowsTensor> {
        self.tensors
            .iter()
            .map(|t| {
                let per_row: usize = t.shape[1..].iter().product();
                let mut shape = t.shape.clone();
                shape[0] = range.len();
                RowsTensor { name: t.name.clone(), shape, values: t.values[range.start * per_row..range.end * per_row].to_vec() }
            })
            .collect()
    }
}

/// A text model ready to run.
pub struct TextModel {
    backend: Arc<dyn Backend>,
    pipeline: Arc<TokenizerPipeline>,
    labels: Labels,
    pooling: Pooling,
    normalize: bool,
    outputs: Vec<ExposedOutput>,
}

impl std::fmt::Debug for TextModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextModel").field("backend", &self.backend.name()).field("outputs", &self.outputs).finish()
    }
}

/// The text input's name in a config: the one `TYPE_STRING` input with `dims: [1]`.
pub fn text_input(config: &ModelConfig) -> ServeResult<&str> {
    match config.inputs.as_slice() {
        [t] if t.data_type == DataType::Bytes && t.dims == [1] => Ok(&t.name),
        _ => Err(ServeError::invalid(format!(
            "model '{}': trt serve serves text models, whose config declares one input \
             {{ name: \"text\" data_type: TYPE_STRING dims: [ 1 ] }}",
            config.name
        ))),
    }
}

impl TextModel {
    /// A model over `backend`, exposing the outputs `config` declares.
    pub fn new(
        config: &ModelConfig,
        backend: Arc<dyn Backend>,
        pipeline: TokenizerPipeline,
        labels: Labels,
        pooling: Pooling,
        normalize: bool,
    ) -> ServeResult<Self> {
        text_input(config)?;
        let layout = backend.layout();
        let mut outputs = Vec::new();
        for o in &config.outputs {
            if o.data_type != DataType::Fp32 {
                return Err(ServeError::invalid(format!(
                    "output '{}': data_type {} is not served (outputs are TYPE_FP32)",
                    o.name,
                    o.data_type.config_name()
                )));
            }
            let source = if o.name == EMBEDDING && !layout.outputs.iter().any(|e| e.name == EMBEDDING) {
                let hidden = layout.output_of_rank(3).ok_or_else(|| {
                    ServeError::invalid(format!("output '{EMBEDDING}' needs a [batch, seq, hidden] engine output; the model has none"))
                })?;
                Source::Pooled(hidden.name.clone())
            } else {
                let spec = layout.outputs.iter().find(|e| e.name == o.name).ok_or_else(|| {
                    let names: Vec<_> = layout.outputs.iter().map(|e| e.name.as_str()).collect();
                    ServeError::invalid(format!("output '{}' is not an output of the model (it has {names:?}, and '{EMBEDDING}')", o.name))
                })?;
                if spec.rank != o.dims.len() + 1 {
                    return Err(ServeError::invalid(format!(
                        "output '{}': dims {:?} do not match the engine's rank {} (batch included)",
                        o.name, o.dims, spec.rank
                    )));
                }
                Source::Engine(o.name.clone())
            };
            outputs.push(ExposedOutput { name: o.name.clone(), source });
        }
        Ok(TextModel { backend, pipeline: Arc::new(pipeline), labels, pooling, normalize, outputs })
    }

    /// The backend (for the batching scheduler).
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The tokenizer pipeline (for the batching scheduler).
    pub fn pipeline(&self) -> &Arc<TokenizerPipeline> {
        &self.pipeline
    }

    /// The backend's name (`onnxruntime`, `tensorrt`).
    pub fn backend_name(&self) -> &str {
        self.backend.name()
    }

    /// Largest batch the backend runs at once.
    pub fn max_batch(&self) -> usize {
        self.backend.layout().max_batch.max(1)
    }

    /// Longest sequence the backend takes (longer texts are truncated).
    pub fn max_seq(&self) -> usize {
        self.backend.layout().max_seq.max(1)
    }

    /// Batches that can run at once.
    pub fn instances(&self) -> usize {
        self.backend.instances().max(1)
    }

    /// Class names (the classification extension's labels).
    pub fn labels(&self) -> &Labels {
        &self.labels
    }

    /// The outputs exposed, in config order.
    pub fn outputs(&self) -> &[ExposedOutput] {
        &self.outputs
    }

    /// Runs `texts` (at most [`max_batch`](Self::max_batch); fewer than the
    /// backend's minimum are padded with empty texts, whose rows are dropped).
    pub fn run<S: AsRef<str> + Sync>(&self, texts: &[S]) -> ServeResult<BatchOutputs> {
        let layout = self.backend.layout();
        self.check_batch(texts.len())?;
        let mut padded: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
        if padded.len() < layout.min_batch {
            padded.resize(layout.min_batch, "");
        }
        let pipeline = &self.pipeline;
        self.run_encoded(texts.len(), &mut |batch| pipeline.encode_into(&padded, batch))
    }

    /// Runs rows tokenized earlier (text pairs, ready token ids, texts cut
    /// from the left), as [`run`](Self::run) runs texts.
    pub fn run_rows(&self, rows: &[TokenRow]) -> ServeResult<BatchOutputs> {
        let layout = self.backend.layout();
        self.check_batch(rows.len())?;
        let filler = match rows.len() < layout.min_batch {
            true => self.pipeline.tokenize(&[""])?.pop(),
            false => None,
        };
        let missing = layout.min_batch.saturating_sub(rows.len());
        let padded: Vec<&TokenRow> = rows.iter().chain(filler.iter().cycle().take(missing)).collect();
        let pipeline = &self.pipeline;
        self.run_encoded(rows.len(), &mut |batch| pipeline.pack(padded.iter().copied(), batch))
    }

    fn check_batch(&self, n: usize) -> ServeResult<()> {
        if n == 0 || n > self.max_batch() {
            return Err(ServeError::Internal(format!("batch of {n} rows outside 1..={}", self.max_batch())));
        }
        Ok(())
    }

    /// One backend run whose tokens `encode` writes; `real` rows are kept.
    fn run_encoded(
        &self,
        real: usize,
        encode: &mut dyn FnMut(&mut trt_nlp::EncodedBatch<'_>) -> trt_nlp::Result<BatchLayout>,
    ) -> ServeResult<BatchOutputs> {
        let mut tokenize = Duration::ZERO;
        let mut result = Vec::with_capacity(self.outputs.len());
        let started = Instant::now();
        self.backend.run(
            &mut |batch| {
                let t = Instant::now();
                let l = encode(batch);
                tokenize = t.elapsed();
                l
            },
            &mut |l: &BatchLayout, outs: &Outputs<'_>| {
                result = self.collect(real, l, outs)?;
                Ok(())
            },
        )?;
        let compute = started.elapsed().saturating_sub(tokenize);
        Ok(BatchOutputs { tensors: result, tokenize, compute })
    }

    fn collect(&self, real: usize, layout: &BatchLayout, outs: &Outputs<'_>) -> trt_nlp::Result<Vec<RowsTensor>> {
        let mut tensors = Vec::with_capacity(self.outputs.len());
        for o in &self.outputs {
            let (shape, values) = match &o.source {
                Source::Engine(name) => {
                    // The request's rows only, converted to f32 in one copy.
                    let view = outs.get(name)?;
                    let mut shape = view.shape().to_vec();
                    shape[0] = real;
                    let values = view.leading_rows_f32(real);
                    (shape, values)
                }
                Source::Pooled(name) => {
                    let mask = layout.attention_mask();
                    let mut pooled = match outs.get(name)? {
                        OutputView::F32(v) => self.pool(v.view(), mask.view())?,
                        OutputView::F16(v) => self.pool(v.view(), mask.view())?,
                        OutputView::BF16(v) => self.pool(v.view(), mask.view())?,
                        _ => {
                            return Err(trt_nlp::Error::InvalidConfig(format!("output '{name}' has an element type pooling does not read")))
                        }
                    };
                    if self.normalize {
                        l2_normalize(pooled.view_mut());
                    }
                    let rows = pooled.slice(ndarray::s![..real, ..]);
                    (rows.shape().to_vec(), rows.iter().copied().collect())
                }
            };
            tensors.push(RowsTensor { name: o.name.clone(), shape, values });
        }
        Ok(tensors)
    }

    /// A request's exposed outputs from its rows as the batching scheduler
    /// returns them (batch axis removed, sequence axis cut to each row's
    /// length): rows stacked, rank-3 outputs zero-padded to the request's
    /// longest row, `embedding` pooled per row.
    pub fn assemble(&self, rows: &[RowResult]) -> ServeResult<Vec<RowsTensor>> {
        let missing = |name: &str| ServeError::Internal(format!("the scheduler returned no output '{name}'"));
        let mut tensors = Vec::with_capacity(self.outputs.len());
        for o in &self.outputs {
            let per_row: Vec<ArrayD<f32>> = match &o.source {
                Source::Engine(name) => {
                    rows.iter().map(|r| r.output(name).cloned().ok_or_else(|| missing(name))).collect::<ServeResult<_>>()?
                }
                Source::Pooled(name) => rows
                    .iter()
                    .map(|r| {
                        let hidden = r.output(name).ok_or_else(|| missing(name))?;
                        let hidden = hidden.view().insert_axis(Axis(0));
                        let mask = Array2::<i32>::ones((1, hidden.shape()[1]));
                        let mut pooled = self.pool(hidden, mask.view())?;
                        if self.normalize {
                            l2_normalize(pooled.view_mut());
                        }
                        Ok(pooled.index_axis_move(Axis(0), 0).into_dyn())
                    })
                    .collect::<ServeResult<_>>()?,
            };
            tensors.push(stack_padded(&o.name, &per_row)?);
        }
        Ok(tensors)
    }

    fn pool<T: trt_nlp::FloatElement>(
        &self,
        hidden: ArrayViewD<'_, T>,
        mask: ndarray::ArrayView2<'_, i32>,
    ) -> trt_nlp::Result<Array2<f32>> {
        let hidden = hidden.into_dimensionality::<Ix3>().map_err(|e| trt_nlp::Error::InvalidConfig(format!("hidden states: {e}")))?;
        self.pooling.pool(hidden, mask)
    }
}

/// Rows of one output stacked into `[rows, ...]`; a first axis that differs
/// between rows (the sequence) is zero-padded to the longest.
fn stack_padded(name: &str, rows: &[ArrayD<f32>]) -> ServeResult<RowsTensor> {
    let first = rows.first().ok_or_else(|| ServeError::Internal("a request with no rows".into()))?;
    let mut inner = first.shape().to_vec();
    for r in rows {
        if r.ndim() != inner.len() || r.shape().get(1..) != inner.get(1..) {
            return Err(ServeError::Internal(format!("output '{name}': rows of shapes {:?} and {:?}", first.shape(), r.shape())));
        }
        if let Some(d) = inner.first_mut() {
            *d = (*d).max(r.shape()[0]);
        }
    }
    let per_row: usize = inner.iter().product();
    let mut values = vec![0f32; rows.len() * per_row];
    for (r, dst) in rows.iter().zip(values.chunks_exact_mut(per_row.max(1))) {
        // Row-major: a shorter first axis fills the start of the row's slot.
        for (d, v) in dst.iter_mut().zip(r.iter()) {
            *d = *v;
        }
    }
    let mut shape = vec![rows.len()];
    shape.extend(inner);
    Ok(RowsTensor { name: name.to_string(), shape, values })
}
