//! The KServe v2 REST front end (axum): routes, JSON bodies, and the binary
//! tensor extension's header. Every error leaves as `{"error": "..."}` with
//! the status [`crate::error`] assigns.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::config::{ModelConfig, TimeoutAction, VersionPolicy};
use crate::error::{ServeError, ServeResult};
use crate::protocols::kserve::json::{decode_request, encode_response, HEADER_LENGTH};
use crate::protocols::service::{ModelMetadata, Service, EXTENSIONS, SERVER_NAME};

type Shared = State<Arc<Service>>;

/// The v2 routes over `service`.
pub fn router(service: Arc<Service>) -> Router {
    let limit = service.repository.limits().max_body_bytes;
    // The embedding APIs: TEI's at the root (the single model) and per model, OpenAI's under /v1;
    // token classification (the HF Inference API's shape) beside TEI's.
    let embedding_apis = crate::protocols::openai::routes::mount(crate::protocols::tei::routes::mount(
        crate::protocols::tei::routes::mount(Router::new(), ""),
        "/models/{model}",
    ));
    let embedding_apis =
        crate::protocols::token_classification::mount(crate::protocols::token_classification::mount(embedding_apis, ""), "/models/{model}");
    embedding_apis
        .route("/v2/health/live", get(live))
        .route("/v2/health/ready", get(ready))
        .route("/v2", get(server_metadata))
        .route("/v2/models/{model}", get(model_metadata))
        .route("/v2/models/{model}/versions/{version}", get(model_metadata_v))
        .route("/v2/models/{model}/ready", get(model_ready))
        .route("/v2/models/{model}/versions/{version}/ready", get(model_ready_v))
        .route("/v2/models/{model}/config", get(model_config))
        .route("/v2/models/{model}/versions/{version}/config", get(model_config_v))
        .route("/v2/models/stats", get(stats_all))
        .route("/v2/models/{model}/stats", get(stats))
        .route("/v2/models/{model}/versions/{version}/stats", get(stats_v))
        .route("/v2/models/{model}/infer", post(infer))
        .route("/v2/models/{model}/versions/{version}/infer", post(infer_v))
        .route("/v2/repository/index", post(index))
        .route("/v2/repository/models/{model}/load", post(load))
        .route("/v2/repository/models/{model}/unload", post(unload))
        .fallback(|| async { ServeError::NotFound("no such endpoint".into()) })
        .layer(DefaultBodyLimit::max(limit))
        .with_state(service)
}

/// The `/metrics` route (served on its own port).
pub fn metrics_router(service: Arc<Service>) -> Router {
    Router::new()
        .route("/metrics", get(|State(s): Shared| async move { ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], s.metrics_text()) }))
        .with_state(service)
}

/// Triton answers readiness with 200 or 400.
fn status_of(ok: bool) -> StatusCode {
    if ok {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    }
}

async fn live(State(s): Shared) -> StatusCode {
    status_of(s.live())
}

async fn ready(State(s): Shared) -> StatusCode {
    status_of(s.ready())
}

async fn server_metadata() -> Json<Value> {
    Json(json!({ "name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION"), "extensions": EXTENSIONS }))
}

fn metadata_json(m: ModelMetadata) -> Json<Value> {
    let t = |v: Vec<crate::protocols::service::TensorMetadata>| -> Vec<Value> {
        v.into_iter().map(|t| json!({ "name": t.name, "datatype": t.datatype, "shape": t.shape })).collect()
    };
    Json(json!({ "name": m.name, "versions": m.versions, "platform": m.platform, "inputs": t(m.inputs), "outputs": t(m.outputs) }))
}

async fn model_metadata(State(s): Shared, Path(model): Path<String>) -> ServeResult<Json<Value>> {
    s.model_metadata(&model, None).map(metadata_json)
}

async fn model_metadata_v(State(s): Shared, Path((model, version)): Path<(String, String)>) -> ServeResult<Json<Value>> {
    s.model_metadata(&model, Some(&version)).map(metadata_json)
}

async fn model_ready(State(s): Shared, Path(model): Path<String>) -> StatusCode {
    status_of(s.model_ready(&model, None))
}

async fn model_ready_v(State(s): Shared, Path((model, version)): Path<(String, String)>) -> StatusCode {
    status_of(s.model_ready(&model, Some(&version)))
}

