//! Token classification (named entities) on the HTTP port, which TEI does
//! not serve: the request and answer of the HF Inference API's
//! token-classification task, so that huggingface_hub's
//! `InferenceClient(model="http://HOST/models/NAME/token_classification").token_classification(text)`
//! works against it, and the same entities for KServe's `entities` output.
//!
//! | route | body | answer |
//! |---|---|---|
//! | `/token_classification` (the single model), `/models/{model}/token_classification` | `inputs`: a string or a list of strings; `parameters`: `aggregation_strategy` (`none`, `simple` (default), `first`, `max`, `average`), `ignore_labels` (must hold `O`) | per text a list of entities as transformers' pipeline writes them (`entity_group`, `score`, `word`, `start`, `end`; `none`: `entity` and `index` instead of `entity_group`); a string in, one list out |
//!
//! Texts are tokenized with character offsets and their rows go through the
//! version's dispatcher (the same queue and batches as every other route);
//! entities come from the logits as trt-nlp's `ner` module computes them.
//! Failures have TEI's error body (`{"error", "error_type"}`; the hub client
//! reads `error`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use trt_nlp::ner::{Aggregation, Entity, NerRows};

use crate::error::{ServeError, ServeResult};
use crate::models::dispatch::Ran;
use crate::models::repository::ServedVersion;
use crate::protocols::api_model as api;
use crate::protocols::api_request::{count, kind, object, opt_str, text, Bounds, Refusal};
use crate::protocols::service::Service;
use crate::protocols::tei::TeiError;

type Shared = State<Arc<Service>>;
type Body = Result<Bytes, BytesRejection>;

/// A token-classification request.
#[derive(Debug, Clone, PartialEq)]
pub struct NerRequest {
    /// The texts, in order.
    pub texts: Vec<String>,
    /// Whether a list was sent (the answer is then a list of lists).
    pub batch: bool,
    /// How tokens become entities.
    pub strategy: Aggregation,
    /// Labels (tags, for the grouping strategies) left out besides `O`.
    pub ignore: Vec<String>,
}

/// The route at `prefix` ("" for the root, "/models/{model}" per model).
pub fn mount(router: Router<Arc<Service>>, prefix: &str) -> Router<Arc<Service>> {
    router.route(
        &format!("{prefix}/token_classification"),
        post(|s: Shared, m: Option<Path<String>>, b: Body| async move {
            match classify(&s, m.map(|Path(m)| m), b).await {
                Ok(v) => Json(v).into_response(),
                Err(e) => e.into_response(),
            }
        }),
    )
}

fn parameters(map: &Map<String, Value>) -> Result<(Aggregation, Vec<String>), Refusal> {
    let p = match map.get("parameters") {
        None | Some(Value::Null) => return Ok((Aggregation::default(), Vec::new())),
        Some(Value::Object(p)) => p,
        Some(v) => return Err(Refusal::invalid("parameters", format!("'parameters' must be an object, found {}", kind(v)))),
    };
    if let Some(k) = p.keys().find(|k| !matches!(k.as_str(), "aggregation_strategy" | "ignore_labels" | "stride")) {
        return Err(Refusal::invalid("parameters", format!("unknown parameter '{k}' (aggregation_strategy and ignore_labels are read)")));
    }
    if p.get("stride").is_some_and(|v| !v.is_null()) {
        return Err(Refusal::invalid(
            "stride",
            "'stride' is not served: a text longer than the model is cut at its length, not split into windows",
        ));
    }
    let strategy = match opt_str(p, "aggregation_strategy")? {
        None => Aggregation::default(),
        Some(s) => Aggregation::named(&s.to_ascii_lowercase()).ok_or_else(|| {
            Refusal::invalid("aggregation_strategy", format!("aggregation_strategy '{s}' is none of none, simple, first, max, average"))
        })?,
    };
    let ignore = match p.get("ignore_labels") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(labels)) => {
            let labels: Vec<String> = labels
                .iter()
                .map(|l| {
                    l.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| Refusal::invalid("ignore_labels", "'ignore_labels' must be a list of strings"))
                })
                .collect::<Result<_, _>>()?;
            if !labels.iter().any(|l| l == "O") {
                return Err(Refusal::invalid("ignore_labels", "'ignore_labels' must hold 'O': entities labelled O are never returned"));
            }
            labels
        }
        Some(v) => return Err(Refusal::invalid("ignore_labels", format!("'ignore_labels' must be a list of strings, found {}", kind(v)))),
    };
    Ok((strategy, ignore))
}

