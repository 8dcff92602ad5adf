//! trt-onnx's integration tests: one test binary (`cargo test -p trt-onnx --test trt_onnx`),
//! so the workspace links one binary per crate rather than one per file. Each
//! file of tests/ stays where it is and becomes a module here; a test's name
//! starts with its file's (`cargo test -p trt-onnx --test trt_onnx -- onnx_calibrate::` runs one file).
//!
//! A new test file: put it in tests/ and add a `#[path] mod` line below, in
//! alphabetical order (behind `#[cfg(feature = "...")]` where it needs a
//! feature). A test that changes process-wide state (environment variables,
//! a global logger, the thread pools) gets a `[[test]]` of its own in the
//! crate's Cargo.toml instead.

// Each file keeps its own `mod common;` (or `#[path] mod support;`), as when it was a
// binary of its own, so the files stay as they were; a helper module is then compiled
// once per file that declares it, which is what this lint reports.
#![allow(clippy::duplicate_mod)]

#[path = "../onnx_calibrate.rs"]
mod onnx_calibrate;
#[path = "../onnx_cuda.rs"]
mod onnx_cuda;
#[path = "../onnx_fp16.rs"]
mod onnx_fp16;
#[path = "../onnx_graph.rs"]
mod onnx_graph;
#[path = "../onnx_quantize.rs"]
mod onnx_quantize;
