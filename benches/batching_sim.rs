//! Dynamic batching on a GPU-like SIMULATED backend, and the scheduler's own
//! cost per request.
//!
//! `cargo bench -p trt-nlp --bench batching_sim` (CPU only; needs
//! `scripts/setup` for the MiniLM tokenizer). No model runs here.
//!
//! 1. The simulation: `SimulatedGpuDouble` (tests/batching_doubles.rs), a
//!    test double of one device that runs one batch at a time and sleeps
//!    `launch + per_token * batch * seq_len`. The constants are fitted to
//!    published TensorRT BERT-base FP16 figures on an A100 (about 0.6 ms at
//!    batch 1 of 128 tokens, about 8.4k sequences/s at batch 128 of 128
//!    tokens) and printed. The unbatched baseline is a FIFO server running
//!    one request per call on the same device (2 workers, so packing
//!    overlaps the device); the dynamic batcher gets the same requests.
//!    Closed loop at concurrency 1, 8, 32, 128 (delay 0: a batch is cut
//!    whenever a worker is free), then policy variants (delay,
//!    preferred sizes, token budget) at 128. Last lines:
//!    `ratio_dynamic_vs_unbatched: X.XX` (throughput at concurrency 128) and
//!    whether the batcher's p99 was equal or better there.
//! 2. Overhead: a zero-cost double (no sleep), concurrency 1, delay 0: the
//!    scheduler's round trip (submit, batcher, worker, pack, outputs, wake)
//!    against a direct call of the same double, p50 and p99;
//!    `scheduler_overhead_p50_us: X.X`.
//!
//! Env: `BATCHING_BENCH_SECONDS` (time limit per cell, default 2),
//! `BATCHING_BENCH_TEXTS` (default 600).

#[path = "../tests/batching_doubles.rs"]
mod doubles;
#[path = "batching_load.rs"]
mod load;

use std::sync::Arc;
use std::time::{Duration, Instant};

use doubles::{double_layout, SimulatedGpuDouble};
use load::{bench_texts, closed_loop, describe, env_f64, env_usize, Batched, Load, Unbatched};
use trt_nlp::batching::{BatchingConfig, Grouping, Request, Scheduler};
use trt_nlp::{Backend, TokenRow, TokenizerPipeline};

#[path = "../tests/common/deps.rs"]
mod deps;

/// Published TensorRT BERT-base FP16 on an A100: batch 1 of 128 tokens.
const A100_BATCH1_MS: f64 = 0.6;
/// ... and sequences per second at batch 128 of 128 tokens.
const A100_BATCH128_SEQ_PER_S: f64 = 8400.0;

