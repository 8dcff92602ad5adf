//! ONNX bytes into TensorRT's ONNX parser through `trt::OnnxParser::parse_bytes`.
//!
//! The parser is NVIDIA's (TensorRT-RTX's `libtensorrt_onnxparser_rtx`, loaded
//! at run time and not instrumented, so libFuzzer's coverage counts only our
//! side: the shim and the Rust around it). What must hold: any bytes give a
//! parsed network or `Error::OnnxParse` with at least one error; a parsed
//! network can be inspected (inputs, outputs, layers) without a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

thread_local! {
    // One builder for the whole run: creating one per input would dominate.
    static BUILDER: &'static trt::Builder =
        Box::leak(Box::new(trt::Builder::new().expect("TensorRT-RTX loads (run scripts/setup)")));
}

fuzz_target!(|data: &[u8]| {
    BUILDER.with(|builder| match trt::OnnxParser::parse_bytes(builder, data, None) {
        Ok(network) => {
            for t in network.inputs().iter().chain(network.outputs().iter()) {
                let _ = (t.is_dynamic(), t.dtype);
            }
            let _ = network.layers();
            let _ = network.supports_operator("MatMul");
        }
        Err(trt::Error::OnnxParse { errors, .. }) => {
            assert!(!errors.is_empty(), "a parse failure carries at least one error");
        }
        // A C++ exception caught by the shim is a typed error too.
        Err(trt::Error::Cpp { .. }) => {}
        Err(other) => panic!("parse_bytes: unexpected error kind: {other:?}"),
    });
});
