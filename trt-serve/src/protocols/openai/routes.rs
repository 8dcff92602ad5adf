//! OpenAI's `POST /v1/embeddings`, `GET /v1/models` and `GET
//! /v1/models/{model}` on `trt serve`: the model is the request's `model`
//! (a model of the repository), embeddings are its `embedding` output
//! (`dimensions`: the first components, normalised again), floats or base64
//! of little-endian f32; `usage` counts the tokens the model ran. Every
//! failure is OpenAI's `{"error": {...}}` ([`OpenAiError`]).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::request::{embeddings, model_of, EncodingFormat};
use super::OpenAiError;
use crate::error::ServeError;
use crate::protocols::api_model::{self as api, Item};
use crate::protocols::service::Service;
use crate::protocols::tei::request::Truncate;
use crate::protocols::vectors::{base64_f32, truncate_dims};
use trt_nlp::EMBEDDING;

type Shared = State<Arc<Service>>;

/// The OpenAI routes.
pub fn mount(router: Router<Arc<Service>>) -> Router<Arc<Service>> {
    router
        .route("/v1/embeddings", post(|s: Shared, b: Result<Bytes, BytesRejection>| async move { reply(create(&s, b).await) }))
        .route("/v1/models", get(|s: Shared| async move { Json(json!({ "object": "list", "data": models(&s) })) }))
        .route("/v1/models/{model}", get(|s: Shared, Path(m): Path<String>| async move { reply(model(&s, &m)) }))
}

fn reply(a: Result<Json<Value>, OpenAiError>) -> Response {
    a.map_or_else(IntoResponse::into_response, IntoResponse::into_response)
}

fn entry(name: &str) -> Value {
    json!({ "id": name, "object": "model", "created": 0, "owned_by": "trt-serve" })
}

fn models(s: &Service) -> Vec<Value> {
    let mut names: Vec<String> = s.repository.served().iter().map(|v| v.name.clone()).collect();
    names.sort_unstable();
    names.dedup();
    names.iter().map(|n| entry(n)).collect()
}

fn model(s: &Service, name: &str) -> Result<Json<Value>, OpenAiError> {
    match s.repository.resolve(name, None) {
        Ok(_) => Ok(Json(entry(name))),
        Err(ServeError::NotFound(_)) => Err(OpenAiError::no_model(name)),
        Err(e) => Err(e.into()),
    }
}

async fn create(s: &Service, b: Result<Bytes, BytesRejection>) -> Result<Json<Value>, OpenAiError> {
    let body = api::body_of(b)?;
    let name = model_of(&body)?;
    let served = match s.repository.resolve(&name, None) {
        Ok(v) => v,
        Err(ServeError::NotFound(_)) => return Err(OpenAiError::no_model(&name)),
        Err(e) => return Err(e.into()),
    };
    let width = api::embedding_width(&served).map_err(|e| OpenAiError::invalid(Some("model"), e.to_string()))?;
    let r = embeddings(&body, &api::bounds(s, &served)?, width)?;
    // OpenAI's request names no prompt: the model's default applies, as in sentence-transformers' encode.
    let prompted = api::with_prompt(&served, &r.input, None)?;
    let items: Vec<Item<'_>> = prompted.as_deref().unwrap_or(&r.input).iter().map(Item::from).collect();
    let rows = api::rows(s, &served, &items, Truncate::default()).map_err(|e| match e {
        ServeError::TooLarge(m) => OpenAiError::invalid(Some("input"), m),
        e => e.into(),
    })?;
    let tokens: usize = rows.iter().map(|r| r.len()).sum();
    let ran = api::run(s, &served, "openai_embeddings", rows).await?;
    let t = api::output(&served, &ran, EMBEDDING)?;
    let data: Vec<Value> = (0..items.len())
        .map(|i| {
            let v = truncate_dims(api::row(t, i).to_vec(), r.dimensions, true);
            let embedding = match r.encoding_format {
                EncodingFormat::Float => json!(v),
                EncodingFormat::Base64 => json!(base64_f32(&v)),
            };
            json!({ "object": "embedding", "embedding": embedding, "index": i })
        })
        .collect();
    Ok(Json(json!({
        "object": "list",
        "data": data,
        "model": served.name,
        "usage": { "prompt_tokens": tokens, "total_tokens": tokens },
    })))
}
