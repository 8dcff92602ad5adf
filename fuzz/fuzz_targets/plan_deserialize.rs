//! Plan bytes into `trt::Runtime::deserialize`.
//!
//! TensorRT-RTX checks a plan's header (magic, version stamp, sizes) before it
//! starts CUDA; on a machine without a GPU the bytes that pass those checks
//! end in a CUDA error, so this target exercises the header checks and our
//! error path (see docs/measurements/fuzz-2026-12-01/README.md for how deep it
//! gets). What must hold: any bytes give an engine or a typed error, and a
//! TensorRT error carries TensorRT's own message.
#![no_main]

use libfuzzer_sys::fuzz_target;

thread_local! {
    static RUNTIME: trt::Runtime = trt::Runtime::new().expect("a TensorRT-RTX runtime (created without a GPU too)");
}

fuzz_target!(|data: &[u8]| {
    RUNTIME.with(|runtime| match runtime.deserialize(data) {
        Ok(engine) => {
            // Only where a supported GPU is present (not on the CI machine).
            let _ = engine.io_tensors();
        }
        Err(trt::Error::TensorRt { messages, .. }) => {
            assert!(!messages.is_empty(), "a refused plan carries TensorRT's message");
        }
        Err(trt::Error::InvalidArgument(_)) => assert!(data.is_empty(), "only the empty plan is refused before TensorRT"),
        Err(trt::Error::Cpp { .. }) => {}
        Err(other) => panic!("deserialize: unexpected error kind: {other:?}"),
    });
});
