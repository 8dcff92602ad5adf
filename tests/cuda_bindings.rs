//! Tests of `trt`'s own types over `trt::cuda` buffers and streams (the
//! buffers themselves are tested in tests/cuda.rs, in `trt-cuda`).

use half::{bf16, f16};
use std::time::Duration;
use trt::cuda::{Device, DeviceBuffer, Element, Event, PinnedBuffer, Stream, StreamGate};
use trt::DataType;

fn gpu() -> (Device, Stream) {
    let device = Device::new(0).expect("open CUDA device 0");
    let stream = Stream::new(&device).expect("create a stream");
    (device, stream)
}

#[test]
fn element_types_map_to_tensorrt_dtypes() {
    fn check<T: Element>(dtype: DataType) {
        assert_eq!(trt::DataType::from(T::DTYPE), dtype, "{}", std::any::type_name::<T>());
        assert_eq!(std::mem::size_of::<T>() * 8, dtype.bits());
    }
    check::<f32>(DataType::Float);
    check::<f16>(DataType::Half);
    check::<bf16>(DataType::BF16);
    check::<i32>(DataType::Int32);
    check::<i64>(DataType::Int64);
    check::<i8>(DataType::Int8);
    check::<u8>(DataType::Uint8);
    check::<bool>(DataType::Bool);
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn bindings_order_their_stream_after_the_buffers_earlier_uses() {
    // What an enqueue and a graph capture's warm-up enqueue
    // rely on: binding a buffer makes the bindings' stream wait for the
    // buffer's earlier work on any stream.
    let (device, a) = gpu();
    let b = Stream::new(&device).unwrap();
    let mut host = PinnedBuffer::<f32>::from_slice(&device, &[1.0; 1024]).unwrap();
    let mut x = DeviceBuffer::<f32>::zeros(1024, &a).unwrap();
    a.synchronize().unwrap();
    let gate = StreamGate::close(&a, Duration::from_secs(10)).unwrap();
    x.copy_from_pinned(&mut host, &a).unwrap(); // queued behind the gate
    let bindings = trt::Bindings::new(&b).bind("x", &mut x).unwrap();
    let bound = Event::without_timing(&device).unwrap();
    bound.record(bindings.stream()).unwrap();
    assert!(gate.holds_back(&bound, Duration::from_millis(50)).unwrap(), "the bindings' stream did not wait for the upload");
    gate.open();
    bound.synchronize().unwrap();
    drop(bindings);
    assert_eq!(x.to_vec(&b).unwrap(), vec![1.0; 1024]);
}
