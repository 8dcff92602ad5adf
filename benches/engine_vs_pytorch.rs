//! Throughput and memory of the default model's FP16 TensorRT engine against
//! PyTorch (eager FP16, transformers BertModel with the same weights) on the
//! same GPU, in one run: `cargo bench -p trt-rs --bench engine_vs_pytorch`.
//!
//! Prints, per batch size, sequences/s for both and the engine's device memory
//! (weights + activations, measured as free memory before and after loading)
//! against PyTorch's peak allocation, then lines
//! `ratio_vs_pytorch_fp16_b{B}: X.XX` (throughput) and `memory_ratio_b{B}`.
//!
//! Needs a GPU the loaded TensorRT executes engines on, and Python with torch
//! and transformers (`TRT_BENCH_PYTHON`, default `python3`). Where the GPU is
//! missing or TensorRT cannot execute on it, it prints why and exits with
//! status 0, so `cargo bench --workspace` runs the benches that can run; any
//! other failure exits with status 1. Settings: `TRT_BENCH_SEQ` (128),
//! `TRT_BENCH_BATCHES` (1,32,128), `TRT_BENCH_ITERATIONS` (50).

use std::process::Command;
use std::time::Instant;

use half::f16;
use trt::cuda::{Device, DeviceBuffer, Event, Stream};
use trt::{Bindings, Builder, EngineCache, ExecutionContext, ProfileSpec, Runtime, ShapeRange};

const INPUTS: [&str; 3] = ["input_ids", "attention_mask", "token_type_ids"];

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Why the bench stopped.
enum Stop {
    /// The hardware it measures is not here: not a failure.
    NotHere(String),
    /// Anything else.
    Failed(String),
}

impl From<String> for Stop {
    fn from(e: String) -> Self {
        Stop::Failed(e)
    }
}

impl From<&str> for Stop {
    fn from(e: &str) -> Self {
        Stop::Failed(e.to_owned())
    }
}

fn main() {
    match run() {
        Ok(()) => {}
        Err(Stop::NotHere(why)) => println!("engine_vs_pytorch: not run here: {why}"),
        Err(Stop::Failed(e)) => {
            eprintln!("engine_vs_pytorch: failed: {e}");
            std::process::exit(1);
        }
    }
}

#[path = "../tests/common/deps.rs"]
mod deps;

