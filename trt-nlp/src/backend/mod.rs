//! The one seam between tokenized text and a model executor.
//!
//! A [`Backend`] runs one batch of token tensors and hands back the model's
//! float outputs. The classifier, the embedder and the batching scheduler
//! only ever see this trait, so they never name a TensorRT or ONNX Runtime
//! type; each executor lives in its own module:
//!
//! | module | executor | staging |
//! |---|---|---|
//! | `tensorrt` (the `tensorrt` feature) | TensorRT engine, a pool of execution contexts | the tokenizer writes into pinned host buffers; one upload, one enqueue, one download |
//! | `onnxruntime` (the `onnxruntime` feature) | ONNX Runtime, a pool of sessions | CPU: the tokenizer writes into host buffers that the session reads in place; CUDA: as TensorRT, through IO binding on one stream per session |
//!
//! [`LeastLoaded`] puts several of them (one per GPU) behind one `Backend`,
//! each batch on the least-loaded one.
//!
//! [`open`] picks one for a model file ([`BackendChoice::Auto`]: TensorRT
//! where it can execute here, else ONNX Runtime, with the reason logged).
//!
//! Why a fill callback rather than a tensor argument: the buffers belong to
//! the backend (pinned memory for TensorRT), so the caller writes straight
//! into them and no batch is copied on the host.

use half::{bf16, f16};
use ndarray::{ArrayD, ArrayViewD, Axis, Slice};

use crate::{BatchLayout, EncodedBatch, FloatElement, ModelLayout, Result};

pub(crate) mod buckets;
#[cfg(feature = "onnxruntime")]
mod capture;
mod least_loaded;
#[cfg(feature = "onnxruntime")]
pub mod onnxruntime;
#[cfg(feature = "onnxruntime")]
mod ort_cuda;
mod select;
#[cfg(any(feature = "tensorrt", feature = "onnxruntime"))]
mod staging;
#[cfg(feature = "tensorrt")]
pub mod tensorrt;

pub use least_loaded::{DeviceInstance, DeviceInstanceStats, LeastLoaded};
pub use select::{is_plan, open, BackendChoice, BackendOptions};

/// One model output, borrowed from the backend's buffers for the duration of
/// a [`Backend::run`] read callback.
#[derive(Debug)]
#[non_exhaustive]
pub enum OutputView<'a> {
    /// f32 values.
    F32(ArrayViewD<'a, f32>),
    /// f16 values.
    F16(ArrayViewD<'a, f16>),
    /// bf16 values.
    BF16(ArrayViewD<'a, bf16>),
}

/// A computation over an output's values, whatever their element type: the
/// one place that matches on [`OutputView`]'s variants, so each reader of
/// outputs (conversion, pooling, the batch-to-rows split) is written once,
/// generically.
pub(crate) trait ViewFn {
    /// What the computation returns.
    type Output;
    /// Runs on the values, read as f32 through [`FloatElement`].
    fn call<T: FloatElement>(self, view: &ArrayViewD<'_, T>) -> Self::Output;
}

impl OutputView<'_> {
    /// Runs `f` on the values, monomorphised for their element type.
    pub(crate) fn apply<F: ViewFn>(&self, f: F) -> F::Output {
        match self {
            OutputView::F32(v) => f.call(v),
            OutputView::F16(v) => f.call(v),
            OutputView::BF16(v) => f.call(v),
        }
    }

    /// The output's shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            OutputView::F32(v) => v.shape(),
            OutputView::F16(v) => v.shape(),
            OutputView::BF16(v) => v.shape(),
        }
    }

    /// An owned f32 copy (what leaves the callback when a caller keeps raw outputs).
    pub fn to_f32(&self) -> ArrayD<f32> {
        struct ToF32;
        impl ViewFn for ToF32 {
            type Output = ArrayD<f32>;
            fn call<T: FloatElement>(self, v: &ArrayViewD<'_, T>) -> ArrayD<f32> {
                v.mapv(T::to_f32)
            }
        }
        self.apply(ToF32)
    }

    /// The first `rows` rows (along axis 0; all of them if there are fewer)
    /// as f32 values in row-major order, converted as they are copied: the
    /// real rows of a batch the backend padded, in one copy.
    pub fn leading_rows_f32(&self, rows: usize) -> Vec<f32> {
        struct Leading(usize);
        impl ViewFn for Leading {
            type Output = Vec<f32>;
            fn call<T: FloatElement>(self, v: &ArrayViewD<'_, T>) -> Vec<f32> {
                if v.ndim() == 0 {
                    return v.iter().map(|&x| x.to_f32()).collect();
                }
                let rows = self.0.min(v.shape()[0]);
                v.slice_axis(Axis(0), Slice::from(..rows)).iter().map(|&x| x.to_f32()).collect()
            }
        }
        self.apply(Leading(rows))
    }
}

