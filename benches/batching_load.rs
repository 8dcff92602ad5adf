//! Load generation for the batching benches (included with `#[path]`; not a
//! bench target): closed-loop clients, open-loop Poisson arrivals, the
//! unbatched baseline server, latency quantiles, and the bench texts.
//! Every loop is bounded in count and in time.
#![allow(dead_code)] // each bench uses part of this

use std::collections::VecDeque;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use trt_nlp::batching::{Handle, Request, Scheduler};
use trt_nlp::{Backend, TokenRow, TokenizerPipeline};

#[path = "support/texts.rs"]
mod texts;
pub use texts::{Rng, SEED};

/// What one load cell measured.
pub struct Load {
    pub completed: usize,
    pub failed: usize,
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
}

impl Load {
    pub fn throughput(&self) -> f64 {
        self.completed as f64 / self.elapsed.as_secs_f64()
    }

    pub fn quantile(&self, q: f64) -> Duration {
        let mut l = self.latencies.clone();
        l.sort_unstable();
        if l.is_empty() {
            return Duration::ZERO;
        }
        l[((q * l.len() as f64).ceil() as usize).clamp(1, l.len()) - 1]
    }

    /// `texts/s p50 p99` as one printable field.
    pub fn summary(&self) -> String {
        format!(
            "{:>9.1} texts/s  p50 {:>8.2} ms  p99 {:>8.2} ms  ({} done{})",
            self.throughput(),
            self.quantile(0.5).as_secs_f64() * 1e3,
            self.quantile(0.99).as_secs_f64() * 1e3,
            self.completed,
            if self.failed > 0 { format!(", {} FAILED", self.failed) } else { String::new() }
        )
    }
}

/// Something that serves one request (row `i` of the workload) to completion
/// and says whether it succeeded: the scheduler or the unbatched server.
pub trait Serve: Sync {
    /// Starts request `i`; the returned ticket blocks until it is done.
    fn start(&self, i: usize) -> Ticket;
}

/// A started request.
pub enum Ticket {
    Batched(Handle),
    Unbatched(mpsc::Receiver<bool>),
    Refused,
}

impl Ticket {
    pub fn finish(self) -> bool {
        match self {
            Ticket::Batched(h) => h.wait().is_ok(),
            Ticket::Unbatched(rx) => rx.recv().unwrap_or(false),
            Ticket::Refused => false,
        }
    }
}

/// `clients` threads issue requests back to back, each stopping after
/// `per_client` requests or when `limit` has passed.
pub fn closed_loop(server: &dyn Serve, clients: usize, per_client: usize, limit: Duration, rows: usize) -> Load {
    let start = Instant::now();
    let results: Vec<(Vec<Duration>, usize)> = std::thread::scope(|s| {
        let joins: Vec<_> = (0..clients)
            .map(|c| {
                s.spawn(move || {
                    let mut lat = Vec::with_capacity(per_client);
                    let mut failed = 0;
                    for k in 0..per_client {
                        if start.elapsed() > limit {
                            break;
                        }
                        let t = Instant::now();
                        if server.start((c * 7919 + k) % rows).finish() {
                            lat.push(t.elapsed());
                        } else {
                            failed += 1;
                        }
                    }
                    (lat, failed)
                })
            })
            .collect();
        joins.into_iter().map(|j| j.join().unwrap()).collect()
    });
    let elapsed = start.elapsed();
    let failed = results.iter().map(|r| r.1).sum();
    let latencies: Vec<Duration> = results.into_iter().flat_map(|r| r.0).collect();
    Load { completed: latencies.len(), failed, elapsed, latencies }
}

