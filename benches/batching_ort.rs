//! Dynamic batching on ONNX Runtime with the default model (MiniLM shape,
//! FP32, CPU), against the baselines the issue names, all measured in one run.
//!
//! `cargo bench -p trt-nlp --bench batching_ort` (needs `scripts/setup`; the
//! 16-core figures come from `scripts/gpu/batching.sh` on the GPU test host).
//!
//! Workload: synthetic sentences from the vocabulary (600 by default, about
//! 20 tokens on average with a long tail; the header prints the
//! distribution), tokenized once; every request is one text.
//!
//! (a) Length-aware grouping against FIFO padding at the same batch size:
//!     `SESSIONS_A` sessions (default 2) of `cores / SESSIONS_A` intra-op
//!     threads, max batch 32, `BATCHING_BENCH_CLIENTS_A` (default 256)
//!     closed-loop clients, so that the queue holds several batches' worth of
//!     rows to group. Last-but-one line:
//!     `ratio_grouped_vs_fifo: X.XX` (throughput).
//! (b) The dynamic batcher against the best unbatched configuration the
//!     issue measured: a pool of sessions sized to the cores (one intra-op
//!     thread each), one request per run, fed by a FIFO queue. The batcher
//!     runs on the same pool (one worker per session, max batch
//!     `BATCHING_BENCH_MAX_BATCH`, default 8, delay 0, length grouping, a
//!     padding floor `BATCHING_BENCH_MIN_PADDING` (default 0.9), a token
//!     budget `BATCHING_BENCH_TOKENS` (default: half the max batch x the
//!     workload's mean length, so that a batch costs at most a few rows' time
//!     and long texts do not wait behind each other's batches; on the 16-core
//!     host this held the closed-loop c128 p99 at x0.92 of the pool's, where
//!     max batch x mean gave x1.00-1.12)
//!     and the queue spread over the workers (the CPU sessions say they run
//!     side by side);
//!     on a CPU a padded token costs as much as a real one and a batch
//!     amortizes little, so small batches that pad little suit it).
//!     Closed loop with 1, 8, 32, 128 clients; open loop with Poisson
//!     arrivals at 90% of what the baseline reached with that many closed-loop
//!     clients. Throughput, p50, p99, and whether the batcher was no worse.
//!
//! (c) TensorRT, gated: with `BATCHING_BENCH_TENSORRT=1` on a GPU TensorRT
//!     can execute on, the same closed-loop comparison on an engine built
//!     from the same ONNX file (`backend::open(.., TensorRt, ..)`; 2 execution
//!     contexts, max batch 128): `ratio_dynamic_vs_unbatched_tensorrt: X.XX`
//!     (concurrency 128). Otherwise it prints why it did not run.
//!
//! Every cell is bounded in requests and in `BATCHING_BENCH_SECONDS`
//! (default 3) and is preceded by a short warm-up. Env: `BATCHING_BENCH_CORES`
//! (default: all), `BATCHING_BENCH_TEXTS` (600), `BATCHING_BENCH_SESSIONS_A` (2),
//! `BATCHING_BENCH_CLIENTS_A` (256), `BATCHING_BENCH_MAX_BATCH` (8),
//! `BATCHING_BENCH_MIN_PADDING` (0.9), `BATCHING_BENCH_TOKENS` (max batch / 2 x mean length).

#[path = "batching_load.rs"]
mod load;

use std::sync::Arc;
use std::time::Duration;

use load::{bench_texts, closed_loop, describe, env_f64, env_usize, open_loop, Batched, Load, Serve, Unbatched};
use trt_nlp::backend::onnxruntime::{OrtBackend, OrtBackendOptions};
#[cfg(feature = "tensorrt")]
use trt_nlp::backend::BackendChoice;
use trt_nlp::backend::BackendOptions;
use trt_nlp::batching::{BatchingConfig, Grouping, Scheduler};
use trt_nlp::{Backend, TokenizerPipeline};

#[path = "../tests/common/deps.rs"]
mod deps;

fn ort(model: &std::path::Path, sessions: usize, intra: usize, max_batch: usize) -> Arc<dyn Backend> {
    let options = BackendOptions::default()
        .with_instances(sessions)
        .with_max_batch(max_batch)
        .with_max_seq(128)
        .with_onnxruntime(OrtBackendOptions::default().with_intra_threads(intra));
    Arc::new(OrtBackend::new(model, &options).expect("the default model loads on ONNX Runtime"))
}