/// The outputs of one batch, by name, in the model's order.
#[derive(Debug, Default)]
pub struct Outputs<'a> {
    tensors: Vec<(&'a str, OutputView<'a>)>,
}

impl<'a> Outputs<'a> {
    /// An empty set (backends push into it).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an output.
    pub fn push(&mut self, name: &'a str, view: OutputView<'a>) {
        self.tensors.push((name, view));
    }

    /// The output called `name`.
    pub fn get(&self, name: &str) -> Result<&OutputView<'a>> {
        self.tensors.iter().find(|(n, _)| *n == name).map(|(_, v)| v).ok_or_else(|| crate::Error::NoSuchOutput {
            name: name.into(),
            available: self.tensors.iter().map(|(n, _)| n.to_string()).collect(),
        })
    }

    /// Every output, in the model's order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &OutputView<'a>)> {
        self.tensors.iter().map(|(n, v)| (*n, v))
    }
}

/// Writes one batch's token tensors into the backend's buffers and returns
/// their `[batch, seq_len]` layout (a [`crate::TokenizerPipeline`] or
/// pre-tokenized rows do this).
pub type Fill<'f> = dyn FnMut(&mut EncodedBatch<'_>) -> Result<BatchLayout> + 'f;

/// Reads one batch's outputs while they are still in the backend's buffers.
pub type Read<'f> = dyn FnMut(&BatchLayout, &Outputs<'_>) -> Result<()> + 'f;

/// How a [`Backend`] runs batches: what the batching scheduler and the text
/// helpers plan with. Build one with [`Capabilities::new`] and the `with_*`
/// methods (the struct may gain fields).
///
/// ```
/// use trt_nlp::backend::Capabilities;
///
/// // Four CPU sessions, each with threads of its own.
/// let caps = Capabilities::new(4).with_parallel_instances(true);
/// assert_eq!((caps.instances, caps.devices, caps.sequence_multiple), (4, 1, 1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// How many batches can run at once (execution contexts, sessions).
    pub instances: usize,
    /// Whether the instances compute side by side on resources of their own
    /// (CPU sessions, each with its own threads), so that a batch costs about
    /// the sum of its rows and idle instances are idle hardware; `false` when
    /// they share one device (TensorRT contexts on one GPU). The batcher
    /// spreads queued rows over parallel instances.
    pub parallel_instances: bool,
    /// Devices the instances are spread over, each running its batches
    /// independently of the others (a [`LeastLoaded`] over several GPUs).
    /// Where instances share a device, the batcher counts that device idle
    /// only while nothing runs on it, so with several it cuts a batch at once
    /// while fewer batches run than there are devices.
    pub devices: usize,
    /// The multiple that padded sequence lengths should round up to (the
    /// text helpers' default bucket): fewer distinct shapes where an executor
    /// specializes per shape (8 for TensorRT, CUDA graphs), 1 where padding
    /// is only wasted work (ONNX Runtime on a CPU).
    pub sequence_multiple: usize,
}

impl Default for Capabilities {
    /// One instance on one device, not parallel, no padding multiple.
    fn default() -> Self {
        Capabilities::new(1)
    }
}

impl Capabilities {
    /// `instances` instances sharing one device, no padding multiple.
    pub const fn new(instances: usize) -> Self {
        Capabilities { instances, parallel_instances: false, devices: 1, sequence_multiple: 1 }
    }

