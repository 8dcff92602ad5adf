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
//! `ORT_CUDA_BENCH_RUNS` (100) after 10 warm-up runs. The two sides take
//! turns shape by shape, in `ORT_CUDA_BENCH_ROUNDS` (4) rounds of a share of
//! the runs each, Python first in one round and Rust first in the next (the
//! Python process times on request: `--serve`), so a drift of the GPU's or
//! the host's speed during the run falls on both sides alike.
//!
//! Env: `ORT_CUDA_BENCH_MODELS` (comma-separated ONNX files; default the
//! setup folder's model.onnx and model_fp16.onnx), `ORT_CUDA_BENCH_BATCHES`
//! (1,8,32,128,256), `ORT_CUDA_BENCH_SEQ` (128), `ORT_CUDA_BENCH_RUNS`,
//! `ORT_CUDA_BENCH_ROUNDS` (4), `ORT_CUDA_BENCH_GRAPHS` (1; 0 skips the batch-1 CUDA-graph
//! pass, which a packed graph cannot take), `BENCH_PYTHON` (python3). Prints `ratio_vs_python_<model>_b<B>: X.XX`
//! (Python's median over Rust's: above 1 is faster than Python), and for each model
//! `ratio_rust_<model>_vs_python_<earlier model>_b<B>` against every model listed before it:
//! the base-sized case lists the torch export and ONNX Runtime's optimizer output first and
//! the graphs `trt import --fp16 --fused` / `--packed` wrote from the same weights after
//! (scripts/gpu/hf.sh base makes all four). With `ORT_CUDA_BENCH_FLOP_PER_TOKEN` (170e6 for
//! BERT/MPNet-base) and `ORT_CUDA_BENCH_PEAK` (790e12 for the H200's dense FP16) it prints each
//! Rust median's sequences/s and share of that peak. A folder's `model.onnx` is named after
//! the folder.
//!
//! Without a CUDA driver, a GPU, or ONNX Runtime's CUDA provider it prints
//! why and exits 0.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use trt_nlp::backend::onnxruntime::{OrtBackend, OrtBackendOptions, Provider};
use trt_nlp::backend::{Backend, BackendOptions};
use trt_nlp::{Padding, TokenRow, TokenizerPipeline};

#[path = "support/not_here.rs"]
mod not_here;

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
    p50_p99(rust_times(backend, pipeline, rows, runs, true))
}

/// Median and p99 of `times`.
fn p50_p99(mut times: Vec<f64>) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

