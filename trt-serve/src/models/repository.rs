//! The model repository, in Triton's layout: `ROOT/<model>/config.pbtxt` and
//! `ROOT/<model>/<version>/model.onnx` (or `model.plan`), versions being
//! positive integers, served per the config's `version_policy`.
//!
//! Loading and switching versions:
//! - a load (at start, or through the repository API) reads the config, opens
//!   and warms every version the policy selects that is not already served
//!   from the same config, and only then swaps the model's version table in
//!   one step under a lock, so a request sees either the old table or the new;
//! - a request holds its version (`Arc<ServedVersion>`) until it has answered,
//!   so requests in flight finish on the version they started on and none fails;
//! - versions that left the table are drained (bounded by
//!   [`Limits::drain_timeout`]) and their memory is released when their last
//!   request drops them;
//! - a load that fails leaves what was served in place; a version that fails
//!   (e.g. a TensorRT plan on a machine where TensorRT cannot execute) is
//!   listed as UNAVAILABLE with the reason, and the others still serve.
//!
//! Model names from the network are single folder names, checked before any
//! path is built, and the folder must resolve inside the repository root, so
//! the load API cannot reach outside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::config::ModelConfig;
use crate::error::{ServeError, ServeResult};
use crate::models::dispatch::Dispatcher;
use crate::models::model_control::ModelControl;
use crate::models::tensor_dispatch::TensorDispatcher;
use crate::models::tensor_model::TensorModel;
use crate::models::text_model::{is_text_model, ConfiguredModel};
use crate::transport::limits::Limits;
use trt_nlp::tensor::TensorBackend;
use trt_nlp::TextModel;

/// Opens one version of a model (blocking: files, sessions, engines).
pub trait VersionLoader: Send + Sync + 'static {
    /// The text model of `version_dir`, for `config`; `model_dir` holds the
    /// config and (unless the version folder has its own) the tokenizer files.
    fn load(&self, config: &ModelConfig, model_dir: &Path, version_dir: &Path) -> ServeResult<TextModel>;

    /// The tensor model (a config that is not a text model's) of
    /// `version_dir`: its executor, whose inputs and outputs the config is
    /// checked against. By default, none: a loader of text models only.
    fn load_tensor(&self, config: &ModelConfig, _model_dir: &Path, _version_dir: &Path) -> ServeResult<Arc<dyn TensorBackend>> {
        Err(ServeError::Unavailable(format!("model '{}': this server loads text models only", config.name)))
    }
}

/// How a version runs its requests: a text model's dispatcher, or a tensor model's.
#[derive(Debug)]
pub enum Dispatch {
    /// Texts in, tokenized by the server.
    Text(Dispatcher),
    /// Tensors in, as the client made them.
    Tensor(TensorDispatcher),
}

/// One version that answers requests.
#[derive(Debug)]
pub struct ServedVersion {
    /// Model name.
    pub name: String,
    /// Version number.
    pub version: u64,
    /// The config it was loaded with (a tensor model's completed from its model file).
    pub config: Arc<ModelConfig>,
    /// Admission and execution.
    pub dispatch: Dispatch,
    /// When it last answered a request, milliseconds since the Unix epoch (0: never).
    pub last_inference_ms: std::sync::atomic::AtomicU64,
}

impl ServedVersion {
    /// The text model's dispatcher, or a 400 saying this is a tensor model
    /// (the routes that tokenize: TEI, OpenAI).
    pub fn text(&self) -> ServeResult<&Dispatcher> {
        match &self.dispatch {
            Dispatch::Text(d) => Ok(d),
            Dispatch::Tensor(_) => Err(ServeError::invalid(format!(
                "model '{}' is a tensor model (its inputs are tensors, not texts): send it KServe v2 inference requests",
                self.name
            ))),
        }
    }

    /// The backend's name (`onnxruntime`, `tensorrt`).
    pub fn backend_name(&self) -> &str {
        match &self.dispatch {
            Dispatch::Text(d) => d.model().backend_name(),
            Dispatch::Tensor(d) => d.model().backend_name(),
        }
    }
}

/// A version's state in the index.
#[derive(Debug, Clone)]
enum VersionState {
    Ready(Arc<ServedVersion>),
    Unavailable(String),
}

/// What the repository knows of one model.
#[derive(Debug, Clone, Default)]
struct ModelEntry {
    config: Option<Arc<ModelConfig>>,
    config_text: String,
    versions: BTreeMap<u64, VersionState>,
    /// Why the model as a whole is not served (bad config, unloaded), if so.
    reason: Option<String>,
}

