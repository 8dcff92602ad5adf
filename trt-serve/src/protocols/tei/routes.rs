//! text-embeddings-inference's routes, mounted at the root (the single
//! model, as TEI serves one) and under `/models/{model}/` (any model):
//! `/embed`, `/embed_all`, `/embed_sparse`, `/predict`, `/rerank`,
//! `/similarity`, `/tokenize`, `/decode`, `/info`, `/health`. Answers have
//! TEI's JSON shapes; every failure is TEI's `{"error", "error_type"}`
//! ([`TeiError`]).
//!
//! Scores: `/predict` gives every label, best first, softmax scores (a sigmoid
//! for a one-logit model); `/rerank` sorts the texts by the sigmoid of the
//! pair's logit. `raw_scores` gives the logits instead.
//!
//! `/rerank` takes both kinds of reranker with the same body and answer: a
//! cross-encoder scores `(query, text)` as a pair; a causal-LM reranker
//! (Qwen3-Reranker) scores the pair written into its card's prompt, as
//! `sigmoid(yes - no)` of its two logits (`raw_scores`: `yes - no`), and its
//! rows are cut as its card cuts them (the content to the card's length,
//! from the right), refused unless `truncate` allows cutting.
//!
//! `/embed_sparse` answers a sparse (SPLADE) model's `sparse` output as its
//! non-zeros, `[[{"index", "value"}, ...], ...]`, with the model's default
//! prompt as `/embed` puts it.
//!
//! Embeddings are the model's `embedding` output, pooled and normalised as
//! its folder says (sentence-transformers' `Normalize` module); `normalize:
//! true` (the default) normalises again after `dimensions` cut them, and
//! `normalize: false` returns that output as it is, so on a folder that
//! normalises it stays unit length (TEI would return the raw pooled vector).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::request::{self, Sequence};
use super::TeiError;
use crate::protocols::api_model::{self as api, Item};
use crate::protocols::service::Service;
use crate::protocols::vectors::truncate_dims;
use trt_nlp::sparse::{non_zeros, SPARSE};
use trt_nlp::EMBEDDING;

type Shared = State<Arc<Service>>;
type Body = Result<Bytes, BytesRejection>;
type Answer = Result<Json<Value>, TeiError>;

/// The TEI routes at `prefix` ("" for the root, "/models/{model}" per model).
pub fn mount(router: Router<Arc<Service>>, prefix: &str) -> Router<Arc<Service>> {
    let at = |p: &str| format!("{prefix}{p}");
    router
        .route(&at("/embed"), post(|s: Shared, m: Option<Path<String>>, b: Body| async move { reply(embed(&s, name(m), b).await) }))
        .route(&at("/embed_all"), post(|s: Shared, m: Option<Path<String>>, b: Body| async move { reply(embed_all(&s, name(m), b).await) }))
        .route(
            &at("/embed_sparse"),
            post(|s: Shared, m: Option<Path<String>>, b: Body| async move { reply(embed_sparse(&s, name(m), b).await) }),
        )
        .route(&at("/predict"), post(|s: Shared, m: Option<Path<String>>, b: Body| async move { reply(predict(&s, name(m), b).await) }))
        .route(&at("/rerank"), post(|s: Shared, m: Option<Path<String>>, b: Body| async move { reply(rerank(&s, name(m), b).await) }))
        .route(
            &at("/similarity"),
            post(|s: Shared, m: Option<Path<String>>, b: Body| async move { reply(similarity(&s, name(m), b).await) }),
        )
        .route(&at("/tokenize"), post(|s: Shared, m: Option<Path<String>>, b: Body| async move { reply(tokenize(&s, name(m), b)) }))
        .route(&at("/decode"), post(|s: Shared, m: Option<Path<String>>, b: Body| async move { reply(decode(&s, name(m), b)) }))
        .route(&at("/info"), get(|s: Shared, m: Option<Path<String>>| async move { reply(info(&s, name(m))) }))
        .route(&at("/health"), get(|s: Shared, m: Option<Path<String>>| async move { health(&s, name(m)) }))
}

