//! Host and device memory for the tensors of one batch, shared by the
//! executors that stage through pinned memory (TensorRT, ONNX Runtime on
//! CUDA): the tokenizer writes into the pinned host buffer, one upload fills
//! the device buffer; outputs come back the other way.
//!
//! TensorRT's staging is [`Staged`]: buffers whose every use is ordered
//! across streams (its bindings take the [`DeviceBuffer`] itself). ONNX
//! Runtime's is `trt_cuda::StagedBuffer`: used on the session's one stream,
//! bound by address, with no event per use.

use half::{bf16, f16};
use trt_cuda::{Device, DeviceBuffer, Element, PinnedBuffer, Stream};

/// Host and device memory for one tensor of element type `T`.
pub(crate) struct Staged<T: Element> {
    pub(crate) host: PinnedBuffer<T>,
    pub(crate) device: DeviceBuffer<T>,
}

impl<T: Element> Staged<T> {
    /// `len` elements of each, zeroed.
    pub(crate) fn new(device: &Device, stream: &Stream, len: usize) -> trt_cuda::Result<Self> {
        Ok(Staged { host: PinnedBuffer::zeros(device, len)?, device: DeviceBuffer::zeros(len, stream)? })
    }
}

/// A token tensor's staging, by element type (the types: how each is held).
pub(crate) enum Tokens<I32 = Staged<i32>, I64 = Staged<i64>> {
    I32(I32),
    I64(I64),
}

/// A float output's staging, by element type (the types: how each is held).
pub(crate) enum Floats<F32 = Staged<f32>, F16 = Staged<f16>, BF16 = Staged<bf16>> {
    F32(F32),
    F16(F16),
    BF16(BF16),
}
