//! Model only on the GPU: the ONNX Runtime backend on CUDA (IO binding, one
//! stream per session) against Python onnxruntime-gpu with IO binding
//! (benches/ort_cuda_python.py), same library, model and shapes, in one run;
//! then batch 1 with CUDA graphs.
//!
//! `cargo bench -p trt-nlp --bench ort_cuda` on a machine with a CUDA GPU and
//! the onnxruntime-gpu library (`ORT_DYLIB_PATH`; Python imports the same
//! wheel through `PYTHONPATH`).
//!
//! Per batch both sides do the same work: the token tensors go from host
//! memory to the device, the model runs, every output comes back to host
//! memory. Timed on the host around each whole batch; median and p99 of
//! `ORT_CUDA_BENCH_RUNS` (100) after 10 warm-up runs.
//!
//! Env: `ORT_CUDA_BENCH_MODELS` (comma-separated ONNX files; default the
//! setup folder's model.onnx and model_fp16.onnx), `ORT_CUDA_BENCH_BATCHES`
//! (1,8,32,128,256), `ORT_CUDA_BENCH_SEQ` (128), `ORT_CUDA_BENCH_RUNS`,
//! `BENCH_PYTHON` (python3). Prints `ratio_vs_python_<model>_b<B>: X.XX`
//! (Python's median over Rust's: above 1 is faster than Python).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use trt_nlp::backend::onnxruntime::{OrtBackend, OrtBackendOptions, Provider};
use trt_nlp::backend::Backend;
use trt_nlp::{Padding, TokenRow, TokenizerPipeline};

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

fn deps() -> PathBuf {
    std::env::var_os("TRT_DEPS_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.deps"))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

/// Median and p99 (ms) of `runs` whole batches of `rows` on `backend`.
fn time_rust(backend: &OrtBackend, pipeline: &TokenizerPipeline, rows: &[TokenRow], runs: usize) -> (f64, f64) {
    let once = || {
        backend.run(&mut |batch| pipeline.pack(rows, batch), &mut |_, outputs| {
            // Touch every output so the download is not skipped.
            std::hint::black_box(outputs.iter().count());
            Ok(())
        })
    };
    for _ in 0..10 {
        once().unwrap();
    }
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            once().unwrap();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (percentile(&t, 0.5), percentile(&t, 0.99))
}

fn python(model: &Path, batches: &str, seq: usize, runs: usize) -> Vec<(usize, f64, f64)> {
    let default_script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/ort_cuda_python.py");
    let script = std::env::var_os("ORT_CUDA_BENCH_SCRIPT").map(PathBuf::from).unwrap_or(default_script);
    let out = Command::new(env("BENCH_PYTHON", "python3"))
        .arg(script)
        .arg(model)
        .args(["--batches", batches, "--seq", &seq.to_string(), "--runs", &runs.to_string()])
        .output()
        .expect("run the Python baseline");
    if !out.status.success() {
        println!("python baseline failed: {}", String::from_utf8_lossy(&out.stderr));
        return Vec::new();
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| (v["batch"].as_u64().unwrap() as usize, v["p50_ms"].as_f64().unwrap(), v["p99_ms"].as_f64().unwrap()))
        .collect()
}

fn main() {
    let folder = deps().join("models/minilm");
    let default_models = format!("{},{}", folder.join("model.onnx").display(), folder.join("model_fp16.onnx").display());
    let models: Vec<PathBuf> = env("ORT_CUDA_BENCH_MODELS", &default_models).split(',').map(PathBuf::from).collect();
    let batches_arg = env("ORT_CUDA_BENCH_BATCHES", "1,8,32,128,256");
    let batches: Vec<usize> = batches_arg.split(',').map(|b| b.parse().unwrap()).collect();
    let seq: usize = env("ORT_CUDA_BENCH_SEQ", "128").parse().unwrap();
    let runs: usize = env("ORT_CUDA_BENCH_RUNS", "100").parse().unwrap();
    let max_batch = batches.iter().copied().max().unwrap_or(1);
    let tokenizer = folder.join("tokenizer.json");
    let pipeline = TokenizerPipeline::builder(seq).padding(Padding::Longest).threads(1).from_file(&tokenizer).unwrap();
    // Rows of exactly `seq` tokens, seeded: [CLS] ids [SEP].
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let rows: Vec<TokenRow> = (0..max_batch)
        .map(|_| {
            let mut ids = vec![101u32];
            ids.extend((0..seq - 2).map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                1000 + (state % 29000) as u32
            }));
            ids.push(102);
            TokenRow::new(ids, None).unwrap()
        })
        .collect();
    println!("# model-only, seq {seq}, {runs} runs per shape, median / p99 per whole batch (upload, run, download)");
    println!(
        "{:<18} {:>5} {:>12} {:>12} {:>12} {:>12} {:>8}",
        "model", "batch", "rust p50", "rust p99", "python p50", "python p99", "ratio"
    );
    let mut ratios = Vec::new();
    for model in &models {
        let name = model.file_stem().unwrap().to_string_lossy().into_owned();
        let py = python(model, &batches_arg, seq, runs);
        let options = OrtBackendOptions { provider: Provider::Cuda { device: 0 }, max_batch, max_seq: seq, ..Default::default() };
        let backend = OrtBackend::new(model, &options).unwrap();
        for &b in &batches {
            let (p50, p99) = time_rust(&backend, &pipeline, &rows[..b], runs);
            let (pp50, pp99) = py.iter().find(|r| r.0 == b).map(|r| (r.1, r.2)).unwrap_or((f64::NAN, f64::NAN));
            println!("{name:<18} {b:>5} {p50:>9.3} ms {p99:>9.3} ms {pp50:>9.3} ms {pp99:>9.3} ms {:>8.2}", pp50 / p50);
            ratios.push(format!("ratio_vs_python_{name}_b{b}: {:.2}", pp50 / p50));
        }
        drop(backend);
        let graphs = OrtBackendOptions { cuda_graph_max_batch: 1, ..options };
        match OrtBackend::new(model, &graphs) {
            Ok(g) => {
                let (p50, p99) = time_rust(&g, &pipeline, &rows[..1], runs);
                println!("{name:<18} {:>5} {p50:>9.3} ms {p99:>9.3} ms   (CUDA graphs, batch bucket 1)", 1);
                ratios.push(format!("cuda_graphs_b1_p50_ms_{name}: {p50:.3}"));
            }
            Err(e) => println!("{name}: CUDA graphs could not be used: {e}"),
        }
    }
    for r in ratios {
        println!("{r}");
    }
}
