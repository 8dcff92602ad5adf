//! trt-onnx: what works on an ONNX model rather than on a TensorRT engine.
//! Nothing here needs TensorRT or a GPU.
//!
//! | layer | module | what |
//! |---|---|---|
//! | raw | `ort` (crates.io), loading `libonnxruntime.so` at run time | ONNX Runtime's C API |
//! | safe | [`runtime`] | the library found and version-checked ([`runtime::OrtLibrary`]), sessions with thread, optimization and provider settings ([`runtime::Session`]) |
//! | raw | [`graph::proto`] (prost, generated from the official `onnx.proto`) | ONNX protobuf messages |
//! | safe | [`graph`] | models read and written with external data, element types, graph edits |
//! | helpers | [`fp16`] | FP32 to FP16 with FP32 islands |
//! | helpers | [`quantize`] | INT8 Q/DQ: calibrators, placement, SmoothQuant, sensitivity fallback, calibration cache |
//! | helpers | [`dataset`], [`compare`] | token batches run on a session; how far two outputs are apart |
#![warn(missing_docs)]

pub mod compare;
pub mod dataset;
mod error;
pub mod fp16;
pub mod graph;
pub mod quantize;
pub mod runtime;

pub use error::{Error, Result};
