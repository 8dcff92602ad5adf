//! ONNX Runtime behind the [`Backend`] trait: a pool of sessions over one
//! ONNX model. On the CPU each session has host buffers for the token
//! tensors that the tokenizer writes into and the session reads in place (no
//! copy between them); runs anywhere: no GPU, no TensorRT. On CUDA each
//! session has its own stream, pinned and device buffers and an IO binding
//! (`ort_cuda`): one upload, one run, one download of the real rows per
//! batch, and CUDA graphs per shape bucket where asked for
//! ([`OrtBackendOptions::cuda_graph_max_batch`]).
//!
//! ONNX models carry no optimization profiles, so the batch and sequence
//! ranges come from the model's fixed dimensions where it has them, else
//! from [`OrtBackendOptions`] (`max_batch`, `max_seq`; a model folder passes
//! `max_position_embeddings` from its `config.json`).

use std::path::Path;

use trt_cuda::{HostWait, Pool};
use trt_onnx::runtime::{ElementType as OrtType, InputTensor, OutputRef, Session, SessionOptions, TensorInfo};

use crate::backend::ort_cuda::CudaStaging;
use crate::backend::{Backend, BackendOptions, Capabilities, Fill, OutputView, Outputs, Read};
use crate::layout::{OutputSpec, PooledFrom};
use crate::{ElementType, EncodedBatch, Error, InputRole, InputSpec, ModelLayout, Pooling, Result};

pub use trt_onnx::runtime::{cuda_device_count, cuda_usable, Optimization, Provider};
// Hidden: what `OrtBackend::bindings` reports, for the workspace's GPU test
// (tests/nlp_cuda.rs) that checks IO bindings are made once per shape; no
// user needs to name it.
#[doc(hidden)]
pub use trt_onnx::runtime::BoundTensor;

/// How the ONNX Runtime backend runs, beyond what every backend takes
/// ([`BackendOptions`]: its `instances` are the sessions, its `max_batch` and
/// `max_seq` the limits where the model does not fix them).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OrtBackendOptions {
    /// Intra-op threads per session (0: ONNX Runtime's default, one per core).
    pub intra_threads: usize,
    /// Execution provider. Default: CUDA where the library has it, else CPU.
    pub provider: Provider,
    /// Graph optimization level. Default: all.
    pub optimization: Optimization,
    /// On CUDA: batches of up to this many rows run as CUDA graphs, one per
    /// (batch, sequence) bucket (the batch rounded up to a power of two); 0 (default): none.
    /// The pipeline then pads sequences to multiples of 8 (fewer graphs).
    pub cuda_graph_max_batch: usize,
    /// On CUDA: batches above the CUDA-graph limit also run at their batch
    /// bucket (the next power of two, at most the largest batch; padding rows
    /// are zeros and dropped), and sequences are padded to multiples of 8, so
    /// a session sees a few dozen shapes instead of every (rows, length)
    /// pair. For models whose kernels pay once per new shape: ONNX Runtime's
    /// fused attention took about 45 ms on the first run of each shape on an
    /// H200 against about 1.3 ms later (docs/measurements). Costs the padded
    /// rows' compute. Default off.
    pub cuda_row_buckets: bool,
    /// On CUDA: the most device memory each session's arena may hold
    /// (ONNX Runtime's `gpu_mem_limit`); a batch that needs more fails alone
    /// with a typed error. `None` (default): no limit.
    pub cuda_memory_limit: Option<usize>,
    /// Adds the sentence embedding to the model's outputs, pooled (and
    /// normalised) inside the graph ([`trt_onnx::graph::pooling`]), on CUDA
    /// (and on the CPU where [`GraphPooling::on_cpu`]): a batch then hands
    /// back one row per text instead of every token's hidden states, and the
    /// host pools nothing. A model it cannot be added to (no hidden-state
    /// output, opset below 13, past 2 GiB inline) runs as it is, and the
    /// reason is logged. `None` (default): not added. A model folder sets it
    /// from its pooling configuration ([`ModelFolder::backend`](crate::ModelFolder::backend)).
    pub graph_pooling: Option<GraphPooling>,
    /// On CUDA: how each session's worker waits for its batch's outputs.
    /// [`HostWait::Spin`] (default, as CUDA and ONNX Runtime's Python
    /// binding do) answers soonest and keeps a core busy while it waits;
    /// [`HostWait::Block`] sleeps, leaving the core to the tokenizers and
    /// connections of a loaded server.
    pub cuda_host_wait: HostWait,
}