/// One row of the repository index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// Model name.
    pub name: String,
    /// Version (empty for a model-level row).
    pub version: String,
    /// `READY` or `UNAVAILABLE`.
    pub state: &'static str,
    /// Why not ready.
    pub reason: String,
}

/// The repository and what it serves.
pub struct Repository {
    root: PathBuf,
    limits: Limits,
    loader: Arc<dyn VersionLoader>,
    models: RwLock<BTreeMap<String, ModelEntry>>,
    /// One load or unload at a time (requests never wait on it).
    changes: tokio::sync::Mutex<()>,
    control: ModelControl,
    /// Where the Triton views of HuggingFace folders in the repository are
    /// laid out (removed with the repository).
    hf_views: PathBuf,
}

impl Drop for Repository {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.hf_views);
    }
}

impl std::fmt::Debug for Repository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repository").field("root", &self.root).finish_non_exhaustive()
    }
}

/// The most texts a batch of a HuggingFace folder's model runs (its derived config's max_batch_size).
const HF_MAX_BATCH: usize = 32;

/// A number per repository of this process, so two repositories' views never share a folder.
fn next_view_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Checks that a model name from the network is one plain folder name.
pub fn check_model_name(name: &str) -> ServeResult<()> {
    let bad = name.is_empty()
        || name == "."
        || name == ".."
        || name.len() > 255
        || name.chars().any(|c| c == '/' || c == '\\' || c == '\0' || c.is_control());
    if bad {
        return Err(ServeError::invalid(format!("'{name}' is not a model name (one folder name inside the repository)")));
    }
    Ok(())
}

/// The version folder numbers of a model folder, in no particular order.
pub(crate) fn read_versions(model_dir: &Path) -> Vec<u64> {
    let Ok(entries) = std::fs::read_dir(model_dir) else { return Vec::new() };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u64>().ok()))
        .filter(|&v| v > 0)
        .collect()
}

impl Repository {
    /// A repository at `root` (nothing loaded yet: see [`load_all`](Self::load_all)).
    pub fn new(root: &Path, limits: Limits, loader: Arc<dyn VersionLoader>) -> ServeResult<Self> {
        let root = root.canonicalize().map_err(|e| ServeError::NotFound(format!("model repository {}: {e}", root.display())))?;
        if !root.is_dir() {
            return Err(ServeError::NotFound(format!("model repository {} is not a folder", root.display())));
        }
        Ok(Repository {
            root,
            limits,
            loader,
            models: RwLock::new(BTreeMap::new()),
            changes: tokio::sync::Mutex::new(()),
            control: ModelControl::default(),
            hf_views: std::env::temp_dir().join(format!("trt-serve-{}-hf-views-{}", std::process::id(), next_view_id())),
        })
    }

    /// The same repository under `control` (set before serving).
    pub fn with_control(mut self, control: ModelControl) -> Self {
        self.control = control;
        self
    }

    /// How its models are controlled.
    pub fn control(&self) -> &ModelControl {
        &self.control
    }

    /// The repository's folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The server's limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The folder of model `name`, which must lie inside the root.
    fn model_dir(&self, name: &str) -> ServeResult<PathBuf> {
        check_model_name(name)?;
        let dir = self.root.join(name);
        let real =
            dir.canonicalize().map_err(|_| ServeError::NotFound(format!("unknown model '{name}': no folder {name}/ in the repository")))?;
        if !real.starts_with(&self.root) || !real.is_dir() {
            return Err(ServeError::invalid(format!("model '{name}' does not resolve to a folder inside the repository")));
        }
        Ok(real)
    }

