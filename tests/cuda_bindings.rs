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

/// The pool under `ContextPool`, checked out from many threads, each item a
/// stream with its buffers doing real copies (no TensorRT engine can run here,
/// so execution contexts themselves are exercised in tests/execution.rs).
#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn pool_checkout_from_many_threads() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (device, _stream) = gpu();
    let n = 1 << 16;
    let items: Vec<_> = (0..3)
        .map(|_| {
            let stream = Stream::new(&device).unwrap();
            let buf = DeviceBuffer::<i32>::zeros(n, &stream).unwrap();
            let pinned = PinnedBuffer::<i32>::zeros(&device, n).unwrap();
            (stream, buf, pinned, 0usize)
        })
        .collect();
    let pool = trt::Pool::from_items(items);
    let in_use = AtomicUsize::new(0);
    let max_in_use = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for t in 0..12i32 {
            let (pool, in_use, max_in_use) = (&pool, &in_use, &max_in_use);
            scope.spawn(move || {
                for it in 0..20i32 {
                    let mut item = pool.checkout();
                    let now = in_use.fetch_add(1, Ordering::SeqCst) + 1;
                    max_in_use.fetch_max(now, Ordering::SeqCst);
                    let (stream, buf, pinned, uses) = &mut *item;
                    let v = t * 1000 + it;
                    pinned.as_mut_slice().unwrap().fill(v);
                    buf.copy_from_pinned(pinned, stream).unwrap();
                    pinned.as_mut_slice().unwrap().fill(-1);
                    buf.copy_to_pinned(pinned, stream).unwrap();
                    assert!(pinned.as_slice().unwrap().iter().all(|&x| x == v), "thread {t} iteration {it}");
                    *uses += 1;
                    in_use.fetch_sub(1, Ordering::SeqCst);
                }
            });
        }
    });
    assert!(max_in_use.load(Ordering::SeqCst) <= 3, "more items out than the pool holds");
    let all: Vec<_> = (0..3).map(|_| pool.try_checkout().expect("every item returned")).collect();
    assert!(pool.try_checkout().is_none());
    let total: usize = all.iter().map(|item| item.3).sum();
    assert_eq!(total, 12 * 20);
    println!("pool: 12 threads x 20 checkouts over 3 items, max {} out at once, {total} uses counted", max_in_use.load(Ordering::SeqCst));
}
