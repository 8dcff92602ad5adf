//! Tests of `trt-cuda` (also reached as `trt::cuda`); those of `trt`'s own
//! types over its buffers are in tests/cuda_bindings.rs.
//!
//! Tests marked `#[ignore = "needs a CUDA GPU ..."]` need a GPU and a driver:
//! run them on the GPU host with `--include-ignored`. The others run anywhere
//! and check what happens without a driver (or, where a driver is present,
//! the opposite).

use half::{bf16, f16};
use std::time::Duration;
use trt_cuda::{
    device_count, driver_available, driver_version, is_capture_error, CaptureMode, CudaGraph, Device, DeviceBuffer, Element, Event,
    GraphResource, HostWait, PinnedBuffer, Pool, StagedBuffer, Stream, StreamGate, DEVICE_ALIGNMENT,
};
use trt_cuda::{ElementType, Error};

fn gpu() -> (Device, Stream) {
    let device = Device::new(0).expect("open CUDA device 0");
    let stream = Stream::new(&device).expect("create a stream");
    (device, stream)
}

// ---------------------------------------------------------------------------
// Tests that run everywhere.
// ---------------------------------------------------------------------------

#[test]
fn without_driver_everything_is_cuda_unavailable_and_nothing_panics() {
    let available = driver_available();
    if !available {
        match Device::new(0) {
            Err(Error::CudaUnavailable(msg)) => {
                println!("no driver here: {msg}");
                assert!(msg.contains("could not be loaded"), "unclear message: {msg}");
                assert!(msg.contains("libcuda"), "message should name the library: {msg}");
                assert!(msg.contains("LD_LIBRARY_PATH"), "message should say how to fix it: {msg}");
            }
            Err(other) => panic!("expected Error::CudaUnavailable, got {other}"),
            Ok(_) => panic!("Device::new(0) succeeded although driver_available() is false"),
        }
        assert!(matches!(device_count(), Err(Error::CudaUnavailable(_))));
        assert!(matches!(driver_version(), Err(Error::CudaUnavailable(_))));
        // A second call gives the same answer (the check is cached, not re-panicking).
        assert!(!driver_available());
    } else {
        let n = device_count().expect("device_count with a working driver");
        let (major, _) = driver_version().expect("driver_version with a working driver");
        assert!(major >= 11, "driver reports CUDA {major}");
        if n > 0 {
            let d = Device::new(0).expect("driver present and a device: Device::new(0) must work");
            assert_eq!(d.ordinal(), 0);
            assert!(matches!(Device::new(n), Err(Error::InvalidArgument(_))));
        } else {
            assert!(matches!(Device::new(0), Err(Error::CudaUnavailable(_))));
        }
    }
}

#[test]
fn element_types() {
    fn check<T: Element>(dtype: ElementType) {
        assert_eq!(T::DTYPE, dtype, "{}", std::any::type_name::<T>());
        assert_eq!(std::mem::size_of::<T>() * 8, T::DTYPE.bits());
    }
    check::<f32>(ElementType::F32);
    check::<f16>(ElementType::F16);
    check::<bf16>(ElementType::BF16);
    check::<i32>(ElementType::I32);
    check::<i64>(ElementType::I64);
    check::<i8>(ElementType::I8);
    check::<u8>(ElementType::U8);
    check::<bool>(ElementType::Bool);
}

#[test]
fn thread_safety_markers() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Device>();
    send_sync::<Stream>();
    send_sync::<Event>();
    send_sync::<DeviceBuffer<f32>>();
    send_sync::<DeviceBuffer<bool>>();
    send_sync::<PinnedBuffer<f16>>();
    send_sync::<PinnedBuffer<bool>>();
    send_sync::<StagedBuffer<i64>>();
    send::<CudaGraph>();
    send::<Box<dyn GraphResource>>();
    assert_eq!(CaptureMode::default(), CaptureMode::ThreadLocal);
    assert_eq!(DEVICE_ALIGNMENT, 256);
}

