//! `trt serve --model-repository DIR`: the KServe v2 / Triton-protocol server
//! (HTTP, gRPC, Prometheus metrics) of trt-serve, on loopback by default.
//!
//! Once every model is loaded it prints one line on stdout,
//! `trt serve: http=ADDR grpc=ADDR metrics=ADDR`, with the ports actually
//! bound (port 0 picks a free one), and serves until Ctrl-C or SIGTERM, when
//! it stops accepting, lets requests in flight finish and exits 0.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use trt_serve::{Access, ApiKey, Limits, Mode, ModelControl, NlpLoader, Ports, ServeOptions, SingleModel, TlsFiles, Transport};

use crate::error::{CliError, Result};

/// Arguments of `trt serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The model repository: DIR/<model>/config.pbtxt and DIR/<model>/<version>/model.onnx or model.plan.
    #[arg(long, value_name = "DIR", required_unless_present_any = ["model_dir", "model_id"], conflicts_with_all = ["model_dir", "model_id"])]
    pub model_repository: Option<PathBuf>,

    /// Serve one model folder (config.pbtxt and version folders) directly, as --model-name
    /// (KServe's /mnt/models).
    #[arg(long, value_name = "DIR", requires = "model_name", conflicts_with = "model_id")]
    pub model_dir: Option<PathBuf>,

    /// Serve a HuggingFace model: a folder (config.json, model.safetensors, tokenizer.json,
    /// sentence-transformers files) or org/name[@revision] in the local HuggingFace cache
    /// ($HF_HUB_CACHE, $HF_HOME/hub; nothing is downloaded). It is imported on first use
    /// (the graph written from its weights, cached by content); no config.pbtxt is needed.
    /// Where ONNX Runtime can run on a GPU it is served there: two sessions per GPU, CUDA
    /// graphs, and row buckets where ONNX Runtime cannot capture the model.
    #[arg(long, value_name = "DIR|ORG/NAME")]
    pub model_id: Option<String>,

    /// With --model-id: import the graph in FP16 (for GPUs; LayerNorm, Softmax and pooling stay FP32).
    #[arg(long, requires = "model_id")]
    pub fp16: bool,

    /// Cut TEI and OpenAI inputs past the model's length when the request does not say
    /// (TEI's --auto-truncate; sentence-transformers always cuts) instead of refusing them
    /// [default: true with --model-id, else false].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub auto_truncate: Option<bool>,

    /// With --model-id: write the encoder in ONNX Runtime's fused operators (faster on CUDA).
    #[arg(long, requires = "model_id")]
    pub fused: bool,

    /// With --model-id: --fused with the encoder layers on the batch's real tokens only
    /// (no padding computed; ONNX Runtime's CUDA provider only).
    #[arg(long, requires = "model_id", conflicts_with = "fused")]
    pub packed: bool,

    /// With --model-id: the most texts one batch runs.
    #[arg(long, default_value_t = 32, requires = "model_id")]
    pub max_batch: usize,

    /// The name the --model-dir or --model-id model is served under [--model-id: default the id's last part].
    #[arg(long, value_name = "NAME")]
    pub model_name: Option<String>,

    /// Address to listen on (loopback unless you choose otherwise).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,

    /// KServe v2 REST port (0: any free port) [default: $PORT (as Knative and KServe set it), else 8000].
    #[arg(long)]
    pub http_port: Option<u16>,

    /// KServe v2 gRPC port (0: any free port).
    #[arg(long, default_value_t = 8001)]
    pub grpc_port: u16,

    /// Prometheus /metrics port (0: any free port).
    #[arg(long, default_value_t = 8002)]
    pub metrics_port: u16,

    /// ONNX Runtime intra-op threads per session (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,

    /// Threads that serve HTTP and gRPC requests [default: one per core].
    #[arg(long, value_name = "N")]
    pub request_threads: Option<std::num::NonZeroUsize>,

    /// Tokenizer threads per model [default: one per core, at most 8].
    #[arg(long)]
    pub tokenizer_threads: Option<usize>,

    /// Largest request body (HTTP) or message (gRPC), in bytes.
    #[arg(long, default_value_t = Limits::default().max_body_bytes)]
    pub max_request_bytes: usize,

    /// Longest text, in bytes.
    #[arg(long, default_value_t = Limits::default().max_text_bytes)]
    pub max_text_bytes: usize,

    /// Most requests waiting per model version (when its config sets no max_queue_size).
    #[arg(long, default_value_t = Limits::default().max_queue)]
    pub max_queue: usize,

    /// Seconds an unload or version switch waits for requests in flight.
    #[arg(long, default_value_t = Limits::default().drain_timeout.as_secs())]
    pub drain_seconds: u64,

    /// Seconds one inference request may take, admission to answer (503 past it; 0: no bound).
    #[arg(long, default_value_t = secs(Limits::default().infer_timeout))]
    pub infer_timeout_secs: u64,

    /// Seconds a client may take to send a request's head (HTTP) or the HTTP/2 preface (gRPC).
    #[arg(long, default_value_t = Transport::default().header_timeout.as_secs())]
    pub header_timeout_secs: u64,

    /// Seconds an HTTP keep-alive connection stays open with no request in flight.
    #[arg(long, default_value_t = Transport::default().idle_timeout.as_secs())]
    pub idle_timeout_secs: u64,

    /// Seconds a client may take to send a whole request body (408 past it).
    #[arg(long, default_value_t = Transport::default().body_timeout.as_secs())]
    pub body_timeout_secs: u64,

    /// Most connections open at once on each of the HTTP and gRPC listeners (keep it under `ulimit -n`).
    #[arg(long, default_value_t = Transport::default().max_connections)]
    pub max_connections: usize,

    /// Most concurrent HTTP/2 streams per connection (gRPC and HTTP/2).
    #[arg(long, default_value_t = Transport::default().grpc_max_streams)]
    pub grpc_max_streams: u32,

    /// Seconds a gRPC connection stays open with no stream open (keepalive pings do not count).
    #[arg(long, default_value_t = Transport::default().grpc_idle_timeout.as_secs())]
    pub grpc_idle_timeout_secs: u64,

    /// Seconds between HTTP/2 keepalive pings on gRPC connections.
    #[arg(long, default_value_t = Transport::default().grpc_keepalive_interval.as_secs())]
    pub grpc_keepalive_secs: u64,

    /// Seconds a gRPC keepalive ping may go unanswered before the connection closes.
    #[arg(long, default_value_t = Transport::default().grpc_keepalive_timeout.as_secs())]
    pub grpc_keepalive_timeout_secs: u64,

    /// API key required as `Authorization: Bearer KEY` on every route but health and metrics
    /// (prefer --api-key-file or TRT_SERVE_API_KEY: a flag shows in the process list).
    #[arg(long, value_name = "KEY", conflicts_with = "api_key_file")]
    pub api_key: Option<String>,

    /// File holding the API key (one line).
    #[arg(long, value_name = "FILE")]
    pub api_key_file: Option<PathBuf>,

    /// Key required on the repository routes (index, load, unload) [default: the API key]
    /// (or --admin-api-key-file, or TRT_SERVE_ADMIN_API_KEY).
    #[arg(long, value_name = "KEY", conflicts_with = "admin_api_key_file")]
    pub admin_api_key: Option<String>,

    /// File holding the admin key (one line).
    #[arg(long, value_name = "FILE")]
    pub admin_api_key_file: Option<PathBuf>,

    /// Health routes need the API key too (they are open by default, for probes).
    #[arg(long)]
    pub auth_health: bool,

    /// `/metrics` needs the API key too (open by default, for scrapers).
    #[arg(long)]
    pub auth_metrics: bool,

    /// Triton's model-control mode: none (every model loads at start; the repository API
    /// cannot load or unload), explicit (--load-model; the API loads and unloads), poll
    /// (every model; the repository is watched for changes).
    #[arg(long, value_enum, default_value_t = ControlMode::None)]
    pub model_control_mode: ControlMode,

    /// With --model-control-mode explicit: a model to load at start (repeatable; '*': every model).
    #[arg(long, value_name = "NAME")]
    pub load_model: Vec<String>,

    /// With --model-control-mode poll: seconds between polls of the repository [default: 15].
    #[arg(long, value_name = "SECS")]
    pub repository_poll_secs: Option<u64>,

    /// Ready only when every model asked for is ready (false: ready once serving).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub strict_readiness: bool,

    /// PEM certificate chain: HTTP and gRPC speak TLS (with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// PEM CA certificates: clients must present a certificate they signed (mTLS).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,

    /// The metrics port speaks TLS too, with the same certificate (and client CA).
    #[arg(long, requires = "tls_cert")]
    pub tls_metrics: bool,

    /// An origin browsers may call from (repeatable; '*': any). None: no CORS headers.
    #[arg(long, value_name = "ORIGIN")]
    pub cors_allow_origin: Vec<String>,
}

