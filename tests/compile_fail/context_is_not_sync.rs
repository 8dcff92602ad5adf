// An execution context is used by one thread at a time: Send, not Sync.
fn needs_sync<T: Sync>() {}
fn main() {
    needs_sync::<trt::ExecutionContext>();
}