#[test]
fn capture_errors_are_recognised() {
    use cudarc::driver::{sys::CUresult, DriverError};
    // (Not formatted: formatting a DriverError asks the driver for its message.)
    let capture = Error::Cuda { operation: "cuStreamEndCapture", source: DriverError(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) };
    let unsupported =
        Error::Cuda { operation: "cuStreamSynchronize", source: DriverError(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) };
    let oom = Error::Cuda { operation: "cuMemAllocAsync", source: DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY) };
    assert!(is_capture_error(&capture));
    assert!(is_capture_error(&unsupported));
    assert!(!is_capture_error(&oom));
    assert!(!is_capture_error(&Error::InvalidArgument("x".into())));
}

#[test]
fn without_driver_no_device_is_current() {
    if driver_available() {
        println!("a driver is here: the GPU test current_device_is_the_one_bound_on_this_thread covers it");
        return;
    }
    assert!(Device::current().is_err_and(|e| matches!(e, Error::CudaUnavailable(_))));
}

// ---------------------------------------------------------------------------
// GPU tests.
// ---------------------------------------------------------------------------

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn current_device_is_the_one_bound_on_this_thread() {
    let last = device_count().unwrap() - 1;
    // A fresh thread has no context current until one is bound.
    let (before, after) = std::thread::spawn(move || {
        let before = Device::current().unwrap();
        Device::new(last).unwrap().bind().unwrap();
        (before.map(|d| d.ordinal()), Device::current().unwrap().map(|d| d.ordinal()))
    })
    .join()
    .unwrap();
    assert_eq!((before, after), (None, Some(last)));
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn device_query() {
    let n = device_count().unwrap();
    assert!(n >= 1);
    let (device, _stream) = gpu();
    let name = device.name().unwrap();
    let (major, minor) = device.compute_capability().unwrap();
    let total = device.total_memory().unwrap();
    let (free, total2) = device.memory_info().unwrap();
    let (dmaj, dmin) = driver_version().unwrap();
    println!(
        "device 0 of {n}: {name}, compute capability {major}.{minor}, {:.1} GiB total, \
         {:.1} GiB free, driver CUDA {dmaj}.{dmin}",
        total as f64 / (1u64 << 30) as f64,
        free as f64 / (1u64 << 30) as f64
    );
    assert!(!name.is_empty());
    assert!(major >= 5, "compute capability {major}.{minor}");
    assert!(total > (1 << 30));
    assert_eq!(total, total2);
    assert!(free > 0 && free <= total);
    assert!(device.free_memory().unwrap() <= total);
    assert_eq!(Device::new(0).unwrap(), device, "two handles of the same primary context");
    // Identity that outlives ordinals: every visible GPU has its own UUID and bus id.
    let mut seen = std::collections::HashSet::new();
    for i in 0..n {
        let d = Device::new(i).unwrap();
        let (uuid, bus) = (d.uuid().unwrap(), d.pci_bus_id().unwrap());
        println!("device {i}: {uuid} at PCI {bus}");
        assert!(uuid.starts_with("GPU-") && uuid.len() == 40, "{uuid}");
        assert!(bus.contains(':'), "{bus}");
        assert!(seen.insert(uuid), "two devices share a UUID");
    }
    device.synchronize().unwrap();
    device.check_deferred_error().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn buffer_alloc_zeros_and_alignment() {
    let (device, stream) = gpu();
    for len in [0usize, 1, 3, 255, 1000, 4097, 1 << 20] {
        let mut b = DeviceBuffer::<u8>::zeros(len, &stream).unwrap();
        assert_eq!(b.len(), len);
        assert_eq!(b.size_in_bytes(), len);
        assert_eq!(b.dtype(), ElementType::U8);
        assert!(b.is_aligned(DEVICE_ALIGNMENT), "len {len}: address {:#x}", b.address());
        assert_eq!(b.address() % 256, 0);
        assert!(b.to_vec(&stream).unwrap().iter().all(|&x| x == 0));
    }
    let mut f = DeviceBuffer::<f32>::zeros(12345, &stream).unwrap();
    assert_eq!(f.size_in_bytes(), 12345 * 4);
    assert!(f.to_vec(&stream).unwrap().iter().all(|&x| x == 0.0));
    f.copy_from_host(&vec![7.0; 12345], &stream).unwrap();
    f.fill_zeros(&stream).unwrap();
    assert!(f.to_vec(&stream).unwrap().iter().all(|&x| x == 0.0));
    // Too long a source is an error, not a panic.
    assert!(matches!(f.copy_from_host(&vec![0.0; 12346], &stream), Err(Error::InvalidArgument(_))));
    // An absurd size is an error, not a panic or a wrapped multiplication.
    assert!(matches!(DeviceBuffer::<i64>::zeros(usize::MAX / 4, &stream), Err(Error::InvalidArgument(_))));
    device.check_deferred_error().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn pinned_memory() {
    let (device, _stream) = gpu();
    let mut p = PinnedBuffer::<i32>::zeros(&device, 1000).unwrap();
    assert_eq!(p.len(), 1000);
    assert!(!p.is_write_combined());
    assert!(p.as_slice().unwrap().iter().all(|&x| x == 0));
    for (i, x) in p.as_mut_slice().unwrap().iter_mut().enumerate() {
        *x = i as i32 * 3;
    }
    assert_eq!(p.as_slice().unwrap()[999], 2997);
    p.copy_from_slice(&[-1, -2]).unwrap();
    assert_eq!(&p.to_vec().unwrap()[..3], &[-1, -2, 6]);
    assert!(matches!(p.copy_from_slice(&vec![0; 1001]), Err(Error::InvalidArgument(_))));
    let q = PinnedBuffer::<f16>::from_slice(&device, &[f16::from_f32(1.5); 7]).unwrap();
    assert_eq!(q.as_slice().unwrap(), &[f16::from_f32(1.5); 7]);
    assert_eq!(q.as_bytes().unwrap().len(), 14);
    let mut wc = PinnedBuffer::<u8>::zeros_write_combined(&device, 64).unwrap();
    assert!(wc.is_write_combined());
    wc.as_mut_slice().unwrap().fill(9);
    assert_eq!(wc.as_slice().unwrap(), &[9u8; 64]);
    let empty = PinnedBuffer::<bool>::zeros(&device, 0).unwrap();
    assert!(empty.is_empty() && empty.as_slice().unwrap().is_empty());
}

/// Upload and download `values` through every path and check the values.
fn roundtrip<T: Element>(device: &Device, stream: &Stream, values: &[T]) {
    let ty = std::any::type_name::<T>();
    let n = values.len();
    // Asynchronous: pinned -> device -> pinned.
    let mut src = PinnedBuffer::from_slice(device, values).unwrap();
    let mut gpu = DeviceBuffer::<T>::zeros(n, stream).unwrap();
    assert_eq!(gpu.dtype(), T::DTYPE);
    gpu.copy_from_pinned(&mut src, stream).unwrap();
    // Overwriting the source right away must not change what was uploaded:
    // as_mut_slice waits for the upload.
    src.as_mut_slice().unwrap().fill(T::default());
    let mut dst = PinnedBuffer::<T>::zeros(device, n).unwrap();
    gpu.copy_to_pinned(&mut dst, stream).unwrap();
    assert_eq!(dst.as_slice().unwrap(), values, "{ty}: pinned round trip");
    // Blocking: slice -> device -> Vec / slice.
    let mut gpu2 = DeviceBuffer::from_slice(values, stream).unwrap();
    assert_eq!(gpu2.to_vec(stream).unwrap(), values, "{ty}: slice round trip");
    let mut out = vec![T::default(); n];
    gpu2.copy_to_host(&mut out, stream).unwrap();
    assert_eq!(out, values, "{ty}: copy_to_host");
    // Partial copies.
    let mut part = PinnedBuffer::<T>::zeros(device, n / 2).unwrap();
    gpu2.copy_to_pinned_n(&mut part, n / 2, stream).unwrap();
    assert_eq!(part.as_slice().unwrap(), &values[..n / 2], "{ty}: partial download");
    assert!(matches!(gpu2.copy_to_pinned(&mut part, stream), Err(Error::InvalidArgument(_))));
    println!("round trip ok: {ty} x {n}");
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn async_copies_every_element_type() {
    let (device, stream) = gpu();
    let n = 10_000usize;
    roundtrip(&device, &stream, &(0..n).map(|i| i as f32 * 0.5 - 1000.25).collect::<Vec<_>>());
    roundtrip(&device, &stream, &(0..n).map(|i| f16::from_f32((i % 2000) as f32 * 0.25 - 100.0)).collect::<Vec<_>>());
    roundtrip(&device, &stream, &(0..n).map(|i| bf16::from_f32(i as f32 * -3.0)).collect::<Vec<_>>());
    roundtrip(&device, &stream, &(0..n).map(|i| i as i32 * 7919 - 5_000_000).collect::<Vec<_>>());
    roundtrip(&device, &stream, &(0..n).map(|i| (i as i64) << 40 | i as i64).collect::<Vec<_>>());
    roundtrip(&device, &stream, &(0..n).map(|i| (i % 256) as u8 as i8).collect::<Vec<_>>());
    roundtrip(&device, &stream, &(0..n).map(|i| (i * 31 % 256) as u8).collect::<Vec<_>>());
    roundtrip(&device, &stream, &(0..n).map(|i| i % 3 == 0).collect::<Vec<_>>());
    device.check_deferred_error().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn staged_buffers_order_their_copies_on_their_stream() {
    let (device, spinning) = gpu();
    assert_eq!(spinning.host_wait(), HostWait::Spin);
    let blocking = Stream::with_host_wait(&device, HostWait::Block).unwrap();
    assert_eq!(blocking.host_wait(), HostWait::Block);
    for stream in [spinning, blocking] {
        staged_round_trips(&stream);
        println!("staged round trips ok with {:?} host waits", stream.host_wait());
    }
}

fn staged_round_trips(stream: &Stream) {
    // 64 MiB: each copy takes long enough that a host view that did not wait
    // for it would see (or make) a half-done copy.
    let n = 16 << 20;
    let mut a = StagedBuffer::<f32>::zeros(n, stream).unwrap();
    let mut b = StagedBuffer::<i64>::zeros(1000, stream).unwrap();
    assert_eq!((a.len(), b.len()), (n, 1000));
    assert!(a.device_address().is_multiple_of(DEVICE_ALIGNMENT as u64));
    assert!(a.host().unwrap().iter().all(|&x| x == 0.0));
    for (i, x) in a.host_mut().unwrap().iter_mut().enumerate() {
        *x = i as f32;
    }
    b.host_mut().unwrap().iter_mut().enumerate().for_each(|(i, x)| *x = -(i as i64) << 33);
    a.upload(n).unwrap();
    b.upload(1000).unwrap();
    // Waits for the upload before the host overwrites what it reads.
    a.host_mut().unwrap().fill(-1.0);
    b.host_mut().unwrap().fill(0);
    a.download(n).unwrap();
    b.download(500).unwrap();
    // Each view waits for its download (the second covered by the first's wait).
    assert!(a.host().unwrap().iter().enumerate().all(|(i, &x)| x == i as f32), "f32 x {n}: staged round trip");
    let back = b.host().unwrap();
    assert!(back[..500].iter().enumerate().all(|(i, &x)| x == -(i as i64) << 33), "i64: the partial download");
    assert!(back[500..].iter().all(|&x| x == 0), "i64: past the partial download, the host is untouched");
    assert!(matches!(a.upload(n + 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(b.download(1001), Err(Error::InvalidArgument(_))));
    // A copy still in flight when the buffer is dropped: the drop waits for it.
    a.upload(n).unwrap();
    drop(a);
    let empty = StagedBuffer::<bool>::zeros(0, stream).unwrap();
    assert!(empty.is_empty() && empty.host().unwrap().is_empty());
    stream.device().check_deferred_error().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn invalid_bool_bytes_are_reported_not_read() {
    let (device, stream) = gpu();
    let mut gpu = DeviceBuffer::<bool>::zeros(16, &stream).unwrap();
    {
        // Foreign GPU code writing 2 into a bool tensor (breaking kBOOL's contract).
        let g = gpu.device_ptr(&stream).unwrap();
        unsafe { cudarc::driver::result::memset_d8_async(g.address(), 2, 16, stream.as_raw()) }.unwrap();
    }
    match gpu.to_vec(&stream) {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains("element 0 holds 2"), "{msg}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    let mut host = vec![true; 16];
    assert!(gpu.copy_to_host(&mut host, &stream).is_err());
    assert_eq!(host, vec![true; 16], "the caller's bools are untouched");
    let mut pinned = PinnedBuffer::<bool>::zeros(&device, 16).unwrap();
    gpu.copy_to_pinned(&mut pinned, &stream).unwrap();
    assert!(matches!(pinned.as_slice(), Err(Error::InvalidArgument(_))));
    assert!(matches!(pinned.as_mut_slice(), Err(Error::InvalidArgument(_))));
    assert!(matches!(pinned.as_array(&[4, 4]), Err(Error::InvalidArgument(_))));
    assert_eq!(pinned.as_bytes().unwrap(), &[2u8; 16]);
    gpu.fill_zeros(&stream).unwrap();
    gpu.copy_to_pinned(&mut pinned, &stream).unwrap();
    assert_eq!(pinned.as_slice().unwrap(), &[false; 16]);
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn device_to_device_copy() {
    let (device, stream) = gpu();
    let other = Stream::new(&device).unwrap();
    let data: Vec<i64> = (0..100_000).map(|i| i * i).collect();
    let mut a = DeviceBuffer::from_slice(&data, &stream).unwrap();
    let mut b = DeviceBuffer::<i64>::zeros(100_000, &other).unwrap();
    // Copy on a third stream: it must wait for `a`'s upload and `b`'s memset.
    let third = Stream::new(&device).unwrap();
    b.copy_from_device(&mut a, &third).unwrap();
    a.fill_zeros(&stream).unwrap(); // must wait for the copy that reads `a`
    assert_eq!(b.to_vec(&other).unwrap(), data);
    assert!(a.to_vec(&stream).unwrap().iter().all(|&x| x == 0));
    let mut small = DeviceBuffer::<i64>::zeros(10, &stream).unwrap();
    assert!(matches!(small.copy_from_device(&mut b, &stream), Err(Error::InvalidArgument(_))));
    b.copy_from_device(&mut small, &stream).unwrap(); // prefix
    let v = b.to_vec(&stream).unwrap();
    assert!(v[..10].iter().all(|&x| x == 0));
    assert_eq!(v[10..], data[10..]);
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn events_time_a_copy() {
    let (device, stream) = gpu();
    let n = 64 << 20;
    let mut host = PinnedBuffer::<u8>::zeros(&device, n).unwrap();
    host.as_mut_slice().unwrap().fill(0x5a);
    let mut gpu = DeviceBuffer::<u8>::zeros(n, &stream).unwrap();
    gpu.copy_from_pinned(&mut host, &stream).unwrap(); // warm-up
    let start = Event::new(&device).unwrap();
    let end = Event::new(&device).unwrap();
    start.record(&stream).unwrap();
    gpu.copy_from_pinned(&mut host, &stream).unwrap();
    end.record(&stream).unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(end.is_complete().unwrap());
    assert!(ms > 0.0, "elapsed {ms} ms");
    println!("64 MiB pinned upload: {ms:.3} ms = {:.1} GiB/s", 64.0 / 1024.0 / (ms as f64 / 1000.0));
    // Waiting on an event from another stream.
    let other = Stream::new(&device).unwrap();
    let sync = Event::without_timing(&device).unwrap();
    sync.record(&stream).unwrap();
    other.wait(&sync).unwrap();
    other.synchronize().unwrap();
    sync.synchronize().unwrap();
    // A timing query on a no-timing event fails with an error, not a panic.
    assert!(sync.elapsed_ms(&end).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn a_stream_gate_holds_later_work_until_opened() {
    let (device, stream) = gpu();
    let gate = StreamGate::close(&stream, Duration::from_secs(10)).unwrap();
    let after = Event::without_timing(&device).unwrap();
    after.record(&stream).unwrap();
    assert!(gate.holds_back(&after, Duration::from_millis(50)).unwrap(), "work passed a closed gate");
    gate.open();
    after.synchronize().unwrap();
    // A dropped gate opens too; a forgotten one stops by itself after its limit.
    let gate = StreamGate::close(&stream, Duration::from_secs(10)).unwrap();
    drop(gate);
    stream.synchronize().unwrap();
    std::mem::forget(StreamGate::close(&stream, Duration::from_millis(100)).unwrap());
    stream.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn ndarray_views_and_shape_mismatch() {
    let (device, stream) = gpu();
    let data: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let mut p = PinnedBuffer::from_slice(&device, &data).unwrap();
    {
        let a = p.as_array(&[2, 3, 4]).unwrap();
        assert_eq!(a.shape(), &[2, 3, 4]);
        assert_eq!(a[[1, 2, 3]], 23.0);
        assert_eq!(a[[1, 0, 0]], 12.0);
    }
    {
        let mut m = p.as_array_mut(&[4, 6]).unwrap();
        m[[3, 5]] = -1.0;
        m.index_axis_mut(ndarray::Axis(0), 0).fill(100.0);
    }
    assert_eq!(p.as_slice().unwrap()[23], -1.0);
    assert_eq!(p.as_slice().unwrap()[..6], [100.0; 6]);
    match p.as_array(&[5, 5]) {
        Err(Error::ShapeMismatch { tensor, expected, got }) => {
            assert!(tensor.contains("PinnedBuffer<f32>[24]"), "{tensor}");
            assert!(expected.contains("24"), "{expected}");
            assert!(got.contains("25"), "{got}");
        }
        other => panic!("expected ShapeMismatch, got {other:?}"),
    }
    assert!(matches!(p.as_array_mut(&[24, 2]), Err(Error::ShapeMismatch { .. })));
    assert!(matches!(p.as_array(&[usize::MAX, 2]), Err(Error::ShapeMismatch { .. })));
    assert!(matches!(p.as_array(&[]), Err(Error::ShapeMismatch { .. })));
    let one = PinnedBuffer::<i8>::from_slice(&device, &[-5]).unwrap();
    assert_eq!(one.as_array(&[]).unwrap().iter().copied().collect::<Vec<_>>(), [-5]);
    // A view of data a GPU copy wrote: the view waits for the copy.
    let mut gpu = DeviceBuffer::from_slice(&data, &stream).unwrap();
    gpu.copy_to_pinned(&mut p, &stream).unwrap();
    assert_eq!(p.as_array(&[6, 4]).unwrap()[[5, 3]], 23.0);
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn graph_capture_and_replay_of_copies() {
    let (device, stream) = gpu();
    let other = Stream::new(&device).unwrap();
    let n = 1 << 16;
    let mut h_in = PinnedBuffer::<f32>::zeros(&device, n).unwrap();
    let mut d_a = DeviceBuffer::<f32>::zeros(n, &stream).unwrap();
    let mut d_b = DeviceBuffer::<f32>::zeros(n, &stream).unwrap();
    let mut h_out = PinnedBuffer::<f32>::zeros(&device, n).unwrap();
    let mut graph = CudaGraph::capture(&device, |g| {
        g.copy_pinned_to_device(&h_in, &d_a)?;
        g.copy_device_to_device(&d_a, &d_b)?;
        g.copy_device_to_pinned(&d_b, &h_out)
    })
    .unwrap();
    assert_eq!(graph.resources().len(), 4, "{:?}", graph.resources());
    // Capture ran nothing.
    assert!(h_out.as_slice().unwrap().iter().all(|&x| x == 0.0));
    graph.upload(&stream).unwrap();
    for round in 0..3usize {
        let s = if round == 1 { &other } else { &stream }; // replays on two streams
        for (i, x) in h_in.as_mut_slice().unwrap().iter_mut().enumerate() {
            *x = (round * 100_000 + i) as f32;
        }
        graph.launch(s, &mut [&mut h_in, &mut d_a, &mut d_b, &mut h_out]).unwrap();
        // No explicit synchronization: the host view waits for the launch.
        let out = h_out.as_slice().unwrap();
        assert!(out.iter().enumerate().all(|(i, &x)| x == (round * 100_000 + i) as f32), "round {round}: first values {:?}", &out[..4]);
        println!("graph replay {round} on stream {} ok", if round == 1 { "B" } else { "A" });
    }
    assert_eq!(d_b.to_vec(&other).unwrap()[n - 1], (200_000 + n - 1) as f32);
    // Every buffer must be passed.
    match graph.launch(&stream, &mut [&mut h_in, &mut d_a]) {
        Err(Error::InvalidArgument(msg)) => {
            assert!(msg.contains("DeviceBuffer<f32>[65536]") && msg.contains("PinnedBuffer<f32>[65536]"), "{msg}")
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // A dropped buffer cannot be passed, so the graph cannot run into freed memory.
    drop(d_b);
    assert!(graph.launch(&stream, &mut [&mut h_in, &mut d_a, &mut h_out]).is_err());
    drop(graph);
    device.check_deferred_error().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn graph_capture_failures_are_typed_errors() {
    let (device, stream) = gpu();
    // An operation stream capture does not support: synchronizing the capturing stream.
    let err = CudaGraph::capture(&device, |g| {
        let raw = unsafe { g.raw_stream() };
        let r = unsafe { cudarc::driver::sys::cuStreamSynchronize(raw) };
        println!("cuStreamSynchronize during capture returned {r:?}");
        Ok(())
    })
    .unwrap_err();
    println!("capture failure: {err}");
    assert!(is_capture_error(&err), "{err}");
    // An error from the closure is returned as is and leaves no capture running.
    let small = DeviceBuffer::<u8>::zeros(4, &stream).unwrap();
    let pinned = PinnedBuffer::<u8>::zeros(&device, 8).unwrap();
    let err = CudaGraph::capture_with_mode(&device, CaptureMode::Global, |g| g.copy_pinned_to_device(&pinned, &small)).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(!is_capture_error(&err));
    // The device still works, and so does a later capture.
    let mut x = DeviceBuffer::from_slice(&[1u8, 2, 3], &stream).unwrap();
    assert_eq!(x.to_vec(&stream).unwrap(), [1, 2, 3]);
    let mut g = CudaGraph::capture(&device, |g| g.fill_zeros(&x)).unwrap();
    g.launch(&stream, &mut [&mut x]).unwrap();
    assert_eq!(x.to_vec(&stream).unwrap(), [0, 0, 0]);
    device.check_deferred_error().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn eight_threads_with_their_own_streams() {
    let (device, _stream) = gpu();
    let n = 1 << 18;
    std::thread::scope(|scope| {
        for t in 0..8i32 {
            let device = device.clone();
            scope.spawn(move || {
                let stream = Stream::new(&device).unwrap();
                let mut up = PinnedBuffer::<i32>::zeros(&device, n).unwrap();
                let mut down = PinnedBuffer::<i32>::zeros(&device, n).unwrap();
                let mut a = DeviceBuffer::<i32>::zeros(n, &stream).unwrap();
                let mut b = DeviceBuffer::<i32>::zeros(n, &stream).unwrap();
                for it in 0..25i32 {
                    let base = t * 1_000_000 + it * 10_000;
                    for (i, x) in up.as_mut_slice().unwrap().iter_mut().enumerate() {
                        *x = base + (i as i32 % 10_000);
                    }
                    a.copy_from_pinned(&mut up, &stream).unwrap();
                    b.copy_from_device(&mut a, &stream).unwrap();
                    b.copy_to_pinned(&mut down, &stream).unwrap();
                    let got = down.as_slice().unwrap();
                    assert!(got.iter().enumerate().all(|(i, &x)| x == base + (i as i32 % 10_000)), "thread {t} iteration {it}");
                }
            });
        }
    });
    device.check_deferred_error().unwrap();
    println!("8 threads x 25 iterations of {n} i32 ok");
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn buffers_outlive_their_stream_and_device_handles() {
    let (device, stream) = gpu();
    let mut buffer = DeviceBuffer::from_slice(&[1.0f32, 2.0, 3.0], &stream).unwrap();
    let mut pinned = PinnedBuffer::<f32>::zeros(&device, 3).unwrap();
    buffer.copy_to_pinned(&mut pinned, &stream).unwrap();
    drop(stream);
    drop(device);
    // The buffer keeps its allocation stream and context alive.
    let device = Device::new(0).unwrap();
    let stream = Stream::new(&device).unwrap();
    assert_eq!(buffer.to_vec(&stream).unwrap(), [1.0, 2.0, 3.0]);
    assert_eq!(pinned.as_slice().unwrap(), &[1.0, 2.0, 3.0]);
    // Drop a buffer while a copy that uses it may still be running.
    let mut big = DeviceBuffer::<u8>::zeros(32 << 20, &stream).unwrap();
    let mut host = PinnedBuffer::<u8>::zeros(&device, 32 << 20).unwrap();
    big.copy_to_pinned(&mut host, &stream).unwrap();
    drop(big);
    drop(host); // waits for the copy
    drop(buffer);
    drop(pinned);
    stream.synchronize().unwrap();
    device.check_deferred_error().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
fn no_memory_is_kept_after_drops() {
    let (device, stream) = gpu();
    device.synchronize().unwrap();
    let before = device.free_memory().unwrap();
    for round in 0..20 {
        let other = Stream::new(&device).unwrap();
        let mut a = DeviceBuffer::<f32>::zeros(64 << 20, &stream).unwrap(); // 256 MiB
        let mut b = DeviceBuffer::<f32>::zeros(64 << 20, &other).unwrap();
        let mut p = PinnedBuffer::<f32>::zeros(&device, 1 << 20).unwrap();
        b.copy_from_device(&mut a, &other).unwrap();
        let mut g = CudaGraph::capture(&device, |g| {
            g.fill_zeros(&b)?;
            g.copy_pinned_to_device(&p, &a)
        })
        .unwrap();
        g.launch(&stream, &mut [&mut a, &mut b, &mut p]).unwrap();
        if round % 2 == 0 {
            drop(g); // while the launch may still run
        }
    }
    device.synchronize().unwrap();
    let after = device.free_memory().unwrap();
    println!("free device memory before {} MiB, after 20 rounds of 2 x 256 MiB: {} MiB", before >> 20, after >> 20);
    assert!(after + (64 << 20) >= before, "lost {} MiB", (before - after) >> 20);
    device.check_deferred_error().unwrap();
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
    let pool = Pool::from_items(items);
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