/// How [`OrtBackendOptions::graph_pooling`] pools.
///
/// ```
/// use trt_nlp::backend::onnxruntime::GraphPooling;
/// use trt_nlp::Pooling;
///
/// let pooled = GraphPooling::new(Pooling::Mean, true).with_on_cpu(true);
/// assert!(pooled.normalize && pooled.on_cpu);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct GraphPooling {
    /// Mean or first token (what the model folder's pooling says).
    pub pooling: Pooling,
    /// Whether rows are L2-normalised.
    pub normalize: bool,
    /// Also on the CPU provider (on a GPU it saves the transfer of every
    /// token's states; on the CPU only host pooling, so off by default).
    pub on_cpu: bool,
}

impl GraphPooling {
    /// `pooling`, normalised if `normalize`, on a GPU only.
    pub const fn new(pooling: Pooling, normalize: bool) -> Self {
        GraphPooling { pooling, normalize, on_cpu: false }
    }

    crate::options::setters! {
        on_cpu: bool => with_on_cpu;
    }
}

/// The name of the output [`OrtBackendOptions::graph_pooling`] adds.
pub const GRAPH_POOLED_OUTPUT: &str = "trt_nlp_sentence_embedding";

impl Default for OrtBackendOptions {
    fn default() -> Self {
        OrtBackendOptions {
            intra_threads: 0,
            provider: Provider::Auto,
            optimization: Optimization::All,
            cuda_graph_max_batch: 0,
            cuda_row_buckets: false,
            cuda_memory_limit: None,
            graph_pooling: None,
            cuda_host_wait: HostWait::Spin,
        }
    }
}

impl OrtBackendOptions {
    crate::options::setters! {
        intra_threads: usize => with_intra_threads;
        provider: Provider => with_provider;
        optimization: Optimization => with_optimization;
        cuda_graph_max_batch: usize => with_cuda_graph_max_batch;
        cuda_row_buckets: bool => with_cuda_row_buckets;
        cuda_memory_limit: Option<usize> => with_cuda_memory_limit;
        graph_pooling: Option<GraphPooling> => with_graph_pooling;
        cuda_host_wait: HostWait => with_cuda_host_wait;
    }

    /// The settings of each session: these threads, provider, optimization
    /// level and CUDA memory limit, one inter-op thread (the pool runs
    /// batches side by side instead).
    pub fn session_options(&self) -> SessionOptions {
        let mut options = SessionOptions {
            intra_threads: self.intra_threads,
            inter_threads: 1,
            optimization: self.optimization,
            provider: self.provider,
            ..SessionOptions::default()
        };
        options.cuda.memory_limit = self.cuda_memory_limit;
        options
    }
}

enum HostTokens {
    I32(Vec<i32>),
    I64(Vec<i64>),
}

struct HostSlot {
    session: Session,
    inputs: Vec<(InputSpec, HostTokens)>,
}

enum Slot {
    Host(HostSlot),
    Cuda(Box<CudaStaging>),
}

/// An ONNX model on ONNX Runtime as a [`Backend`].
pub struct OrtBackend {
    pool: Pool<Slot>,
    layout: ModelLayout,
    outputs: Vec<String>,
    provider: String,
    cuda_device: Option<u32>,
    /// Batches run at bucketed shapes (CUDA graphs or row buckets): sequences
    /// are padded to multiples of 8.
    shape_buckets: bool,
    /// Batches of up to this many rows run as CUDA graphs (0: none): what
    /// was asked for, or 0 where ONNX Runtime could not capture the model.
    graph_max_batch: usize,
}

impl std::fmt::Debug for OrtBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrtBackend")
            .field("layout", &self.layout)
            .field("sessions", &self.pool.size())
            .field("provider", &self.provider)
            .finish()
    }
}