    /// With [`parallel_instances`](Self::parallel_instances) set.
    pub const fn with_parallel_instances(mut self, parallel: bool) -> Self {
        self.parallel_instances = parallel;
        self
    }

    /// With [`devices`](Self::devices) set.
    pub const fn with_devices(mut self, devices: usize) -> Self {
        self.devices = devices;
        self
    }

    /// With [`sequence_multiple`](Self::sequence_multiple) set.
    pub const fn with_sequence_multiple(mut self, multiple: usize) -> Self {
        self.sequence_multiple = multiple;
        self
    }
}

/// A model executor: one batch of token tensors in, named float outputs out.
///
/// Implementations are `Send + Sync` and `run` may be called from many
/// threads at once: each call takes one of the backend's
/// [`instances`](Capabilities::instances) (an execution context, a session) and
/// blocks while none is free.
///
/// The ONNX Runtime backend on the committed test model, one batch of two texts:
///
/// ```
/// use std::sync::Arc;
/// use trt_nlp::backend::{self, BackendChoice, BackendOptions};
/// use trt_nlp::{Backend, TextModel};
///
/// # fn main() -> trt_nlp::Result<()> {
/// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
/// let model = TextModel::builder(model).backend(BackendChoice::OnnxRuntime).build()?;
/// let backend: &Arc<dyn Backend> = model.backend();
/// assert_eq!(backend.name(), "onnxruntime");
/// assert_eq!(backend.capabilities().instances, 1);
/// backend.health()?;
/// # Ok(())
/// # }
/// ```
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// Which executor this is, for logs and metrics (`"tensorrt"`, `"onnxruntime"`).
    fn name(&self) -> &str;

    /// The model's token inputs, outputs and the batch and sequence ranges it accepts.
    fn layout(&self) -> &ModelLayout;

    /// How it runs batches: how many at once, on how many devices, and the
    /// padding it prefers. The scheduler and the text helpers read it.
    fn capabilities(&self) -> Capabilities;

    /// Per device instance, its work so far (a [`LeastLoaded`] reports one
    /// entry per member, with the GPU's UUID); empty (default) for a backend
    /// that is not placed over device instances.
    fn device_instances(&self) -> Vec<DeviceInstanceStats> {
        Vec::new()
    }

    /// Whether the backend can run a batch now (the device and the model are usable).
    fn health(&self) -> Result<()>;

    /// Run one batch: `fill` writes the token tensors (every input of
    /// [`layout`](Backend::layout) is bound, each sized for
    /// `max_batch * max_seq` elements); the batch it returns must lie within
    /// the layout's ranges. `read` then sees the outputs.
    fn run(&self, fill: &mut Fill<'_>, read: &mut Read<'_>) -> Result<()>;

    /// [`run`](Backend::run) when `read` looks only at the outputs marked in
    /// `wanted` (by position in the layout's outputs): a backend whose outputs
    /// cross from a device to the host may leave the others there and out of
    /// `read`'s [`Outputs`]. Default: `run`, every output.
    fn run_reading(&self, wanted: &[bool], fill: &mut Fill<'_>, read: &mut Read<'_>) -> Result<()> {
        let _ = wanted;
        self.run(fill, read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_rows_f32_takes_the_first_rows_in_row_major_order_and_converts() {
        let values: Vec<f16> = (0..12).map(|i| f16::from_f32(i as f32 * 0.5)).collect();
        let a = ndarray::Array::from_shape_vec(ndarray::IxDyn(&[3, 2, 2]), values).unwrap();
        let view = OutputView::F16(a.view());
        assert_eq!(view.leading_rows_f32(2), vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]);
        // More rows than there are: all of them, as to_f32 gives.
        assert_eq!(view.leading_rows_f32(5), view.to_f32().iter().copied().collect::<Vec<_>>());
        // A non-contiguous view (every other row) is read in logical order.
        let b = ndarray::Array::from_shape_vec(ndarray::IxDyn(&[4, 2]), (0..8).map(|i| i as f32).collect()).unwrap();
        let strided = b.slice_axis(Axis(0), Slice::new(0, None, 2));
        assert_eq!(OutputView::F32(strided).leading_rows_f32(2), vec![0.0, 1.0, 4.0, 5.0]);
    }
}
