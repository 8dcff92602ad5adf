//! TensorRT behind the [`Backend`] trait: a pool of execution contexts, each
//! with staging buffers sized once for the profile's largest batch and
//! sequence: pinned host buffers the tokenizer writes into directly, device
//! buffers for every I/O tensor, and pinned buffers for the outputs. One
//! batch is one upload per input, one enqueue, one download per output.
//!
//! The hot path makes no redundant call: the context skips input shapes and
//! tensor addresses that did not change and reads output shapes once per
//! shape change ([`trt::ContextCalls`]); the enqueue is not waited for on the
//! host (each download waits for it on the GPU through its buffer's event,
//! and reading the pinned output waits for the download). Per batch of the
//! same shape as the previous one: one `enqueueV3`, no other TensorRT call,
//! one host wait per output. [`TensorRtBackend::stats`] counts it.

use std::sync::atomic::{AtomicU64, Ordering};

use half::{bf16, f16};
use trt::cuda::{Device, DeviceBuffer, Element, PinnedBuffer, Stream};
use trt::{Bindings, ContextPool, Engine, ExecutionContext};

use crate::backend::staging;
use crate::backend::{Backend, Capabilities, Fill, OutputView, Outputs, Read};
use crate::{ElementType, EncodedBatch, InputSpec, ModelLayout, Result, TokenBuffer};

/// Host and device memory for one tensor of element type `T`, each use
/// ordered by the buffers' events (TensorRT's bindings take the device half
/// itself).
struct Staged<T: Element> {
    host: PinnedBuffer<T>,
    device: DeviceBuffer<T>,
}

impl<T: Element> Staged<T> {
    /// `len` elements of each, zeroed.
    fn new(device: &Device, stream: &Stream, len: usize) -> trt::cuda::Result<Self> {
        Ok(Staged { host: PinnedBuffer::zeros(device, len)?, device: DeviceBuffer::zeros(len, stream)? })
    }
}

type Tokens = staging::Tokens<Staged<i32>, Staged<i64>>;
type Floats = staging::Floats<Staged<f32>, Staged<f16>, Staged<bf16>>;

struct Staging {
    inputs: Vec<(InputSpec, Tokens)>,
    outputs: Vec<(String, Floats)>,
    /// Each output's shape in the last batch, reused (no allocation per batch).
    shapes: Vec<Vec<usize>>,
}

/// What the backend has run so far: batches and the TensorRT calls they made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TensorRtStats {
    /// Batches run.
    pub batches: u64,
    /// TensorRT calls those batches made (`setInputShape`, `setTensorAddress`,
    /// `getTensorShape`, `inferShapes`, `enqueueV3`, ...).
    pub tensorrt_calls: u64,
    /// `enqueueV3` calls among them.
    pub enqueues: u64,
}

#[derive(Debug, Default)]
struct Counters {
    batches: AtomicU64,
    tensorrt_calls: AtomicU64,
    enqueues: AtomicU64,
}

/// A TensorRT engine as a [`Backend`]: `contexts` execution contexts on one
/// GPU, each running one batch at a time.
pub struct TensorRtBackend {
    pool: ContextPool<Staging>,
    layout: ModelLayout,
    device: Device,
    counters: Counters,
}

impl std::fmt::Debug for TensorRtBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorRtBackend").field("layout", &self.layout).field("contexts", &self.pool.size()).finish()
    }
}

fn max_shape(context: &mut ExecutionContext, layout: &ModelLayout) -> trt::Result<()> {
    for i in &layout.inputs {
        context.set_input_shape(&i.name, &[layout.max_batch as i64, layout.max_seq as i64])?;
    }
    Ok(())
}

