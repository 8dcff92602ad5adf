//! The whole CPU path, texts in and normalised sentence embeddings out:
//! trt-nlp (tokenizer pipeline, ONNX Runtime backend, pooling) against the
//! same job in Python (`tokenizers` + `onnxruntime` + numpy; see
//! benches/embed_python.py), measured in one run.
//!
//! `cargo bench -p trt-nlp --bench embed_cpu` (needs `scripts/setup`).
//!
//! Same model (the default model's FP32 ONNX file), same texts (the seeded
//! generator of the tokenize bench: 5-60 words), same ONNX Runtime build
//! (1.31.1: Rust loads the library of the wheel Python imports), same thread
//! count for the model (intra-op threads) and the tokenizer, same batch size
//! and maximum length. Python is measured in input order and sorted by length
//! (what sentence-transformers does, and what `Embedder::embed` does); the
//! ratio is against the faster of the two. Both sides warm up once and keep
//! the best of `EMBED_BENCH_REPEATS` passes. The Rust embeddings are checked
//! against Python's (cosine), so both sides did the same work.
//!
//! Env: `EMBED_BENCH_TEXTS` (default 2000), `EMBED_BENCH_REPEATS` (3),
//! `EMBED_BENCH_THREADS` (default: all cores), `EMBED_BENCH_BATCH` (32),
//! `BENCH_PYTHON` (default: the setup venv's python; on the GPU host, its
//! python3, whose onnxruntime is 1.30: point `ORT_DYLIB_PATH` at that wheel's
//! library so both sides run the same build).
//! Last line: `ratio_vs_python_onnxruntime: X.XX`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use trt_nlp::backend::onnxruntime::{OrtBackend, OrtBackendOptions};
use trt_nlp::backend::BackendOptions;
use trt_nlp::{Embedder, HelperOptions, Pooling, TokenizerPipeline};

#[path = "../tests/common/deps.rs"]
mod deps;

#[path = "support/npy.rs"]
mod npy;

#[path = "support/texts.rs"]
mod texts;

const MAX_LEN: usize = 128;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().map(|v| v.parse().unwrap_or_else(|_| panic!("{name}={v} is not a number"))).unwrap_or(default)
}

fn require(path: PathBuf) -> PathBuf {
    assert!(path.exists(), "{} is missing: run scripts/setup", path.display());
    path
}

fn main() {
    let n = env_usize("EMBED_BENCH_TEXTS", 2000);
    let repeats = env_usize("EMBED_BENCH_REPEATS", 3).max(1);
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let threads = env_usize("EMBED_BENCH_THREADS", cores);
    let batch = env_usize("EMBED_BENCH_BATCH", 32);
    let deps = deps::deps_dir();
    let model = require(deps.join("models/minilm/model.onnx"));
    let tokenizer = require(deps.join("models/minilm/tokenizer.json"));
    let python = std::env::var_os("BENCH_PYTHON").map(PathBuf::from).unwrap_or_else(|| require(deps.join("venv/bin/python")));

    let generator = TokenizerPipeline::builder(MAX_LEN).threads(1).from_file(&tokenizer).expect("tokenizer loads");
    let texts = texts::generate_texts(generator.tokenizer(), n);
    let file = texts::write_temp(&texts);
    let saved = tempfile::Builder::new().suffix(".npy").tempfile().expect("temp file");
    println!(
        "embed bench: {n} texts (seed {:#x}), batch {batch}, max_len {MAX_LEN}, {threads} threads of {cores} cores, model {}",
        texts::SEED,
        model.display()
    );

    // Rust: one Embedder over one ONNX Runtime session, all of a pass in one call.
    let options = BackendOptions::default()
        .with_instances(1)
        .with_max_batch(batch)
        .with_max_seq(MAX_LEN)
        .with_onnxruntime(OrtBackendOptions::default().with_intra_threads(threads));
    let backend = Arc::new(OrtBackend::new(&model, &options).expect("ONNX Runtime session"));
    let helper = HelperOptions::default().with_threads(Some(threads));
    let embedder = Embedder::new(backend, &tokenizer, Pooling::Mean, true, &helper).expect("embedder");
    let mut rust = embedder.embed(&texts).expect("warm-up");
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        let t0 = Instant::now();
        rust = embedder.embed(&texts).expect("embed");
        best = best.min(t0.elapsed().as_secs_f64());
    }
    let rust_tps = n as f64 / best;
    println!("rust   trt-nlp Embedder (ONNX Runtime, length-sorted): {rust_tps:9.1} texts/s");

    // Python, same job.
    // The script beside this file, or (a binary carried to another machine) under the current folder.
    let script = [PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/embed_python.py"), PathBuf::from("benches/embed_python.py")]
        .into_iter()
        .find(|p| p.exists())
        .expect("benches/embed_python.py: run from the repository root");
    let out = Command::new(&python)
        .arg(script)
        .args(["--model", &model.display().to_string(), "--tokenizer", &tokenizer.display().to_string()])
        .args(["--texts", &file.path().display().to_string(), "--save", &saved.path().display().to_string()])
        .args(["--threads", &threads.to_string(), "--batch", &batch.to_string(), "--max-len", &MAX_LEN.to_string()])
        .args(["--repeats", &repeats.to_string()])
        .env("RAYON_NUM_THREADS", threads.to_string())
        .env("OMP_NUM_THREADS", threads.to_string())
        .output()
        .expect("python runs");
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut python_best = 0f64;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("python prints JSON lines");
        let tps = v["texts_per_s"].as_f64().expect("texts_per_s");
        println!(
            "python tokenizers + onnxruntime {} + numpy, {:<13}: {tps:9.1} texts/s",
            v["onnxruntime"].as_str().unwrap_or("?"),
            v["order"].as_str().unwrap_or("?")
        );
        python_best = python_best.max(tps);
    }

    // Same work: the embeddings agree.
    let want = npy::read_f32(saved.path(), n);
    let dim = rust.ncols();
    let min_cos =
        (0..n).map(|i| rust.row(i).iter().zip(&want[i * dim..(i + 1) * dim]).map(|(a, b)| a * b).sum::<f32>()).fold(1f32, f32::min);
    println!("embeddings: min cosine rust vs python {min_cos:.6}");
    assert!(min_cos > 0.9999, "the two sides computed different embeddings ({min_cos})");
    println!("ratio_vs_python_onnxruntime: {:.2}", rust_tps / python_best);
}
