//! What each KServe v2 method does, whichever front end (HTTP or gRPC)
//! received it: the front ends only decode, call one of these, and encode.

use std::sync::Arc;
use std::time::Instant;

use crate::config::ModelConfig;
use crate::error::{ServeError, ServeResult};
use crate::models::dispatch::Dispatcher;
use crate::models::repository::{Dispatch, IndexEntry, Repository, ServedVersion};
use crate::models::text_model::{text_input, ENTITIES};
use crate::observability::metrics::{instance_text, GpuWork, Metrics, Phases, FAILURE_REASONS};
use crate::protocols::kserve::{
    classification, wanted_outputs, Elements, InferRequest, InferResponse, InputTensor, OutputData, OutputTensor,
};
use crate::protocols::token_classification;
use crate::transport::limits::Limits;
use serde_json::Value;

/// The server's name in its metadata.
pub const SERVER_NAME: &str = "trt-serve";

/// The protocol extensions implemented (server metadata lists them).
pub const EXTENSIONS: [&str; 6] =
    ["classification", "binary_tensor_data", "model_repository", "schedule_policy", "model_configuration", "statistics"];

/// A `(count, nanoseconds)` pair of the statistics extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Duration {
    /// Occurrences.
    pub count: u64,
    /// Their cumulative time.
    pub ns: u64,
}

/// One version's statistics (the statistics extension), from the metrics.
/// `compute_input` is tokenization; `compute_output` is building the
/// response tensors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionStatistics {
    /// Model name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Last request, ms since the Unix epoch (0: none).
    pub last_inference: u64,
    /// Rows inferred.
    pub inference_count: u64,
    /// Batches run.
    pub execution_count: u64,
    /// Successful requests, end to end.
    pub success: Duration,
    /// Failed requests (not timed).
    pub fail: Duration,
    /// Waiting for a batch.
    pub queue: Duration,
    /// Tokenizing.
    pub compute_input: Duration,
    /// The backend.
    pub compute_infer: Duration,
    /// Building the response tensors.
    pub compute_output: Duration,
}

/// A tensor's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMetadata {
    /// Name.
    pub name: String,
    /// KServe datatype.
    pub datatype: &'static str,
    /// Shape with the batch dimension (-1) first when the model batches.
    pub shape: Vec<i64>,
}

/// A model's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelMetadata {
    /// Name.
    pub name: String,
    /// Ready versions.
    pub versions: Vec<String>,
    /// Platform string.
    pub platform: &'static str,
    /// Inputs.
    pub inputs: Vec<TensorMetadata>,
    /// Outputs.
    pub outputs: Vec<TensorMetadata>,
}

/// The server's state, shared by both front ends.
#[derive(Debug)]
pub struct Service {
    /// The model repository.
    pub repository: Arc<Repository>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
}

impl Service {
    /// Liveness: the process answers.
    pub fn live(&self) -> bool {
        true
    }

    /// Readiness: every model asked for has a ready version (with strict
    /// readiness; otherwise the server is ready once it serves).
    pub fn ready(&self) -> bool {
        !self.repository.control().strict_readiness || self.repository.all_ready()
    }

    /// Whether the version (or the model's latest) answers requests.
    pub fn model_ready(&self, name: &str, version: Option<&str>) -> bool {
        self.repository.resolve(name, version).is_ok()
    }

    /// Model metadata, for the version asked for or the model.
    pub fn model_metadata(&self, name: &str, version: Option<&str>) -> ServeResult<ModelMetadata> {
        let (config, versions) = match version.filter(|v| !v.is_empty()) {
            Some(_) => {
                let v = self.repository.resolve(name, version)?;
                (v.config.clone(), vec![v.version])
            }
            None => self.repository.model_info(name)?,
        };
        let batch = |dims: &[i64]| -> Vec<i64> {
            if config.max_batch_size > 0 {
                std::iter::once(-1).chain(dims.iter().copied()).collect()
            } else {
                dims.to_vec()
            }
        };
        let meta = |t: &crate::config::TensorConfig| TensorMetadata {
            name: t.name.clone(),
            datatype: t.data_type.as_str(),
            shape: batch(&t.dims),
        };
        Ok(ModelMetadata {
            name: config.name.clone(),
            versions: versions.iter().map(u64::to_string).collect(),
            platform: config.platform.as_str(),
            inputs: config.inputs.iter().map(meta).collect(),
            outputs: config.outputs.iter().map(meta).collect(),
        })
    }

    /// The model's config.
    pub fn model_config(&self, name: &str, version: Option<&str>) -> ServeResult<Arc<ModelConfig>> {
        match version.filter(|v| !v.is_empty()) {
            Some(_) => Ok(self.repository.resolve(name, version)?.config.clone()),
            None => Ok(self.repository.model_info(name)?.0),
        }
    }

