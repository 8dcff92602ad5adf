//! ONNX Runtime on CUDA with device-resident I/O: one session's staging.
//!
//! Per session: one CUDA stream, given to ONNX Runtime as its compute
//! stream, so the upload, the model and the download are ordered on it with
//! no host wait between them; pinned host buffers that the tokenizer writes
//! into; device buffers for every input and output, sized once for the
//! largest batch and sequence and bound to the session by address (IO
//! binding). Each tensor is a [`StagedBuffer`]: nothing but this stream uses
//! it, so its copies need no event waits or records. A batch is one upload
//! per input, one run, one download per output of the batch's real rows
//! only (only the outputs the caller reads, where it says which: a pooled
//! embedding alone is a few KiB a batch), and one host wait (reading the
//! first output), spinning or sleeping as the stream's [`HostWait`] says
//! (`OrtBackendOptions::cuda_host_wait`). No device memory is allocated per batch, and once every
//! shape has been seen no ONNX Runtime value either: a binding whose address
//! and shape are unchanged is not redone, one seen before is reused, and the
//! addresses never change ([`CudaStaging::bound`] is what the tests read).
//!
//! With CUDA graphs (opt-in), a batch of at most `graph_max_batch` rows runs
//! at its bucket's shape ([`super::buckets`]): the rows are padded up to the
//! batch bucket (padding rows zeroed: no attention, outputs dropped) and the
//! bucket's graph, captured by ONNX Runtime on its first runs, is replayed.
//! With row buckets (opt-in), larger batches run padded to their bucket the
//! same way, without a graph: the session sees few shapes.

use half::{bf16, f16};
use trt_cuda::{Device, Element, HostWait, StagedBuffer, Stream};
use trt_onnx::runtime::{BoundTensor, CudaOptions, ElementType, IoBinding, Provider, Session, SessionOptions, TensorInfo};

use super::buckets;
use super::capture::{self, Captures};
use super::staging;
use super::{Fill, OutputView, Outputs, Read};
use crate::{EncodedBatch, InputSpec, ModelLayout, Result, TokenBuffer};

/// A token input's staging on the session's stream.
type Tokens = staging::Tokens<StagedBuffer<i32>, StagedBuffer<i64>>;
/// An output's staging on the session's stream.
type Floats = staging::Floats<StagedBuffer<f32>, StagedBuffer<f16>, StagedBuffer<bf16>>;

/// How each dimension of an output follows the batch's shape.
#[derive(Debug, Clone, Copy)]
enum Dim {
    Batch,
    Seq,
    Fixed(usize),
}

struct Output {
    /// Its position in the layout's outputs (what `wanted` marks).
    index: usize,
    name: String,
    dims: Vec<Dim>,
    staged: Floats,
    shape: Vec<usize>,
}

/// One CUDA session with its stream, binding and buffers. Every run holds
/// the device's capture gate ([`capture`]), and so does the drop: a
/// session's teardown frees device and pinned memory and waits for the
/// device, calls that would break a capture in progress on another session
/// of the device.
pub(crate) struct CudaStaging {
    cuda: std::mem::ManuallyDrop<Resources>,
    graph_max_batch: usize,
    /// Batches above `graph_max_batch` run at their batch bucket too.
    row_buckets: bool,
    max_batch: usize,
    gate: std::sync::Arc<std::sync::RwLock<()>>,
    captures: Captures,
}

/// What a [`CudaStaging`] owns on the device. Fields drop in order: the
/// session and its binding before the buffers they address, the stream last.
struct Resources {
    session: Session,
    binding: IoBinding,
    inputs: Vec<(InputSpec, Tokens)>,
    outputs: Vec<Output>,
    /// ONNX Runtime's compute stream: kept here for as long as the session
    /// runs on it (the buffers' copies reach it through their own handles).
    _stream: Stream,
}

impl Drop for CudaStaging {
    fn drop(&mut self) {
        let gate = self.gate.clone();
        let _shared = gate.read().unwrap_or_else(|p| p.into_inner());
        // SAFETY: dropped once, here; nothing uses `cuda` after.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.cuda) };
    }
}