fn run() -> Result<(), Stop> {
    let seq = env_num("TRT_BENCH_SEQ", 128) as i64;
    let iterations = env_num("TRT_BENCH_ITERATIONS", 50);
    let batches: Vec<i64> =
        std::env::var("TRT_BENCH_BATCHES").unwrap_or_else(|_| "1,32,128".into()).split(',').filter_map(|b| b.trim().parse().ok()).collect();
    let max_batch = *batches.iter().max().ok_or("no batch sizes")?;
    let deps = deps::deps_dir();

    let device = Device::new(0).map_err(|e| Stop::NotHere(e.to_string()))?;
    let (major, minor) = device.compute_capability().map_err(|e| e.to_string())?;
    let gpu = format!("{} (compute capability {major}.{minor})", device.name().map_err(|e| e.to_string())?);
    let builder = Builder::new().map_err(|e| e.to_string())?;
    let cache = EngineCache::new(deps.join("cache"));
    let (plan, _) = cache
        .get_or_build(&builder, deps.join("models/minilm/model_fp16.onnx"), |c| {
            c.add_profile(ProfileSpec::new().with_all(&INPUTS, ShapeRange::new(&[1, 1], &[max_batch, seq], &[max_batch, seq])))?;
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    let (free_before, _) = device.memory_info().map_err(|e| e.to_string())?;
    let engine = Runtime::new()
        .map_err(|e| e.to_string())?
        .deserialize_on(plan.as_bytes(), &device)
        .map_err(|err| Stop::NotHere(format!("TensorRT cannot execute engines on this GPU: {err} (on {gpu})")))?;
    let mut context = ExecutionContext::new(&engine).map_err(|e| e.to_string())?;
    let stream = Stream::new(&device).map_err(|e| e.to_string())?;

    let n = (max_batch * seq) as usize;
    let ids_host: Vec<i32> = (0..n).map(|i| 1000 + (i % 1000) as i32).collect();
    let mut ids = DeviceBuffer::from_slice(&ids_host, &stream).map_err(|e| e.to_string())?;
    let mut mask = DeviceBuffer::from_slice(&vec![1i32; n], &stream).map_err(|e| e.to_string())?;
    let mut types = DeviceBuffer::<i32>::zeros(n, &stream).map_err(|e| e.to_string())?;
    let mut logits = DeviceBuffer::<f16>::zeros(max_batch as usize * 2, &stream).map_err(|e| e.to_string())?;
    let mut hidden = DeviceBuffer::<f16>::zeros(n * 384, &stream).map_err(|e| e.to_string())?;
    let (free_after, _) = device.memory_info().map_err(|e| e.to_string())?;
    // Engine weights + context activations + this bench's I/O buffers.
    let engine_mib = (free_before.saturating_sub(free_after)) as f64 / (1 << 20) as f64;

    let mut rust = Vec::new();
    for &b in &batches {
        for name in INPUTS {
            context.set_input_shape(name, &[b, seq]).map_err(|e| e.to_string())?;
        }
        let (start, end) = (Event::new(&device).map_err(|e| e.to_string())?, Event::new(&device).map_err(|e| e.to_string())?);
        for i in 0..5 + iterations {
            if i == 5 {
                start.record(&stream).map_err(|e| e.to_string())?;
            }
            let bindings = Bindings::new(&stream)
                .bind("input_ids", &mut ids)
                .and_then(|x| x.bind("attention_mask", &mut mask))
                .and_then(|x| x.bind("token_type_ids", &mut types))
                .and_then(|x| x.bind("logits", &mut logits))
                .and_then(|x| x.bind("last_hidden_state", &mut hidden))
                .map_err(|e| e.to_string())?;
            // Waiting per batch mirrors a serving loop; the GPU timing uses events.
            context.enqueue(bindings).map_err(|e| e.to_string())?.wait().map_err(|e| e.to_string())?;
        }
        end.record(&stream).map_err(|e| e.to_string())?;
        end.synchronize().map_err(|e| e.to_string())?;
        let ms = start.elapsed_ms(&end).map_err(|e| e.to_string())? as f64 / iterations as f64;
        rust.push((b, b as f64 * 1000.0 / ms, ms));
    }

    let python = std::env::var("TRT_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/pytorch_baseline.py");
    let started = Instant::now();
    let out = Command::new(&python)
        .arg(&script)
        .arg(deps.join("minilm"))
        .arg(seq.to_string())
        .arg(iterations.to_string())
        .args(batches.iter().map(|b| b.to_string()))
        .output()
        .map_err(|err| format!("cannot run {python}: {err}"))?;
    if !out.status.success() {
        return Err(format!("the PyTorch baseline failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    println!("engine_vs_pytorch on {gpu}: all-MiniLM-L6-v2 + 2-label head, FP16, sequence {seq}, {iterations} iterations");
    println!(
        "tensorrt {} engine+buffers {engine_mib:.0} MiB; pytorch run took {:.1} s",
        builder.library().version(),
        started.elapsed().as_secs_f64()
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    for ((b, rust_sps, rust_ms), py) in rust.iter().zip(&lines) {
        let py_sps = py["seq_per_s"].as_f64().unwrap_or(f64::NAN);
        let py_mib = py["peak_mib"].as_f64().unwrap_or(f64::NAN);
        println!(
            "batch {b:>4}: tensorrt {rust_sps:>10.0} seq/s ({rust_ms:.3} ms)  pytorch {} {py_sps:>10.0} seq/s ({:.3} ms, peak {py_mib:.0} MiB)",
            py["torch"].as_str().unwrap_or("?"),
            py["ms_per_batch"].as_f64().unwrap_or(f64::NAN)
        );
        println!("ratio_vs_pytorch_fp16_b{b}: {:.2}", rust_sps / py_sps);
        println!("memory_ratio_b{b}: {:.2}", engine_mib / py_mib);
    }
    Ok(())
}