fn main() {
    let seconds = env_f64("BATCHING_BENCH_SECONDS", 2.0);
    let limit = Duration::from_secs_f64(seconds);
    let tokenizer = deps::deps_dir().join("minilm/tokenizer.json");
    assert!(tokenizer.exists(), "{} is missing: run scripts/setup", tokenizer.display());
    let pipeline = Arc::new(TokenizerPipeline::builder(128).threads(1).from_file(&tokenizer).unwrap());
    let texts = bench_texts(pipeline.tokenizer(), env_usize("BATCHING_BENCH_TEXTS", 600));
    let rows = Arc::new(pipeline.tokenize(&texts).unwrap());

    // Fit launch + per_token * tokens through the two published points.
    let t1 = A100_BATCH1_MS / 1e3;
    let t128 = 128.0 / A100_BATCH128_SEQ_PER_S;
    let per_token = (t128 - t1) / (128.0 * 128.0 - 128.0);
    let launch = t1 - 128.0 * per_token;
    let (launch, per_token) = (Duration::from_secs_f64(launch), Duration::from_secs_f64(per_token));
    println!("== SIMULATION (a test double, not a GPU): one device, one batch at a time, service = launch + per_token * batch * seq_len");
    println!("   launch {:.1} us, per_token {:.1} ns  (fitted to TensorRT BERT-base FP16 on an A100: {A100_BATCH1_MS} ms at batch 1x128, {A100_BATCH128_SEQ_PER_S} seq/s at batch 128x128)", launch.as_secs_f64() * 1e6, per_token.as_secs_f64() * 1e9);
    println!("   workload: {} (synthetic sentences from the vocabulary); cells bounded at {seconds} s", describe(&rows));

    let layout = double_layout(1, 128, 128);
    let gpu: Arc<dyn Backend> = Arc::new(SimulatedGpuDouble::new(layout.clone(), 2, launch, per_token));
    let base_config = || {
        let mut c = BatchingConfig::default();
        c.max_batch_size = 128;
        c.max_queue_delay = Duration::ZERO;
        c.grouping = Grouping::ByLength;
        c.workers = Some(2);
        c
    };

    let mut at128: Option<(Load, Load)> = None;
    for clients in [1, 8, 32, 128] {
        let per_client = (20_000 / clients).max(50);
        let unbatched = {
            let server = Unbatched::new(gpu.clone(), pipeline.clone(), rows.clone(), 2);
            closed_loop(&server, clients, per_client, limit, rows.len())
        };
        let scheduler = Scheduler::new(gpu.clone(), pipeline.clone(), base_config()).unwrap();
        let dynamic = closed_loop(&Batched { scheduler: &scheduler, rows: &rows }, clients, per_client, limit, rows.len());
        let m = scheduler.metrics();
        println!("closed loop, concurrency {clients:>3}: unbatched {}", unbatched.summary());
        println!(
            "closed loop, concurrency {clients:>3}: dynamic   {}  mean batch {:.1}, padding efficiency {:.2}",
            dynamic.summary(),
            m.mean_batch_size().unwrap_or(0.0),
            m.padding_efficiency().unwrap_or(0.0)
        );
        if clients == 128 {
            at128 = Some((unbatched, dynamic));
        }
    }

    println!("-- policy at concurrency 128 (same simulated device)");
    type Variant = (&'static str, Box<dyn Fn(&mut BatchingConfig)>);
    let variants: Vec<Variant> = vec![
        ("delay 1 ms", Box::new(|c| c.max_queue_delay = Duration::from_millis(1))),
        ("delay 5 ms", Box::new(|c| c.max_queue_delay = Duration::from_millis(5))),
        (
            "preferred 32/64/128, delay 5 ms",
            Box::new(|c| {
                c.max_queue_delay = Duration::from_millis(5);
                c.preferred_batch_sizes = vec![32, 64, 128];
            }),
        ),
        ("token budget 2048", Box::new(|c| c.max_batch_tokens = Some(2048))),
        ("FIFO (no length grouping)", Box::new(|c| c.grouping = Grouping::Fifo)),
    ];
    for (name, set) in variants {
        let mut c = base_config();
        set(&mut c);
        let scheduler = Scheduler::new(gpu.clone(), pipeline.clone(), c).unwrap();
        let l = closed_loop(&Batched { scheduler: &scheduler, rows: &rows }, 128, 20_000 / 128, limit, rows.len());
        let m = scheduler.metrics();
        println!(
            "  {name:<34} {}  mean batch {:.1}, padding efficiency {:.2}",
            l.summary(),
            m.mean_batch_size().unwrap_or(0.0),
            m.padding_efficiency().unwrap_or(0.0)
        );
    }

    overhead(&pipeline, &rows, layout, limit);

    let (unbatched, dynamic) = at128.expect("ran");
    let p99_ok = dynamic.quantile(0.99) <= unbatched.quantile(0.99);
    println!(
        "simulated GPU, concurrency 128: dynamic p99 {:.2} ms vs unbatched p99 {:.2} ms: {}",
        dynamic.quantile(0.99).as_secs_f64() * 1e3,
        unbatched.quantile(0.99).as_secs_f64() * 1e3,
        if p99_ok { "equal or better" } else { "WORSE" }
    );
    println!("ratio_dynamic_vs_unbatched: {:.2}", dynamic.throughput() / unbatched.throughput());
}

/// The scheduler's round trip on a zero-cost double against a direct call of it.
fn overhead(pipeline: &Arc<TokenizerPipeline>, rows: &Arc<Vec<TokenRow>>, layout: trt_nlp::ModelLayout, limit: Duration) {
    let free: Arc<dyn Backend> = Arc::new(SimulatedGpuDouble::new(layout, 1, Duration::ZERO, Duration::ZERO));
    let n = 5000;
    let quantiles = |mut v: Vec<Duration>| {
        v.sort_unstable();
        let q = |p: f64| v[((p * v.len() as f64) as usize).min(v.len() - 1)].as_secs_f64() * 1e6;
        (q(0.5), q(0.99), v.len())
    };
    let start = Instant::now();
    let mut direct = Vec::with_capacity(n);
    for i in 0..n {
        if start.elapsed() > limit {
            break;
        }
        let row = &rows[i % rows.len()];
        let t = Instant::now();
        free.run(&mut |b| pipeline.pack([row], b), &mut |_, o| {
            o.iter().for_each(|(_, v)| drop(std::hint::black_box(v.to_f32())));
            Ok(())
        })
        .unwrap();
        direct.push(t.elapsed());
    }
    let mut c = BatchingConfig::default();
    c.max_queue_delay = Duration::ZERO;
    let scheduler = Scheduler::new(free, pipeline.clone(), c).unwrap();
    let start = Instant::now();
    let mut batched = Vec::with_capacity(n);
    for i in 0..n {
        if start.elapsed() > limit {
            break;
        }
        let t = Instant::now();
        scheduler.submit(Request::token_rows(vec![rows[i % rows.len()].clone()])).unwrap().wait().unwrap();
        batched.push(t.elapsed());
    }
    let (d50, d99, dn) = quantiles(direct);
    let (s50, s99, sn) = quantiles(batched);
    println!("-- scheduler overhead (zero-cost double, concurrency 1, delay 0)");
    println!("  direct backend call (pack, outputs): p50 {d50:.1} us, p99 {d99:.1} us ({dn} calls)");
    println!("  through the scheduler:               p50 {s50:.1} us, p99 {s99:.1} us ({sn} requests)");
    println!("scheduler_overhead_p50_us: {:.1}", s50 - d50);
    println!("scheduler_overhead_p99_us: {:.1}", s99 - d99);
}