/// The times (ms) of `runs` whole batches of `rows` on `backend`, after 10
/// warm-up runs where `warm_up`.
fn rust_times(backend: &OrtBackend, pipeline: &TokenizerPipeline, rows: &[TokenRow], runs: usize, warm_up: bool) -> Vec<f64> {
    let once = || {
        backend.run(&mut |batch| pipeline.pack(rows, batch), &mut |_, outputs| {
            // Touch every output so the download is not skipped.
            std::hint::black_box(outputs.iter().count());
            Ok(())
        })
    };
    if warm_up {
        for _ in 0..10 {
            once().unwrap();
        }
    }
    (0..runs)
        .map(|_| {
            let s = Instant::now();
            once().unwrap();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect()
}

/// The Python baseline timing on request (`ort_cuda_python.py --serve`).
struct PythonTimer {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
}

impl PythonTimer {
    fn start(model: &Path, batches: &str, seq: usize) -> std::io::Result<PythonTimer> {
        let mut child = Command::new(env("BENCH_PYTHON", "python3"))
            .arg(python_script())
            .arg(model)
            .args(["--batches", batches, "--seq", &seq.to_string(), "--serve"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        let input = child.stdin.take().expect("piped stdin");
        let output = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
        Ok(PythonTimer { child, input, output })
    }

    /// The times (ms) of `runs` batches of `batch` rows.
    fn time(&mut self, batch: usize, runs: usize) -> Option<Vec<f64>> {
        use std::io::{BufRead, Write};
        writeln!(self.input, "{batch} {runs}").ok()?;
        let mut line = String::new();
        self.output.read_line(&mut line).ok()?;
        let v: serde_json::Value = serde_json::from_str(&line).ok()?;
        v["times_ms"].as_array()?.iter().map(|t| t.as_f64()).collect()
    }
}

impl Drop for PythonTimer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn python_script() -> PathBuf {
    let default_script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/ort_cuda_python.py");
    std::env::var_os("ORT_CUDA_BENCH_SCRIPT").map(PathBuf::from).unwrap_or(default_script)
}

/// Median and p99 of each side per batch size, the sides taking turns per
/// shape over `rounds` rounds; `None` for Python where it failed.
#[allow(clippy::type_complexity)]
fn interleaved(
    backend: &OrtBackend,
    pipeline: &TokenizerPipeline,
    rows: &[TokenRow],
    python: &mut Option<PythonTimer>,
    batches: &[usize],
    runs: usize,
    rounds: usize,
) -> Vec<((f64, f64), Option<(f64, f64)>)> {
    let share = runs.div_ceil(rounds.max(1));
    let mut rust: Vec<Vec<f64>> = vec![Vec::new(); batches.len()];
    let mut py: Vec<Option<Vec<f64>>> = vec![Some(Vec::new()); batches.len()];
    for round in 0..rounds.max(1) {
        for (i, &b) in batches.iter().enumerate() {
            let mut python_turn = |py: &mut Option<Vec<f64>>| {
                let got = python.as_mut().and_then(|p| p.time(b, share));
                match (py.as_mut(), got) {
                    (Some(v), Some(t)) => v.extend(t),
                    _ => *py = None,
                }
            };
            if round % 2 == 0 {
                python_turn(&mut py[i]);
                rust[i].extend(rust_times(backend, pipeline, &rows[..b], share, round == 0));
            } else {
                rust[i].extend(rust_times(backend, pipeline, &rows[..b], share, false));
                python_turn(&mut py[i]);
            }
        }
    }
    rust.into_iter().zip(py).map(|(r, p)| (p50_p99(r), p.filter(|p| !p.is_empty()).map(p50_p99))).collect()
}

fn main() {
    let folder = deps().join("models/minilm");
    let default_models = format!("{},{}", folder.join("model.onnx").display(), folder.join("model_fp16.onnx").display());
    let models: Vec<PathBuf> = env("ORT_CUDA_BENCH_MODELS", &default_models).split(',').map(PathBuf::from).collect();
    let batches_arg = env("ORT_CUDA_BENCH_BATCHES", "1,8,32,128,256");
    let batches: Vec<usize> = batches_arg.split(',').map(|b| b.parse().unwrap()).collect();
    let seq: usize = env("ORT_CUDA_BENCH_SEQ", "128").parse().unwrap();
    let runs: usize = env("ORT_CUDA_BENCH_RUNS", "100").parse().unwrap();
    let rounds: usize = env("ORT_CUDA_BENCH_ROUNDS", "4").parse().unwrap();
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
    println!(
        "# model-only, seq {seq}, {runs} runs per shape in {rounds} rounds taking turns with Python, median / p99 per whole batch (upload, run, download)"
    );
    println!(
        "{:<18} {:>5} {:>12} {:>12} {:>12} {:>12} {:>8}",
        "model", "batch", "rust p50", "rust p99", "python p50", "python p99", "ratio"
    );
    let mut ratios = Vec::new();
    // Per model: its name and the Rust and Python medians per batch, for the
    // ratios across models at the end.
    let mut medians: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for model in &models {
        let name = model_name(model);
        let options = BackendOptions::default()
            .with_max_batch(max_batch)
            .with_max_seq(seq)
            .with_onnxruntime(OrtBackendOptions::default().with_provider(Provider::Cuda { device: 0 }));
        // The Rust session first: on a machine without CUDA for ONNX Runtime
        // nothing is started, the bench says why and exits 0.
        let backend = match OrtBackend::new(model, &options) {
            Ok(b) => b,
            Err(e) if not_here::cuda_not_here(&e) => return println!("ort_cuda: not run here: {e}"),
            Err(e) => panic!("ONNX Runtime session on CUDA for {}: {e}", model.display()),
        };
        let mut python = match PythonTimer::start(model, &batches_arg, seq) {
            Ok(p) => Some(p),
            Err(e) => {
                println!("python baseline failed to start: {e}");
                None
            }
        };
        let timed = interleaved(&backend, &pipeline, &rows, &mut python, &batches, runs, rounds);
        drop(python);
        let mut per_batch = Vec::new();
        for (&b, ((p50, p99), py)) in batches.iter().zip(timed) {
            let (pp50, pp99) = py.unwrap_or((f64::NAN, f64::NAN));
            println!("{name:<18} {b:>5} {p50:>9.3} ms {p99:>9.3} ms {pp50:>9.3} ms {pp99:>9.3} ms {:>8.2}", pp50 / p50);
            ratios.push(format!("ratio_vs_python_{name}_b{b}: {:.2}", pp50 / p50));
            per_batch.push((p50, pp50));
        }
        medians.push((name.clone(), per_batch));
        drop(backend);
        if env("ORT_CUDA_BENCH_GRAPHS", "1") == "0" {
            continue;
        }
        let mut graphs = options;
        graphs.onnxruntime.cuda_graph_max_batch = 1;
        match OrtBackend::new(model, &graphs) {
            Ok(g) => {
                let (p50, p99) = time_rust(&g, &pipeline, &rows[..1], runs);
                println!("{name:<18} {:>5} {p50:>9.3} ms {p99:>9.3} ms   (CUDA graphs, batch bucket 1)", 1);
                ratios.push(format!("cuda_graphs_b1_p50_ms_{name}: {p50:.3}"));
            }
            Err(e) => println!("{name}: CUDA graphs could not be used: {e}"),
        }
    }
    // Each model in Rust against Python on every model listed before it (a
    // graph written by trt-hf against the torch export and ONNX Runtime's
    // optimizer output of the same weights, listed first), and the share of
    // the peak where ORT_CUDA_BENCH_FLOP_PER_TOKEN and ORT_CUDA_BENCH_PEAK say.
    let flop: f64 = env("ORT_CUDA_BENCH_FLOP_PER_TOKEN", "0").parse().unwrap_or(0.0);
    let peak: f64 = env("ORT_CUDA_BENCH_PEAK", "0").parse().unwrap_or(0.0);
    for (i, (name, ours)) in medians.iter().enumerate() {
        for (base, theirs) in &medians[..i] {
            for (&b, ((p50, _), (_, pp50))) in batches.iter().zip(ours.iter().zip(theirs)) {
                ratios.push(format!("ratio_rust_{name}_vs_python_{base}_b{b}: {:.2}", pp50 / p50));
            }
        }
        if flop > 0.0 && peak > 0.0 {
            for (&b, (p50, _)) in batches.iter().zip(ours) {
                let share = (b * seq) as f64 * flop / (p50 / 1e3) / peak;
                ratios.push(format!("peak_share_rust_{name}_b{b}: {:.1}% ({:.0} sequences/s)", 100.0 * share, b as f64 / (p50 / 1e3)));
            }
        }
    }
    for r in ratios {
        println!("{r}");
    }
}

/// A model's name in the report: the file's stem, or its folder's name for
/// a folder's `model.onnx` (what `trt import` writes).
fn model_name(model: &Path) -> String {
    let stem = model.file_stem().unwrap_or_default().to_string_lossy().into_owned();
    match model.parent().and_then(Path::file_name) {
        Some(dir) if stem == "model" => dir.to_string_lossy().into_owned(),
        _ => stem,
    }
}
