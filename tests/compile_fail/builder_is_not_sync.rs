// TensorRT builders are not thread-safe: Send, not Sync.
fn needs_sync<T: Sync>() {}
fn main() {
    needs_sync::<trt::Builder>();
}