    /// The Prometheus text of every metric, batch executions of the
    /// dynamic batchers brought up to date first.
    pub fn metrics_text(&self) -> String {
        let mut per_gpu = Vec::new();
        for v in self.repository.served() {
            if let Dispatch::Text(d) = &v.dispatch {
                let work = GpuWork::per_gpu(&d.model().model().backend().device_instances());
                if !work.is_empty() {
                    per_gpu.push((v.name.clone(), v.version.to_string(), work));
                }
            }
            let executions = match &v.dispatch {
                Dispatch::Text(d) => d.batching_metrics().map(|snap| snap.executions),
                Dispatch::Tensor(d) => Some(d.executions()),
            };
            if let Some(executions) = executions {
                let c = self.metrics.exec_count.with_label_values(&[v.name.as_str(), v.version.to_string().as_str()]);
                // The batcher's count only grows; the counter follows it.
                c.inc_by(executions.saturating_sub(c.get()));
            }
        }
        let mut text = self.metrics.render();
        text.push_str(&instance_text(&per_gpu));
        text
    }

    /// Statistics of the served versions of `name` (every model when `None`),
    /// or of one version.
    pub fn statistics(&self, name: Option<&str>, version: Option<&str>) -> ServeResult<Vec<VersionStatistics>> {
        let served: Vec<_> = match (name, version.filter(|v| !v.is_empty())) {
            (Some(n), Some(_)) => vec![self.repository.resolve(n, version)?],
            (Some(n), None) => {
                self.repository.model_info(n)?;
                self.repository.served().into_iter().filter(|v| v.name == n).collect()
            }
            (None, _) => self.repository.served(),
        };
        self.metrics_text(); // brings the batchers' execution counts up to date
        let m = &self.metrics;
        Ok(served
            .iter()
            .map(|v| {
                let version = v.version.to_string();
                let l = [v.name.as_str(), version.as_str()];
                let success = m.request_success.with_label_values(&l).get();
                let us = |c: &prometheus::IntCounterVec| c.with_label_values(&l).get().saturating_mul(1000);
                let failed = FAILURE_REASONS.iter().map(|r| m.request_failure.with_label_values(&[l[0], l[1], r]).get()).sum();
                VersionStatistics {
                    name: v.name.clone(),
                    version: version.clone(),
                    last_inference: v.last_inference_ms.load(std::sync::atomic::Ordering::Relaxed),
                    inference_count: m.inference_count.with_label_values(&l).get(),
                    execution_count: m.exec_count.with_label_values(&l).get(),
                    success: Duration { count: success, ns: us(&m.request_duration_us) },
                    fail: Duration { count: failed, ns: 0 },
                    queue: Duration { count: success, ns: us(&m.queue_duration_us) },
                    compute_input: Duration { count: success, ns: us(&m.tokenize_duration_us) },
                    compute_infer: Duration { count: success, ns: us(&m.compute_infer_duration_us) },
                    compute_output: Duration { count: success, ns: us(&m.compute_output_duration_us) },
                }
            })
            .collect())
    }

    /// The repository index.
    pub fn index(&self, ready_only: bool) -> Vec<IndexEntry> {
        self.repository.index(ready_only)
    }

    /// Loads or reloads a model.
    pub async fn load(&self, name: &str) -> ServeResult<()> {
        self.repository.control().check_api("loading a model")?;
        self.repository.load(name).await
    }

    /// Unloads a model (after its requests in flight finish).
    pub async fn unload(&self, name: &str) -> ServeResult<()> {
        self.repository.control().check_api("unloading a model")?;
        self.repository.unload(name).await
    }

    /// Runs an inference request; `binary_outputs` says whether outputs go
    /// back in binary by default (HTTP: the request's `binary_data_output`).
    pub async fn infer(&self, name: &str, version: Option<&str>, request: InferRequest) -> ServeResult<InferResponse> {
        let served = self.repository.resolve(name, version)?;
        let v = served.version.to_string();
        // Counted pending until it ends; CANCELED if the client goes away first.
        let in_flight = self.metrics.start(name, &v, "v2_infer");
        let result = match self.repository.limits().infer_timeout {
            None => self.infer_on(&served, request).await,
            // Dropping the request on time-out frees its queue slot (the dispatcher's guards).
            Some(t) => tokio::time::timeout(t, self.infer_on(&served, request)).await.unwrap_or_else(|_| {
                Err(ServeError::Unavailable(format!("model '{name}' version {v}: no answer within the inference timeout of {t:?}")))
            }),
        };
        let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        served.last_inference_ms.store(now_ms, std::sync::atomic::Ordering::Relaxed);
        match &result {
            Ok((_, phases)) => in_flight.finish(Ok(*phases)),
            Err(e) => in_flight.finish(Err(e)),
        }
        result.map(|(r, _)| r)
    }

    async fn infer_on(&self, served: &ServedVersion, request: InferRequest) -> ServeResult<(InferResponse, Phases)> {
        match &served.dispatch {
            Dispatch::Text(d) => self.infer_text(served, d, request).await,
            Dispatch::Tensor(d) => crate::protocols::tensor_infer::infer(served, d, request).await,
        }
    }

