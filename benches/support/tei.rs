//! HuggingFace text-embeddings-inference (TEI) as the load bench's baseline:
//! its router binary started on 127.0.0.1 over the same model (ONNX Runtime
//! backend, mean pooling), killed when the guard drops. TEI is not built
//! here: `SERVE_BENCH_TEI` names a `text-embeddings-router` built with
//! `-F ort,http` (docs/measurements/tei-2026-12-01/README.md says how).
//!
//! TEI feeds `input_ids`, `attention_mask` and `token_type_ids` as INT64;
//! the default model takes INT32. TEI gets the same graph and weights with
//! its INT32 inputs turned INT64, each followed by a Cast to INT32
//! ([`int64_inputs`]): nothing else changes.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use trt_onnx::graph::proto::type_proto;
use trt_onnx::graph::tensor::{INT32, INT64};
use trt_onnx::graph::{edit, Model, WeightStorage};

/// Writes `src` to `dst` with every INT32 graph input made INT64 and cast
/// back to INT32 before its first use (names kept, so TEI finds them).
pub fn int64_inputs(src: &Path, dst: &Path) {
    let mut model = Model::load(src).expect("the default model loads");
    let graph = model.graph_mut().unwrap();
    let mut casts = Vec::new();
    for input in &mut graph.input {
        let Some(type_proto::Value::TensorType(t)) = input.r#type.as_mut().and_then(|t| t.value.as_mut()) else { continue };
        if t.elem_type != Some(INT32) {
            continue;
        }
        t.elem_type = Some(INT64);
        let name = input.name.clone().unwrap_or_default();
        casts.push((name.clone(), format!("{name}_int32")));
    }
    for node in &mut graph.node {
        for i in &mut node.input {
            if let Some((_, cast)) = casts.iter().find(|(n, _)| n == i) {
                *i = cast.clone();
            }
        }
    }
    let nodes = casts
        .iter()
        .map(|(n, c)| edit::node("Cast", format!("{n}_to_int32"), vec![n.clone()], c.clone(), vec![edit::int_attr("to", INT32 as i64)]));
    graph.node.splice(0..0, nodes);
    model.save(dst, &WeightStorage::Inline).expect("the INT64-input model is written");
}

/// The router flags that decide its throughput, as passed (and printed).
pub struct TeiSettings {
    pub tokenization_workers: usize,
    pub max_batch_tokens: usize,
    pub max_concurrent_requests: usize,
}

impl TeiSettings {
    /// TEI's own defaults, explicit: tokenization workers = cores - 1 (1..=64),
    /// 16384 batch tokens (its ONNX Runtime backend caps a batch at 8
    /// requests, 8 x 512 tokens fit), and at least 512 concurrent requests
    /// (never below twice the highest concurrency, so none is refused).
    /// `SERVE_BENCH_TEI_{TOKENIZATION_WORKERS,MAX_BATCH_TOKENS,MAX_CONCURRENT}` override them.
    pub fn from_env(cores: usize, max_concurrency: usize) -> TeiSettings {
        let num = |name: &str, default: usize| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
        TeiSettings {
            tokenization_workers: num("SERVE_BENCH_TEI_TOKENIZATION_WORKERS", cores.saturating_sub(1).clamp(1, 64)),
            max_batch_tokens: num("SERVE_BENCH_TEI_MAX_BATCH_TOKENS", 16384),
            max_concurrent_requests: num("SERVE_BENCH_TEI_MAX_CONCURRENT", (2 * max_concurrency).max(512)),
        }
    }

    fn args(&self) -> Vec<String> {
        [
            ("--tokenization-workers", self.tokenization_workers),
            ("--max-batch-tokens", self.max_batch_tokens),
            ("--max-concurrent-requests", self.max_concurrent_requests),
        ]
        .iter()
        .flat_map(|(k, v)| [k.to_string(), v.to_string()])
        .collect()
    }

    pub fn describe(&self) -> String {
        format!(
            "--tokenization-workers {} --max-batch-tokens {} --max-concurrent-requests {} (max batch 8 requests: its ONNX Runtime backend's cap)",
            self.tokenization_workers, self.max_batch_tokens, self.max_concurrent_requests
        )
    }
}

/// A running TEI router and its HTTP address (`host:port`).
pub struct Tei {
    child: Option<Child>,
    pub http: String,
    log: PathBuf,
}

/// A port that was free a moment ago (TEI cannot report an ephemeral one).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free loopback port")
}

impl Tei {
    /// Starts `binary` on a copy of `model_dir`'s tokenizer and config and
    /// its model with INT64 inputs under `work`, with `ort_library` as its
    /// ONNX Runtime, and waits (at most `ready_within`) until `/embed` answers 200.
    /// The environment is cleared: every TEI flag also reads an environment
    /// variable (`HOSTNAME`, `PORT`, ...), and none must leak in.
    pub fn start(binary: &Path, model_dir: &Path, work: &Path, ort_library: &Path, settings: &TeiSettings, ready_within: Duration) -> Tei {
        let model = work.join("tei-model");
        std::fs::create_dir_all(&model).unwrap();
        for f in ["tokenizer.json", "config.json"] {
            std::fs::copy(model_dir.join(f), model.join(f)).unwrap();
        }
        if !model.join("model.onnx").is_file() {
            // Made once per work folder: a run that starts TEI again reuses it.
            int64_inputs(&model_dir.join("model.onnx"), &model.join("model.onnx"));
        }
        let port = free_port();
        let log = work.join("tei.log");
        let child = Command::new(binary)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("ORT_DYLIB_PATH", ort_library)
            .arg("--model-id")
            .arg(&model)
            .args(["--dtype", "float32", "--pooling", "mean", "--hostname", "127.0.0.1"])
            .args(["--port", &port.to_string(), "--prometheus-port", &free_port().to_string()])
            .args(settings.args())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(work.join("tei.stderr")).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", binary.display()));
        let mut tei = Tei { child: Some(child), http: format!("127.0.0.1:{port}"), log };
        tei.wait_ready(ready_within);
        tei
    }

    fn wait_ready(&mut self, within: Duration) {
        let deadline = Instant::now() + within;
        let probe = br#"{"inputs":"ready"}"#;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.as_mut().unwrap().try_wait() {
                panic!("TEI exited with {status} before it was ready:\n{}", self.log_tail());
            }
            if TcpStream::connect(&self.http).is_ok() {
                if let Ok((200, _)) = crate::http1::Conn::open(&self.http).and_then(|mut c| c.post(&self.http, "/embed", probe)) {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("TEI was not ready within {within:?}:\n{}", self.log_tail());
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Tei {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
