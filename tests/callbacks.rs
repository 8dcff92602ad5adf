//! Rust callbacks called from C++ never unwind into TensorRT: a panicking
//! logger loses its message, a panicking progress monitor fails the build with
//! a typed error. (Process-global logger: its own test binary.)

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
