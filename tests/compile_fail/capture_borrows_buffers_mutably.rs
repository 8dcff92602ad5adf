// The warm-up enqueue of a capture writes the bound buffers: they are borrowed
// mutably, so nothing else can read them meanwhile.
fn main() -> trt::Result<()> {
    let device = trt::cuda::Device::new(0)?;
    let stream = trt::cuda::Stream::new(&device)?;
    let engine = trt::Runtime::new()?.load("model.plan")?;
    let mut context = trt::ExecutionContext::new(&engine)?;
    let mut x = trt::cuda::DeviceBuffer::<f32>::zeros(4, &stream)?;
    let bindings = trt::Bindings::new(&stream).bind("x", &mut x)?;
    let seen = x.len();
    let _graph = context.capture_graph(bindings)?;
    println!("{seen}");
    Ok(())
}
