// CUDA graph objects are not internally synchronized: Send, not Sync.
fn needs_sync<T: Sync>() {}
fn main() {
    needs_sync::<trt::cuda::CudaGraph>();
}