fn batching(max_batch: usize, grouping: Grouping, workers: usize) -> BatchingConfig {
    let mut c = BatchingConfig::default();
    c.max_batch_size = max_batch;
    c.max_queue_delay = Duration::ZERO;
    c.grouping = grouping;
    c.workers = Some(workers);
    c
}

fn main() {
    let limit = Duration::from_secs_f64(env_f64("BATCHING_BENCH_SECONDS", 3.0));
    let cores = env_usize("BATCHING_BENCH_CORES", std::thread::available_parallelism().map_or(1, |c| c.get()));
    let deps = deps::deps_dir();
    let model = deps.join("models/minilm/model.onnx");
    let tokenizer = deps.join("models/minilm/tokenizer.json");
    assert!(model.exists() && tokenizer.exists(), "{} is missing: run scripts/setup", model.display());
    let library = trt_onnx::runtime::OrtLibrary::load().expect("ONNX Runtime loads (ORT_DYLIB_PATH, or scripts/setup's wheel)");
    let pipeline = Arc::new(TokenizerPipeline::builder(128).threads(1).from_file(&tokenizer).unwrap());
    let texts = bench_texts(pipeline.tokenizer(), env_usize("BATCHING_BENCH_TEXTS", 600));
    let rows = Arc::new(pipeline.tokenize(&texts).unwrap());
    println!("== ONNX Runtime {} ({}), CPU, {cores} cores, model {}", library.version(), library.path().display(), model.display());
    println!("   workload: {} (synthetic sentences); cells bounded at {:?} each", describe(&rows), limit);
    let cell = |server: &dyn Serve, clients: usize| {
        closed_loop(server, clients, 20, Duration::from_millis(300), rows.len()); // warm-up
        closed_loop(server, clients, (50_000 / clients).max(100), limit, rows.len())
    };

    // (a) grouping against FIFO, same sessions, same batch size.
    let sessions_a = env_usize("BATCHING_BENCH_SESSIONS_A", 2).clamp(1, cores);
    let clients_a = env_usize("BATCHING_BENCH_CLIENTS_A", 256).max(1);
    let backend_a = ort(&model, sessions_a, (cores / sessions_a).max(1), 32);
    println!(
        "-- (a) max batch 32, {sessions_a} sessions x {} intra-op threads, {clients_a} closed-loop clients",
        (cores / sessions_a).max(1)
    );
    let mut a = Vec::new();
    for grouping in [Grouping::Fifo, Grouping::ByLength] {
        let scheduler = Scheduler::new(backend_a.clone(), pipeline.clone(), batching(32, grouping, sessions_a)).unwrap();
        let l = cell(&Batched { scheduler: &scheduler, rows: &rows }, clients_a);
        let m = scheduler.metrics();
        println!(
            "  {:<10} {}  mean batch {:.1}, padding efficiency {:.2}",
            format!("{grouping:?}"),
            l.summary(),
            m.mean_batch_size().unwrap_or(0.0),
            m.padding_efficiency().unwrap_or(0.0)
        );
        a.push(l);
    }
    drop(backend_a);

    // (b) the batcher against the best unbatched configuration, on one pool of sessions.
    let max_batch = env_usize("BATCHING_BENCH_MAX_BATCH", 8);
    let floor = env_f64("BATCHING_BENCH_MIN_PADDING", 0.9) as f32;
    let mean_len = rows.iter().map(trt_nlp::TokenRow::len).sum::<usize>().div_ceil(rows.len().max(1));
    let tokens = env_usize("BATCHING_BENCH_TOKENS", max_batch.div_ceil(2) * mean_len);
    let pool = ort(&model, cores, 1, max_batch);
    let mut config_b = batching(max_batch, Grouping::ByLength, cores);
    config_b.min_padding_efficiency = floor;
    // Never below one longest row: submit refuses a row over the budget.
    config_b.max_batch_tokens = Some(tokens.max(pipeline.padded_len(rows.iter().map(trt_nlp::TokenRow::len).max().unwrap_or(1))));
    let spread = config_b.spread_across_workers.unwrap_or_else(|| pool.capabilities().parallel_instances);
    println!(
        "-- (b) {cores} sessions x 1 intra-op thread; unbatched: one request per run; dynamic: max batch {max_batch}, delay 0, length grouping, padding floor {floor}, token budget {:?}, spread over workers {spread}",
        config_b.max_batch_tokens
    );
    let unbatched = Unbatched::new(pool.clone(), pipeline.clone(), rows.clone(), cores);
    let scheduler = Scheduler::new(pool.clone(), pipeline.clone(), config_b).unwrap();
    let dynamic = Batched { scheduler: &scheduler, rows: &rows };
    let mut verdicts = Vec::new();
    let mut report = |label: String, base: &Load, dyn_: &Load| {
        println!("  {label:<24} unbatched {}", base.summary());
        println!("  {label:<24} dynamic   {}", dyn_.summary());
        let ok_tput = dyn_.throughput() >= base.throughput() * 0.97;
        let ok_p99 = dyn_.quantile(0.99) <= base.quantile(0.99).mul_f64(1.03);
        verdicts.push(format!(
            "{label}: throughput x{:.2}{}, p99 x{:.2}{}",
            dyn_.throughput() / base.throughput(),
            if ok_tput { "" } else { " (WORSE)" },
            dyn_.quantile(0.99).as_secs_f64() / base.quantile(0.99).as_secs_f64().max(1e-9),
            if ok_p99 { "" } else { " (WORSE)" }
        ));
    };
    let mut closed_base = Vec::new();
    for clients in [1, 8, 32, 128] {
        let base = cell(&unbatched, clients);
        let dyn_ = cell(&dynamic, clients);
        report(format!("closed, {clients} clients"), &base, &dyn_);
        closed_base.push((clients, base.throughput()));
    }
    for (clients, tput) in closed_base {
        let rate = 0.9 * tput;
        let count = ((rate * limit.as_secs_f64()) as usize).max(50);
        let base = open_loop(&unbatched, rate, count, limit, rows.len());
        let dyn_ = open_loop(&dynamic, rate, count, limit, rows.len());
        report(format!("open, {rate:.0}/s (c{clients})"), &base, &dyn_);
    }
    let m = scheduler.metrics();
    println!(
        "  batcher over all of (b): {} rows in {} batches (mean {:.2}), padding efficiency {:.2}, {} failed",
        m.inferences,
        m.executions,
        m.mean_batch_size().unwrap_or(0.0),
        m.padding_efficiency().unwrap_or(0.0),
        m.failures.backend + m.failures.overloaded + m.failures.deadline
    );
    println!("-- dynamic against unbatched (x = dynamic / unbatched; worse = more than 3% behind)");
    for v in &verdicts {
        println!("  {v}");
    }
    drop(scheduler);
    drop(unbatched);
    drop(pool);
    #[cfg(feature = "tensorrt")]
    tensorrt(&model, &pipeline, &rows, &cell);
    #[cfg(not(feature = "tensorrt"))]
    println!("-- (c) TensorRT: not run (this build has no TensorRT: the tensorrt feature)");
    println!("ratio_grouped_vs_fifo: {:.2}", a[1].throughput() / a[0].throughput());
}