impl TensorRtBackend {
    /// `contexts` execution contexts of `engine` on `device` (at least one),
    /// with staging buffers for the largest batch every profile accepts.
    pub fn new(engine: &Engine, device: &Device, contexts: usize) -> Result<Self> {
        let layout = ModelLayout::from_io(engine.io_tensors())?;
        let tokens = layout.max_batch * layout.max_seq;
        let pool = ContextPool::with_state(engine, device, contexts.max(1), |context, stream| {
            // Output sizes: what TensorRT infers for the largest input shapes.
            max_shape(context, &layout)?;
            let mut inputs = Vec::new();
            for spec in &layout.inputs {
                let t = match spec.dtype {
                    ElementType::I64 => Tokens::I64(Staged::new(device, stream, tokens)?),
                    _ => Tokens::I32(Staged::new(device, stream, tokens)?),
                };
                inputs.push((spec.clone(), t));
            }
            let mut outputs = Vec::new();
            for o in &layout.outputs {
                let shape = context.tensor_shape(&o.name)?;
                let len = staging_len(&o.name, &shape)?;
                let f = match o.dtype {
                    ElementType::F16 => Floats::F16(Staged::new(device, stream, len)?),
                    ElementType::BF16 => Floats::BF16(Staged::new(device, stream, len)?),
                    _ => Floats::F32(Staged::new(device, stream, len)?),
                };
                outputs.push((o.name.clone(), f));
            }
            let shapes = vec![Vec::new(); outputs.len()];
            Ok(Staging { inputs, outputs, shapes })
        })?;
        Ok(TensorRtBackend { pool, layout, device: device.clone(), counters: Counters::default() })
    }

    /// Batches run so far and the TensorRT calls they made.
    pub fn stats(&self) -> TensorRtStats {
        TensorRtStats {
            batches: self.counters.batches.load(Ordering::Relaxed),
            tensorrt_calls: self.counters.tensorrt_calls.load(Ordering::Relaxed),
            enqueues: self.counters.enqueues.load(Ordering::Relaxed),
        }
    }
}

/// Elements to stage for an output of `shape` at the profile's largest
/// inputs. A dimension still -1 there depends on the data: no size is known,
/// so the output cannot be staged (it would need an output allocator).
fn staging_len(name: &str, shape: &[i64]) -> trt::Result<usize> {
    if shape.iter().any(|&d| d < 0) {
        return Err(trt::Error::InvalidArgument(format!(
            "output '{name}' has shape {shape:?} at the profile's largest input shapes: a data-dependent \
             dimension, which the TensorRT backend cannot stage"
        )));
    }
    Ok(shape.iter().product::<i64>().max(1) as usize)
}

impl Backend for TensorRtBackend {
    fn name(&self) -> &str {
        "tensorrt"
    }

    fn layout(&self) -> &ModelLayout {
        &self.layout
    }

    fn capabilities(&self) -> Capabilities {
        // Fewer distinct shapes: TensorRT picks kernels per shape, and
        // multiples of 8 map onto tensor-core tiles.
        Capabilities::new(self.pool.size()).with_sequence_multiple(8)
    }

    fn health(&self) -> Result<()> {
        // A sticky CUDA error (a crashed kernel) makes every later batch fail.
        self.device.check_deferred_error()?;
        Ok(())
    }

    fn run(&self, fill: &mut Fill<'_>, read: &mut Read<'_>) -> Result<()> {
        let mut slot = self.pool.checkout();
        let trt::PooledContext { context, stream, state } = &mut *slot;

        // 1. Tokenize straight into the pinned input buffers.
        let layout = {
            let mut batch = EncodedBatch::new();
            for (spec, t) in state.inputs.iter_mut() {
                let buf: TokenBuffer<'_> = match t {
                    Tokens::I32(s) => s.host.as_mut_slice()?.into(),
                    Tokens::I64(s) => s.host.as_mut_slice()?.into(),
                };
                batch.bind(spec.clone(), buf)?;
            }
            fill(&mut batch)?
        };
        self.layout.check_batch(layout.batch, layout.seq_len)?;
        let (b, s) = (layout.batch, layout.seq_len);

        // 2. Shapes, uploads, enqueue (unchanged shapes and addresses cost no TensorRT call).
        let calls_before = context.calls();
        let mut bindings = Bindings::with_capacity(stream, state.inputs.len() + state.outputs.len());
        for (spec, t) in state.inputs.iter_mut() {
            context.set_input_shape(&spec.name, &[b as i64, s as i64])?;
            bindings = match t {
                Tokens::I32(st) => {
                    st.device.copy_from_pinned_n(&mut st.host, b * s, stream)?;
                    bindings.bind(&spec.name, &mut st.device)?
                }
                Tokens::I64(st) => {
                    st.device.copy_from_pinned_n(&mut st.host, b * s, stream)?;
                    bindings.bind(&spec.name, &mut st.device)?
                }
            };
        }
        for (name, o) in state.outputs.iter_mut() {
            bindings = match o {
                Floats::F32(st) => bindings.bind(name, &mut st.device)?,
                Floats::F16(st) => bindings.bind(name, &mut st.device)?,
                Floats::BF16(st) => bindings.bind(name, &mut st.device)?,
            };
        }
        // No host wait: every download below waits for the enqueue on the GPU.
        context.enqueue(bindings)?.release();

