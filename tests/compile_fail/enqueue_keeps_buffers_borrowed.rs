// Buffers bound for an enqueue stay borrowed until the work is waited for.
fn main() -> trt::Result<()> {
    let device = trt::cuda::Device::new(0)?;
    let stream = trt::cuda::Stream::new(&device)?;
    let engine = trt::Runtime::new()?.load("model.plan")?;
    let mut context = trt::ExecutionContext::new(&engine)?;
    let mut logits = trt::cuda::DeviceBuffer::<f32>::zeros(4, &stream)?;
    let bindings = trt::Bindings::new(&stream).bind("logits", &mut logits)?;
    let pending = context.enqueue(bindings)?;
    drop(logits);
    pending.wait()
}