/// (c): the batcher against one request per run on a TensorRT engine, where one can execute.
#[cfg(feature = "tensorrt")]
fn tensorrt(
    model: &std::path::Path,
    pipeline: &Arc<TokenizerPipeline>,
    rows: &Arc<Vec<trt_nlp::TokenRow>>,
    cell: &dyn Fn(&dyn Serve, usize) -> Load,
) {
    if std::env::var("BATCHING_BENCH_TENSORRT").as_deref() != Ok("1") {
        println!("-- (c) TensorRT: not run (set BATCHING_BENCH_TENSORRT=1 on a GPU TensorRT can execute on)");
        return;
    }
    let contexts = 2;
    let options = BackendOptions::default().with_instances(contexts).with_max_batch(128).with_max_seq(128);
    let engine = match trt_nlp::backend::open(model, BackendChoice::TensorRt, &options) {
        Ok(b) => b,
        Err(e) => {
            println!("-- (c) TensorRT: not run: {e}");
            return;
        }
    };
    println!(
        "-- (c) TensorRT engine from {}, {contexts} contexts; unbatched: one request per run; dynamic: max batch 128, delay 0",
        model.display()
    );
    let unbatched = Unbatched::new(engine.clone(), pipeline.clone(), rows.clone(), contexts);
    let scheduler = Scheduler::new(engine.clone(), pipeline.clone(), batching(128, Grouping::ByLength, contexts)).unwrap();
    let mut last = None;
    for clients in [1, 8, 32, 128] {
        let base = cell(&unbatched, clients);
        let dyn_ = cell(&Batched { scheduler: &scheduler, rows }, clients);
        println!("  closed, {clients:>3} clients unbatched {}", base.summary());
        println!("  closed, {clients:>3} clients dynamic   {}", dyn_.summary());
        last = Some(dyn_.throughput() / base.throughput());
    }
    if let Some(r) = last {
        println!("ratio_dynamic_vs_unbatched_tensorrt: {r:.2}");
    }
}