        // 3. Downloads of the exact output sizes (shapes as the enqueue read them), then views.
        for ((name, o), shape) in state.outputs.iter_mut().zip(state.shapes.iter_mut()) {
            shape.clear();
            shape.extend(context.current_shape(name)?.iter().map(|&d| d.max(0) as usize));
            let n: usize = shape.iter().product();
            match o {
                Floats::F32(st) => st.device.copy_to_pinned_n(&mut st.host, n, stream)?,
                Floats::F16(st) => st.device.copy_to_pinned_n(&mut st.host, n, stream)?,
                Floats::BF16(st) => st.device.copy_to_pinned_n(&mut st.host, n, stream)?,
            }
        }
        let calls = context.calls();
        self.counters.batches.fetch_add(1, Ordering::Relaxed);
        self.counters.tensorrt_calls.fetch_add(calls.total() - calls_before.total(), Ordering::Relaxed);
        self.counters.enqueues.fetch_add(calls.enqueue - calls_before.enqueue, Ordering::Relaxed);
        let mut outputs = Outputs::new();
        for ((name, o), shape) in state.outputs.iter().zip(&state.shapes) {
            let n: usize = shape.iter().product();
            let view = match o {
                Floats::F32(st) => OutputView::F32(staging::output_view(&st.host.as_slice()?[..n], shape)?),
                Floats::F16(st) => OutputView::F16(staging::output_view(&st.host.as_slice()?[..n], shape)?),
                Floats::BF16(st) => OutputView::BF16(staging::output_view(&st.host.as_slice()?[..n], shape)?),
            };
            outputs.push(name.as_str(), view);
        }
        read(&layout, &outputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_dependent_output_is_refused_by_name() {
        // A -1 dimension multiplied in as-is would size a one-element buffer for it.
        let err = staging_len("boxes", &[32, -1, 4]).unwrap_err();
        assert!(err.to_string().contains("output 'boxes'"), "{err}");
        assert!(err.to_string().contains("[32, -1, 4]"), "{err}");
        assert_eq!(staging_len("logits", &[32, 2]).unwrap(), 64);
        assert_eq!(staging_len("scalar", &[]).unwrap(), 1);
    }

    #[test]
    #[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
    fn a_repeated_batch_shape_costs_one_enqueue_and_no_other_tensorrt_call() {
        // Re-binding only what changed, checked where an engine can run, on the
        // setup folder (`scripts/setup`) that $TRT_DEPS_DIR names.
        let deps = std::path::PathBuf::from(
            std::env::var_os("TRT_DEPS_DIR").expect("TRT_DEPS_DIR: the setup folder (cargo sets it, .cargo/config.toml)"),
        );
        let model = deps.join("models/minilm");
        let builder = trt::Builder::new().unwrap();
        let network = trt::OnnxParser::parse_file(&builder, model.join("model.onnx")).unwrap();
        let mut config = builder.config().unwrap();
        let names = ["input_ids", "attention_mask", "token_type_ids"];
        config.add_profile(trt::ProfileSpec::new().with_all(&names, trt::ShapeRange::new(&[1, 1], &[8, 128], &[32, 128]))).unwrap();
        let plan = builder.build(&network, &config).unwrap();
        let device = Device::new(0).unwrap();
        let engine = trt::Runtime::new().unwrap().deserialize_on(plan.as_bytes(), &device).unwrap();
        let backend = TensorRtBackend::new(&engine, &device, 1).unwrap();
        let pipeline = crate::TokenizerPipeline::builder(128).from_file(model.join("tokenizer.json")).unwrap();
        let texts = ["the same four", "texts every time", "so the shape", "repeats"];
        let run = |backend: &TensorRtBackend| {
            let mut fill = |batch: &mut EncodedBatch<'_>| pipeline.encode_into(&texts, batch);
            let mut read = |_: &crate::BatchLayout, outputs: &Outputs<'_>| {
                assert!(outputs.iter().count() > 0);
                Ok(())
            };
            backend.run(&mut fill, &mut read).unwrap();
        };
        run(&backend);
        let first = backend.stats();
        run(&backend);
        let second = backend.stats();
        println!("first batch {first:?}, second {second:?}");
        assert_eq!(second.batches, 2);
        assert_eq!(second.enqueues - first.enqueues, 1);
        assert_eq!(second.tensorrt_calls - first.tensorrt_calls, 1, "only enqueueV3 for a repeated shape");
    }
}
