//! TensorRT behind the [`Backend`] trait: a pool of execution contexts, each
//! with staging buffers sized once for the profile's largest batch and
//! sequence: pinned host buffers the tokenizer writes into directly, device
//! buffers for every I/O tensor, and pinned buffers for the outputs. One
//! batch is one upload per input, one enqueue, one download per output.

use half::{bf16, f16};
use ndarray::{ArrayViewD, IxDyn};
use trt::cuda::{Device, DeviceBuffer, Element, PinnedBuffer, Stream};
use trt::{Bindings, ContextPool, DataType, Engine, ExecutionContext};

use crate::backend::{Backend, Fill, OutputView, Outputs, Read};
use crate::{EncodedBatch, Error, InputSpec, ModelLayout, Result, TokenBuffer};

/// Host and device memory for one tensor of element type `T`.
struct Staged<T: Element> {
    host: PinnedBuffer<T>,
    device: DeviceBuffer<T>,
}

impl<T: Element> Staged<T> {
    fn new(device: &Device, stream: &Stream, len: usize) -> trt::Result<Self> {
        Ok(Staged { host: PinnedBuffer::zeros(device, len)?, device: DeviceBuffer::zeros(len, stream)? })
    }
}

enum Tokens {
    I32(Staged<i32>),
    I64(Staged<i64>),
}

enum Floats {
    F32(Staged<f32>),
    F16(Staged<f16>),
    BF16(Staged<bf16>),
}

struct Staging {
    inputs: Vec<(InputSpec, Tokens)>,
    outputs: Vec<(String, Floats)>,
}

/// A TensorRT engine as a [`Backend`]: `contexts` execution contexts on one
/// GPU, each running one batch at a time.
pub struct TensorRtBackend {
    pool: ContextPool<Staging>,
    layout: ModelLayout,
    device: Device,
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
                    DataType::Int64 => Tokens::I64(Staged::new(device, stream, tokens)?),
                    _ => Tokens::I32(Staged::new(device, stream, tokens)?),
                };
                inputs.push((spec.clone(), t));
            }
            let mut outputs = Vec::new();
            for o in &layout.outputs {
                let shape = context.tensor_shape(&o.name)?;
                let len = shape.iter().product::<i64>().max(1) as usize;
                let f = match o.dtype {
                    DataType::Half => Floats::F16(Staged::new(device, stream, len)?),
                    DataType::BF16 => Floats::BF16(Staged::new(device, stream, len)?),
                    _ => Floats::F32(Staged::new(device, stream, len)?),
                };
                outputs.push((o.name.clone(), f));
            }
            Ok(Staging { inputs, outputs })
        })?;
        Ok(TensorRtBackend { pool, layout, device: device.clone() })
    }
}

impl Backend for TensorRtBackend {
    fn name(&self) -> &str {
        "tensorrt"
    }

    fn layout(&self) -> &ModelLayout {
        &self.layout
    }

    fn instances(&self) -> usize {
        self.pool.size()
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

        // 2. Shapes, uploads, enqueue.
        let mut bindings = Bindings::new(stream);
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
        context.enqueue(bindings)?.wait()?;

        // 3. Downloads of the exact output sizes, then views.
        let mut shapes = Vec::with_capacity(state.outputs.len());
        for (name, o) in state.outputs.iter_mut() {
            let shape: Vec<usize> = context.tensor_shape(name)?.iter().map(|&d| d.max(0) as usize).collect();
            let n: usize = shape.iter().product();
            match o {
                Floats::F32(st) => st.device.copy_to_pinned_n(&mut st.host, n, stream)?,
                Floats::F16(st) => st.device.copy_to_pinned_n(&mut st.host, n, stream)?,
                Floats::BF16(st) => st.device.copy_to_pinned_n(&mut st.host, n, stream)?,
            }
            shapes.push(shape);
        }
        let mut outputs = Outputs::new();
        for ((name, o), shape) in state.outputs.iter().zip(&shapes) {
            let n: usize = shape.iter().product();
            let view = match o {
                Floats::F32(st) => OutputView::F32(view(&st.host.as_slice()?[..n], shape)?),
                Floats::F16(st) => OutputView::F16(view(&st.host.as_slice()?[..n], shape)?),
                Floats::BF16(st) => OutputView::BF16(view(&st.host.as_slice()?[..n], shape)?),
            };
            outputs.push(name.as_str(), view);
        }
        read(&layout, &outputs)
    }
}

fn view<'a, T>(data: &'a [T], shape: &[usize]) -> Result<ArrayViewD<'a, T>> {
    ArrayViewD::from_shape(IxDyn(shape), data).map_err(|e| Error::InvalidConfig(format!("output of shape {shape:?}: {e}")))
}
