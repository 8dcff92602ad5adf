//! trt-onnx: what works on an ONNX model rather than on a TensorRT engine.
//! Nothing here needs TensorRT or a GPU.
//!
//! | layer | module | what |
//! |---|---|---|
//! | raw | `ort` (crates.io), loading `libonnxruntime.so` at run time | ONNX Runtime's C API |
//! | safe | [`runtime`] | the library found and version-checked ([`runtime::OrtLibrary`]), sessions with thread, optimization and provider settings ([`runtime::Session`]) |
//!
//! The graph tools (ONNX I/O, FP16 conversion, INT8 quantization) join as
//! their own modules.
#![warn(missing_docs)]

pub mod compare;
pub mod dataset;
mod error;
pub mod fp16;
pub mod graph;
pub mod quantize;
pub mod runtime;

pub use error::{Error, Result};
