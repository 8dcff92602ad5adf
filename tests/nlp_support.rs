//! Shared by the `nlp_*` test files (included with `#[path]`, not a test target).
//!
//! These tests run on the CPU, no GPU needed. They need what `scripts/setup`
//! puts in `.deps` (or `$TRT_DEPS_DIR`): the all-MiniLM-L6-v2 tokenizer and the
//! Python venv with `tokenizers` and `numpy` that computes the references.
//! When either is missing they fail and say so; they never pass silently.
#![allow(dead_code)] // each test file uses part of this

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// `$TRT_DEPS_DIR`, else `<workspace>/.deps`.
pub fn deps_dir() -> PathBuf {
    deps::deps_dir()
}

#[path = "common/deps.rs"]
mod deps;

fn require(path: PathBuf) -> PathBuf {
    assert!(path.exists(), "{} is missing: run scripts/setup (these tests need it; CI runs it first)", path.display());
    path
}

/// The MiniLM `tokenizer.json`.
pub fn tokenizer_json() -> PathBuf {
    require(deps_dir().join("minilm/tokenizer.json"))
}

/// A file of the MiniLM model folder.
pub fn minilm_file(name: &str) -> PathBuf {
    require(deps_dir().join("minilm").join(name))
}

/// The venv's Python.
pub fn python() -> PathBuf {
    require(deps_dir().join("venv/bin/python"))
}

/// A script of the workspace's `scripts/` folder.
pub fn script(name: &str) -> PathBuf {
    require(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts").join(name))
}

/// Runs the venv's Python with `args`, `input` as JSON on stdin; parses stdout as JSON.
pub fn run_python(args: &[&std::ffi::OsStr], input: &serde_json::Value) -> serde_json::Value {
    let mut child = Command::new(python())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start the venv's python: run scripts/setup");
    // Write from another thread: a large answer could otherwise fill stdout's pipe first.
    let mut stdin = child.stdin.take().expect("piped stdin");
    let body = serde_json::to_vec(input).expect("request serializes");
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let out = child.wait_with_output().expect("python ran");
    writer.join().expect("writer thread").expect("request written");
    assert!(out.status.success(), "python failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("python printed JSON")
}

/// A file of the embedded default model folder (`models/minilm`).
pub fn default_model(file: &str) -> PathBuf {
    require(deps_dir().join("models/minilm").join(file))
}

/// The default model's `reference.json` (Python onnxruntime outputs, written by setup).
pub fn reference() -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(default_model("reference.json")).unwrap()).unwrap()
}

/// The reference texts.
pub fn reference_texts(r: &serde_json::Value) -> Vec<String> {
    r["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()).collect()
}

/// One reference matrix (`variant`: fp32 / fp16; `what`: logits / embeddings).
pub fn reference_rows(r: &serde_json::Value, variant: &str, what: &str) -> Vec<Vec<f32>> {
    r["outputs"][variant][what]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row.as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect())
        .collect()
}

/// Largest absolute difference between two equally shaped row sets.
pub fn max_abs_diff<'a>(a: impl IntoIterator<Item = &'a [f32]>, b: &[Vec<f32>]) -> f32 {
    let mut n = 0;
    let mut worst = 0f32;
    for (x, y) in a.into_iter().zip(b) {
        assert_eq!(x.len(), y.len(), "row {n} has {} values, the reference {}", x.len(), y.len());
        for (p, q) in x.iter().zip(y) {
            worst = worst.max((p - q).abs());
        }
        n += 1;
    }
    assert_eq!(n, b.len(), "{n} rows, the reference has {}", b.len());
    worst
}
