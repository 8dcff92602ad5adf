//! trt-rs's integration tests: one test binary (`cargo test -p trt-rs --test trt_rs`),
//! so the workspace links one binary per crate rather than one per file. Each
//! file of tests/ stays where it is and becomes a module here; a test's name
//! starts with its file's (`cargo test -p trt-rs --test trt_rs -- build::` runs one file).
//!
//! A new test file: put it in tests/ and add a `#[path] mod` line below, in
//! alphabetical order (behind `#[cfg(feature = "...")]` where it needs a
//! feature). A test that changes process-wide state (environment variables,
//! a global logger, the thread pools) gets a `[[test]]` of its own in the
//! crate's Cargo.toml instead.
//!
//! In their own binaries, for process-wide state:
//! - `callbacks`: installs a panicking TensorRT logger, which is process-wide: in the shared binary it would receive the log of every other test's TensorRT calls.

// Each file keeps its own `mod common;` (or `#[path] mod support;`), as when it was a
// binary of its own, so the files stay as they were; a helper module is then compiled
// once per file that declares it, which is what this lint reports.
#![allow(clippy::duplicate_mod)]

#[path = "../build.rs"]
mod build;
#[path = "../build_errors.rs"]
mod build_errors;
#[path = "../cache_crash.rs"]
mod cache_crash;
#[path = "../compile_fail.rs"]
mod compile_fail;
#[path = "../cuda_bindings.rs"]
mod cuda_bindings;
#[path = "../execution.rs"]
mod execution;
#[path = "../loading.rs"]
mod loading;
#[path = "../runtime_errors.rs"]
mod runtime_errors;
