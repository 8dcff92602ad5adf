//! Triton's `config.pbtxt`: the fields `trt serve` understands, typed and
//! checked. Unknown fields are collected as warnings (the model still loads);
//! an invalid value fails the model's load with the field named, e.g.
//! `config.pbtxt line 3: max_batch_size: expected a non-negative integer, found '-4'`.
//!
//! | field | meaning here |
//! |---|---|
//! | `name` | must match the folder when given |
//! | `platform` / `backend` | `tensorrt_plan` / `tensorrt`, `onnxruntime_onnx` / `onnxruntime`: picks the backend and the file (`model.plan`, `model.onnx`) |
//! | `max_batch_size` | largest batch the scheduler cuts (0: one request's rows at a time) |
//! | `input` | `{ name: "text" data_type: TYPE_STRING dims: [ 1 ] }` makes a text model; any other inputs (or none listed: read from the model) a tensor model (`tensor_model`) |
//! | `output` | the engine's outputs to expose, plus `embedding` (pooled, L2-normalised) for text models; none listed: a tensor model's every output |
//! | `dynamic_batching` | `preferred_batch_size`, `max_queue_delay_microseconds`, `priority_levels`, `default_priority_level`, `default_queue_policy` |
//! | `instance_group` | `count` instances (batches that run at once) per group, and on `KIND_GPU` per GPU of `gpus` (every visible GPU where none is listed, as Triton does; see `placement`); `kind` (`KIND_AUTO`, `KIND_CPU`, `KIND_GPU`) |
//! | `version_policy` | `latest { num_versions }`, `all { }`, `specific { versions }` |
//! | `optimization` | `cuda { graphs, graph_spec [ { batch_size } ] }`: CUDA graphs for ONNX Runtime on a GPU, batches up to the largest listed size (else `max_batch_size`) |
//! | `parameters` | `{ key: "..." value { string_value: "..." } }` entries, kept in order; trt serve reads `pad.<input>` and `unpad.<output>` on tensor models (module `tensor_padding`) and `cuda_row_buckets` (`true`/`false`) and `cuda_host_wait` (`block`/`spin`) on ONNX Runtime models, `aggregation_strategy` on a token classifier with an `entities` output (module `text_model`), other keys are kept (shown by the config endpoints) with a warning |

pub mod text_format;

use std::time::Duration;
use trt_nlp::HostWait;

use text_format::{Field, Message, Scalar, Value};

pub use crate::protocols::kserve::DataType;

/// A `config.pbtxt` that cannot be served: the line and field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config.pbtxt line {line}: {field}: {message}")]
pub struct ConfigError {
    /// 1-based line of the offending field (0 when the field is missing).
    pub line: usize,
    /// The field's path, e.g. `dynamic_batching.max_queue_delay_microseconds`.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// Which runtime executes the model (and which file a version folder holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Platform {
    /// `tensorrt_plan`: `model.plan`.
    TensorRtPlan,
    /// `onnxruntime_onnx`: `model.onnx`.
    OnnxRuntimeOnnx,
}

impl Platform {
    /// The platform string of Triton's metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::TensorRtPlan => "tensorrt_plan",
            Platform::OnnxRuntimeOnnx => "onnxruntime_onnx",
        }
    }

    /// The backend name of Triton's config (`backend: "..."`).
    pub fn backend_name(self) -> &'static str {
        match self {
            Platform::TensorRtPlan => "tensorrt",
            Platform::OnnxRuntimeOnnx => "onnxruntime",
        }
    }

    /// The file a version folder holds by default.
    pub fn default_filename(self) -> &'static str {
        match self {
            Platform::TensorRtPlan => "model.plan",
            Platform::OnnxRuntimeOnnx => "model.onnx",
        }
    }
}

/// One `input` or `output` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorConfig {
    /// Name.
    pub name: String,
    /// Element type.
    pub data_type: DataType,
    /// Dimensions without the batch dimension (`-1` is dynamic).
    pub dims: Vec<i64>,
}

/// What happens to a request whose queue timeout expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutAction {
    /// Fail it (503).
    Reject,
    /// Keep it, behind requests still within their time.
    Delay,
}