/// `--model-control-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ControlMode {
    /// Every model at start; no load / unload.
    None,
    /// --load-model at start; load / unload allowed.
    Explicit,
    /// Every model at start; the repository is polled.
    Poll,
}

fn model_control(a: &Args) -> Result<ModelControl> {
    if !a.load_model.is_empty() && a.model_control_mode != ControlMode::Explicit {
        return Err(CliError::new("--load-model needs --model-control-mode explicit"));
    }
    if a.repository_poll_secs.is_some() && a.model_control_mode != ControlMode::Poll {
        return Err(CliError::new("--repository-poll-secs needs --model-control-mode poll"));
    }
    let mode = match a.model_control_mode {
        ControlMode::None => Mode::None,
        ControlMode::Explicit => Mode::Explicit(a.load_model.clone()),
        ControlMode::Poll => Mode::Poll(positive(a.repository_poll_secs.unwrap_or(15), "repository-poll-secs")?),
    };
    Ok(ModelControl { mode, strict_readiness: a.strict_readiness })
}

/// A key from its flag, its file, or its environment variable, in that order.
fn key(flag: Option<String>, file: Option<&std::path::Path>, env: &str) -> Result<Option<ApiKey>> {
    let value = match (flag, file) {
        (Some(k), _) => Some(k),
        (None, Some(f)) => Some(
            std::fs::read_to_string(f)
                .map_err(|e| CliError::new(format!("cannot read the key file {}: {e}", f.display())))?
                .trim_end_matches(['\r', '\n'])
                .to_string(),
        ),
        (None, None) => std::env::var(env).ok(),
    };
    value.map(|k| ApiKey::new(k).map_err(|e| CliError::new(format!("{env}: {e}")))).transpose()
}