impl OrtBackend {
    /// `options.instances` sessions over the ONNX model at `path`, run as
    /// `options.onnxruntime` says.
    pub fn new(path: impl AsRef<Path>, options: &BackendOptions) -> Result<Self> {
        let path = path.as_ref();
        let (limits, options) = (options, &options.onnxruntime);
        let session_options = options.session_options();
        let mut first = Session::from_file(path, &session_options)?;
        let mut layout = layout_of(&first, limits, path)?;
        let provider = first.provider().to_owned();
        let cuda_device = first.cuda_device();
        // The model the sessions run: the file, or it with the pooled output added.
        let mut pooled_bytes: Option<Vec<u8>> = None;
        if let Some(g) = options.graph_pooling.filter(|g| cuda_device.is_some() || g.on_cpu) {
            match with_pooled_output(path, &layout, g) {
                Ok((bytes, from)) => {
                    first = Session::from_bytes(&bytes, &session_options)?;
                    layout = layout_of(&first, limits, path)?;
                    if let Some(o) = layout.outputs.iter_mut().find(|o| o.name == GRAPH_POOLED_OUTPUT) {
                        o.pooled = Some(from);
                    }
                    pooled_bytes = Some(bytes);
                }
                Err(why) => tracing::info!("{}: sentence embeddings pooled on the host ({why})", path.display()),
            }
        }
        let open = |options: &SessionOptions| match &pooled_bytes {
            Some(bytes) => Session::from_bytes(bytes, options),
            None => Session::from_file(path, options),
        };
        let sessions = limits.instances.max(1);
        let mut slots = Vec::with_capacity(sessions);
        // What the first session settles (row buckets where graphs cannot
        // capture the model) holds for the others, which then neither retry
        // the capture nor warn again.
        let (mut graph_max_batch, mut row_buckets) = (options.cuda_graph_max_batch, options.cuda_row_buckets);
        if let Some(device) = cuda_device {
            // Under the device's capture gate, as every CUDA session's teardown ([`CudaStaging`]).
            let gate = super::capture::gate(device);
            let shared = gate.read().unwrap_or_else(|p| p.into_inner());
            drop(first);
            drop(shared);
            for _ in 0..sessions {
                match CudaStaging::new(&open, &session_options, device, &layout, graph_max_batch, row_buckets, options.cuda_host_wait)? {
                    Ok(staging) => {
                        (graph_max_batch, row_buckets) = staging.shapes();
                        slots.push(Slot::Cuda(Box::new(staging)))
                    }
                    Err(why) => {
                        tracing::info!("{}: no IO binding on CUDA ({why}); ONNX Runtime stages through host memory", path.display());
                        let options = SessionOptions { provider: Provider::Cuda { device }, ..session_options.clone() };
                        slots.push(Slot::Host(host_slot(open(&options)?, &layout)));
                    }
                }
            }
        } else {
            let mut session = Some(first);
            for _ in 0..sessions {
                let session = match session.take() {
                    Some(s) => s,
                    None => open(&session_options)?,
                };
                slots.push(Slot::Host(host_slot(session, &layout)));
            }
        }
        let outputs = layout.outputs.iter().map(|o| o.name.clone()).collect();
        // Sequences padded to multiples of 8: fewer graphs, fewer shapes.
        let shape_buckets = cuda_device.is_some() && (graph_max_batch > 0 || row_buckets);
        let graph_max_batch = if cuda_device.is_some() { graph_max_batch } else { 0 };
        Ok(OrtBackend { pool: Pool::from_items(slots), layout, outputs, provider, cuda_device, shape_buckets, graph_max_batch })
    }

    /// The CUDA device the sessions run on (`None`: the CPU).
    pub fn cuda_device(&self) -> Option<u32> {
        self.cuda_device
    }

    /// The largest batch that runs as a CUDA graph (0: none): what
    /// [`OrtBackendOptions::cuda_graph_max_batch`] asked for on CUDA, or 0
    /// where ONNX Runtime could not capture the model (row buckets instead).
    pub fn cuda_graph_max_batch(&self) -> usize {
        self.graph_max_batch
    }

    /// Per session on CUDA with IO binding: the tensors bound now, the bind
    /// calls made so far and the ONNX Runtime values made so far (the last
    /// stops growing once every shape has been seen; the device buffers are
    /// allocated once and never move). Waits for a free session for each.
    /// Hidden: for the workspace's GPU test (tests/nlp_cuda.rs).
    #[doc(hidden)]
    pub fn bindings(&self) -> Vec<(Vec<BoundTensor>, u64, u64)> {
        (0..self.pool.size())
            .filter_map(|_| {
                let slot = self.pool.checkout();
                match &*slot {
                    Slot::Cuda(c) => {
                        let (rebinds, made) = c.rebinds();
                        Some((c.bound(), rebinds, made))
                    }
                    Slot::Host(_) => None,
                }
            })
            .collect()
    }

