//! The model behind a TEI or OpenAI route, and the one path its work takes:
//! inputs tokenized here (per-request truncation, pairs, ready token ids)
//! into rows, the rows through the version's [`Dispatcher`](crate::models::dispatch::Dispatcher)
//! (the same queue, token budget and length grouping as `/v2/.../infer`, so
//! traffic of every protocol batches together), the version's request
//! metrics counted as for KServe requests.
//!
//! A route without a model name (TEI's root routes) serves the single model
//! of the repository; with several models it answers 404 naming the
//! `/models/{name}/...` form.
//!
//! Inputs longer than the model's sequence length are refused (413) unless
//! the request sets `truncate: true` or the server cuts by default
//! ([`Limits::auto_truncate`](crate::Limits::auto_truncate), TEI's
//! `--auto-truncate`). Ready token ids are never cut.

use std::sync::Arc;

use trt_nlp::sparse::SPARSE;
use trt_nlp::{OutputRows, PairTruncation, TokenRow, TruncationSide, EMBEDDING};

use crate::error::{ServeError, ServeResult};
use crate::models::dispatch::Ran;
use crate::models::repository::ServedVersion;
use crate::protocols::api_request::Bounds;
use crate::protocols::service::Service;
use crate::protocols::tei::request::{Input, Truncate};

/// One input, as the routes hand it over.
#[derive(Debug, Clone, Copy)]
pub enum Item<'a> {
    /// A text.
    Text(&'a str),
    /// Ready token ids.
    Ids(&'a [u32]),
    /// A pair (query and passage).
    Pair(&'a str, &'a str),
}

impl<'a> From<&'a Input> for Item<'a> {
    fn from(i: &'a Input) -> Self {
        match i {
            Input::Text(t) => Item::Text(t),
            Input::Ids(ids) => Item::Ids(ids),
        }
    }
}

/// `inputs` with the model's prompt `name` before each text (its default
/// prompt when `name` is `None`, none for `Some("")`), as
/// sentence-transformers' `encode(prompt_name=...)` does; `None` when no
/// prompt applies (the inputs are used as they are). Ready token ids are
/// left alone. An unknown name is refused, naming the prompts there are.
pub fn with_prompt(served: &ServedVersion, inputs: &[Input], name: Option<&str>) -> ServeResult<Option<Vec<Input>>> {
    let prefix = served.text()?.model().model().head().prompts.text(name).map_err(|e| ServeError::invalid(format!("prompt_name: {e}")))?;
    if prefix.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        inputs
            .iter()
            .map(|i| match i {
                Input::Text(t) => Input::Text(format!("{prefix}{t}")),
                ids => ids.clone(),
            })
            .collect(),
    ))
}

/// The version serving `model`, or the repository's single model when `None`.
/// A tensor model is refused by name: these routes tokenize.
pub fn resolve(service: &Service, model: Option<&str>) -> ServeResult<Arc<ServedVersion>> {
    let served = resolve_any(service, model)?;
    served.text()?;
    Ok(served)
}

