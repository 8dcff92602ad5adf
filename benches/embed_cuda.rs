//! Texts to embeddings on the GPU, end to end (tokenize, run, mean-pool,
//! normalise): trt-nlp's `Embedder` over the ONNX Runtime backend on CUDA
//! against the same job in Python, measured in one run
//! (benches/embed_cuda_python.py): `tokenizers` + `onnxruntime-gpu` + numpy,
//! and `tokenizers` + transformers' `BertModel` FP16 eager in PyTorch.
//!
//! `cargo bench -p trt-nlp --bench embed_cuda` on a machine with a CUDA GPU,
//! the onnxruntime-gpu library (`ORT_DYLIB_PATH`; Python imports the same
//! wheel through `PYTHONPATH`) and torch + transformers for `BENCH_PYTHON`.
//! Without a GPU, or without ONNX Runtime's CUDA provider, it prints why and exits 0.
//!
//! Same texts (the seeded generator of the tokenize bench: 5-60 words), same
//! batch size and maximum length on every side. Rust and Python
//! onnxruntime run the same ONNX file (`EMBED_CUDA_MODEL`, default the setup
//! folder's `model_fp16.onnx`); PyTorch loads the weights of
//! `EMBED_CUDA_WEIGHTS` (a folder with `config.json` and `model.safetensors`,
//! default the setup folder's `minilm`) in FP16. Python pads each batch to
//! its longest text and is measured in input order and sorted by length; each
//! ratio is against the faster of the two. Every side warms up once and keeps
//! the best of `EMBED_CUDA_REPEATS` passes; the embeddings are compared
//! (cosine) so all sides did the same work.
//!
//! One text at a time (the one-request latency): the first
//! `EMBED_CUDA_SINGLE` texts, each embedded alone, median and p99, in Rust
//! with CUDA graphs (batch bucket 1, one graph per sequence bucket, all
//! captured during the warm-up) and without, against PyTorch.
//!
//! Memory: device memory taken by the session (free memory before and after
//! creating it), by its first pass (ONNX Runtime's arena growing), by each
//! captured graph, and the process's resident host memory.
//!
//! Env: `EMBED_CUDA_TEXTS` (20000), `EMBED_CUDA_BATCH` (32),
//! `EMBED_CUDA_HOST_POOLING` (1: pool on the host instead of inside the graph),
//! `EMBED_CUDA_SESSIONS` (2: a pass with that many sessions at once, graphs
//! on; the ratios take the fastest Rust pass), `EMBED_CUDA_REPEATS` (3), `EMBED_CUDA_SINGLE` (500), `BENCH_PYTHON`
//! (python3). Ratios print as `ratio_*: X.XX` (above 1: faster than the peer).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use ndarray::Array2;
use trt_nlp::backend::onnxruntime::{GraphPooling, OrtBackend, OrtBackendOptions, Provider};
use trt_nlp::backend::BackendOptions;
use trt_nlp::{Embedder, HelperOptions, Pooling, TokenizerPipeline};

#[path = "../tests/common/deps.rs"]
mod deps;

#[path = "support/npy.rs"]
mod npy;

#[path = "support/not_here.rs"]
mod not_here;

#[path = "support/texts.rs"]
mod texts;

const MAX_LEN: usize = 128;
const MIB: f64 = 1024.0 * 1024.0;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().map(|v| v.parse().unwrap_or_else(|_| panic!("{name}={v} is not a number"))).unwrap_or(default)
}

