//! trt-cli's integration tests: one test binary (`cargo test -p trt-cli --test trt_cli`),
//! so the workspace links one binary per crate rather than one per file. Each
//! file of tests/ stays where it is and becomes a module here; a test's name
//! starts with its file's (`cargo test -p trt-cli --test trt_cli -- cli::` runs one file).
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

#[path = "../cli.rs"]
mod cli;
#[path = "../cli_hf.rs"]
mod cli_hf;
#[cfg(feature = "tensorrt")]
#[path = "../cli_precision.rs"]
mod cli_precision;
#[cfg(feature = "tensorrt")]
#[path = "../compare_layers.rs"]
mod compare_layers;
#[cfg(feature = "tensorrt")]
#[path = "../gpu_conformance.rs"]
mod gpu_conformance;
#[path = "../serve_auth.rs"]
mod serve_auth;
#[path = "../serve_client.rs"]
mod serve_client;
#[path = "../serve_control.rs"]
mod serve_control;
#[path = "../serve_embed_clients.rs"]
mod serve_embed_clients;
#[path = "../serve_grpc_connections.rs"]
mod serve_grpc_connections;
#[path = "../serve_logging.rs"]
mod serve_logging;
#[cfg(feature = "otel")]
#[path = "../serve_otel.rs"]
mod serve_otel;
#[path = "../serve_slowloris.rs"]
mod serve_slowloris;
#[path = "../serve_tensor.rs"]
mod serve_tensor;
#[path = "../serve_tls.rs"]
mod serve_tls;
