//! The load benches' client side (included with `#[path]`): bounded
//! keep-alive HTTP/1.1 loads at one concurrency, their requests/s and
//! latency percentiles, and the embeddings a server returns (to check two
//! servers run the same model before they are compared).
#![allow(dead_code)] // each bench uses part of this

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::http1::Conn;

/// One level's raw outcome.
pub struct Level {
    pub done: usize,
    pub failed: usize,
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
}

pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// The client's threads: `SERVE_BENCH_CLIENT_THREADS` (default a quarter of
/// the cores, at least 1) run every connection as a task (epoll); 0 gives
/// each connection a blocking thread of its own.
pub fn client_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::env::var("SERVE_BENCH_CLIENT_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or((cores / 4).max(1))
}

/// How the client runs, for the bench's header line.
pub fn describe_client() -> String {
    match client_threads() {
        0 => "client: one blocking thread per connection".into(),
        n => format!("client: {n} thread(s), every connection a task"),
    }
}

/// `concurrency` clients, each POSTing one of `bodies` to `path` at a time,
/// until `requests` are sent or `limit` has passed.
pub fn load(addr: &str, path: &str, bodies: &Arc<Vec<Vec<u8>>>, concurrency: usize, requests: usize, limit: Duration) -> Level {
    match client_threads() {
        0 => load_blocking(addr, path, bodies, concurrency, requests, limit),
        n => load_async(n, addr, path, bodies, concurrency, requests, limit),
    }
}

/// What every client of one level shares: the next request to claim, and
/// when to stop.
struct Claims {
    next: AtomicUsize,
    requests: usize,
    deadline: Instant,
}

impl Claims {
    /// The index of the next request to send, until the count or the time is up.
    fn claim(&self) -> Option<usize> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < self.requests && Instant::now() < self.deadline).then_some(i)
    }
}

/// One client's outcomes.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    failed: usize,
}

impl Tally {
    /// Counts a request sent at `sent` that ended with `status`; true when
    /// the connection broke and must be opened again.
    fn record(&mut self, status: std::io::Result<u16>, sent: Instant) -> bool {
        match status {
            Ok(200) => self.latencies.push(sent.elapsed()),
            Ok(_) => self.failed += 1,
            Err(_) => {
                self.failed += 1;
                return true;
            }
        }
        false
    }
}

/// The level's outcome from every client's tally (all of them done: the
/// level's time ends now).
fn level(tallies: Vec<Tally>, started: Instant) -> Level {
    let elapsed = started.elapsed();
    let (mut latencies, mut failed) = (Vec::new(), 0);
    for t in tallies {
        latencies.extend(t.latencies);
        failed += t.failed;
    }
    latencies.sort_unstable();
    Level { done: latencies.len(), failed, elapsed, latencies }
}

fn load_blocking(addr: &str, path: &str, bodies: &Arc<Vec<Vec<u8>>>, concurrency: usize, requests: usize, limit: Duration) -> Level {
    let started = Instant::now();
    let claims = Arc::new(Claims { next: AtomicUsize::new(0), requests, deadline: started + limit });
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (claims, bodies, addr, path) = (claims.clone(), bodies.clone(), addr.to_string(), path.to_string());
            std::thread::spawn(move || {
                let mut tally = Tally::default();
                let mut conn = Conn::open(&addr).ok();
                while let Some(i) = claims.claim() {
                    let t = Instant::now();
                    let status = match conn.as_mut() {
                        Some(c) => c.post(&addr, &path, &bodies[i % bodies.len()]).map(|(code, _)| code),
                        None => Err(std::io::Error::other("no connection")),
                    };
                    if tally.record(status, t) {
                        conn = Conn::open(&addr).ok();
                    }
                }
                tally
            })
        })
        .collect();
    let tallies: Vec<Tally> = workers.into_iter().map(|w| w.join().expect("load thread")).collect();
    level(tallies, started)
}