    /// The execution provider the sessions run on (`CPUExecutionProvider`, ...).
    pub fn provider(&self) -> &str {
        &self.provider
    }
}

/// The model at `path` with [`GRAPH_POOLED_OUTPUT`] added (encoded), and
/// what it pools; or why it cannot be added.
fn with_pooled_output(path: &Path, layout: &ModelLayout, g: GraphPooling) -> std::result::Result<(Vec<u8>, PooledFrom), String> {
    use trt_onnx::graph::pooling::{add_pooled_output, PooledOutput, SentencePooling};
    let hidden = layout.output_of_rank(3).ok_or("the model has no [batch, seq, dim] output")?;
    let mask = layout.inputs.iter().find(|i| i.role == InputRole::AttentionMask).ok_or("the model has no attention_mask input")?;
    let pooling = match g.pooling {
        Pooling::Mean => SentencePooling::Mean,
        Pooling::Cls => SentencePooling::First,
    };
    let spec = PooledOutput {
        hidden: hidden.name.clone(),
        mask: mask.name.clone(),
        pooling,
        normalize: g.normalize,
        output: GRAPH_POOLED_OUTPUT.to_string(),
    };
    let mut model = trt_onnx::graph::Model::load(path).map_err(|e| e.to_string())?;
    add_pooled_output(&mut model, &spec).map_err(|e| e.to_string())?;
    let bytes = model.to_bytes().map_err(|e| e.to_string())?;
    Ok((bytes, PooledFrom { hidden: hidden.name.clone(), pooling: g.pooling, normalize: g.normalize }))
}

fn host_slot(session: Session, layout: &ModelLayout) -> HostSlot {
    let tokens = layout.max_batch * layout.max_seq;
    let inputs = layout
        .inputs
        .iter()
        .map(|spec| {
            let host = match spec.dtype {
                ElementType::I64 => HostTokens::I64(vec![0; tokens]),
                _ => HostTokens::I32(vec![0; tokens]),
            };
            (spec.clone(), host)
        })
        .collect();
    HostSlot { session, inputs }
}

/// The token inputs, float outputs and shape ranges of a session's model.
fn layout_of(session: &Session, options: &BackendOptions, path: &Path) -> Result<ModelLayout> {
    let mut inputs = Vec::new();
    let (mut batch, mut seq) = (1..=options.max_batch.max(1), 1..=options.max_seq.max(1));
    for t in session.inputs() {
        let role = InputRole::from_name(&t.name).ok_or_else(|| Error::UnsupportedModel {
            reason: format!(
                "{}: input '{}' is not a token tensor (expected input_ids, attention_mask or token_type_ids)",
                path.display(),
                t.name
            ),
        })?;
        let dtype = match t.element {
            OrtType::I32 => ElementType::I32,
            OrtType::I64 => ElementType::I64,
            other => {
                return Err(Error::UnsupportedModel {
                    reason: format!("{}: input '{}' is {other}; token tensors are i32 or i64", path.display(), t.name),
                })
            }
        };
        if t.shape.len() != 2 {
            return Err(Error::UnsupportedModel {
                reason: format!("{}: input '{}' has shape {:?}; token tensors are [batch, sequence]", path.display(), t.name, t.shape),
            });
        }
        // A fixed dimension pins the range.
        batch = narrow(batch, t.shape[0], &t.name, path)?;
        seq = narrow(seq, t.shape[1], &t.name, path)?;
        inputs.push(InputSpec::new(t.name.clone(), role, dtype)?);
    }
    let outputs: Vec<OutputSpec> = session.outputs().iter().filter_map(float_output).collect();
    if outputs.is_empty() {
        return Err(Error::UnsupportedModel { reason: format!("{}: the model has no float output", path.display()) });
    }
    ModelLayout::new(inputs, outputs, batch, seq)
}

