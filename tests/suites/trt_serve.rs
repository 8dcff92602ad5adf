//! trt-serve's integration tests: one test binary (`cargo test -p trt-serve --test trt_serve`),
//! so the workspace links one binary per crate rather than one per file. Each
//! file of tests/ stays where it is and becomes a module here; a test's name
//! starts with its file's (`cargo test -p trt-serve --test trt_serve -- serve_config::` runs one file).
//!
//! A new test file: put it in tests/ and add a `#[path] mod` line below, in
//! alphabetical order (behind `#[cfg(feature = "...")]` where it needs a
//! feature). A test that changes process-wide state (environment variables,
//! a global logger, the thread pools) gets a `[[test]]` of its own in the
//! crate's Cargo.toml instead.
//!
//! In their own binaries, for process-wide state:
//! - `serve_log_records`: installs the process's one `log` logger.

// Each file keeps its own `mod common;` (or `#[path] mod support;`), as when it was a
// binary of its own, so the files stay as they were; a helper module is then compiled
// once per file that declares it, which is what this lint reports.
#![allow(clippy::duplicate_mod)]

#[path = "../serve_config.rs"]
mod serve_config;
#[path = "../serve_dispatch.rs"]
mod serve_dispatch;
#[cfg(feature = "onnxruntime")]
#[path = "../serve_gpu.rs"]
mod serve_gpu;
#[path = "../serve_library.rs"]
mod serve_library;
#[path = "../serve_repository.rs"]
mod serve_repository;