/// `default_queue_policy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuePolicy {
    /// What an expired request gets.
    pub timeout_action: TimeoutAction,
    /// Queue timeout when the request sets none (`None`: no timeout).
    pub default_timeout: Option<Duration>,
    /// Whether a request's `timeout` parameter may override it.
    pub allow_timeout_override: bool,
    /// Most requests waiting (`0` in the config: the server's limit applies).
    pub max_queue_size: usize,
}

impl Default for QueuePolicy {
    fn default() -> Self {
        QueuePolicy { timeout_action: TimeoutAction::Reject, default_timeout: None, allow_timeout_override: false, max_queue_size: 0 }
    }
}

/// `instance_group.kind`: where a model's instances run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum InstanceKind {
    /// `KIND_AUTO` (or no kind): the backend decides (a GPU where one is usable).
    #[default]
    Auto,
    /// `KIND_CPU`.
    Cpu,
    /// `KIND_GPU`: on the GPUs of `gpus` (all the driver reports where none is listed).
    Gpu,
}

impl InstanceKind {
    /// Triton's name of the kind.
    pub fn triton_name(self) -> &'static str {
        match self {
            InstanceKind::Auto => "KIND_AUTO",
            InstanceKind::Cpu => "KIND_CPU",
            InstanceKind::Gpu => "KIND_GPU",
        }
    }
}

/// One `instance_group` entry, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceGroup {
    /// `count`: instances per GPU listed (on `KIND_GPU`), else in all. Default 1.
    pub count: usize,
    /// `kind`.
    pub kind: InstanceKind,
    /// `gpus`, in order, repeats kept (each entry is a device instance of
    /// `count`); empty: none listed.
    pub gpus: Vec<u32>,
}

/// `dynamic_batching`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DynamicBatching {
    /// Batch sizes to cut at when enough requests wait.
    pub preferred_batch_size: Vec<usize>,
    /// How long the first request of a batch may wait for company.
    pub max_queue_delay: Duration,
    /// Number of priority levels (0: one level).
    pub priority_levels: u64,
    /// Level of requests that set none (1 is the highest; 0: the lowest level).
    pub default_priority_level: u64,
    /// The queue policy of every level.
    pub default_queue_policy: QueuePolicy,
}

/// `version_policy`: which version folders are served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionPolicy {
    /// The `n` highest versions (Triton's default: 1).
    Latest(usize),
    /// Every version.
    All,
    /// Exactly these versions.
    Specific(Vec<u64>),
}

impl VersionPolicy {
    /// The versions to serve out of those found on disk.
    pub fn select(&self, available: &[u64]) -> Vec<u64> {
        let mut v = available.to_vec();
        v.sort_unstable();
        v.dedup();
        match self {
            VersionPolicy::Latest(n) => v.split_off(v.len().saturating_sub(*n)),
            VersionPolicy::All => v,
            VersionPolicy::Specific(want) => v.into_iter().filter(|x| want.contains(x)).collect(),
        }
    }
}

/// A parsed, checked `config.pbtxt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    /// The model's name (the folder's).
    pub name: String,
    /// Backend and file type.
    pub platform: Platform,
    /// Largest batch (0: the model is not batched by the server).
    pub max_batch_size: usize,
    /// Inputs.
    pub inputs: Vec<TensorConfig>,
    /// Outputs.
    pub outputs: Vec<TensorConfig>,
    /// Dynamic batching, when configured.
    pub dynamic_batching: Option<DynamicBatching>,
    /// Sum of the `instance_group` counts (1 by default): the batches that
    /// may run at once off the GPU; on `KIND_GPU` each count is per GPU
    /// (`placement`).
    pub instance_count: usize,
    /// Where the instances run (`instance_group.kind`; every group must agree).
    pub instance_kind: InstanceKind,
    /// The GPUs listed in `instance_group.gpus`, each once (empty: none listed).
    pub gpus: Vec<u32>,
    /// The `instance_group` entries as written (empty: none).
    pub instance_groups: Vec<InstanceGroup>,
    /// Which versions are served.
    pub version_policy: VersionPolicy,
    /// `optimization { cuda { graphs: true } }`: batches of up to this many
    /// rows run as CUDA graphs (ONNX Runtime on a GPU), one per shape bucket:
    /// the largest `graph_spec.batch_size` where any is listed, else
    /// `max_batch_size`; 0: no graphs.
    pub cuda_graph_max_batch: usize,
    /// The `cuda_row_buckets` parameter (`"true"`/`"false"`, default false):
    /// on a GPU, ONNX Runtime batches larger than the CUDA-graph limit run
    /// padded to their power-of-two row bucket, sequences to multiples of 8,
    /// so that kernels that pay per new shape (fused attention) see few.
    pub cuda_row_buckets: bool,
    /// The `cuda_host_wait` parameter (`"block"`/`"spin"`, default block):
    /// how an ONNX Runtime session's worker on a GPU waits for its batch.
    /// A server's workers share the cores with its request threads, so by
    /// default they sleep; `spin` answers sooner where cores are idle.
    pub cuda_host_wait: HostWait,
    /// `parameters` as `(key, string_value)`, in config order, each key once.
    pub parameters: Vec<(String, String)>,
    /// Fields that were ignored, one line each (logged at load).
    pub warnings: Vec<String>,
}

