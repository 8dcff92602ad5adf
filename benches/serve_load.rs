//! A bounded loopback load on `trt serve`: single-text embedding requests
//! (KServe v2 JSON over HTTP/1.1 keep-alive) at several concurrencies, against
//! the same model with dynamic batching and without, in one run:
//! `cargo bench -p trt-cli --bench serve_load`.
//!
//! Prints, per model and concurrency, requests/s, p50 and p99 latency and the
//! failures, then `ratio_batched_vs_direct_c{C}: X.XX` (throughput, same run,
//! same server). Each level is bounded by a request count and a time limit.
//!
//! Settings (environment): `SERVE_BENCH_TRT` (the `trt` binary; default the
//! one cargo built), `SERVE_BENCH_MODEL_DIR` (default `.deps/models/minilm`),
//! `SERVE_BENCH_CONCURRENCY` (1,8,32,128), `SERVE_BENCH_REQUESTS` (2000 per
//! level), `SERVE_BENCH_SECONDS` (15 per level), `SERVE_BENCH_THREADS` (ONNX
//! Runtime intra-op threads per session; 0: one per core),
//! `SERVE_BENCH_INSTANCES` (sessions per model, 1), `SERVE_BENCH_MAX_BATCH` (32),
//! `SERVE_BENCH_DELAY_US` (dynamic batching's max_queue_delay, 1000).

#[path = "../tests/common/serve.rs"]
mod serve;
#[path = "support/texts.rs"]
mod texts;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serve::{add_model, text_config, Server};

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One keep-alive HTTP/1.1 connection.
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    fn open(addr: &str) -> std::io::Result<Conn> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Conn { reader: BufReader::new(s.try_clone()?), writer: s })
    }

    /// POSTs `body`; returns the status and drains the response body.
    fn post(&mut self, host: &str, path: &str, body: &[u8]) -> std::io::Result<u16> {
        write!(self.writer, "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len())?;
        self.writer.write_all(body)?;
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let status: u16 = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
        let mut len = 0usize;
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut sink = vec![0u8; len];
        self.reader.read_exact(&mut sink)?;
        Ok(status)
    }
}

struct Level {
    done: usize,
    failed: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// `concurrency` clients, each sending one request at a time, until
/// `requests` are sent or `limit` has passed.
fn load(addr: &str, model: &str, bodies: &Arc<Vec<Vec<u8>>>, concurrency: usize, requests: usize, limit: Duration) -> Level {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let deadline = started + limit;
    let path = format!("/v2/models/{model}/infer");
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (next, bodies, addr, path) = (next.clone(), bodies.clone(), addr.to_string(), path.clone());
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                let mut failed = 0;
                let mut conn = Conn::open(&addr).ok();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= requests || Instant::now() >= deadline {
                        break;
                    }
                    let t = Instant::now();
                    let status = match conn.as_mut() {
                        Some(c) => c.post(&addr, &path, &bodies[i % bodies.len()]),
                        None => Err(std::io::Error::other("no connection")),
                    };
                    match status {
                        Ok(200) => lat.push(t.elapsed()),
                        Ok(_) => failed += 1,
                        Err(_) => {
                            failed += 1;
                            conn = Conn::open(&addr).ok();
                        }
                    }
                }
                (lat, failed)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut failed = 0;
    for w in workers {
        let (l, f) = w.join().expect("load thread");
        latencies.extend(l);
        failed += f;
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    Level { done: latencies.len(), failed, elapsed, latencies }
}

fn main() {
    let deps = std::env::var_os("TRT_DEPS_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.deps")));
    let model_dir = std::env::var_os("SERVE_BENCH_MODEL_DIR").map(PathBuf::from).unwrap_or_else(|| serve::minilm(&deps));
    let trt = std::env::var_os("SERVE_BENCH_TRT").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_trt")));
    let levels: Vec<usize> = std::env::var("SERVE_BENCH_CONCURRENCY")
        .unwrap_or_else(|_| "1,8,32,128".into())
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    let requests = env_num("SERVE_BENCH_REQUESTS", 2000);
    let limit = Duration::from_secs(env_num("SERVE_BENCH_SECONDS", 15) as u64);
    let (instances, max_batch, delay) = (env_num("SERVE_BENCH_INSTANCES", 1), env_num("SERVE_BENCH_MAX_BATCH", 32), env_num("SERVE_BENCH_DELAY_US", 1000));
    let threads = env_num("SERVE_BENCH_THREADS", 0).to_string();

    let repo = tempfile::tempdir().expect("temp dir");
    let group = format!("instance_group [ {{ count: {instances} }} ]");
    let outputs = [("embedding", "384")];
    let batched = text_config("onnxruntime_onnx", max_batch, &outputs, &format!("{group}\ndynamic_batching {{ max_queue_delay_microseconds: {delay} default_queue_policy {{ max_queue_size: 4096 }} }}"));
    add_model(repo.path(), "batched", &batched, &model_dir, ("model.onnx", None));
    add_model(repo.path(), "direct", &text_config("onnxruntime_onnx", max_batch, &outputs, &group), &model_dir, ("model.onnx", None));
    let server = Server::start(&trt, repo.path(), &["--threads", &threads, "--max-queue", "4096"], Duration::from_secs(300));

    let tokenizer = tokenizers::Tokenizer::from_file(model_dir.join("tokenizer.json")).expect("tokenizer.json");
    let bodies: Arc<Vec<Vec<u8>>> = Arc::new(
        texts::generate_texts(&tokenizer, 512)
            .into_iter()
            .map(|t| {
                serde_json::to_vec(&serde_json::json!({
                    "inputs": [{ "name": "text", "shape": [1, 1], "datatype": "BYTES", "data": [t] }],
                    "outputs": [{ "name": "embedding" }],
                }))
                .unwrap()
            })
            .collect(),
    );
    println!(
        "serve_load: single-text embedding requests, HTTP/1.1 JSON on loopback; ONNX Runtime, {instances} session(s), intra threads {threads} (0: per core), max_batch {max_batch}, delay {delay} us; {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let mut throughput = std::collections::BTreeMap::new();
    for model in ["direct", "batched"] {
        // Warm-up outside the measurement.
        load(&server.http, model, &bodies, 4, 64, Duration::from_secs(30));
        for &c in &levels {
            let l = load(&server.http, model, &bodies, c, requests, limit);
            let rps = l.done as f64 / l.elapsed.as_secs_f64();
            println!(
                "{model:8} c={c:<4} requests/s {rps:8.1}  p50 {:7.2} ms  p99 {:7.2} ms  ok {} failed {}  ({:.1} s)",
                percentile(&l.latencies, 0.5).as_secs_f64() * 1e3,
                percentile(&l.latencies, 0.99).as_secs_f64() * 1e3,
                l.done,
                l.failed,
                l.elapsed.as_secs_f64()
            );
            throughput.insert((model, c), rps);
        }
    }
    for &c in &levels {
        let (d, b) = (throughput[&("direct", c)], throughput[&("batched", c)]);
        println!("ratio_batched_vs_direct_c{c}: {:.2}", b / d.max(1e-9));
    }
    let metrics = server.metrics.clone();
    if let Ok(mut s) = TcpStream::connect(&metrics) {
        let _ = write!(s, "GET /metrics HTTP/1.0\r\nHost: {metrics}\r\n\r\n");
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        for line in text.lines().filter(|l| l.starts_with("nv_inference_count{") || l.starts_with("nv_inference_exec_count{")) {
            println!("{line}");
        }
    }
    let status = server.terminate(Duration::from_secs(60));
    assert!(status.success(), "trt serve exited with {status}");
}