fn name(m: Option<Path<String>>) -> Option<String> {
    m.map(|Path(m)| m)
}

fn reply(a: Answer) -> Response {
    a.map_or_else(IntoResponse::into_response, IntoResponse::into_response)
}

fn body(b: Body) -> Result<Bytes, TeiError> {
    Ok(api::body_of(b)?)
}

async fn embed(s: &Service, model: Option<String>, b: Body) -> Answer {
    let served = api::resolve(s, model.as_deref())?;
    let width = api::embedding_width(&served)?;
    let r = request::embed(&body(b)?, &api::bounds(s, &served)?, width)?;
    let prompted = api::with_prompt(&served, &r.inputs, r.prompt_name.as_deref())?;
    let items: Vec<Item<'_>> = prompted.as_deref().unwrap_or(&r.inputs).iter().map(Item::from).collect();
    let ran = api::run(s, &served, "tei_embed", api::rows(s, &served, &items, r.truncate)?).await?;
    let t = api::output(&served, &ran, EMBEDDING)?;
    let out: Vec<Vec<f32>> = (0..items.len()).map(|i| truncate_dims(api::row(t, i).to_vec(), r.dimensions, r.normalize)).collect();
    Ok(Json(json!(out)))
}

async fn embed_all(s: &Service, model: Option<String>, b: Body) -> Answer {
    let served = api::resolve(s, model.as_deref())?;
    let r = request::embed_all(&body(b)?, &api::bounds(s, &served)?)?;
    let prompted = api::with_prompt(&served, &r.inputs, r.prompt_name.as_deref())?;
    let items: Vec<Item<'_>> = prompted.as_deref().unwrap_or(&r.inputs).iter().map(Item::from).collect();
    let rows = api::rows(s, &served, &items, r.truncate)?;
    let lengths: Vec<usize> = rows.iter().map(|r| r.len()).collect();
    let ran = api::run(s, &served, "tei_embed_all", rows).await?;
    let t = ran
        .tensors
        .iter()
        .find(|t| t.shape.len() == 3)
        .ok_or_else(|| TeiError::validation(format!("model '{}' exposes no token embeddings ([-1, hidden] output)", served.name)))?;
    let hidden = t.shape[2];
    let out: Vec<Vec<&[f32]>> = lengths.iter().enumerate().map(|(i, &n)| api::row(t, i)[..n * hidden].chunks(hidden).collect()).collect();
    Ok(Json(json!(out)))
}

async fn embed_sparse(s: &Service, model: Option<String>, b: Body) -> Answer {
    let served = api::resolve(s, model.as_deref())?;
    api::sparse_output(&served)?;
    // TEI's EmbedSparseRequest has /embed_all's fields: inputs, truncate, truncation_direction, prompt_name.
    let r = request::embed_all(&body(b)?, &api::bounds(s, &served)?)?;
    let prompted = api::with_prompt(&served, &r.inputs, r.prompt_name.as_deref())?;
    let items: Vec<Item<'_>> = prompted.as_deref().unwrap_or(&r.inputs).iter().map(Item::from).collect();
    let ran = api::run(s, &served, "tei_embed_sparse", api::rows(s, &served, &items, r.truncate)?).await?;
    let t = api::output(&served, &ran, SPARSE)?;
    let out: Vec<Vec<Value>> = (0..items.len())
        .map(|i| non_zeros(api::row(t, i)).into_iter().map(|(index, value)| json!({ "index": index, "value": value })).collect())
        .collect();
    Ok(Json(json!(out)))
}

/// Scores of one logits row: sigmoid for one logit, softmax otherwise; `raw` keeps the logits.
fn scores(logits: &[f32], raw: bool) -> Vec<f32> {
    if raw {
        return logits.to_vec();
    }
    if let [x] = logits {
        return vec![1.0 / (1.0 + (-x).exp())];
    }
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = logits.iter().map(|x| (x - max).exp()).collect();
    let sum: f32 = e.iter().sum();
    e.into_iter().map(|x| x / sum).collect()
}