fn host_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok());
    kb.map_or(f64::NAN, |kb| kb / 1024.0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

/// Median and p99 (ms) of embedding each text alone.
fn singles(embedder: &Embedder, texts: &[String]) -> (f64, f64) {
    let mut t: Vec<f64> = texts
        .iter()
        .map(|text| {
            let s = Instant::now();
            std::hint::black_box(embedder.embed(std::slice::from_ref(text)).expect("embed one"));
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (percentile(&t, 0.5), percentile(&t, 0.99))
}

fn best_pass(embedder: &Embedder, texts: &[String], repeats: usize) -> (f64, Array2<f32>) {
    let mut out = embedder.embed(texts).expect("warm-up");
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        let t0 = Instant::now();
        out = embedder.embed(texts).expect("embed");
        best = best.min(t0.elapsed().as_secs_f64());
    }
    (texts.len() as f64 / best, out)
}

fn main() {
    let device = match trt_cuda::device_count() {
        Ok(n) if n > 0 => trt_cuda::Device::new(0).expect("device 0"),
        Ok(_) => return println!("embed_cuda: not run: no CUDA device"),
        Err(e) => return println!("embed_cuda: not run: CUDA is not available ({e})"),
    };
    let n = env_usize("EMBED_CUDA_TEXTS", 20_000);
    let batch = env_usize("EMBED_CUDA_BATCH", 32);
    let repeats = env_usize("EMBED_CUDA_REPEATS", 3).max(1);
    let n_single = env_usize("EMBED_CUDA_SINGLE", 500).min(n);
    let deps = deps::deps_dir();
    let folder = deps.join("models/minilm");
    let model = std::env::var_os("EMBED_CUDA_MODEL").map(PathBuf::from).unwrap_or_else(|| folder.join("model_fp16.onnx"));
    let weights = std::env::var_os("EMBED_CUDA_WEIGHTS").map(PathBuf::from).unwrap_or_else(|| folder.clone());
    let tokenizer = folder.join("tokenizer.json");
    let python = std::env::var_os("BENCH_PYTHON").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("python3"));
    for p in [&model, &tokenizer] {
        assert!(p.exists(), "{} is missing", p.display());
    }

    let generator = TokenizerPipeline::builder(MAX_LEN).threads(1).from_file(&tokenizer).expect("tokenizer loads");
    let texts = texts::generate_texts(generator.tokenizer(), n);
    let file = texts::write_temp(&texts);
    println!(
        "embed_cuda: {n} texts (seed {:#x}), batch {batch}, max_len {MAX_LEN}, {} on {}, model {}",
        texts::SEED,
        std::thread::available_parallelism().map_or(1, |c| c.get()),
        device.name().unwrap_or_default(),
        model.display()
    );

    // Rust, batches.
    let rss0 = host_rss_mib();
    let free0 = device.free_memory().expect("free memory") as f64;
    // Pooling inside the graph, as a model folder sets it: one [batch, 384] download a batch.
    let graph_pooling = (std::env::var("EMBED_CUDA_HOST_POOLING").as_deref() != Ok("1")).then_some(GraphPooling::new(Pooling::Mean, true));
    let options = BackendOptions::default()
        .with_max_batch(batch)
        .with_max_seq(MAX_LEN)
        .with_onnxruntime(OrtBackendOptions::default().with_provider(Provider::Cuda { device: 0 }).with_graph_pooling(graph_pooling));
    println!("rust   pooling: {}", if graph_pooling.is_some() { "inside the graph (on the GPU)" } else { "on the host" });
    let backend = match OrtBackend::new(&model, &options) {
        Ok(b) => Arc::new(b),
        // A GPU, but an ONNX Runtime without its CUDA provider (or the CUDA libraries it needs).
        Err(e) if not_here::cuda_not_here(&e) => return println!("embed_cuda: not run: {e}"),
        Err(e) => panic!("ONNX Runtime session on CUDA: {e}"),
    };
    let free1 = device.free_memory().expect("free memory") as f64;
    let embedder = Embedder::new(backend, &tokenizer, Pooling::Mean, true, &HelperOptions::default()).expect("embedder");
    let (rust_tps, rust) = best_pass(&embedder, &texts, repeats);
    let free2 = device.free_memory().expect("free memory") as f64;
    println!("rust   trt-nlp Embedder, ONNX Runtime CUDA (IO binding), length-sorted: {rust_tps:9.1} texts/s");
    println!(
        "memory: session {:.1} MiB of device memory at creation, {:.1} MiB more after the first pass (arena)",
        (free0 - free1) / MIB,
        (free1 - free2) / MIB
    );
    let (plain_p50, plain_p99) = singles(&embedder, &texts[..n_single]);
    println!("rust   one text at a time, no graphs: p50 {plain_p50:.3} ms, p99 {plain_p99:.3} ms");
    drop(embedder);

    // Rust, batches as CUDA graphs (one per batch and sequence bucket, captured in the warm-up pass).
    let mut batch_graphs = options.clone();
    batch_graphs.onnxruntime.cuda_graph_max_batch = batch;
    let backend = Arc::new(OrtBackend::new(&model, &batch_graphs).expect("ONNX Runtime session with CUDA graphs"));
    let embedder = Embedder::new(backend, &tokenizer, Pooling::Mean, true, &HelperOptions::default()).expect("embedder");
    let (graphs_tps, graphs_out) = best_pass(&embedder, &texts, repeats);
    println!("rust   the same with CUDA graphs for batches up to {batch}: {graphs_tps:9.1} texts/s");
    println!(
        "embeddings: min cosine rust with graphs vs without: {:.5}",
        min_cosine(&graphs_out, rust.as_slice().expect("standard layout"))
    );
    drop(embedder);
    let (rust_tps, rust) = if graphs_tps > rust_tps { (graphs_tps, graphs_out) } else { (rust_tps, rust) };

    // Rust, the same with several sessions (each its own stream and graphs):
    // the Embedder runs one batch per session at once, so one batch is
    // tokenized and another pooled while a third computes.
    let sessions = env_usize("EMBED_CUDA_SESSIONS", 2);
    let (rust_tps, rust) = if sessions > 1 {
        let free = device.free_memory().expect("free memory") as f64;
        let parallel = batch_graphs.clone().with_instances(sessions);
        let backend = Arc::new(OrtBackend::new(&model, &parallel).expect("ONNX Runtime sessions with CUDA graphs"));
        let embedder = Embedder::new(backend, &tokenizer, Pooling::Mean, true, &HelperOptions::default()).expect("embedder");
        let (tps, out) = best_pass(&embedder, &texts, repeats);
        let taken = free - device.free_memory().expect("free memory") as f64;
        println!(
            "rust   the same over {sessions} sessions at once (CUDA graphs): {tps:9.1} texts/s, {:.1} MiB of device memory",
            taken / MIB
        );
        println!(
            "embeddings: min cosine rust over {sessions} sessions vs one: {:.5}",
            min_cosine(&out, rust.as_slice().expect("standard layout"))
        );
        drop(embedder);
        if tps > rust_tps {
            (tps, out)
        } else {
            (rust_tps, rust)
        }
    } else {
        (rust_tps, rust)
    };

    // Rust, one text at a time with CUDA graphs: capture every sequence bucket first.
    let free3 = device.free_memory().expect("free memory") as f64;
    let mut graphs = options.with_max_batch(1);
    graphs.onnxruntime.cuda_graph_max_batch = 1;
    let backend = Arc::new(OrtBackend::new(&model, &graphs).expect("ONNX Runtime session with CUDA graphs"));
    let embedder = Embedder::new(backend, &tokenizer, Pooling::Mean, true, &HelperOptions::default()).expect("embedder");
    let free4 = device.free_memory().expect("free memory") as f64;
    let mut by_bucket = std::collections::BTreeMap::new();
    for (t, row) in texts.iter().zip(generator.tokenize(&texts).expect("tokenize")) {
        by_bucket.entry(row.len().div_ceil(8)).or_insert(t);
    }
    for t in by_bucket.values() {
        embedder.embed(std::slice::from_ref(*t)).expect("capture");
    }
    let free5 = device.free_memory().expect("free memory") as f64;
    let graphs_made = by_bucket.len();
    println!(
        "memory: graph session {:.1} MiB at creation; {graphs_made} graphs (batch 1, one per sequence bucket) {:.1} MiB, {:.2} MiB each",
        (free3 - free4) / MIB,
        (free4 - free5) / MIB,
        (free4 - free5) / MIB / graphs_made.max(1) as f64
    );
    let (graph_p50, graph_p99) = singles(&embedder, &texts[..n_single]);
    println!("rust   one text at a time, CUDA graphs: p50 {graph_p50:.3} ms, p99 {graph_p99:.3} ms");
    println!("memory: host RSS {rss0:.0} MiB before the sessions, {:.0} MiB now", host_rss_mib());
    drop(embedder);

    // Python, same jobs.
    let mut ratios = Vec::new();
    let rust_single = graph_p50.min(plain_p50);
    for (mode, arg, value) in [("onnxruntime", "--model", &model), ("torch", "--weights", &weights)] {
        let saved = tempfile::Builder::new().suffix(".npy").tempfile().expect("temp file");
        let lines = python_side(&python, mode, arg, value, &tokenizer, file.path(), saved.path(), batch, repeats, n_single);
        let Some(lines) = lines else { continue };
        let mut best = 0f64;
        for v in &lines {
            match v["order"].as_str() {
                Some("single") => {
                    let (p50, p99) = (v["p50_ms"].as_f64().unwrap_or(f64::NAN), v["p99_ms"].as_f64().unwrap_or(f64::NAN));
                    println!("python {} one text at a time: p50 {p50:.3} ms, p99 {p99:.3} ms", v["what"].as_str().unwrap_or(mode));
                    ratios.push(format!("ratio_single_text_p50_vs_{mode}: {:.2}", p50 / rust_single));
                }
                order => {
                    let tps = v["texts_per_s"].as_f64().unwrap_or(0.0);
                    let peak = v["peak_mib"].as_f64().map(|m| format!(", peak {m:.0} MiB allocated")).unwrap_or_default();
                    println!("python {} {:<13}: {tps:9.1} texts/s{peak}", v["what"].as_str().unwrap_or(mode), order.unwrap_or("?"));
                    best = best.max(tps);
                }
            }
        }
        let min_cos = min_cosine(&rust, &npy::read_f32(saved.path(), n));
        println!("embeddings: min cosine rust vs python {mode}: {min_cos:.5}");
        assert!(min_cos > 0.999, "rust and python {mode} computed different embeddings ({min_cos})");
        if best > 0.0 {
            ratios.push(format!("ratio_vs_python_{mode}: {:.2}", rust_tps / best));
        }
    }
    for r in ratios {
        println!("{r}");
    }
}

#[allow(clippy::too_many_arguments)]
fn python_side(
    python: &Path,
    mode: &str,
    arg: &str,
    value: &Path,
    tokenizer: &Path,
    texts: &Path,
    save: &Path,
    batch: usize,
    repeats: usize,
    single: usize,
) -> Option<Vec<serde_json::Value>> {
    let script =
        [PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/embed_cuda_python.py"), PathBuf::from("benches/embed_cuda_python.py")]
            .into_iter()
            .find(|p| p.exists())
            .expect("benches/embed_cuda_python.py: run from the repository root");
    let out = Command::new(python)
        .arg(script)
        .args(["--mode", mode, arg, &value.display().to_string(), "--tokenizer", &tokenizer.display().to_string()])
        .args(["--texts", &texts.display().to_string(), "--save", &save.display().to_string()])
        .args(["--batch", &batch.to_string(), "--max-len", &MAX_LEN.to_string(), "--repeats", &repeats.to_string()])
        .args(["--single", &single.to_string()])
        .output()
        .expect("python runs");
    if !out.status.success() {
        println!("python {mode} failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

fn min_cosine(rust: &Array2<f32>, want: &[f32]) -> f32 {
    let dim = rust.ncols();
    (0..rust.nrows()).map(|i| rust.row(i).iter().zip(&want[i * dim..(i + 1) * dim]).map(|(a, b)| a * b).sum::<f32>()).fold(1f32, f32::min)
}
