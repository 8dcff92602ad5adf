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
    trt::setup_dir()
}

fn require(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup (these tests need it; CI runs it first)",
        path.display()
    );
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
    require(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scripts")
            .join(name),
    )
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
    writer
        .join()
        .expect("writer thread")
        .expect("request written");
    assert!(
        out.status.success(),
        "python failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("python printed JSON")
}
