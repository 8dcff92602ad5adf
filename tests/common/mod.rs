//! Shared helpers of the workspace's integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The setup folder: `$TRT_DEPS_DIR`, else the workspace's `.deps/` that
/// `scripts/setup` fills (the tests' default; the libraries have none).
pub fn deps() -> PathBuf {
    deps::deps_dir()
}

mod deps;
pub mod libtest;

/// A file the setup step generates; a missing one fails the test with the fix.
pub fn generated(rel: &str) -> PathBuf {
    let p = deps().join(rel);
    assert!(p.exists(), "{} is missing: run scripts/setup first", p.display());
    p
}

/// The embedded default model (FP32 or FP16 ONNX).
pub fn default_model(fp16: bool) -> PathBuf {
    generated(if fp16 { "models/minilm/model_fp16.onnx" } else { "models/minilm/model.onnx" })
}

/// BERT inputs of the default model.
pub const BERT_INPUTS: [&str; 3] = ["input_ids", "attention_mask", "token_type_ids"];

/// Why the execution tests cannot run on the machines this project has.
pub const NO_ENGINE_GPU: &str = "needs a GPU the loaded TensorRT can execute engines on \
(TensorRT-RTX: compute capability 8.0/8.6/8.9/12.x; the lent H200 is 9.0 and CI has no GPU)";