/// A config as Triton's JSON (protobuf JSON mapping with the proto's field
/// names: 64-bit integers as strings, enums by name).
pub fn config_json(c: &ModelConfig) -> Value {
    let tensors = |v: &[crate::config::TensorConfig]| -> Vec<Value> {
        v.iter()
            .map(|t| {
                let dims: Vec<String> = t.dims.iter().map(i64::to_string).collect();
                json!({ "name": t.name, "data_type": t.data_type.config_name(), "dims": dims })
            })
            .collect()
    };
    let policy = match &c.version_policy {
        VersionPolicy::Latest(n) => json!({ "latest": { "num_versions": n } }),
        VersionPolicy::All => json!({ "all": {} }),
        VersionPolicy::Specific(v) => json!({ "specific": { "versions": v.iter().map(u64::to_string).collect::<Vec<_>>() } }),
    };
    let mut out = json!({
        "name": c.name,
        "platform": c.platform.as_str(),
        "backend": c.platform.backend_name(),
        "version_policy": policy,
        "max_batch_size": c.max_batch_size,
        "input": tensors(&c.inputs),
        "output": tensors(&c.outputs),
        "instance_group": c.reported_instance_groups().iter().enumerate().map(|(i, g)| {
            json!({ "name": format!("{}_{i}", c.name), "count": g.count, "kind": g.kind.triton_name(), "gpus": g.gpus })
        }).collect::<Vec<_>>(),
    });
    if c.cuda_graph_max_batch > 0 {
        out["optimization"] = json!({ "cuda": { "graphs": true, "graph_spec": [ { "batch_size": c.cuda_graph_max_batch } ] } });
    }
    if !c.parameters.is_empty() {
        out["parameters"] = c.parameters.iter().map(|(k, v)| (k.clone(), json!({ "string_value": v }))).collect();
    }
    if let Some(db) = &c.dynamic_batching {
        let q = &db.default_queue_policy;
        out["dynamic_batching"] = json!({
            "preferred_batch_size": db.preferred_batch_size,
            "max_queue_delay_microseconds": db.max_queue_delay.as_micros().to_string(),
            "priority_levels": db.priority_levels.to_string(),
            "default_priority_level": db.default_priority_level.to_string(),
            "default_queue_policy": {
                "timeout_action": if q.timeout_action == TimeoutAction::Reject { "REJECT" } else { "DELAY" },
                "default_timeout_microseconds": q.default_timeout.map_or(0, |d| d.as_micros()).to_string(),
                "allow_timeout_override": q.allow_timeout_override,
                "max_queue_size": q.max_queue_size,
            },
        });
    }
    out
}

async fn model_config(State(s): Shared, Path(model): Path<String>) -> ServeResult<Json<Value>> {
    let c = s.model_config(&model, None)?;
    Ok(Json(config_json(&c)))
}

async fn model_config_v(State(s): Shared, Path((model, version)): Path<(String, String)>) -> ServeResult<Json<Value>> {
    let c = s.model_config(&model, Some(&version))?;
    Ok(Json(config_json(&c)))
}

fn stats_json(rows: Vec<crate::protocols::service::VersionStatistics>) -> Json<Value> {
    let d = |d: crate::protocols::service::Duration| json!({ "count": d.count, "ns": d.ns });
    let rows: Vec<Value> = rows
        .into_iter()
        .map(|s| {
            json!({
                "name": s.name, "version": s.version, "last_inference": s.last_inference,
                "inference_count": s.inference_count, "execution_count": s.execution_count,
                "inference_stats": {
                    "success": d(s.success), "fail": d(s.fail), "queue": d(s.queue),
                    "compute_input": d(s.compute_input), "compute_infer": d(s.compute_infer),
                    "compute_output": d(s.compute_output), "cache_hit": d(Default::default()), "cache_miss": d(Default::default()),
                },
                "batch_stats": [],
            })
        })
        .collect();
    Json(json!({ "model_stats": rows }))
}

async fn stats_all(State(s): Shared) -> ServeResult<Json<Value>> {
    s.statistics(None, None).map(stats_json)
}

async fn stats(State(s): Shared, Path(model): Path<String>) -> ServeResult<Json<Value>> {
    s.statistics(Some(&model), None).map(stats_json)
}

async fn stats_v(State(s): Shared, Path((model, version)): Path<(String, String)>) -> ServeResult<Json<Value>> {
    s.statistics(Some(&model), Some(&version)).map(stats_json)
}

