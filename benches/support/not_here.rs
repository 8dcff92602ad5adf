//! Whether a CUDA bench that cannot start is only on the wrong machine (no
//! CUDA driver, no such GPU, an ONNX Runtime built for the CPU alone): the
//! bench then prints why and exits 0, as `cargo bench --workspace` expects
//! of a bench without its hardware. Any other error is the bench's own and
//! still fails it. The reasons are trt-onnx's typed errors, so the checks
//! stay the library's (`trt-onnx/src/runtime/cuda.rs`), not a copy here.

/// Whether `e` says ONNX Runtime cannot run on CUDA on this machine.
pub fn cuda_not_here(e: &trt_nlp::Error) -> bool {
    matches!(
        e,
        trt_nlp::Error::Onnx(
            trt_onnx::Error::ProviderLibrary { .. } | trt_onnx::Error::CudaDriver { .. } | trt_onnx::Error::NoSuchDevice { .. }
        )
    )
}