    async fn infer_text(
        &self,
        served: &ServedVersion,
        dispatcher: &Dispatcher,
        request: InferRequest,
    ) -> ServeResult<(InferResponse, Phases)> {
        let config = &served.config;
        let texts = request_texts(config, request.inputs, self.repository.limits())?;
        // Which outputs, in which encoding, checked before any work is done.
        let model = dispatcher.model();
        let exposed: Vec<&str> = model.outputs().names().chain(model.entities().map(|_| ENTITIES)).collect();
        let wanted = wanted_outputs(&config.name, &request.outputs, request.binary_data_output, &exposed)?;
        let rows = texts.len();
        // Entities need the texts' character offsets: tokenized here, the rows through the same queue.
        let (ran, entities) = match model.entities().filter(|_| wanted.iter().any(|(n, _, _)| n == ENTITIES)) {
            Some(strategy) => {
                let tokenized = token_classification::rows(served, &texts)?;
                let ran = dispatcher.run_rows(tokenized.rows().to_vec(), request.priority, request.timeout_us).await?;
                let found = token_classification::entities(served, &texts, &tokenized, &ran, strategy)?;
                (ran, Some(found))
            }
            None => (dispatcher.run(texts, request.priority, request.timeout_us).await?, None),
        };
        let building = Instant::now();
        let mut outputs = Vec::with_capacity(wanted.len());
        for (name, binary, classify) in wanted {
            let (shape, data) = match (&entities, classify) {
                (Some(found), None) if name == ENTITIES => {
                    let json = |list: &Vec<trt_nlp::ner::Entity>| {
                        Value::Array(list.iter().map(|e| e.to_json()).collect()).to_string().into_bytes()
                    };
                    (vec![found.len(), 1], OutputData::Bytes(found.iter().map(json).collect()))
                }
                _ if name == ENTITIES => {
                    return Err(ServeError::invalid(format!("output '{ENTITIES}' is JSON text: it takes no class_count")))
                }
                (_, Some(k)) => {
                    let t = ran.tensors.iter().find(|t| t.name == name).expect("every exposed output was computed");
                    classification::classify(&name, &t.values, &t.shape, k, Some(model.labels()))?
                }
                (_, None) => {
                    let t = ran.tensors.iter().find(|t| t.name == name).expect("every exposed output was computed");
                    (t.shape.clone(), OutputData::Fp32(t.values.clone()))
                }
            };
            outputs.push(OutputTensor { name, shape, data, binary });
        }
        let response =
            InferResponse { model_name: config.name.clone(), model_version: served.version.to_string(), id: request.id, outputs };
        let phases = Phases {
            rows: rows as u64,
            executions: ran.executions,
            queue: ran.queue,
            compute_input: ran.tokenize,
            compute_infer: ran.compute,
            compute_output: building.elapsed(),
        };
        Ok((response, phases))
    }
}

/// A request's texts for the text model `config`: its one BYTES input of
/// shape `[N, 1]`, N >= 1, each text UTF-8 and within the text limit.
pub(crate) fn request_texts(config: &ModelConfig, inputs: Vec<InputTensor>, limits: &Limits) -> ServeResult<Vec<String>> {
    let text_name = text_input(config)?;
    let mut texts = None;
    for input in inputs {
        if input.name != text_name {
            return Err(ServeError::invalid(format!(
                "unknown input '{}' for model '{}' (it takes '{text_name}')",
                input.name, config.name
            )));
        }
        if texts.is_some() {
            return Err(ServeError::invalid(format!("input '{text_name}' is given twice")));
        }
        let Elements::Bytes(elems) = input.data else {
            return Err(ServeError::invalid(format!(
                "input '{text_name}' has datatype {}, the model expects BYTES",
                input.datatype.as_str()
            )));
        };
        if input.shape.len() != 2 || input.shape[1] != 1 {
            return Err(ServeError::invalid(format!("input '{text_name}' has shape {:?}, the model expects [-1, 1]", input.shape)));
        }
        if input.shape[0] == 0 {
            return Err(ServeError::invalid(format!("input '{text_name}' has no rows")));
        }
        let mut strings = Vec::with_capacity(elems.len());
        for (i, e) in elems.into_iter().enumerate() {
            if e.len() > limits.max_text_bytes {
                return Err(ServeError::TooLarge(format!(
                    "input '{text_name}': text {i} has {} bytes, more than the limit of {}",
                    e.len(),
                    limits.max_text_bytes
                )));
            }
            strings.push(String::from_utf8(e).map_err(|_| ServeError::invalid(format!("input '{text_name}': text {i} is not UTF-8")))?);
        }
        texts = Some(strings);
    }
    texts.ok_or_else(|| ServeError::invalid(format!("the request has no input '{text_name}'")))
}