    /// Model folder names in the repository (those with a `config.pbtxt`,
    /// and HuggingFace folders, served through their import).
    pub(crate) fn model_names_on_disk(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.root) else { return Vec::new() };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("config.pbtxt").is_file() || trt_hf::is_hf_folder(&e.path()))
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter(|n| check_model_name(n).is_ok())
            .collect();
        names.sort();
        names
    }

    /// Loads every model in the repository (at start). Failures are logged and
    /// recorded in the index; they do not stop the others.
    pub async fn load_all(&self) {
        for name in self.model_names_on_disk() {
            if let Err(e) = self.load(&name).await {
                tracing::error!("{e}");
            }
        }
    }

    /// Loads or reloads model `name` (the repository extension's `load`).
    pub async fn load(&self, name: &str) -> ServeResult<()> {
        self.reload(name, &[]).await
    }

    /// [`Repository::load`], opening the versions in `reopen` again even when
    /// the config is unchanged (their files changed on disk).
    pub async fn reload(&self, name: &str, reopen: &[u64]) -> ServeResult<()> {
        let dir = self.model_dir(name)?;
        let _one_at_a_time = self.changes.lock().await;
        // A HuggingFace folder without a config.pbtxt: its import, seen as a Triton model folder.
        let dir = if !dir.join("config.pbtxt").is_file() && trt_hf::is_hf_folder(&dir) {
            let view = self.hf_views.join(name);
            let options = trt_hf::ImportOptions::default();
            crate::models::single_model::hf_view(&dir, &view, &trt_hf::default_cache(), &options, HF_MAX_BATCH)
                .map_err(|e| self.fail_model(name, format!("HuggingFace folder {name}/: {e}")))?;
            view
        } else {
            dir
        };
        let text = match std::fs::read_to_string(dir.join("config.pbtxt")) {
            Ok(t) => t,
            Err(e) => return Err(self.fail_model(name, format!("cannot read {name}/config.pbtxt: {e}"))),
        };
        let config = match ModelConfig::parse(&text, name) {
            Ok(c) => Arc::new(c),
            Err(e) => return Err(self.fail_model(name, e.to_string())),
        };
        for w in &config.warnings {
            tracing::warn!("model '{name}': {w}");
        }
        let previous = self.models.read().expect("repository lock").get(name).cloned().unwrap_or_default();
        let same_config = previous.config_text == text;
        let wanted = config.version_policy.select(&read_versions(&dir));
        if wanted.is_empty() {
            return Err(self.fail_model(name, format!("no version folder of model '{name}' matches its version_policy")));
        }
        let mut versions = BTreeMap::new();
        for v in wanted {
            if same_config && !reopen.contains(&v) {
                if let Some(state @ VersionState::Ready(_)) = previous.versions.get(&v) {
                    versions.insert(v, state.clone());
                    continue;
                }
            }
            let state = match self.open_version(name, v, &config, &dir).await {
                Ok(served) => {
                    tracing::info!("model '{name}' version {v}: ready ({})", served.backend_name());
                    VersionState::Ready(Arc::new(served))
                }
                Err(e) => {
                    tracing::error!("model '{name}' version {v}: {e}");
                    VersionState::Unavailable(e.to_string())
                }
            };
            versions.insert(v, state);
        }
        let ready = versions.values().any(|s| matches!(s, VersionState::Ready(_)));
        let kept = |v: &Arc<ServedVersion>| versions.values().any(|n| matches!(n, VersionState::Ready(n) if Arc::ptr_eq(n, v)));
        let retired: Vec<_> = previous
            .versions
            .values()
            .filter_map(|s| match s {
                VersionState::Ready(v) if !kept(v) => Some(v.clone()),
                _ => None,
            })
            .collect();
        drop(previous);
        // A tensor model's config as its model completed it (the highest ready version's).
        let shown = versions.values().rev().find_map(|s| if let VersionState::Ready(v) = s { Some(v.config.clone()) } else { None });
        let entry = ModelEntry { config: Some(shown.unwrap_or(config)), config_text: text, versions, reason: None };
        // The switch: one assignment under the write lock.
        self.models.write().expect("repository lock").insert(name.to_string(), entry);
        self.drain(retired).await;
        if ready {
            Ok(())
        } else {
            Err(ServeError::Unavailable(format!("model '{name}': no version could be loaded")))
        }
    }

    /// Unloads model `name`: new requests are refused at once, requests in
    /// flight finish (bounded wait), then its memory is released.
    pub async fn unload(&self, name: &str) -> ServeResult<()> {
        check_model_name(name)?;
        let _one_at_a_time = self.changes.lock().await;
        let old = {
            let mut models = self.models.write().expect("repository lock");
            let Some(entry) = models.get_mut(name) else {
                return Err(ServeError::NotFound(format!("unknown model '{name}'")));
            };
            let old = std::mem::take(&mut entry.versions);
            entry.reason = Some("unloaded".into());
            entry.config_text.clear();
            old
        };
        let retired = old.into_values().filter_map(|s| if let VersionState::Ready(v) = s { Some(v) } else { None }).collect();
        self.drain(retired).await;
        tracing::info!("model '{name}': unloaded");
        Ok(())
    }

    /// Waits until nothing but `versions` itself holds each version, or the drain timeout.
    async fn drain(&self, versions: Vec<Arc<ServedVersion>>) {
        let deadline = Instant::now() + self.limits.drain_timeout;
        for v in versions {
            while Arc::strong_count(&v) > 1 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            if Arc::strong_count(&v) > 1 {
                tracing::warn!(
                    "model '{}' version {}: {} requests still in flight after {:?}; it is released when they finish",
                    v.name,
                    v.version,
                    Arc::strong_count(&v) - 1,
                    self.limits.drain_timeout
                );
            }
        }
    }

    fn fail_model(&self, name: &str, reason: String) -> ServeError {
        tracing::error!("model '{name}': {reason}");
        let mut models = self.models.write().expect("repository lock");
        let entry = models.entry(name.to_string()).or_default();
        // What was served keeps serving; the index shows why the reload failed.
        entry.reason = Some(reason.clone());
        ServeError::invalid(reason)
    }

    async fn open_version(&self, name: &str, version: u64, config: &Arc<ModelConfig>, dir: &Path) -> ServeResult<ServedVersion> {
        let loader = self.loader.clone();
        let (c, d) = (config.clone(), dir.to_path_buf());
        let label = format!("model '{name}' version {version}");
        let (config, dispatch) = if is_text_model(config) {
            let model = tokio::task::spawn_blocking(move || -> ServeResult<ConfiguredModel> {
                let model = ConfiguredModel::new(&c, loader.load(&c, &d, &d.join(version.to_string()))?)?;
                warm_up(&model)?;
                Ok(model)
            })
            .await
            .map_err(|e| ServeError::Internal(format!("loading version {version} panicked: {e}")))??;
            (config.clone(), Dispatch::Text(Dispatcher::new(Arc::new(model), config, &self.limits, label)?))
        } else {
            let (model, completed) = tokio::task::spawn_blocking(move || -> ServeResult<(TensorModel, ModelConfig)> {
                let backend = loader.load_tensor(&c, &d, &d.join(version.to_string()))?;
                let (model, completed) = TensorModel::new(&c, backend)?;
                model.warm_up()?;
                Ok((model, completed))
            })
            .await
            .map_err(|e| ServeError::Internal(format!("loading version {version} panicked: {e}")))??;
            let completed = Arc::new(completed);
            let dispatch = Dispatch::Tensor(TensorDispatcher::new(Arc::new(model), &completed, &self.limits, label)?);
            (completed, dispatch)
        };
        Ok(ServedVersion { name: name.to_string(), version, config, dispatch, last_inference_ms: std::sync::atomic::AtomicU64::new(0) })
    }

    /// The version a request goes to: the one asked for, or the highest ready one.
    pub fn resolve(&self, name: &str, version: Option<&str>) -> ServeResult<Arc<ServedVersion>> {
        let models = self.models.read().expect("repository lock");
        let entry = models.get(name).ok_or_else(|| ServeError::NotFound(format!("unknown model '{name}'")))?;
        let not_ready = |why: &str| ServeError::Unavailable(format!("model '{name}' is not ready: {why}"));
        match version.filter(|v| !v.is_empty()) {
            Some(v) => {
                let n: u64 = v.parse().map_err(|_| ServeError::invalid(format!("'{v}' is not a version number of model '{name}'")))?;
                match entry.versions.get(&n) {
                    Some(VersionState::Ready(s)) => Ok(s.clone()),
                    Some(VersionState::Unavailable(why)) => {
                        Err(ServeError::Unavailable(format!("model '{name}' version {n} is not ready: {why}")))
                    }
                    None => Err(ServeError::NotFound(format!("unknown version {n} of model '{name}'"))),
                }
            }
            None => entry
                .versions
                .values()
                .rev()
                .find_map(|s| if let VersionState::Ready(s) = s { Some(s.clone()) } else { None })
                .ok_or_else(|| match &entry.reason {
                    Some(why) => not_ready(why),
                    // Each version's own reason (a version that failed to load says why).
                    None => {
                        let why: Vec<String> = entry
                            .versions
                            .iter()
                            .filter_map(
                                |(v, s)| if let VersionState::Unavailable(why) = s { Some(format!("version {v}: {why}")) } else { None },
                            )
                            .collect();
                        not_ready(&if why.is_empty() { "no version is ready".to_string() } else { why.join("; ") })
                    }
                }),
        }
    }

    /// The model's config (from its latest load) and the versions it serves.
    pub fn model_info(&self, name: &str) -> ServeResult<(Arc<ModelConfig>, Vec<u64>)> {
        let models = self.models.read().expect("repository lock");
        let entry = models.get(name).ok_or_else(|| ServeError::NotFound(format!("unknown model '{name}'")))?;
        let config = entry.config.clone().ok_or_else(|| {
            ServeError::Unavailable(format!("model '{name}' has no valid config: {}", entry.reason.as_deref().unwrap_or("never loaded")))
        })?;
        let versions = entry.versions.iter().filter(|(_, s)| matches!(s, VersionState::Ready(_))).map(|(v, _)| *v).collect();
        Ok((config, versions))
    }

    /// Whether every model that was loaded has a ready version (the server's readiness).
    pub fn all_ready(&self) -> bool {
        let models = self.models.read().expect("repository lock");
        models
            .values()
            .filter(|e| e.reason.as_deref() != Some("unloaded"))
            .all(|e| e.versions.values().any(|s| matches!(s, VersionState::Ready(_))))
    }

    /// The repository index: every model on disk or known, each version's state.
    pub fn index(&self, ready_only: bool) -> Vec<IndexEntry> {
        let models = self.models.read().expect("repository lock");
        let mut names = self.model_names_on_disk();
        names.extend(models.keys().cloned());
        names.sort();
        names.dedup();
        let mut out = Vec::new();
        for name in names {
            let entry = models.get(&name);
            let versions = entry.map(|e| &e.versions).filter(|v| !v.is_empty());
            match versions {
                Some(versions) => {
                    for (v, s) in versions {
                        let (state, reason) = match s {
                            VersionState::Ready(_) => ("READY", String::new()),
                            VersionState::Unavailable(why) => ("UNAVAILABLE", why.clone()),
                        };
                        out.push(IndexEntry { name: name.clone(), version: v.to_string(), state, reason });
                    }
                }
                None => out.push(IndexEntry {
                    name: name.clone(),
                    version: String::new(),
                    state: "UNAVAILABLE",
                    reason: entry.and_then(|e| e.reason.clone()).unwrap_or_else(|| "not loaded".into()),
                }),
            }
        }
        if ready_only {
            out.retain(|e| e.state == "READY");
        }
        out
    }

    /// Every served version, by model name and version.
    pub fn served(&self) -> Vec<Arc<ServedVersion>> {
        let models = self.models.read().expect("repository lock");
        models
            .values()
            .flat_map(|e| e.versions.values())
            .filter_map(|s| if let VersionState::Ready(v) = s { Some(v.clone()) } else { None })
            .collect()
    }

    /// Unloads everything, draining each version (Ctrl-C / SIGTERM).
    pub async fn shutdown(&self) {
        let names: Vec<String> = self.models.read().expect("repository lock").keys().cloned().collect();
        for name in names {
            let _ = self.unload(&name).await;
        }
    }
}

