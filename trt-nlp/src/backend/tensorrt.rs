//! Text in, engine outputs out: the part the classifier and embedder share.
//!
//! A pool of execution contexts, each with staging buffers sized once for the
//! profile's largest batch and sequence: pinned host buffers that the
//! tokenizer pipeline writes into directly, device buffers for every I/O
//! tensor, and pinned buffers for the outputs. One chunk of at most
//! `max_batch` texts is one enqueue; `&self` methods are safe from many
//! threads (each call checks out its own context).

use half::{bf16, f16};
use ndarray::{ArrayView2, ArrayViewD, IxDyn};
use trt::cuda::{Device, DeviceBuffer, Element, PinnedBuffer, Stream};
use trt::{Bindings, ContextPool, DataType, Engine, ExecutionContext};

use std::path::Path;

use crate::classifier::HelperOptions;
use crate::layout::ModelLayout;
use crate::backend::OutputView;
use crate::{BatchLayout, EncodedBatch, Error, InputSpec, Result, TokenBuffer, TokenizerPipeline};

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

pub(crate) struct Runner {
    pool: ContextPool<Staging>,
    pipeline: TokenizerPipeline,
    layout: ModelLayout,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner").field("layout", &self.layout).field("contexts", &self.pool.size()).finish()
    }
}

fn max_shape(context: &mut ExecutionContext, layout: &ModelLayout) -> trt::Result<()> {
    for i in &layout.inputs {
        context.set_input_shape(&i.name, &[layout.max_batch as i64, layout.max_seq as i64])?;
    }
    Ok(())
}

impl Runner {
    /// Execution contexts of `engine` on `device`, with a tokenizer pipeline
    /// that truncates (or rejects) at the profile's maximum sequence length.
    pub(crate) fn new(engine: &Engine, device: &Device, tokenizer: &Path, options: &HelperOptions) -> Result<Self> {
        let layout = ModelLayout::from_io(engine.io_tensors())?;
        let pipeline = options.pipeline(tokenizer, layout.min_seq, layout.max_seq)?;
        let contexts = options.contexts;
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
        Ok(Runner { pool, pipeline, layout })
    }

    pub(crate) fn layout(&self) -> &ModelLayout {
        &self.layout
    }

    /// Run one chunk (at most `max_batch` texts) and hand `f` the batch layout,
    /// the attention mask and the outputs. A chunk smaller than the profile's
    /// minimum batch is padded with empty texts: rows past `texts.len()` are
    /// padding for the caller to drop.
    pub(crate) fn run_chunk<S: AsRef<str> + Sync, R>(
        &self,
        texts: &[S],
        f: impl FnOnce(&BatchLayout, ArrayView2<'_, i64>, &[(&str, OutputView<'_>)]) -> Result<R>,
    ) -> Result<R> {
        debug_assert!(!texts.is_empty() && texts.len() <= self.layout.max_batch);
        if texts.len() < self.layout.min_batch {
            let mut padded: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
            padded.resize(self.layout.min_batch, "");
            return self.run_exact(&padded, f);
        }
        self.run_exact(texts, f)
    }

    fn run_exact<S: AsRef<str> + Sync, R>(
        &self,
        texts: &[S],
        f: impl FnOnce(&BatchLayout, ArrayView2<'_, i64>, &[(&str, OutputView<'_>)]) -> Result<R>,
    ) -> Result<R> {
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
            self.pipeline.encode_into(texts, &mut batch)?
        };
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
        let mut views = Vec::with_capacity(state.outputs.len());
        for ((name, o), shape) in state.outputs.iter().zip(&shapes) {
            let n: usize = shape.iter().product();
            let view = match o {
                Floats::F32(st) => OutputView::F32(view(&st.host.as_slice()?[..n], shape)?),
                Floats::F16(st) => OutputView::F16(view(&st.host.as_slice()?[..n], shape)?),
                Floats::BF16(st) => OutputView::BF16(view(&st.host.as_slice()?[..n], shape)?),
            };
            views.push((name.as_str(), view));
        }
        // The attention mask follows from the lengths: no read-back of the input.
        let mask: Vec<i64> = layout.lengths.iter().flat_map(|&len| (0..s).map(move |i| (i < len) as i64)).collect();
        let mask = ArrayView2::from_shape((b, s), &mask).map_err(|e| Error::InvalidConfig(e.to_string()))?;
        f(&layout, mask, &views)
    }

    /// The largest batch one enqueue takes.
    pub(crate) fn max_batch(&self) -> usize {
        self.layout.max_batch
    }
}

fn view<'a, T>(data: &'a [T], shape: &[usize]) -> Result<ArrayViewD<'a, T>> {
    ArrayViewD::from_shape(IxDyn(shape), data).map_err(|e| Error::InvalidConfig(format!("output of shape {shape:?}: {e}")))
}