/// The body, or the reason it could not be read (too large: 413; too slow: 408).
pub(crate) fn body_of(body: Result<Bytes, BytesRejection>) -> ServeResult<Bytes> {
    body.map_err(|e| match e.status() {
        _ if crate::transport::connections::BodyTimedOut::find(&e).is_some() => {
            ServeError::RequestTimeout(format!("request body: {}", e.body_text()))
        }
        StatusCode::PAYLOAD_TOO_LARGE => ServeError::TooLarge(format!("request body: {}", e.body_text())),
        _ => ServeError::invalid(format!("request body: {}", e.body_text())),
    })
}

async fn run_infer(
    s: &Service,
    model: &str,
    version: Option<&str>,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ServeResult<Response> {
    let body = body_of(body)?;
    if let Some(enc) = headers.get(header::CONTENT_ENCODING).filter(|v| v.as_bytes() != b"identity") {
        return Err(ServeError::Unsupported(format!("Content-Encoding {enc:?} is not supported; send the body uncompressed")));
    }
    let header_length = match headers.get(HEADER_LENGTH) {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .ok_or_else(|| ServeError::invalid(format!("Inference-Header-Content-Length {v:?} is not a byte count")))?,
        ),
    };
    let request = decode_request(&body, header_length, s.repository.limits())?;
    let response = s.infer(model, version, request).await?;
    let (body, json_len) = encode_response(&response);
    let mut r = body.into_response();
    match json_len {
        Some(n) => {
            r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
            r.headers_mut().insert(HEADER_LENGTH, HeaderValue::from(n));
        }
        None => {
            r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
    }
    Ok(r)
}

async fn infer(State(s): Shared, Path(model): Path<String>, headers: HeaderMap, body: Result<Bytes, BytesRejection>) -> Response {
    run_infer(&s, &model, None, &headers, body).await.unwrap_or_else(IntoResponse::into_response)
}

async fn infer_v(
    State(s): Shared,
    Path((model, version)): Path<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    run_infer(&s, &model, Some(&version), &headers, body).await.unwrap_or_else(IntoResponse::into_response)
}

/// The JSON body of a repository request: `{}` or `{"ready": bool}` /
/// `{"parameters": {...}}`; an empty body counts as `{}`.
fn repository_body(body: Result<Bytes, BytesRejection>) -> ServeResult<Value> {
    let body = body_of(body)?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    let v: Value = serde_json::from_slice(&body).map_err(|e| ServeError::invalid(format!("malformed JSON in the request: {e}")))?;
    if !v.is_object() {
        return Err(ServeError::invalid("the request must be a JSON object"));
    }
    Ok(v)
}

/// Load/unload parameters: none is implemented beyond the defaults, so any
/// that would change the outcome is refused rather than ignored.
fn check_repository_parameters(v: &Value) -> ServeResult<()> {
    let Some(params) = v.get("parameters") else { return Ok(()) };
    let params = params.as_object().ok_or_else(|| ServeError::invalid("'parameters' must be a JSON object"))?;
    for (k, v) in params {
        match (k.as_str(), v) {
            ("unload_dependents", Value::Bool(false)) => {}
            _ => {
                return Err(ServeError::Unsupported(format!("repository parameter '{k}' is not supported (models load from their folder)")))
            }
        }
    }
    Ok(())
}

async fn index(State(s): Shared, body: Result<Bytes, BytesRejection>) -> ServeResult<Json<Value>> {
    let v = repository_body(body)?;
    let ready_only = match v.get("ready") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(ServeError::invalid(format!("'ready' must be true or false, found {other}"))),
    };
    let rows = s
        .index(ready_only)
        .into_iter()
        .map(|e| {
            let mut row = json!({ "name": e.name, "state": e.state });
            if !e.version.is_empty() {
                row["version"] = json!(e.version);
            }
            if !e.reason.is_empty() {
                row["reason"] = json!(e.reason);
            }
            row
        })
        .collect();
    Ok(Json(Value::Array(rows)))
}

async fn load(State(s): Shared, Path(model): Path<String>, body: Result<Bytes, BytesRejection>) -> ServeResult<StatusCode> {
    check_repository_parameters(&repository_body(body)?)?;
    s.load(&model).await?;
    Ok(StatusCode::OK)
}

async fn unload(State(s): Shared, Path(model): Path<String>, body: Result<Bytes, BytesRejection>) -> ServeResult<StatusCode> {
    check_repository_parameters(&repository_body(body)?)?;
    s.unload(&model).await?;
    Ok(StatusCode::OK)
}