/// The request `body`, checked against `bounds`.
pub fn decode(body: &[u8], bounds: &Bounds) -> Result<NerRequest, Refusal> {
    const P: &str = "inputs";
    let map = object(body)?;
    let (texts, batch) = match map.get(P) {
        None | Some(Value::Null) => return Err(Refusal::invalid(P, "missing field 'inputs'")),
        Some(v @ Value::String(_)) => (vec![text(v, P, bounds)?], false),
        Some(Value::Array(items)) => {
            count(items.len(), P, bounds)?;
            (items.iter().map(|t| text(t, P, bounds)).collect::<Result<_, _>>()?, true)
        }
        Some(v) => return Err(Refusal::invalid(P, format!("'inputs' must be a string or a list of strings, found {}", kind(v)))),
    };
    let (strategy, ignore) = parameters(&map)?;
    Ok(NerRequest { texts, batch, strategy, ignore })
}

/// `texts` tokenized for `served`'s token classifier (refused by name for any other model).
pub fn rows(served: &ServedVersion, texts: &[String]) -> ServeResult<NerRows> {
    served.text()?.model().model().ner_rows(texts).map_err(|e| match e {
        trt_nlp::Error::Tokenize { index, source } => ServeError::invalid(format!("text {index}: {source}")),
        e => ServeError::invalid(format!("model '{}' does not classify tokens: {e}", served.name)),
    })
}

/// The entities of `texts` from the logits of their `rows`' run.
pub fn entities(
    served: &ServedVersion,
    texts: &[String],
    rows: &NerRows,
    ran: &Ran,
    strategy: Aggregation,
) -> ServeResult<Vec<Vec<Entity>>> {
    let t = api::output(served, ran, "logits")?;
    let logits: Vec<&[f32]> = (0..texts.len()).map(|i| api::row(t, i)).collect();
    served.text()?.model().model().entities(texts, rows, &logits, strategy).map_err(|e| ServeError::Internal(e.to_string()))
}

async fn classify(s: &Service, model: Option<String>, b: Body) -> Result<Value, TeiError> {
    let served = api::resolve(s, model.as_deref())?;
    let r = decode(&api::body_of(b)?, &api::bounds(s, &served)?)?;
    let tokenized = rows(&served, &r.texts)?;
    let ran = api::run(s, &served, "token_classification", tokenized.rows().to_vec()).await?;
    let found = entities(&served, &r.texts, &tokenized, &ran, r.strategy)?;
    let answer: Vec<Value> = found
        .iter()
        .map(|list| json!(list.iter().filter(|e| !r.ignore.contains(&e.label)).map(Entity::to_json).collect::<Vec<_>>()))
        .collect();
    Ok(if r.batch { json!(answer) } else { answer.into_iter().next().unwrap_or_else(|| json!([])) })
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Bounds = Bounds { max_inputs: 2, max_text_bytes: 16, max_ids: 8 };

    #[test]
    fn takes_a_string_or_a_list_and_the_hub_clients_parameters() {
        let r = decode(br#"{"inputs": "Ann met Bo", "parameters": {}}"#, &B).unwrap();
        assert_eq!((r.texts, r.batch, r.strategy), (vec!["Ann met Bo".to_string()], false, Aggregation::Simple));
        let r = decode(br#"{"inputs": ["a", ""], "parameters": {"aggregation_strategy": "FIRST", "ignore_labels": ["O", "MISC"]}}"#, &B)
            .unwrap();
        assert_eq!((r.batch, r.strategy, r.ignore.len()), (true, Aggregation::First, 2));
    }

    #[test]
    fn refusals_name_the_field() {
        let param = |body: &str| decode(body.as_bytes(), &B).expect_err("refused").param();
        assert_eq!(param(r#"{"inputs": []}"#), Some("inputs"));
        assert_eq!(param(r#"{"inputs": ["a", "b", "c"]}"#), Some("inputs"));
        assert_eq!(param(r#"{"inputs": "this text is too long"}"#), Some("inputs"));
        assert_eq!(param(r#"{"inputs": 3}"#), Some("inputs"));
        assert_eq!(param(r#"{"inputs": "a", "parameters": {"aggregation_strategy": "mean"}}"#), Some("aggregation_strategy"));
        assert_eq!(param(r#"{"inputs": "a", "parameters": {"ignore_labels": ["MISC"]}}"#), Some("ignore_labels"));
        assert_eq!(param(r#"{"inputs": "a", "parameters": {"stride": 8}}"#), Some("stride"));
        assert_eq!(param(r#"{"inputs": "a", "parameters": {"top_k": 8}}"#), Some("parameters"));
    }
}
