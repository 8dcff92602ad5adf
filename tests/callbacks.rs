//! Rust callbacks called from C++ never unwind into TensorRT: a panicking
//! logger loses its message, a panicking progress monitor fails the build with
//! a typed error, a panicking profiler is reported as an error. (Process-global
//! logger: its own test binary.)

mod common;

use common::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use trt::logger::{Logger, Severity};
use trt::{Builder, Error, OnnxParser, ProfileSpec, ShapeRange};

struct Panicking(Arc<AtomicUsize>);

impl Logger for Panicking {
    fn log(&self, _severity: Severity, _message: &str) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("logger panics on purpose");
    }
}

struct PanickingProgress;

impl trt::ProgressCallbacks for PanickingProgress {
    fn phase_start(&mut self, _phase: &str, _parent: &str, _steps: i32) {
        panic!("progress monitor panics on purpose");
    }
    fn step_complete(&mut self, _phase: &str, _step: i32) -> bool {
        true
    }
    fn phase_finish(&mut self, _phase: &str) {}
}

#[test]
fn panicking_callbacks_do_not_cross_into_tensorrt() {
    let calls = Arc::new(AtomicUsize::new(0));
    trt::logger::set_logger(Box::new(Panicking(calls.clone())));
    let builder = Builder::new().unwrap();

    // Errors are still captured for the caller although the logger panicked.
    let runtime = trt::Runtime::new().unwrap();
    let err = runtime.deserialize(&[7u8; 4096]).unwrap_err();
    assert!(matches!(&err, Error::TensorRt { messages, .. } if !messages.is_empty()), "{err}");
    assert!(calls.load(Ordering::SeqCst) > 0, "the logger was called");

    let network = OnnxParser::parse_file(&builder, generated("models/test/external_weights.onnx")).unwrap();
    let mut config = builder.config().unwrap();
    config.add_profile(ProfileSpec::new().with("x", ShapeRange::new(&[1, 64], &[4, 64], &[8, 64]))).unwrap();
    config.set_progress(Box::new(PanickingProgress)).unwrap();
    let err = builder.build(&network, &config).unwrap_err();
    assert!(matches!(&err, Error::CallbackPanicked(m) if m.contains("on purpose")), "{err}");
}

/// Records what TensorRT passed; answers with a fixed address.
struct Recording(Arc<std::sync::Mutex<Vec<(String, trt::Reallocation)>>>);

// SAFETY: never used by an engine here; the shim is called directly.
unsafe impl trt::OutputCallbacks for Recording {
    fn reallocate(&mut self, name: &str, request: trt::Reallocation) -> usize {
        self.0.lock().unwrap().push((name.to_owned(), request));
        if request.size > 1 << 20 {
            panic!("too big, on purpose");
        }
        0x7000_0000
    }
    fn notify_shape(&mut self, _name: &str, _dims: &[i64]) {}
}

#[test]
fn output_allocators_receive_the_current_allocation_and_the_stream() {
    // TensorRT's reallocateOutputAsync(name, current, size, alignment,
    // stream) reaches Rust whole, so an allocator can free `current` in
    // `stream`'s order; a shim that dropped `current` and `stream` would
    // leave it no safe moment to free the old buffer.
    use trt_sys::callbacks::OutputSink;
    use trt_sys::ffi;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut allocator = ffi::new_output_allocator(OutputSink::new(Box::new(Recording(seen.clone())))).unwrap();
    let address = ffi::output_allocator_reallocate(allocator.pin_mut(), "logits", 0x5000_0000, 4096, 256, 0xabc0).unwrap();
    assert_eq!(address, 0x7000_0000);
    // A panicking callback is an allocation failure (null), not an unwind into C++.
    let failed = ffi::output_allocator_reallocate(allocator.pin_mut(), "logits", 0x7000_0000, 1 << 30, 256, 0xabc0).unwrap();
    assert_eq!(failed, 0);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let (name, first) = &seen[0];
    assert_eq!(name, "logits");
    assert_eq!((first.current, first.size, first.alignment, first.stream), (0x5000_0000, 4096, 256, 0xabc0));
    assert_eq!(seen[1].1.current, 0x7000_0000);
}

struct PanickingProfiler(Arc<AtomicUsize>);

impl trt::ProfilerCallbacks for PanickingProfiler {
    fn report_layer_time(&mut self, layer: &str, _ms: f32) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("profiler panics on purpose at {layer}");
    }
}

/// Calls `reportLayerTime` through the C++ `IProfiler` base class, as TensorRT does.
fn report(profiler: &trt::Profiler, layer: &str, ms: f32) {
    use trt::AsRaw;
    // SAFETY: the pointer is the profiler's live C++ object, used on this thread only.
    let pinned = unsafe { std::pin::Pin::new_unchecked(&mut *profiler.as_raw()) };
    trt_sys::ffi::profiler_report(pinned, layer, ms).unwrap();
}

#[test]
fn a_panicking_profiler_is_reported_as_an_error_not_unwound_into_cpp() {
    let calls = Arc::new(AtomicUsize::new(0));
    let profiler = trt::Profiler::new(Box::new(PanickingProfiler(calls.clone()))).unwrap();
    assert!(profiler.check().is_ok());
    report(&profiler, "layer 0", 0.5);
    let err = profiler.check().unwrap_err();
    assert!(matches!(&err, Error::CallbackPanicked(m) if m.contains("on purpose at layer 0")), "{err}");
    // Later reports are dropped, not passed to the callbacks that panicked.
    report(&profiler, "layer 1", 0.5);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn layer_times_receive_reports_through_the_cpp_profiler() {
    let times = trt::LayerTimes::new();
    let profiler = trt::Profiler::new(Box::new(times.clone())).unwrap();
    for ms in [0.25, 0.75, 0.5] {
        report(&profiler, "MatMul_0", ms);
        report(&profiler, "Softmax_1", ms / 2.0);
    }
    profiler.check().unwrap();
    let summary = times.summary();
    assert_eq!(summary.len(), 2);
    assert_eq!((summary[0].name.as_str(), summary[0].count, summary[0].median_ms), ("MatMul_0", 3, 0.5));
    assert_eq!(summary[1].median_ms, 0.25);
    assert!((summary[0].percent - 200.0 / 3.0).abs() < 1e-9, "{}", summary[0].percent);
}