impl ModelConfig {
    /// The input of that name.
    pub fn input(&self, name: &str) -> Option<&TensorConfig> {
        self.inputs.iter().find(|t| t.name == name)
    }

    /// The instance groups the model config endpoints report: those written,
    /// each with the model's kind where it gave none; one group of one
    /// instance where none was written.
    pub fn reported_instance_groups(&self) -> Vec<InstanceGroup> {
        if self.instance_groups.is_empty() {
            return vec![InstanceGroup { count: self.instance_count, kind: self.instance_kind, gpus: Vec::new() }];
        }
        let kind = |k: InstanceKind| if k == InstanceKind::Auto { self.instance_kind } else { k };
        self.instance_groups.iter().map(|g| InstanceGroup { kind: kind(g.kind), ..g.clone() }).collect()
    }

    /// The output of that name.
    pub fn output(&self, name: &str) -> Option<&TensorConfig> {
        self.outputs.iter().find(|t| t.name == name)
    }

    /// Parses `text`, the `config.pbtxt` of the model folder `folder_name`.
    pub fn parse(text: &str, folder_name: &str) -> Result<Self, ConfigError> {
        let root = text_format::parse(text).map_err(|e| ConfigError { line: e.line, field: "(syntax)".into(), message: e.message })?;
        let mut cx = Cx { warnings: Vec::new() };
        let mut name = None;
        let mut platform_field = None;
        let mut backend = None;
        let mut max_batch_size = 0;
        let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
        let mut dynamic_batching = None;
        let mut instance_count = 0usize;
        let mut saw_instance_group = false;
        let mut instance_kind: Option<(InstanceKind, usize)> = None;
        let mut gpus: Vec<u32> = Vec::new();
        let mut instance_groups = Vec::new();
        let mut version_policy = VersionPolicy::Latest(1);
        let mut graphs: Option<Option<usize>> = None;
        let mut parameters: Vec<(String, String)> = Vec::new();
        let mut cuda_row_buckets = false;
        let mut cuda_host_wait = HostWait::Block;
        for f in &root.fields {
            match f.name.as_str() {
                "name" => name = Some((cx.string(f, "name")?, f.line)),
                "platform" => platform_field = Some((cx.string(f, "platform")?, f.line)),
                "backend" => backend = Some((cx.string(f, "backend")?, f.line)),
                "max_batch_size" => max_batch_size = cx.uint(f, "max_batch_size", i32::MAX as u64)? as usize,
                "input" => inputs.push(cx.tensor(f, "input")?),
                "output" => outputs.push(cx.tensor(f, "output")?),
                "dynamic_batching" => dynamic_batching = Some(cx.dynamic_batching(f)?),
                "instance_group" => {
                    saw_instance_group = true;
                    let group = cx.instance_group(f)?;
                    let (count, kind) = (group.count, group.kind);
                    instance_count += count;
                    match instance_kind {
                        // A group without a kind (KIND_AUTO) goes with any other.
                        _ if kind == InstanceKind::Auto => {}
                        Some((k, line)) if k != kind && k != InstanceKind::Auto => {
                            return Err(err(
                                f.line,
                                "instance_group.kind",
                                format!("{} here but {} on line {line}: one kind per model", kind.triton_name(), k.triton_name()),
                            ))
                        }
                        _ => instance_kind = Some((kind, f.line)),
                    }
                    for &g in &group.gpus {
                        if !gpus.contains(&g) {
                            gpus.push(g);
                        }
                    }
                    instance_groups.push(group);
                }
                "version_policy" => version_policy = cx.version_policy(f)?,
                "optimization" => graphs = cx.optimization(f)?,
                "parameters" => {
                    let (key, value) = cx.parameter(f)?;
                    if parameters.iter().any(|(k, _)| *k == key) {
                        return Err(err(f.line, "parameters.key", format!("'{key}' is given twice")));
                    }
                    if key == ROW_BUCKETS {
                        cuda_row_buckets = match value.as_str() {
                            "true" => true,
                            "false" => false,
                            other => {
                                return Err(err(f.line, "parameters.cuda_row_buckets", format!("'{other}' is neither true nor false")))
                            }
                        };
                    } else if key == HOST_WAIT {
                        cuda_host_wait = match value.as_str() {
                            "block" => HostWait::Block,
                            "spin" => HostWait::Spin,
                            other => return Err(err(f.line, "parameters.cuda_host_wait", format!("'{other}' is neither block nor spin"))),
                        };
                    } else if !key.starts_with("pad.") && !key.starts_with("unpad.") && key != "aggregation_strategy" {
                        cx.warnings.push(format!("config.pbtxt line {}: parameter '{key}' is not read by trt serve", f.line));
                    }
                    parameters.push((key, value));
                }
                _ => cx.unknown("", f),
            }
        }
        let name = match name {
            Some((n, line)) if n != folder_name => {
                return Err(err(line, "name", format!("'{n}' differs from the model folder '{folder_name}'")))
            }
            _ => folder_name.to_string(),
        };
        let platform = match (&platform_field, &backend) {
            (Some((p, line)), _) => match p.as_str() {
                "tensorrt_plan" => Platform::TensorRtPlan,
                "onnxruntime_onnx" => Platform::OnnxRuntimeOnnx,
                other => return Err(err(*line, "platform", format!("'{other}' is not served (tensorrt_plan, onnxruntime_onnx)"))),
            },
            (None, Some((b, line))) => match b.as_str() {
                "tensorrt" => Platform::TensorRtPlan,
                "onnxruntime" => Platform::OnnxRuntimeOnnx,
                other => return Err(err(*line, "backend", format!("'{other}' is not served (tensorrt, onnxruntime)"))),
            },
            (None, None) => return Err(err(0, "platform", "neither platform nor backend is set".into())),
        };
        if let (Some(_), Some((b, line))) = (&platform_field, &backend) {
            if b != platform.backend_name() {
                return Err(err(*line, "backend", format!("'{b}' contradicts the platform's backend '{}'", platform.backend_name())));
            }
        }
        // No input or output listed: a tensor model takes them from its model
        // file at load (Triton's auto-complete); a text model needs both.
        for list in [&inputs, &outputs] {
            for (i, t) in list.iter().enumerate() {
                if list[..i].iter().any(|u| u.name == t.name) {
                    return Err(err(0, "input/output", format!("'{}' is declared twice", t.name)));
                }
            }
        }
        if let Some(db) = &dynamic_batching {
            if let Some(&p) = db.preferred_batch_size.iter().find(|&&p| p > max_batch_size.max(1)) {
                return Err(err(0, "dynamic_batching.preferred_batch_size", format!("{p} is larger than max_batch_size {max_batch_size}")));
            }
            if db.priority_levels > 0 && db.default_priority_level > db.priority_levels {
                return Err(err(
                    0,
                    "dynamic_batching.default_priority_level",
                    format!("{} is above priority_levels {}", db.default_priority_level, db.priority_levels),
                ));
            }
        }
        if !saw_instance_group {
            instance_count = 1;
        }
        let cuda_graph_max_batch = match graphs {
            None => 0,
            Some(None) => max_batch_size.max(1),
            Some(Some(b)) if b > max_batch_size.max(1) => {
                return Err(err(
                    0,
                    "optimization.cuda.graph_spec.batch_size",
                    format!("{b} is larger than max_batch_size {max_batch_size}"),
                ))
            }
            Some(Some(b)) => b,
        };
        Ok(ModelConfig {
            name,
            platform,
            max_batch_size,
            inputs,
            outputs,
            dynamic_batching,
            instance_count,
            instance_kind: instance_kind.map(|(k, _)| k).unwrap_or_default(),
            gpus,
            instance_groups,
            version_policy,
            cuda_graph_max_batch,
            cuda_row_buckets,
            cuda_host_wait,
            parameters,
            warnings: cx.warnings,
        })
    }
}