fn narrow(range: std::ops::RangeInclusive<usize>, dim: i64, name: &str, path: &Path) -> Result<std::ops::RangeInclusive<usize>> {
    if dim < 0 {
        return Ok(range);
    }
    let d = dim as usize;
    if !range.contains(&d) {
        return Err(Error::UnsupportedModel {
            reason: format!("{}: input '{name}' fixes a dimension to {d}, outside {}..={}", path.display(), range.start(), range.end()),
        });
    }
    Ok(d..=d)
}

fn float_output(t: &TensorInfo) -> Option<OutputSpec> {
    let dtype = match t.element {
        OrtType::F32 => ElementType::F32,
        OrtType::F16 => ElementType::F16,
        OrtType::BF16 => ElementType::BF16,
        _ => {
            tracing::debug!("output '{}' is {}: not read by the text helpers", t.name, t.element);
            return None;
        }
    };
    Some(OutputSpec { name: t.name.clone(), dtype, rank: t.shape.len(), pooled: None })
}

impl Backend for OrtBackend {
    fn name(&self) -> &str {
        "onnxruntime"
    }

    fn layout(&self) -> &ModelLayout {
        &self.layout
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::new(self.pool.size())
            // Each CPU session runs on its own intra-op threads; a GPU provider's share the device.
            .with_parallel_instances(self.provider == "CPUExecutionProvider")
            // CUDA graphs replay one shape each, and row buckets bound the shapes
            // a session sees: fewer sequence lengths, fewer graphs and shapes.
            .with_sequence_multiple(if self.shape_buckets { 8 } else { 1 })
    }

    fn health(&self) -> Result<()> {
        Ok(())
    }

    fn run_reading(&self, wanted: &[bool], fill: &mut Fill<'_>, read: &mut Read<'_>) -> Result<()> {
        self.run_on_a_session(Some(wanted), fill, read)
    }

    fn run(&self, fill: &mut Fill<'_>, read: &mut Read<'_>) -> Result<()> {
        self.run_on_a_session(None, fill, read)
    }
}

impl OrtBackend {
    /// One batch on a free session; on CUDA only the outputs `wanted` marks
    /// are downloaded (all: `None`). Host outputs are read in place, so there
    /// `wanted` saves nothing and every output is there.
    fn run_on_a_session(&self, wanted: Option<&[bool]>, fill: &mut Fill<'_>, read: &mut Read<'_>) -> Result<()> {
        let mut slot = self.pool.checkout();
        let HostSlot { session, inputs } = match &mut *slot {
            Slot::Host(h) => h,
            Slot::Cuda(c) => return c.run(&self.layout, wanted, fill, read),
        };
        let layout = {
            let mut batch = EncodedBatch::new();
            for (spec, host) in inputs.iter_mut() {
                match host {
                    HostTokens::I32(v) => batch.bind(spec.clone(), v)?,
                    HostTokens::I64(v) => batch.bind(spec.clone(), v)?,
                };
            }
            fill(&mut batch)?
        };
        self.layout.check_batch(layout.batch, layout.seq_len)?;
        let n = layout.batch * layout.seq_len;
        let shape = ndarray::IxDyn(&[layout.batch, layout.seq_len]);
        let shape_err = |source: ndarray::ShapeError| Error::ArrayShape { what: "token tensor".into(), source };
        let mut feeds = Vec::with_capacity(inputs.len());
        for (spec, host) in inputs.iter() {
            let t = match host {
                HostTokens::I32(v) => InputTensor::I32(ndarray::ArrayViewD::from_shape(shape.clone(), &v[..n]).map_err(shape_err)?),
                HostTokens::I64(v) => InputTensor::I64(ndarray::ArrayViewD::from_shape(shape.clone(), &v[..n]).map_err(shape_err)?),
            };
            feeds.push((spec.name.as_str(), t));
        }
        let names: Vec<&str> = self.outputs.iter().map(String::as_str).collect();
        // `read`'s own error is kept as it is (not folded into ONNX Runtime's).
        let mut result = Ok(());
        session.run_with(&feeds, Some(&names), |views| {
            let mut outputs = Outputs::new();
            for (name, v) in views {
                let view = match v {
                    OutputRef::F32(a) => OutputView::F32(a.view()),
                    OutputRef::F16(a) => OutputView::F16(a.view()),
                    OutputRef::BF16(a) => OutputView::BF16(a.view()),
                    _ => continue,
                };
                outputs.push(name, view);
            }
            result = read(&layout, &outputs);
            Ok(())
        })?;
        result
    }
}