fn resolve_any(service: &Service, model: Option<&str>) -> ServeResult<Arc<ServedVersion>> {
    if let Some(name) = model {
        return service.repository.resolve(name, None);
    }
    let served = service.repository.served();
    let mut names: Vec<&str> = served.iter().map(|v| v.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    match names.as_slice() {
        [one] => service.repository.resolve(one, None),
        [] => Err(ServeError::Unavailable("no model is ready".into())),
        many => {
            Err(ServeError::NotFound(format!("{} models are served ({}): name one, as /models/{{name}}/...", many.len(), many.join(", "))))
        }
    }
}

/// The bounds of a request to `served`: its largest batch, the server's text limit, its sequence length.
pub fn bounds(service: &Service, served: &ServedVersion) -> ServeResult<Bounds> {
    let model = served.text()?.model();
    Ok(Bounds { max_inputs: model.max_batch(), max_text_bytes: service.repository.limits().max_text_bytes, max_ids: model.max_seq() })
}

/// `served`'s `sparse` output (a SPLADE model's), or why it has none.
pub fn sparse_output(served: &ServedVersion) -> ServeResult<()> {
    match served.config.outputs.iter().any(|o| o.name == SPARSE) {
        true => Ok(()),
        false => Err(ServeError::invalid(format!(
            "model '{}' exposes no '{SPARSE}' output: it is not a sparse (SPLADE) model; /embed_sparse needs one",
            served.name
        ))),
    }
}

/// The width of `served`'s `embedding` output, or why it has none.
pub fn embedding_width(served: &ServedVersion) -> ServeResult<usize> {
    served
        .config
        .outputs
        .iter()
        .find(|o| o.name == EMBEDDING)
        .and_then(|o| o.dims.last().copied())
        .and_then(|d| usize::try_from(d).ok())
        .ok_or_else(|| ServeError::invalid(format!("model '{}' exposes no '{EMBEDDING}' output: it does not embed", served.name)))
}

pub(crate) use crate::protocols::http::body_of;

fn tokenize_error(e: trt_nlp::Error, index: usize) -> ServeError {
    match e {
        trt_nlp::Error::TooLong { tokens, max_len, .. } => {
            ServeError::TooLarge(format!("input {index} has {tokens} tokens, more than the model's {max_len}"))
        }
        e => ServeError::invalid(format!("input {index}: {e}")),
    }
}

/// `items` tokenized for `served` by `truncate` (pairs cut longest-first;
/// a request that does not say is cut as the service's limits say).
pub fn rows(service: &Service, served: &ServedVersion, items: &[Item<'_>], truncate: Truncate) -> ServeResult<Vec<TokenRow>> {
    let pipeline = served.text()?.model().pipeline().clone();
    let cut = truncate.truncate.unwrap_or(service.repository.limits().auto_truncate);
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let row = match *item {
            Item::Text(t) => pipeline.tokenize_from(&[t], truncate.side).map_err(|e| tokenize_error(e, i))?.remove(0),
            Item::Pair(a, b) => {
                pipeline.tokenize_pairs(&[(a, b)], PairTruncation::LongestFirst, truncate.side).map_err(|e| tokenize_error(e, i))?.remove(0)
            }
            Item::Ids(ids) => {
                let row = TokenRow::new(ids.to_vec(), None).map_err(|e| tokenize_error(e, i))?;
                pipeline.check_row(&row).map_err(|e| tokenize_error(e, i))?;
                row
            }
        };
        out.push(row);
    }
    refuse_cut(&out, cut, pipeline.max_len())?;
    Ok(out)
}

/// Why a row was cut when the request (or the server's default) does not allow it.
fn refuse_cut(rows: &[TokenRow], cut: bool, max_len: usize) -> ServeResult<()> {
    match rows.iter().position(TokenRow::truncated) {
        Some(i) if !cut => {
            Err(ServeError::TooLarge(format!("input {i} is longer than the model's {max_len} tokens; send \"truncate\": true to cut it")))
        }
        _ => Ok(()),
    }
}

/// The rows of a causal-LM reranker (Qwen3-Reranker) for `query` and each
/// of `texts`: the pair in its card's prompt, the content cut from the right
/// to the card's length (refused unless `truncate` allows cutting; a request
/// asking for the left side is refused, the card cuts the right).
pub fn rerank_rows(
    service: &Service,
    served: &ServedVersion,
    query: &str,
    texts: &[String],
    truncate: Truncate,
) -> ServeResult<Vec<TokenRow>> {
    if truncate.side == TruncationSide::Left {
        return Err(ServeError::invalid(format!(
            "model '{}' is a causal-LM reranker, whose prompt is cut from the right as its card cuts it: truncation_direction 'Left' is not served",
            served.name
        )));
    }
    let model = served.text()?.model().model();
    let rows = model.rerank_rows(query, texts, None, None).map_err(|e| match e {
        trt_nlp::Error::Tokenize { index, source } => ServeError::invalid(format!("text {index}: {source}")),
        e => ServeError::invalid(format!("model '{}': {e}", served.name)),
    })?;
    let cut = truncate.truncate.unwrap_or(service.repository.limits().auto_truncate);
    refuse_cut(&rows, cut, model.head().rerank.as_ref().map_or(model.max_seq(), |f| f.max_length.min(model.max_seq())))?;
    Ok(rows)
}

/// Runs `rows` on `served` through its dispatcher, counting the request in
/// the version's metrics as KServe requests are counted, and under `route`.
pub async fn run(service: &Service, served: &ServedVersion, route: &str, rows: Vec<TokenRow>) -> ServeResult<Ran> {
    let dispatcher = served.text()?;
    let v = served.version.to_string();
    let n = rows.len();
    let in_flight = service.metrics.start(&served.name, &v, route);
    let result = dispatcher.run_rows(rows, 0, None).await;
    match &result {
        Ok(ran) => in_flight.finish(Ok(crate::observability::metrics::Phases {
            rows: n as u64,
            executions: ran.executions,
            queue: ran.queue,
            compute_input: ran.tokenize,
            compute_infer: ran.compute,
            compute_output: std::time::Duration::ZERO,
        })),
        Err(e) => in_flight.finish(Err(e)),
    }
    result
}

/// The output `name` of a run.
pub fn output<'a>(served: &ServedVersion, ran: &'a Ran, name: &str) -> ServeResult<&'a OutputRows> {
    ran.tensors
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| ServeError::invalid(format!("model '{}' exposes no output '{name}'", served.name)))
}

/// The classification output of `served` (`logits`, else its only rank-1
/// output other than `embedding`), or why it has none.
pub fn logits_name(served: &ServedVersion) -> ServeResult<String> {
    let outs = &served.config.outputs;
    if outs.iter().any(|o| o.name == "logits" && o.dims.len() != 1) {
        return Err(ServeError::invalid(format!(
            "model '{}' has per-token logits: it classifies tokens (/token_classification), not texts or pairs",
            served.name
        )));
    }
    outs.iter()
        .find(|o| o.name == "logits")
        .or_else(|| {
            let mut rank1 = outs.iter().filter(|o| o.dims.len() == 1 && o.name != EMBEDDING);
            match (rank1.next(), rank1.next()) {
                (Some(o), None) => Some(o),
                _ => None,
            }
        })
        .map(|o| o.name.clone())
        .ok_or_else(|| ServeError::invalid(format!("model '{}' exposes no 'logits' output: it does not classify", served.name)))
}

/// Row `r` of a `[rows, ...]` tensor.
pub fn row(t: &OutputRows, r: usize) -> &[f32] {
    t.row(r).unwrap_or_default()
}