/// The parameter that turns row buckets on ([`ModelConfig::cuda_row_buckets`]).
const ROW_BUCKETS: &str = "cuda_row_buckets";
/// The parameter that sets how GPU workers wait ([`ModelConfig::cuda_host_wait`]).
const HOST_WAIT: &str = "cuda_host_wait";

fn err(line: usize, field: &str, message: String) -> ConfigError {
    ConfigError { line, field: field.to_string(), message }
}

/// Typed reads of the untyped tree, gathering warnings.
struct Cx {
    warnings: Vec<String>,
}

impl Cx {
    fn unknown(&mut self, path: &str, f: &Field) {
        self.warnings.push(format!("config.pbtxt line {}: unknown or unsupported field '{path}{}' ignored", f.line, f.name));
    }

    fn scalar<'a>(&self, f: &'a Field, path: &str) -> Result<&'a Scalar, ConfigError> {
        match &f.value {
            Value::Scalar(s) => Ok(s),
            Value::Message(_) => Err(err(f.line, path, "expected a value, found a message".into())),
        }
    }

    fn message<'a>(&self, f: &'a Field, path: &str) -> Result<&'a Message, ConfigError> {
        match &f.value {
            Value::Message(m) => Ok(m),
            Value::Scalar(s) => Err(err(f.line, path, format!("expected a message {{ ... }}, found {s}"))),
        }
    }

    fn string(&self, f: &Field, path: &str) -> Result<String, ConfigError> {
        match self.scalar(f, path)? {
            Scalar::Str(s) => Ok(s.clone()),
            other => Err(err(f.line, path, format!("expected a quoted string, found {other}"))),
        }
    }

    fn int(&self, f: &Field, path: &str) -> Result<i64, ConfigError> {
        let s = self.scalar(f, path)?;
        let parsed = match s {
            Scalar::Number(n) => match n.strip_prefix("0x") {
                Some(hex) => i64::from_str_radix(hex, 16).ok(),
                None => n.parse::<i64>().ok(),
            },
            _ => None,
        };
        parsed.ok_or_else(|| err(f.line, path, format!("expected an integer, found {s}")))
    }

    fn uint(&self, f: &Field, path: &str, max: u64) -> Result<u64, ConfigError> {
        let v = self.int(f, path)?;
        u64::try_from(v)
            .ok()
            .filter(|&v| v <= max)
            .ok_or_else(|| err(f.line, path, format!("expected a non-negative integer up to {max}, found '{v}'")))
    }

    fn boolean(&self, f: &Field, path: &str) -> Result<bool, ConfigError> {
        match self.scalar(f, path)? {
            Scalar::Ident(s) if s == "true" => Ok(true),
            Scalar::Ident(s) if s == "false" => Ok(false),
            Scalar::Number(n) if n == "1" => Ok(true),
            Scalar::Number(n) if n == "0" => Ok(false),
            other => Err(err(f.line, path, format!("expected true or false, found {other}"))),
        }
    }

    fn ident(&self, f: &Field, path: &str) -> Result<String, ConfigError> {
        match self.scalar(f, path)? {
            Scalar::Ident(s) => Ok(s.clone()),
            other => Err(err(f.line, path, format!("expected an enum value, found {other}"))),
        }
    }

    fn tensor(&mut self, f: &Field, kind: &str) -> Result<TensorConfig, ConfigError> {
        let m = self.message(f, kind)?;
        let (mut name, mut data_type, mut dims) = (None, None, Vec::new());
        for g in &m.fields {
            match g.name.as_str() {
                "name" => name = Some(self.string(g, &format!("{kind}.name"))?),
                "data_type" => {
                    let path = format!("{kind}.data_type");
                    let v = self.ident(g, &path)?;
                    data_type =
                        Some(DataType::from_config_name(&v).ok_or_else(|| err(g.line, &path, format!("'{v}' is not a TYPE_* data type")))?);
                }
                "dims" => {
                    let path = format!("{kind}.dims");
                    let d = self.int(g, &path)?;
                    if d < -1 || d == 0 {
                        return Err(err(g.line, &path, format!("{d} is not a dimension (positive, or -1 for dynamic)")));
                    }
                    dims.push(d);
                }
                _ => self.unknown(&format!("{kind}."), g),
            }
        }
        let name = name.ok_or_else(|| err(f.line, &format!("{kind}.name"), "missing".into()))?;
        let data_type = data_type.ok_or_else(|| err(f.line, &format!("{kind}.data_type"), format!("missing for '{name}'")))?;
        if dims.is_empty() {
            return Err(err(f.line, &format!("{kind}.dims"), format!("missing for '{name}'")));
        }
        Ok(TensorConfig { name, data_type, dims })
    }

    /// One `parameters` entry: `key: "..." value { string_value: "..." }`.
    fn parameter(&mut self, f: &Field) -> Result<(String, String), ConfigError> {
        let m = self.message(f, "parameters")?;
        let (mut key, mut value) = (None, None);
        for g in &m.fields {
            match g.name.as_str() {
                "key" => key = Some(self.string(g, "parameters.key")?),
                "value" => {
                    for h in &self.message(g, "parameters.value")?.fields {
                        match h.name.as_str() {
                            "string_value" => value = Some(self.string(h, "parameters.value.string_value")?),
                            _ => self.unknown("parameters.value.", h),
                        }
                    }
                }
                _ => self.unknown("parameters.", g),
            }
        }
        let key = key.ok_or_else(|| err(f.line, "parameters.key", "missing".into()))?;
        let value = value.ok_or_else(|| err(f.line, "parameters.value.string_value", format!("missing for '{key}'")))?;
        Ok((key, value))
    }

    fn queue_policy(&mut self, f: &Field, path: &str) -> Result<QueuePolicy, ConfigError> {
        let m = self.message(f, path)?;
        let mut p = QueuePolicy::default();
        for g in &m.fields {
            let gp = format!("{path}.{}", g.name);
            match g.name.as_str() {
                "timeout_action" => {
                    p.timeout_action = match self.ident(g, &gp)?.as_str() {
                        "REJECT" => TimeoutAction::Reject,
                        "DELAY" => TimeoutAction::Delay,
                        other => return Err(err(g.line, &gp, format!("'{other}' is not REJECT or DELAY"))),
                    }
                }
                "default_timeout_microseconds" => {
                    let us = self.uint(g, &gp, u64::MAX)?;
                    p.default_timeout = (us > 0).then(|| Duration::from_micros(us));
                }
                "allow_timeout_override" => p.allow_timeout_override = self.boolean(g, &gp)?,
                "max_queue_size" => p.max_queue_size = self.uint(g, &gp, u32::MAX as u64)? as usize,
                _ => self.unknown(&format!("{path}."), g),
            }
        }
        Ok(p)
    }

    fn dynamic_batching(&mut self, f: &Field) -> Result<DynamicBatching, ConfigError> {
        let m = self.message(f, "dynamic_batching")?;
        let mut db = DynamicBatching::default();
        for g in &m.fields {
            let gp = format!("dynamic_batching.{}", g.name);
            match g.name.as_str() {
                "preferred_batch_size" => {
                    let p = self.uint(g, &gp, i32::MAX as u64)? as usize;
                    if p == 0 {
                        return Err(err(g.line, &gp, "0 is not a batch size".into()));
                    }
                    db.preferred_batch_size.push(p);
                }
                "max_queue_delay_microseconds" => {
                    // An hour bounds it: a longer wait would be a typo, not a policy.
                    db.max_queue_delay = Duration::from_micros(self.uint(g, &gp, 3_600_000_000)?)
                }
                "priority_levels" => db.priority_levels = self.uint(g, &gp, 1024)?,
                "default_priority_level" => db.default_priority_level = self.uint(g, &gp, 1024)?,
                "default_queue_policy" => db.default_queue_policy = self.queue_policy(g, &gp)?,
                _ => self.unknown("dynamic_batching.", g),
            }
        }
        db.preferred_batch_size.sort_unstable();
        Ok(db)
    }

    fn instance_group(&mut self, f: &Field) -> Result<InstanceGroup, ConfigError> {
        let m = self.message(f, "instance_group")?;
        let (mut count, mut kind, mut gpus) = (1, InstanceKind::Auto, Vec::new());
        for g in &m.fields {
            match g.name.as_str() {
                "count" => {
                    count = self.uint(g, "instance_group.count", 256)? as usize;
                    if count == 0 {
                        return Err(err(g.line, "instance_group.count", "0 instances cannot run anything".into()));
                    }
                }
                "kind" => {
                    kind = match self.ident(g, "instance_group.kind")?.as_str() {
                        "KIND_AUTO" => InstanceKind::Auto,
                        "KIND_CPU" => InstanceKind::Cpu,
                        "KIND_GPU" => InstanceKind::Gpu,
                        other => {
                            return Err(err(
                                g.line,
                                "instance_group.kind",
                                format!("'{other}' is not served (KIND_AUTO, KIND_CPU or KIND_GPU)"),
                            ))
                        }
                    }
                }
                "gpus" => gpus.push(self.uint(g, "instance_group.gpus", u32::MAX as u64)? as u32),
                _ => self.unknown("instance_group.", g),
            }
        }
        if !gpus.is_empty() && kind == InstanceKind::Cpu {
            return Err(err(m.fields[0].line, "instance_group.gpus", "KIND_CPU instances take no gpus".into()));
        }
        Ok(InstanceGroup { count, kind, gpus })
    }

    /// `optimization { cuda { graphs: B graph_spec [ { batch_size: N } ] } }`:
    /// `None` without graphs, else the largest listed batch size, if any.
    fn optimization(&mut self, f: &Field) -> Result<Option<Option<usize>>, ConfigError> {
        let (mut graphs, mut largest) = (false, None::<usize>);
        for g in &self.message(f, "optimization")?.fields {
            if g.name != "cuda" {
                self.unknown("optimization.", g);
                continue;
            }
            for h in &self.message(g, "optimization.cuda")?.fields {
                match h.name.as_str() {
                    "graphs" => graphs = self.boolean(h, "optimization.cuda.graphs")?,
                    "graph_spec" => {
                        for k in &self.message(h, "optimization.cuda.graph_spec")?.fields {
                            match k.name.as_str() {
                                "batch_size" => {
                                    let b = self.uint(k, "optimization.cuda.graph_spec.batch_size", 1 << 16)? as usize;
                                    largest = Some(largest.unwrap_or(0).max(b.max(1)));
                                }
                                _ => self.unknown("optimization.cuda.graph_spec.", k),
                            }
                        }
                    }
                    _ => self.unknown("optimization.cuda.", h),
                }
            }
        }
        Ok(graphs.then_some(largest))
    }

    fn version_policy(&mut self, f: &Field) -> Result<VersionPolicy, ConfigError> {
        let m = self.message(f, "version_policy")?;
        let [choice] = m.fields.as_slice() else {
            return Err(err(f.line, "version_policy", "expected exactly one of latest, all, specific".into()));
        };
        let inner = self.message(choice, &format!("version_policy.{}", choice.name))?;
        match choice.name.as_str() {
            "latest" => {
                let mut n = 1;
                for g in &inner.fields {
                    match g.name.as_str() {
                        "num_versions" => {
                            n = self.uint(g, "version_policy.latest.num_versions", 1024)? as usize;
                            if n == 0 {
                                return Err(err(g.line, "version_policy.latest.num_versions", "0 versions serve nothing".into()));
                            }
                        }
                        _ => self.unknown("version_policy.latest.", g),
                    }
                }
                Ok(VersionPolicy::Latest(n))
            }
            "all" => {
                for g in &inner.fields {
                    self.unknown("version_policy.all.", g);
                }
                Ok(VersionPolicy::All)
            }
            "specific" => {
                let mut versions = Vec::new();
                for g in &inner.fields {
                    match g.name.as_str() {
                        "versions" => versions.push(self.uint(g, "version_policy.specific.versions", i64::MAX as u64)?),
                        _ => self.unknown("version_policy.specific.", g),
                    }
                }
                if versions.is_empty() {
                    return Err(err(choice.line, "version_policy.specific.versions", "no version listed".into()));
                }
                Ok(VersionPolicy::Specific(versions))
            }
            other => Err(err(choice.line, "version_policy", format!("'{other}' is not latest, all or specific"))),
        }
    }
}