/// Runs the model over the shapes requests will have: one short text, a full
/// batch of short texts, and one text of the longest length, so the first
/// real request does not pay for allocation or kernel selection. A model
/// placed on several device instances runs each shape once per instance:
/// one run at a time, every instance idle, trt-nlp's `LeastLoaded` hands
/// them out in turn, so each instance sees each shape.
pub fn warm_up(model: &ConfiguredModel) -> ServeResult<()> {
    let (text_model, outputs) = (model.model(), model.outputs());
    let devices = text_model.backend().capabilities().devices.max(1);
    let short = "warm up";
    let batch = vec![short; model.max_batch()];
    // Truncated to the model's longest sequence by the tokenizer.
    let long = "warm ".repeat(model.max_seq());
    let shapes = [
        (vec![short], "one short text".to_string()),
        (batch, format!("{} short texts", model.max_batch())),
        (vec![long.as_str()], format!("one text of the longest length ({} tokens)", model.max_seq())),
    ];
    for (texts, what) in shapes {
        for _ in 0..devices {
            // Which shape failed says what to change (a graph that writes out every
            // attention score may not fit the longest length; its fused form may).
            text_model.run(&texts, outputs).map_err(|e| ServeError::Internal(format!("warming up on {what}: {e}")))?;
        }
    }
    Ok(())
}