fn load_async(
    threads: usize,
    addr: &str,
    path: &str,
    bodies: &Arc<Vec<Vec<u8>>>,
    concurrency: usize,
    requests: usize,
    limit: Duration,
) -> Level {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build().expect("client runtime");
    let started = Instant::now();
    let claims = Arc::new(Claims { next: AtomicUsize::new(0), requests, deadline: started + limit });
    let tallies = runtime.block_on(async {
        let tasks: Vec<_> = (0..concurrency)
            .map(|_| {
                let (claims, bodies, addr, path) = (claims.clone(), bodies.clone(), addr.to_string(), path.to_string());
                tokio::spawn(async move {
                    let mut tally = Tally::default();
                    let mut conn = crate::http1::AsyncConn::open(&addr).await.ok();
                    while let Some(i) = claims.claim() {
                        let t = Instant::now();
                        let status = match conn.as_mut() {
                            Some(c) => c.post(&addr, &path, &bodies[i % bodies.len()]).await,
                            None => Err(std::io::Error::other("no connection")),
                        };
                        if tally.record(status, t) {
                            conn = crate::http1::AsyncConn::open(&addr).await.ok();
                        }
                    }
                    tally
                })
            })
            .collect();
        let mut tallies = Vec::with_capacity(tasks.len());
        for t in tasks {
            tallies.push(t.await.expect("load task"));
        }
        tallies
    });
    level(tallies, started)
}

/// This process's CPU time so far (user + system), from /proc (Linux); zero elsewhere.
pub fn own_cpu() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return Duration::ZERO };
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // USER_HZ is 100 on every Linux ABI this runs on.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// Whether `GET /v2/health/ready` on `addr` answers 200 within `limit`.
pub fn wait_ready(addr: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(mut s) = TcpStream::connect(addr) {
            let _ = write!(s, "GET /v2/health/ready HTTP/1.0\r\nHost: {addr}\r\n\r\n");
            let mut head = [0u8; 12];
            if s.read_exact(&mut head).is_ok() && head.ends_with(b"200") {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    false
}

/// Throughput and latency of one level, printed the same for either server.
pub struct Measured {
    pub rps: f64,
    pub p50: Duration,
    pub p99: Duration,
    pub failed: usize,
}

pub fn measure(label: &str, addr: &str, path: &str, bodies: &Arc<Vec<Vec<u8>>>, c: usize, requests: usize, limit: Duration) -> Measured {
    let cpu = own_cpu();
    let l = load(addr, path, bodies, c, requests, limit);
    let client_cpu = (own_cpu().saturating_sub(cpu)).as_secs_f64() / l.elapsed.as_secs_f64().max(1e-9);
    let m = Measured {
        rps: l.done as f64 / l.elapsed.as_secs_f64(),
        p50: percentile(&l.latencies, 0.5),
        p99: percentile(&l.latencies, 0.99),
        failed: l.failed,
    };
    println!(
        "{label:8} c={c:<4} requests/s {:8.1}  p50 {:7.2} ms  p99 {:7.2} ms  ok {} failed {}  ({:.1} s, client cpu {:.0}%)",
        m.rps,
        m.p50.as_secs_f64() * 1e3,
        m.p99.as_secs_f64() * 1e3,
        l.done,
        l.failed,
        l.elapsed.as_secs_f64(),
        client_cpu * 100.0
    );
    m
}

/// The embeddings a server returns for `bodies` (one text each), parsed by `pick`.
pub fn embeddings(addr: &str, path: &str, bodies: &[Vec<u8>], pick: fn(&serde_json::Value) -> Option<Vec<f64>>) -> Vec<Vec<f64>> {
    let mut conn = Conn::open(addr).expect("connect for the embedding check");
    bodies
        .iter()
        .map(|b| {
            let (code, body) = conn.post(addr, path, b).expect("embedding request");
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            pick(&v).filter(|_| code == 200).unwrap_or_else(|| panic!("{path} answered {code}: {}", String::from_utf8_lossy(&body)))
        })
        .collect()
}

pub fn floats(v: &serde_json::Value) -> Option<Vec<f64>> {
    v.as_array()?.iter().map(|x| x.as_f64()).collect()
}

pub fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b)).max(1e-12)
}

/// The smallest cosine between matching rows of `a` and `b`.
pub fn min_cosine(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    a.iter().zip(b).map(|(x, y)| cosine(x, y)).fold(f64::INFINITY, f64::min)
}