impl CudaStaging {
    /// A session over `path` on `device`, with buffers for `layout`; `None`
    /// (with the reason) where an output's shape cannot be told from the
    /// batch's (a dimension tied to neither batch nor sequence).
    pub(crate) fn new(
        open: &dyn Fn(&SessionOptions) -> trt_onnx::Result<Session>,
        base: &SessionOptions,
        device_index: u32,
        layout: &ModelLayout,
        mut graph_max_batch: usize,
        mut row_buckets: bool,
        host_wait: HostWait,
    ) -> Result<std::result::Result<Self, String>> {
        let device = Device::new(device_index as usize)?;
        let stream = Stream::with_host_wait(&device, host_wait)?;
        let mut options = base.clone();
        options.provider = Provider::Cuda { device: device_index };
        // SAFETY: the stream belongs to the device's primary context and is
        // dropped after the session (field order above).
        let mut cuda: CudaOptions = base.cuda;
        cuda.graphs = graph_max_batch > 0;
        options.cuda = unsafe { cuda.with_stream(stream.as_raw().cast()) };
        let session = match open(&options) {
            // A speed option never stops a model from loading: ONNX Runtime
            // refuses CUDA graphs for a model whose nodes are not all on the
            // CUDA provider (shape arithmetic it places on the CPU, an
            // operator without a CUDA kernel). Row buckets bound the shapes
            // the same way, without the capture.
            Err(e) if cuda.graphs && refuses_capture(&e) => {
                tracing::warn!("CUDA graphs cannot capture this model, so batches run at row buckets instead: {e}");
                graph_max_batch = 0;
                row_buckets = true;
                options.cuda.graphs = false;
                open(&options)?
            }
            other => other?,
        };
        let (batch_sym, seq_sym) = symbols(session.inputs());
        let mut outputs = Vec::new();
        for (index, spec) in layout.outputs.iter().enumerate() {
            let Some(info) = session.outputs().iter().find(|t| t.name == spec.name) else { continue };
            let mut dims = Vec::with_capacity(info.shape.len());
            for (i, &d) in info.shape.iter().enumerate() {
                let sym = info.symbols.get(i).map(String::as_str).unwrap_or("");
                dims.push(match d {
                    d if d >= 0 => Dim::Fixed(d as usize),
                    _ if !sym.is_empty() && sym == batch_sym => Dim::Batch,
                    _ if !sym.is_empty() && sym == seq_sym => Dim::Seq,
                    _ => return Ok(Err(format!("output '{}' dimension {i} ('{sym}') follows neither batch nor sequence", spec.name))),
                });
            }
            let len = elements(&dims, layout.max_batch, layout.max_seq);
            let staged = match info.element {
                ElementType::F32 => Floats::F32(StagedBuffer::zeros(len, &stream)?),
                ElementType::F16 => Floats::F16(StagedBuffer::zeros(len, &stream)?),
                _ => Floats::BF16(StagedBuffer::zeros(len, &stream)?),
            };
            outputs.push(Output { index, name: spec.name.clone(), dims, staged, shape: Vec::new() });
        }
        let tokens = layout.max_batch * layout.max_seq;
        let mut inputs = Vec::new();
        for spec in &layout.inputs {
            let t = match spec.dtype {
                crate::ElementType::I64 => Tokens::I64(StagedBuffer::zeros(tokens, &stream)?),
                _ => Tokens::I32(StagedBuffer::zeros(tokens, &stream)?),
            };
            inputs.push((spec.clone(), t));
        }
        let binding = session.io_binding()?;
        let gate = capture::gate(device_index);
        let captures = Captures::default();
        Ok(Ok(CudaStaging {
            cuda: std::mem::ManuallyDrop::new(Resources { session, binding, inputs, outputs, _stream: stream }),
            graph_max_batch,
            row_buckets,
            max_batch: layout.max_batch,
            gate,
            captures,
        }))
    }

    /// The largest batch that runs as a CUDA graph (0: none), and whether
    /// larger batches run at row buckets: what was asked for, or the row
    /// buckets that replaced graphs ONNX Runtime cannot capture.
    pub(crate) fn shapes(&self) -> (usize, bool) {
        (self.graph_max_batch, self.row_buckets)
    }

    /// The tensors bound now (addresses and shapes).
    pub(crate) fn bound(&self) -> Vec<BoundTensor> {
        self.cuda.binding.bound().cloned().collect()
    }

    /// Bind calls so far, and ONNX Runtime values made so far (the second
    /// stops growing once every shape has been seen).
    pub(crate) fn rebinds(&self) -> (u64, u64) {
        (self.cuda.binding.rebinds(), self.cuda.binding.values_made())
    }