/// Poisson arrivals at `rate` per second, at most `count` of them or for
/// `limit`; latency runs from the scheduled arrival to completion, waited
/// for by `collectors` threads.
pub fn open_loop(server: &dyn Serve, rate: f64, count: usize, limit: Duration, rows: usize) -> Load {
    let (tx, rx) = mpsc::channel::<(Instant, Ticket)>();
    let rx = Mutex::new(rx);
    let start = Instant::now();
    let collectors = 32;
    let results: Vec<(Vec<Duration>, usize)> = std::thread::scope(|s| {
        let joins: Vec<_> = (0..collectors)
            .map(|_| {
                let rx = &rx;
                s.spawn(move || {
                    let (mut lat, mut failed) = (Vec::new(), 0);
                    loop {
                        let next = rx.lock().unwrap().recv();
                        let Ok((arrival, ticket)) = next else { break };
                        if ticket.finish() {
                            lat.push(arrival.elapsed());
                        } else {
                            failed += 1;
                        }
                    }
                    (lat, failed)
                })
            })
            .collect();
        let mut rng = Rng(SEED ^ rate.to_bits());
        let mut at = start;
        for i in 0..count {
            // Exponential gaps: -ln(U) / rate.
            let u = ((rng.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
            at += Duration::from_secs_f64(-u.ln() / rate);
            if at.duration_since(start) > limit {
                break;
            }
            if let Some(wait) = at.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if tx.send((at, server.start(i % rows))).is_err() {
                break;
            }
        }
        drop(tx);
        joins.into_iter().map(|j| j.join().unwrap()).collect()
    });
    let elapsed = start.elapsed();
    let failed = results.iter().map(|r| r.1).sum();
    let latencies: Vec<Duration> = results.into_iter().flat_map(|r| r.0).collect();
    Load { completed: latencies.len(), failed, elapsed, latencies }
}

/// The scheduler, serving ready token rows.
pub struct Batched<'a> {
    pub scheduler: &'a Scheduler,
    pub rows: &'a [TokenRow],
}

impl Serve for Batched<'_> {
    fn start(&self, i: usize) -> Ticket {
        match self.scheduler.submit(Request::token_rows(vec![self.rows[i].clone()])) {
            Ok(h) => Ticket::Batched(h),
            Err(_) => Ticket::Refused,
        }
    }
}

/// Queued jobs (row index, completion) and the "stop" flag, with their condvar.
type JobQueue = Arc<(Mutex<(VecDeque<(usize, mpsc::Sender<bool>)>, bool)>, Condvar)>;

/// The unbatched baseline: a FIFO queue and `workers` threads, each running
/// one request per backend call (batch 1), as many at once as the backend
/// has instances.
pub struct Unbatched {
    queue: JobQueue,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Unbatched {
    pub fn new(backend: Arc<dyn Backend>, pipeline: Arc<TokenizerPipeline>, rows: Arc<Vec<TokenRow>>, workers: usize) -> Self {
        let queue: JobQueue = Arc::new((Mutex::new((VecDeque::new(), false)), Condvar::new()));
        let threads = (0..workers)
            .map(|_| {
                let (queue, backend, pipeline, rows) = (queue.clone(), backend.clone(), pipeline.clone(), rows.clone());
                std::thread::spawn(move || loop {
                    let job = {
                        let mut q = queue.0.lock().unwrap();
                        loop {
                            if let Some(job) = q.0.pop_front() {
                                break Some(job);
                            }
                            if q.1 {
                                break None;
                            }
                            q = queue.1.wait(q).unwrap();
                        }
                    };
                    let Some((i, done)) = job else { return };
                    let row = &rows[i];
                    let ok = backend.run(&mut |b| pipeline.pack([row], b), &mut |_, outputs| {
                        // Take the outputs as the scheduler hands them out: an owned f32 copy of each.
                        outputs.iter().for_each(|(_, v)| drop(std::hint::black_box(v.to_f32())));
                        Ok(())
                    });
                    let _ = done.send(ok.is_ok());
                })
            })
            .collect();
        Unbatched { queue, threads }
    }
}

impl Serve for Unbatched {
    fn start(&self, i: usize) -> Ticket {
        let (tx, rx) = mpsc::channel();
        self.queue.0.lock().unwrap().0.push_back((i, tx));
        self.queue.1.notify_one();
        Ticket::Unbatched(rx)
    }
}

impl Drop for Unbatched {
    fn drop(&mut self) {
        self.queue.0.lock().unwrap().1 = true;
        self.queue.1.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Sentence-like texts whose token counts have a long tail around a mean of
/// about 20 (3-59 vocabulary words, the product of two uniforms): synthetic,
/// from the tokenizer's vocabulary, the same on every machine.
pub fn bench_texts(tokenizer: &tokenizers::Tokenizer, n: usize) -> Vec<String> {
    let mut words: Vec<String> =
        tokenizer.get_vocab(false).into_keys().filter(|w| w.len() >= 3 && w.chars().all(|c| c.is_ascii_lowercase())).collect();
    words.sort_unstable();
    let mut rng = Rng(SEED);
    (0..n)
        .map(|_| {
            let count = 3 + (rng.below(16) * rng.below(16)) / 4;
            let mut t: Vec<&str> = (0..count).map(|_| words[rng.below(words.len())].as_str()).collect();
            t.push(".");
            t.join(" ")
        })
        .collect()
}

/// `mean min..max` tokens of rows, for the bench header.
pub fn describe(rows: &[TokenRow]) -> String {
    let lens: Vec<usize> = rows.iter().map(TokenRow::len).collect();
    let mean = lens.iter().sum::<usize>() as f64 / lens.len().max(1) as f64;
    format!("{} texts, tokens mean {mean:.1}, min {}, max {}", lens.len(), lens.iter().min().unwrap_or(&0), lens.iter().max().unwrap_or(&0))
}

pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

pub fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}
