//! trt-nlp's integration tests: one test binary (`cargo test -p trt-nlp --test trt_nlp`),
//! so the workspace links one binary per crate rather than one per file. Each
//! file of tests/ stays where it is and becomes a module here; a test's name
//! starts with its file's (`cargo test -p trt-nlp --test trt_nlp -- nlp_batching::` runs one file).
//!
//! A new test file: put it in tests/ and add a `#[path] mod` line below, in
//! alphabetical order (behind `#[cfg(feature = "...")]` where it needs a
//! feature). A test that changes process-wide state (environment variables,
//! a global logger, the thread pools) gets a `[[test]]` of its own in the
//! crate's Cargo.toml instead.
//!
//! In their own binaries, for process-wide state:
//! - `nlp_threads`: sets RAYON_NUM_THREADS and TOKENIZERS_PARALLELISM, which are process-wide and read once by the thread pools.

// Each file keeps its own `mod common;` (or `#[path] mod support;`), as when it was a
// binary of its own, so the files stay as they were; a helper module is then compiled
// once per file that declares it, which is what this lint reports.
#![allow(clippy::duplicate_mod)]

#[path = "../nlp_batching.rs"]
mod nlp_batching;
#[cfg(feature = "onnxruntime")]
#[path = "../nlp_batching_ort.rs"]
mod nlp_batching_ort;
#[cfg(feature = "onnxruntime")]
#[path = "../nlp_cuda.rs"]
mod nlp_cuda;
#[cfg(feature = "tensorrt")]
#[path = "../nlp_engine.rs"]
mod nlp_engine;
#[cfg(feature = "onnxruntime")]
#[path = "../nlp_hf.rs"]
mod nlp_hf;
#[cfg(feature = "onnxruntime")]
#[path = "../nlp_onnxruntime.rs"]
mod nlp_onnxruntime;
#[path = "../nlp_pairs.rs"]
mod nlp_pairs;
#[path = "../nlp_placement.rs"]
mod nlp_placement;
#[path = "../nlp_postprocess.rs"]
mod nlp_postprocess;
#[path = "../nlp_tokenize.rs"]
mod nlp_tokenize;