    /// One batch: fill the pinned inputs, upload, run, download the real
    /// rows of the outputs `wanted` marks (all: `None`), read those.
    pub(crate) fn run(
        &mut self,
        layout_check: &ModelLayout,
        wanted: Option<&[bool]>,
        fill: &mut Fill<'_>,
        read: &mut Read<'_>,
    ) -> Result<()> {
        let wanted = |o: &Output| wanted.is_none_or(|w| w.get(o.index).copied().unwrap_or(true));
        let CudaStaging { cuda, graph_max_batch, row_buckets, max_batch, gate, captures } = self;
        let Resources { session, binding, inputs, outputs, .. } = &mut **cuda;
        // Every CUDA call of the run, the host's waits included, happens
        // under the device's gate: shared, or alone for a run that may capture.
        let gate = gate.clone();
        let mut _held = Held::Shared(gate.read().unwrap_or_else(|p| p.into_inner()));
        let layout = {
            let mut batch = EncodedBatch::new();
            for (spec, t) in inputs.iter_mut() {
                let buf: TokenBuffer<'_> = match t {
                    Tokens::I32(s) => s.host_mut()?.into(),
                    Tokens::I64(s) => s.host_mut()?.into(),
                };
                batch.bind(spec.clone(), buf)?;
            }
            fill(&mut batch)?
        };
        layout_check.check_batch(layout.batch, layout.seq_len)?;
        let (rows, seq) = (layout.batch, layout.seq_len);
        let (run_rows, graph) = if rows <= *graph_max_batch {
            let bucket = buckets::batch_bucket(rows, *max_batch);
            (bucket, Some(buckets::graph_id(bucket, seq)))
        } else if *row_buckets {
            (buckets::batch_bucket(rows, *max_batch), None)
        } else {
            (rows, None)
        };
        if graph.is_some_and(|g| captures.may_capture(g)) {
            _held = Held::Released;
            _held = Held::Alone(gate.write().unwrap_or_else(|p| p.into_inner()));
        }
        let (real, total) = (rows * seq, run_rows * seq);
        for (spec, t) in inputs.iter_mut() {
            // Padding rows: zeros (no attention), their outputs are dropped.
            let shape = [run_rows, seq];
            match t {
                Tokens::I32(s) => stage_input(s, binding, &spec.name, ElementType::I32, real, total, &shape)?,
                Tokens::I64(s) => stage_input(s, binding, &spec.name, ElementType::I64, real, total, &shape)?,
            }
        }
        for o in outputs.iter_mut() {
            let shape = resolve(&o.dims, run_rows, seq);
            let (element, address) = match &o.staged {
                Floats::F32(s) => (ElementType::F32, s.device_address()),
                Floats::F16(s) => (ElementType::F16, s.device_address()),
                Floats::BF16(s) => (ElementType::BF16, s.device_address()),
            };
            // SAFETY: each device buffer holds the output at the largest batch
            // and sequence, lives as long as the binding (field order), and is
            // used only on the session's stream.
            unsafe { binding.bind_output(&o.name, element, address, &shape)? };
        }
        // Enqueued on the session's stream after the uploads; the downloads below follow it there.
        session.run_bound(binding, graph)?;
        if let Some(g) = graph {
            captures.ran(g);
        }
        for o in outputs.iter_mut().filter(|o| wanted(o)) {
            o.shape.clear();
            o.shape.extend(resolve(&o.dims, rows, seq));
            let n: usize = o.shape.iter().product();
            match &mut o.staged {
                Floats::F32(s) => s.download(n)?,
                Floats::F16(s) => s.download(n)?,
                Floats::BF16(s) => s.download(n)?,
            }
        }
        let mut views = Outputs::new();
        for o in outputs.iter().filter(|o| wanted(o)) {
            let n: usize = o.shape.iter().product();
            let view = match &o.staged {
                Floats::F32(s) => OutputView::F32(staging::output_view(&s.host()?[..n], &o.shape)?),
                Floats::F16(s) => OutputView::F16(staging::output_view(&s.host()?[..n], &o.shape)?),
                Floats::BF16(s) => OutputView::BF16(staging::output_view(&s.host()?[..n], &o.shape)?),
            };
            views.push(o.name.as_str(), view);
        }
        read(&layout, &views)
    }
}

/// The hold a run has on its device's capture gate (the guards are held for their drop).
#[allow(dead_code)]
enum Held<'a> {
    Shared(std::sync::RwLockReadGuard<'a, ()>),
    Released,
    Alone(std::sync::RwLockWriteGuard<'a, ()>),
}

/// Zeroes the padding rows, uploads the rows that run and binds the device buffer.
fn stage_input<T: Element + Default>(
    s: &mut StagedBuffer<T>,
    binding: &mut IoBinding,
    name: &str,
    element: ElementType,
    real: usize,
    total: usize,
    shape: &[usize],
) -> Result<()> {
    if total > real {
        s.host_mut()?[real..total].fill(T::default());
    }
    s.upload(total)?;
    // SAFETY: the device buffer holds `total` elements at the largest batch,
    // lives as long as the binding (field order) and is used only on the
    // session's stream, where the run follows the upload.
    unsafe { binding.bind_input(name, element, s.device_address(), shape)? };
    Ok(())
}

/// The symbolic names of the batch and sequence dimensions of the token inputs.
fn symbols(inputs: &[TensorInfo]) -> (&str, &str) {
    let first = inputs.iter().find(|t| t.shape.len() == 2);
    let sym = |i: usize| first.and_then(|t| t.symbols.get(i)).map(String::as_str).unwrap_or("");
    (sym(0), sym(1))
}

fn resolve(dims: &[Dim], batch: usize, seq: usize) -> Vec<usize> {
    dims.iter()
        .map(|d| match d {
            Dim::Batch => batch,
            Dim::Seq => seq,
            Dim::Fixed(n) => *n,
        })
        .collect()
}

fn elements(dims: &[Dim], batch: usize, seq: usize) -> usize {
    resolve(dims, batch, seq).iter().product::<usize>().max(1)
}

/// Whether ONNX Runtime refused a session because CUDA-graph capture cannot
/// cover the model (its message: "This session cannot use the graph capture
/// feature as requested by the user ...").
fn refuses_capture(e: &trt_onnx::Error) -> bool {
    matches!(e, trt_onnx::Error::Ort { message, .. } if message.contains("graph capture"))
}
