//! Many threads, one model: the dynamic batching scheduler over a
//! `TextModel`, so that texts submitted one at a time from several threads
//! run together in batches.
//!
//! | step | call |
//! |---|---|
//! | open the model | `TextModel::open(path)?` |
//! | a scheduler over it (batch size, queue delay, queue bound: `BatchingConfig`) | `Scheduler::for_model(&model, config)?` |
//! | what each row comes back with: the pooled sentence embedding | `Arc::new(model.embedding()?)` |
//! | from any thread: submit, then wait (or `.await`) | `scheduler.submit(Request::text(t).select(e))?.wait()?` |
//! | finish what was accepted, stop the threads | `scheduler.shutdown()` |
//!
//! `cargo run -p trt-nlp --example batched [MODEL]` (default
//! `$TRT_DEPS_DIR/minilm`, else `.deps/minilm`: all-MiniLM-L6-v2 as
//! `scripts/setup` fetches it). `THREADS` threads each submit `PER_THREAD`
//! texts, one at a time; it prints the throughput and how the batches formed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use trt_nlp::batching::{BatchingConfig, Request, Scheduler};
use trt_nlp::TextModel;

const THREADS: usize = 4;
const PER_THREAD: usize = 24;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Error> {
    let path = std::env::args_os().nth(1).map(PathBuf::from).unwrap_or_else(default_model);
    let model = TextModel::open(&path)?;
    let mut config = BatchingConfig::default();
    // Wait up to 2 ms for company while a batch runs: fuller batches for a little latency.
    config.max_queue_delay = Duration::from_millis(2);
    let scheduler = Scheduler::for_model(&model, config)?;
    let embedding = Arc::new(model.embedding()?);

    let started = Instant::now();
    let dims = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (scheduler, embedding) = (&scheduler, &embedding);
                s.spawn(move || -> Result<usize, Error> {
                    let mut dim = 0;
                    for i in 0..PER_THREAD {
                        let text = format!("Thread {t} asks about topic number {i}: how do batches form under load?");
                        // A deadline, so a stuck queue fails the request instead of blocking the thread.
                        let request = Request::text(text).select(embedding.clone()).timeout(Duration::from_secs(60));
                        let response = scheduler.submit(request)?.wait()?;
                        dim = response.rows()[0].output("embedding").map_or(0, |e| e.len());
                    }
                    Ok(dim)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().map_err(|_| Error::from("a submitting thread panicked"))?).collect::<Result<Vec<_>, _>>()
    })?;
    let elapsed = started.elapsed();
    scheduler.shutdown();

    let texts = THREADS * PER_THREAD;
    let m = scheduler.metrics();
    println!("{}: {texts} texts from {THREADS} threads, one at a time each, embeddings of {} values", path.display(), dims[0]);
    println!(
        "throughput: {:.1} texts/s ({:.2} s); {} batches, {:.2} texts per batch on average, padding efficiency {:.2}",
        texts as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64(),
        m.executions,
        m.mean_batch_size().unwrap_or(0.0),
        m.padding_efficiency().unwrap_or(0.0)
    );
    if m.succeeded != texts as u64 {
        return Err(format!("{} of {texts} requests succeeded", m.succeeded).into());
    }
    Ok(())
}

/// The folder `scripts/setup` fills: `$TRT_DEPS_DIR` (set by the workspace's
/// `.cargo/config.toml` for `cargo run`), else `.deps` under the current folder.
fn default_model() -> PathBuf {
    std::env::var_os("TRT_DEPS_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(".deps")).join("minilm")
}