fn secs(d: Option<Duration>) -> u64 {
    d.map_or(0, |d| d.as_secs())
}

/// A whole-seconds flag as a duration; 0 is refused where it would mean "close at once".
fn positive(secs: u64, flag: &str) -> Result<Duration> {
    if secs == 0 {
        return Err(CliError::new(format!("--{flag} must be at least 1 second")));
    }
    Ok(Duration::from_secs(secs))
}

/// Runs the server (the log is set up by `main`: RUST_LOG, `--log-format`, `-v`).
pub fn run(a: Args) -> Result<()> {
    let mut loader = NlpLoader::default();
    loader.backend.onnxruntime.intra_threads = a.threads;
    loader.backend.engine_cache = crate::locate::engine_cache();
    loader.tokenizer.threads = a.tokenizer_threads;
    let limits = Limits {
        max_body_bytes: a.max_request_bytes,
        max_tensor_elements: Limits::default().max_tensor_elements,
        max_text_bytes: a.max_text_bytes,
        max_queue: a.max_queue,
        drain_timeout: Duration::from_secs(a.drain_seconds),
        infer_timeout: (a.infer_timeout_secs > 0).then(|| Duration::from_secs(a.infer_timeout_secs)),
        auto_truncate: a.auto_truncate.unwrap_or(a.model_id.is_some()),
    };
    if a.max_connections == 0 || a.grpc_max_streams == 0 {
        return Err(CliError::new("--max-connections and --grpc-max-streams must be at least 1"));
    }
    let transport = Transport {
        header_timeout: positive(a.header_timeout_secs, "header-timeout-secs")?,
        idle_timeout: positive(a.idle_timeout_secs, "idle-timeout-secs")?,
        body_timeout: positive(a.body_timeout_secs, "body-timeout-secs")?,
        max_connections: a.max_connections,
        grpc_max_streams: a.grpc_max_streams,
        grpc_idle_timeout: positive(a.grpc_idle_timeout_secs, "grpc-idle-timeout-secs")?,
        grpc_keepalive_interval: positive(a.grpc_keepalive_secs, "grpc-keepalive-secs")?,
        grpc_keepalive_timeout: positive(a.grpc_keepalive_timeout_secs, "grpc-keepalive-timeout-secs")?,
    };
    let control = model_control(&a)?;
    let access = Access {
        api_key: key(a.api_key, a.api_key_file.as_deref(), "TRT_SERVE_API_KEY")?,
        admin_api_key: key(a.admin_api_key, a.admin_api_key_file.as_deref(), "TRT_SERVE_ADMIN_API_KEY")?,
        protect_health: a.auth_health,
        protect_metrics: a.auth_metrics,
    };
    if (a.auth_health || a.auth_metrics) && access.api_key.is_none() {
        return Err(CliError::new("--auth-health and --auth-metrics need an API key (--api-key, --api-key-file or TRT_SERVE_API_KEY)"));
    }
    let tls = match (a.tls_cert, a.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key, client_ca: a.tls_client_ca, metrics: a.tls_metrics }),
        _ => None,
    };
    let http_port = match (a.http_port, std::env::var("PORT")) {
        (Some(p), _) => p,
        (None, Ok(p)) => p.trim().parse().map_err(|_| CliError::new(format!("PORT={p:?} is not a port number")))?,
        (None, Err(_)) => 8000,
    };
    // Single-model mode: the folder seen as a one-model repository, kept until the server exits.
    let single = match (&a.model_dir, &a.model_id, &a.model_name) {
        (Some(dir), _, Some(name)) => Some(SingleModel::new(dir, name).map_err(|e| CliError::new(e.to_string()))?),
        (None, Some(id), name) => {
            let name = name.clone().unwrap_or_else(|| default_model_name(id));
            let precision = if a.fp16 { trt_hf::Precision::Fp16 } else { trt_hf::Precision::Fp32 };
            let form = crate::cmd::import::form(a.fused, a.packed);
            let options = trt_hf::ImportOptions::default().with_precision(precision).with_form(form);
            let view = SingleModel::from_hf(id, &name, &trt_hf::default_cache(), &options, a.max_batch)
                .map_err(|e| CliError::new(e.to_string()))?;
            eprintln!("trt serve: serving {id} as model '{name}'");
            Some(view)
        }
        _ => None,
    };
    let repository = match (&single, a.model_repository) {
        (Some(s), _) => s.root().to_path_buf(),
        (None, Some(r)) => r,
        (None, None) => {
            return Err(CliError::new("give --model-repository DIR, --model-id DIR|ORG/NAME, or --model-dir DIR --model-name NAME"))
        }
    };
    let mut options = ServeOptions::new(repository);
    options.ports = Ports::new(a.host, http_port, a.grpc_port, a.metrics_port);
    options.limits = limits;
    options.transport = transport;
    options.access = access;
    options.control = control;
    options.tls = tls;
    options.cors_allow_origin = a.cors_allow_origin;
    options.loader = loader;
    options.request_threads = a.request_threads;
    trt_serve::run(options, |bound| {
        println!("trt serve: http={} grpc={} metrics={}", bound.http, bound.grpc, bound.metrics);
        let _ = std::io::stdout().flush();
    })
    .map_err(|e| CliError::new(e.to_string()))
}

/// The name a `--model-id` model is served under when none is given: the
/// id's last part (`all-MiniLM-L6-v2` for `sentence-transformers/all-MiniLM-L6-v2`
/// or for a folder of that name), in the characters model names allow.
fn default_model_name(id: &str) -> String {
    let id = id.split('@').next().unwrap_or(id).trim_end_matches('/');
    let last = id.rsplit('/').next().unwrap_or(id);
    let name: String = last.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    if name.is_empty() || name.starts_with('.') {
        "model".into()
    } else {
        name
    }
}
