// A captured graph owns its execution context and offers no way to change it:
// the state it was captured with is the state it replays with.
fn main() -> trt::Result<()> {
    let device = trt::cuda::Device::new(0)?;
    let stream = trt::cuda::Stream::new(&device)?;
    let engine = trt::Runtime::new()?.load("model.plan")?;
    let mut context = trt::ExecutionContext::new(&engine)?;
    let mut x = trt::cuda::DeviceBuffer::<f32>::zeros(4, &stream)?;
    let graph = context.capture_graph(trt::Bindings::new(&stream).bind("x", &mut x)?)?;
    graph.context().set_input_shape("x", &[2, 2])
}