async fn predict(s: &Service, model: Option<String>, b: Body) -> Answer {
    let served = api::resolve(s, model.as_deref())?;
    let logits = api::logits_name(&served)?;
    if served.text()?.model().model().head().rerank.is_some() {
        return Err(TeiError::validation(format!(
            "model '{}' is a causal-LM reranker: it scores (query, text) pairs through its prompt on /rerank, not texts on /predict",
            served.name
        )));
    }
    let r = request::predict(&body(b)?, &api::bounds(s, &served)?)?;
    let items: Vec<Item<'_>> = r
        .inputs
        .iter()
        .map(|q| match q {
            Sequence::Single(t) => Item::Text(t),
            Sequence::Pair(a, c) => Item::Pair(a, c),
        })
        .collect();
    let ran = api::run(s, &served, "tei_predict", api::rows(s, &served, &items, r.truncate)?).await?;
    let t = api::output(&served, &ran, &logits)?;
    let labels = served.text()?.model().labels().clone();
    let answer: Vec<Vec<Value>> = (0..items.len())
        .map(|i| {
            let mut ranked: Vec<(usize, f32)> = scores(api::row(t, i), r.raw_scores).into_iter().enumerate().collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
            ranked.into_iter().map(|(k, score)| json!({ "score": score, "label": labels.name(k) })).collect()
        })
        .collect();
    Ok(Json(if r.batch { json!(answer) } else { json!(answer[0]) }))
}

async fn rerank(s: &Service, model: Option<String>, b: Body) -> Answer {
    let served = api::resolve(s, model.as_deref())?;
    let logits = api::logits_name(&served)?;
    let r = request::rerank(&body(b)?, &api::bounds(s, &served)?)?;
    let causal = served.text()?.model().model().head().rerank.is_some();
    let rows = match causal {
        true => api::rerank_rows(s, &served, &r.query, &r.texts, r.truncate)?,
        false => {
            let items: Vec<Item<'_>> = r.texts.iter().map(|t| Item::Pair(&r.query, t)).collect();
            api::rows(s, &served, &items, r.truncate)?
        }
    };
    let ran = api::run(s, &served, "tei_rerank", rows).await?;
    let t = api::output(&served, &ran, &logits)?;
    let score = |i: usize| match (causal, api::row(t, i)) {
        // P(yes) = softmax([yes, no])[0] = sigmoid(yes - no): the pair's one logit is yes - no.
        (true, &[yes, no, ..]) => scores(&[yes - no], r.raw_scores)[0],
        (_, row) => scores(&row[..1], r.raw_scores)[0],
    };
    let mut ranked: Vec<(usize, f32)> = (0..r.texts.len()).map(|i| (i, score(i))).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let answer: Vec<Value> = ranked
        .into_iter()
        .map(|(index, score)| match r.return_text {
            true => json!({ "index": index, "text": r.texts[index], "score": score }),
            false => json!({ "index": index, "score": score }),
        })
        .collect();
    Ok(Json(json!(answer)))
}

async fn similarity(s: &Service, model: Option<String>, b: Body) -> Answer {
    let served = api::resolve(s, model.as_deref())?;
    api::embedding_width(&served)?;
    let r = request::similarity(&body(b)?, &api::bounds(s, &served)?)?;
    let items: Vec<Item<'_>> = std::iter::once(&r.source).chain(&r.sentences).map(|t| Item::Text(t)).collect();
    if items.len() > api::bounds(s, &served)?.max_inputs {
        return Err(TeiError::too_large(format!(
            "{} sentences and the source, more than the limit of {}",
            r.sentences.len(),
            items.len() - 1
        )));
    }
    let ran = api::run(s, &served, "tei_similarity", api::rows(s, &served, &items, r.truncate)?).await?;
    let t = api::output(&served, &ran, EMBEDDING)?;
    let source = truncate_dims(api::row(t, 0).to_vec(), None, true);
    let sims: Vec<f32> = (1..items.len())
        .map(|i| truncate_dims(api::row(t, i).to_vec(), None, true).iter().zip(&source).map(|(a, b)| a * b).sum())
        .collect();
    Ok(Json(json!(sims)))
}

