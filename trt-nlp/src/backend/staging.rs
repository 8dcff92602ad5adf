//! Host and device memory for the tensors of one batch, shared by the
//! executors that stage through pinned memory (TensorRT, ONNX Runtime on
//! CUDA): the tokenizer writes into the pinned host buffer, one upload fills
//! the device buffer; outputs come back the other way.
//!
//! The element types are shared; how each tensor is held is the executor's:
//! TensorRT's `tensorrt::Staged` holds buffers whose every use is ordered
//! across streams (its bindings take the `DeviceBuffer` itself), ONNX
//! Runtime's `trt_cuda::StagedBuffer` is used on the session's one stream,
//! bound by address, with no event per use.

/// A token tensor's staging, by element type (the types: how each is held).
pub(crate) enum Tokens<I32, I64> {
    I32(I32),
    I64(I64),
}

/// A float output's staging, by element type (the types: how each is held).
pub(crate) enum Floats<F32, F16, BF16> {
    F32(F32),
    F16(F16),
    BF16(BF16),
}

/// The first elements of a staged output's host copy as an array of `shape`
/// (what both executors hand to the read callback).
pub(crate) fn output_view<'a, T>(data: &'a [T], shape: &[usize]) -> crate::Result<ndarray::ArrayViewD<'a, T>> {
    ndarray::ArrayViewD::from_shape(ndarray::IxDyn(shape), data)
        .map_err(|source| crate::Error::ArrayShape { what: format!("output of shape {shape:?}"), source })
}
