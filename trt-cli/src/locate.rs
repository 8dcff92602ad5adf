//! Where the setup folder (`scripts/setup`'s `.deps`) is, for `trt demo`, and
//! the engine cache in it. The libraries default to no such folder: this
//! binary is the one place that knows the workspace's layout.
//!
//! Looked for, in order: `$TRT_DEPS_DIR`; `.deps` in the current folder or
//! any folder above it (the binary is usually run from the repository:
//! `cargo run --release -p trt-cli -- demo`); the `.deps` of the workspace
//! this binary was built in.

use std::path::PathBuf;

use crate::error::{CliError, Result};

/// The `.deps` of the workspace this binary was built in.
fn built_in() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.deps"))
}

/// The candidates, in search order.
fn candidates() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os("TRT_DEPS_DIR").filter(|v| !v.is_empty()) {
        // An explicit setting is the only candidate: a wrong one must not be papered over.
        return vec![PathBuf::from(dir)];
    }
    if let Ok(cwd) = std::env::current_dir() {
        dirs.extend(cwd.ancestors().map(|a| a.join(".deps")));
    }
    dirs.push(built_in());
    dirs
}

/// Where plans built from ONNX files are cached: `cache/` in the first
/// setup folder candidate that exists (none: plans are built in memory).
pub fn engine_cache() -> Option<PathBuf> {
    candidates().into_iter().find(|d| d.is_dir()).map(|d| d.join("cache"))
}

// Only `trt demo` asks (the tensorrt feature).
#[cfg_attr(not(feature = "tensorrt"), allow(dead_code))]
/// The first candidate holding `rel` (e.g. `models/minilm/model.onnx`), as the setup folder.
pub fn deps_with(rel: &str) -> Result<PathBuf> {
    let dirs = candidates();
    if let Some(d) = dirs.iter().find(|d| d.join(rel).exists()) {
        return Ok(d.clone());
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.join(rel).display().to_string()).collect();
    Err(CliError::new(format!(
        "cannot find {rel} of the setup folder (looked for {}); run scripts/setup, or set TRT_DEPS_DIR to the folder it fills",
        looked.join(", ")
    )))
}