fn tokenize(s: &Service, model: Option<String>, b: Body) -> Answer {
    let served = api::resolve(s, model.as_deref())?;
    let r = request::tokenize(&body(b)?, &api::bounds(s, &served)?)?;
    let model = served.text()?.model();
    let tokenizer = model.pipeline().tokenizer();
    let mut answer = Vec::with_capacity(r.inputs.len());
    for (i, text) in r.inputs.iter().enumerate() {
        let e = tokenizer.encode(text.as_str(), r.add_special_tokens).map_err(|e| TeiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            error_type: "Tokenizer",
            message: format!("input {i}: {e}"),
        })?;
        let tokens: Vec<Value> = (0..e.len())
            .map(|k| {
                let special = e.get_special_tokens_mask()[k] == 1;
                let (start, stop) = e.get_offsets()[k];
                match special {
                    true => json!({ "id": e.get_ids()[k], "text": e.get_tokens()[k], "special": true, "start": null, "stop": null }),
                    false => json!({ "id": e.get_ids()[k], "text": text.get(start..stop).unwrap_or(&e.get_tokens()[k]), "special": false, "start": start, "stop": stop }),
                }
            })
            .collect();
        answer.push(tokens);
    }
    Ok(Json(json!(answer)))
}

fn decode(s: &Service, model: Option<String>, b: Body) -> Answer {
    let served = api::resolve(s, model.as_deref())?;
    let r = request::decode(&body(b)?, &api::bounds(s, &served)?)?;
    let model = served.text()?.model();
    let tokenizer = model.pipeline().tokenizer();
    let texts = r
        .ids
        .iter()
        .map(|ids| tokenizer.decode(ids, r.skip_special_tokens))
        .collect::<Result<Vec<String>, _>>()
        .map_err(|e| TeiError { status: StatusCode::UNPROCESSABLE_ENTITY, error_type: "Tokenizer", message: e.to_string() })?;
    Ok(Json(json!(texts)))
}

fn info(s: &Service, model: Option<String>) -> Answer {
    let served = api::resolve(s, model.as_deref())?;
    let m = served.text()?.model();
    let labels = m.labels();
    let model_type = match (api::embedding_width(&served), api::logits_name(&served)) {
        (Ok(_), _) => json!({ "embedding": { "pooling": "mean" } }),
        (Err(_), Ok(_)) => {
            let id2label: serde_json::Map<String, Value> =
                (0..labels.len().max(1)).map(|i| (i.to_string(), json!(labels.name(i)))).collect();
            let label2id: serde_json::Map<String, Value> =
                (0..labels.len().max(1)).map(|i| (labels.name(i).into_owned(), json!(i))).collect();
            let kind = if labels.len() <= 1 { "reranker" } else { "classifier" };
            json!({ kind: { "id2label": id2label, "label2id": label2id } })
        }
        (Err(e), Err(_)) => return Err(e.into()),
    };
    Ok(Json(json!({
        "model_id": served.name,
        "model_sha": null,
        "model_dtype": "float32",
        "model_type": model_type,
        "max_concurrent_requests": s.repository.limits().max_queue,
        "max_input_length": m.max_seq(),
        "max_batch_tokens": m.max_batch() * m.max_seq(),
        "max_batch_requests": m.max_batch(),
        "max_client_batch_size": m.max_batch(),
        "auto_truncate": s.repository.limits().auto_truncate,
        "tokenization_workers": m.pipeline().threads(),
        "version": env!("CARGO_PKG_VERSION"),
        "sha": null,
        "docker_label": null,
    })))
}

/// The root: the server's readiness (every model ready); per model: that model's.
fn health(s: &Service, model: Option<String>) -> Response {
    let ready = match model {
        None if s.ready() => Ok(()),
        None => Err(crate::error::ServeError::Unavailable("not every model is ready".into())),
        Some(m) => s.repository.resolve(&m, None).map(drop),
    };
    match ready {
        Ok(_) => StatusCode::OK.into_response(),
        Err(e) => TeiError { status: StatusCode::SERVICE_UNAVAILABLE, error_type: "Unhealthy", message: e.to_string() }.into_response(),
    }
}
