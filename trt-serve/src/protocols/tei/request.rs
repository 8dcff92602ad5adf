//! TEI request bodies decoded and checked: the fields and JSON shapes of
//! text-embeddings-inference's HTTP API (`router/src/http/types.rs` there),
//! read field by field so that a refusal names the field.
//!
//! | route | body |
//! |---|---|
//! | `/embed` | `inputs` (a string, a list of strings, a token-id list or a list of them), `normalize` (default true), `truncate`, `truncation_direction`, `dimensions`, `prompt_name` |
//! | `/embed_all` | `inputs`, `truncate`, `truncation_direction`, `prompt_name` |
//! | `/predict` | `inputs`: a string, a pair `[a, b]`, or a batch `[[a], [a, b], ...]`; `truncate`, `truncation_direction`, `raw_scores` |
//! | `/rerank` | `query`, `texts`, `truncate`, `truncation_direction`, `raw_scores`, `return_text` |
//! | `/similarity` | `inputs: {source_sentence, sentences}`, `parameters: {truncate, truncation_direction}` |
//! | `/tokenize` | `inputs` (a string or a list), `add_special_tokens` (default true), `prompt_name` |
//! | `/decode` | `ids` (a list or a list of lists), `skip_special_tokens` (default true) |
//!
//! `prompt_name` on `/embed` and `/embed_all` names one of the model's prompts
//! (sentence-transformers' `prompts`; absent: its default prompt, if any); on
//! the other routes it is refused.

use serde_json::{Map, Value};
use trt_nlp::TruncationSide;

use crate::protocols::api_request::{count, dimensions, ids, kind, object, opt_bool, opt_str, text, Bounds, Refusal};

/// One input of `/embed`, `/embed_all` or `/v1/embeddings`: a text or ready token ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A text to tokenize.
    Text(String),
    /// Token ids, special tokens included, as the model takes them.
    Ids(Vec<u32>),
}

/// How long inputs are treated: `truncate` (absent: the server's default) and the side cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Truncate {
    /// `truncate` as sent.
    pub truncate: Option<bool>,
    /// `truncation_direction`.
    pub side: TruncationSide,
}

/// `/embed`.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedRequest {
    /// The inputs, in order.
    pub inputs: Vec<Input>,
    /// Truncation.
    pub truncate: Truncate,
    /// L2-normalise the embeddings (default true).
    pub normalize: bool,
    /// Keep the first this many dimensions (Matryoshka), then normalise again if `normalize`.
    pub dimensions: Option<usize>,
    /// The model's prompt to put before each text (absent: its default).
    pub prompt_name: Option<String>,
}

/// `/embed_all` (token embeddings).
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedAllRequest {
    /// The inputs, in order.
    pub inputs: Vec<Input>,
    /// Truncation.
    pub truncate: Truncate,
    /// The model's prompt to put before each text (absent: its default).
    pub prompt_name: Option<String>,
}

/// A `/predict` sequence: one text or a pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sequence {
    /// One text.
    Single(String),
    /// A pair (for cross-encoders).
    Pair(String, String),
}

/// `/predict`.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictRequest {
    /// The sequences, in order.
    pub inputs: Vec<Sequence>,
    /// Whether a batch was sent (the answer is then a list of lists).
    pub batch: bool,
    /// Truncation.
    pub truncate: Truncate,
    /// Logits instead of softmax scores.
    pub raw_scores: bool,
}

/// `/rerank`.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankRequest {
    /// The query, first segment of every pair.
    pub query: String,
    /// The texts to rank.
    pub texts: Vec<String>,
    /// Truncation.
    pub truncate: Truncate,
    /// Logits instead of sigmoid scores.
    pub raw_scores: bool,
    /// Echo each text in the answer.
    pub return_text: bool,
}

/// `/similarity` (huggingface_hub's `sentence_similarity`).
#[derive(Debug, Clone, PartialEq)]
pub struct SimilarityRequest {
    /// The sentence the others are compared with.
    pub source: String,
    /// The sentences compared.
    pub sentences: Vec<String>,
    /// Truncation.
    pub truncate: Truncate,
}

/// `/tokenize`.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenizeRequest {
    /// The texts.
    pub inputs: Vec<String>,
    /// Add the model's special tokens (default true).
    pub add_special_tokens: bool,
}

/// `/decode`.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeRequest {
    /// One id list per text.
    pub ids: Vec<Vec<u32>>,
    /// Leave special tokens out (default true).
    pub skip_special_tokens: bool,
}

fn required<'a>(map: &'a Map<String, Value>, param: &'static str) -> Result<&'a Value, Refusal> {
    map.get(param).filter(|v| !v.is_null()).ok_or_else(|| Refusal::invalid(param, format!("missing field '{param}'")))
}

fn no_prompt(map: &Map<String, Value>) -> Result<(), Refusal> {
    match opt_str(map, "prompt_name")? {
        None => Ok(()),
        Some(p) => Err(Refusal::invalid("prompt_name", format!("prompt_name '{p}': this model declares no prompts"))),
    }
}

/// `truncate` and `truncation_direction` of `map`.
pub fn truncate_of(map: &Map<String, Value>) -> Result<Truncate, Refusal> {
    let side = match opt_str(map, "truncation_direction")? {
        None => TruncationSide::Right,
        Some(s) if s.eq_ignore_ascii_case("right") => TruncationSide::Right,
        Some(s) if s.eq_ignore_ascii_case("left") => TruncationSide::Left,
        Some(s) => {
            return Err(Refusal::invalid("truncation_direction", format!("truncation_direction must be 'Left' or 'Right', found '{s}'")))
        }
    };
    Ok(Truncate { truncate: opt_bool(map, "truncate")?, side })
}

/// `inputs` of `/embed`, `/embed_all` (and `input` of `/v1/embeddings`):
/// a string, a list of strings, a list of ids, or a list of id lists.
pub fn embed_inputs(v: &Value, param: &'static str, bounds: &Bounds) -> Result<Vec<Input>, Refusal> {
    let items = match v {
        Value::String(_) => return Ok(vec![Input::Text(text(v, param, bounds)?)]),
        Value::Array(items) => items,
        v => return Err(Refusal::invalid(param, format!("'{param}' must be a string or a list, found {}", kind(v)))),
    };
    if items.first().is_some_and(Value::is_number) {
        return Ok(vec![Input::Ids(non_empty_ids(items, param, bounds)?)]);
    }
    count(items.len(), param, bounds)?;
    items
        .iter()
        .map(|item| match item {
            Value::String(_) => Ok(Input::Text(text(item, param, bounds)?)),
            Value::Array(list) => Ok(Input::Ids(non_empty_ids(list, param, bounds)?)),
            v => Err(Refusal::invalid(param, format!("each of '{param}' must be a string or a list of token ids, found {}", kind(v)))),
        })
        .collect()
}

fn non_empty_ids(list: &[Value], param: &'static str, bounds: &Bounds) -> Result<Vec<u32>, Refusal> {
    if list.is_empty() {
        return Err(Refusal::invalid(param, format!("a token-id list of '{param}' must not be empty")));
    }
    ids(list, param, bounds)
}

/// A list of strings (`texts`, `sentences`, `inputs` of `/tokenize`), or one string where `single` allows it.
fn texts(v: &Value, param: &'static str, single: bool, bounds: &Bounds) -> Result<Vec<String>, Refusal> {
    match v {
        Value::String(_) if single => Ok(vec![text(v, param, bounds)?]),
        Value::Array(items) => {
            count(items.len(), param, bounds)?;
            items.iter().map(|t| text(t, param, bounds)).collect()
        }
        v => Err(Refusal::invalid(param, format!("'{param}' must be a list of strings, found {}", kind(v)))),
    }
}

/// `/embed`; `width` is the model's embedding size (the bound of `dimensions`).
pub fn embed(body: &[u8], bounds: &Bounds, width: usize) -> Result<EmbedRequest, Refusal> {
    let map = object(body)?;
    Ok(EmbedRequest {
        inputs: embed_inputs(required(&map, "inputs")?, "inputs", bounds)?,
        truncate: truncate_of(&map)?,
        normalize: opt_bool(&map, "normalize")?.unwrap_or(true),
        dimensions: dimensions(&map, width)?,
        prompt_name: opt_str(&map, "prompt_name")?.map(str::to_string),
    })
}

/// `/embed_all`.
pub fn embed_all(body: &[u8], bounds: &Bounds) -> Result<EmbedAllRequest, Refusal> {
    let map = object(body)?;
    Ok(EmbedAllRequest {
        inputs: embed_inputs(required(&map, "inputs")?, "inputs", bounds)?,
        truncate: truncate_of(&map)?,
        prompt_name: opt_str(&map, "prompt_name")?.map(str::to_string),
    })
}

fn sequence(items: &[Value], bounds: &Bounds) -> Result<Sequence, Refusal> {
    const P: &str = "inputs";
    match items {
        [a] => Ok(Sequence::Single(text(a, P, bounds)?)),
        [a, b] => Ok(Sequence::Pair(text(a, P, bounds)?, text(b, P, bounds)?)),
        _ => Err(Refusal::invalid(P, format!("a sequence of 'inputs' is one string or a pair of strings, found {} items", items.len()))),
    }
}

/// `/predict`.
pub fn predict(body: &[u8], bounds: &Bounds) -> Result<PredictRequest, Refusal> {
    const P: &str = "inputs";
    let map = object(body)?;
    let (inputs, batch) = match required(&map, P)? {
        v @ Value::String(_) => (vec![Sequence::Single(text(v, P, bounds)?)], false),
        Value::Array(items) if items.first().is_some_and(Value::is_array) => {
            count(items.len(), P, bounds)?;
            let batch = items
                .iter()
                .map(|s| match s {
                    Value::Array(seq) => sequence(seq, bounds),
                    v => Err(Refusal::invalid(
                        P,
                        format!("each item of a batch of 'inputs' must be a list of one or two strings, found {}", kind(v)),
                    )),
                })
                .collect::<Result<_, _>>()?;
            (batch, true)
        }
        Value::Array(items) if items.is_empty() => return Err(Refusal::invalid(P, "'inputs' must not be empty")),
        Value::Array(items) => (vec![sequence(items, bounds)?], false),
        v => return Err(Refusal::invalid(P, format!("'inputs' must be a string, a pair or a batch, found {}", kind(v)))),
    };
    Ok(PredictRequest { inputs, batch, truncate: truncate_of(&map)?, raw_scores: opt_bool(&map, "raw_scores")?.unwrap_or(false) })
}

/// `/rerank`.
pub fn rerank(body: &[u8], bounds: &Bounds) -> Result<RerankRequest, Refusal> {
    let map = object(body)?;
    Ok(RerankRequest {
        query: text(required(&map, "query")?, "query", bounds)?,
        texts: texts(required(&map, "texts")?, "texts", false, bounds)?,
        truncate: truncate_of(&map)?,
        raw_scores: opt_bool(&map, "raw_scores")?.unwrap_or(false),
        return_text: opt_bool(&map, "return_text")?.unwrap_or(false),
    })
}

/// `/similarity`.
pub fn similarity(body: &[u8], bounds: &Bounds) -> Result<SimilarityRequest, Refusal> {
    let map = object(body)?;
    let inputs = match required(&map, "inputs")? {
        Value::Object(inputs) => inputs,
        v => {
            return Err(Refusal::invalid(
                "inputs",
                format!("'inputs' must be an object with source_sentence and sentences, found {}", kind(v)),
            ))
        }
    };
    let truncate = match map.get("parameters") {
        None | Some(Value::Null) => Truncate::default(),
        Some(Value::Object(p)) => {
            no_prompt(p)?;
            truncate_of(p)?
        }
        Some(v) => return Err(Refusal::invalid("parameters", format!("'parameters' must be an object, found {}", kind(v)))),
    };
    Ok(SimilarityRequest {
        source: text(required(inputs, "source_sentence")?, "source_sentence", bounds)?,
        sentences: texts(required(inputs, "sentences")?, "sentences", false, bounds)?,
        truncate,
    })
}

/// `/tokenize`.
pub fn tokenize(body: &[u8], bounds: &Bounds) -> Result<TokenizeRequest, Refusal> {
    let map = object(body)?;
    no_prompt(&map)?;
    Ok(TokenizeRequest {
        inputs: texts(required(&map, "inputs")?, "inputs", true, bounds)?,
        add_special_tokens: opt_bool(&map, "add_special_tokens")?.unwrap_or(true),
    })
}

/// `/decode`.
pub fn decode(body: &[u8], bounds: &Bounds) -> Result<DecodeRequest, Refusal> {
    const P: &str = "ids";
    let map = object(body)?;
    let lists = match required(&map, P)? {
        Value::Array(items) if items.first().is_some_and(Value::is_array) => {
            count(items.len(), P, bounds)?;
            items
                .iter()
                .map(|l| match l {
                    Value::Array(l) => ids(l, P, bounds),
                    v => Err(Refusal::invalid(P, format!("'ids' must be a list of token ids or a list of such lists, found {}", kind(v)))),
                })
                .collect::<Result<_, _>>()?
        }
        Value::Array(items) => vec![ids(items, P, bounds)?],
        v => return Err(Refusal::invalid(P, format!("'ids' must be a list of token ids, found {}", kind(v)))),
    };
    Ok(DecodeRequest { ids: lists, skip_special_tokens: opt_bool(&map, "skip_special_tokens")?.unwrap_or(true) })
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Bounds = Bounds { max_inputs: 4, max_text_bytes: 32, max_ids: 8 };

    fn refusal<T: std::fmt::Debug>(r: Result<T, Refusal>) -> Refusal {
        r.expect_err("refused")
    }

    #[test]
    fn embed_takes_every_input_shape() {
        let r = embed(br#"{"inputs": "hi"}"#, &B, 384).unwrap();
        assert_eq!((r.inputs, r.normalize, r.dimensions), (vec![Input::Text("hi".into())], true, None));
        let r = embed(
            br#"{"inputs": ["a", [101, 102]], "normalize": false, "dimensions": 64, "truncate": true, "truncation_direction": "Left"}"#,
            &B,
            384,
        )
        .unwrap();
        assert_eq!(r.inputs, vec![Input::Text("a".into()), Input::Ids(vec![101, 102])]);
        assert_eq!(
            (r.normalize, r.dimensions, r.truncate),
            (false, Some(64), Truncate { truncate: Some(true), side: TruncationSide::Left })
        );
        assert_eq!(embed(br#"{"inputs": [101, 7592, 102]}"#, &B, 384).unwrap().inputs, vec![Input::Ids(vec![101, 7592, 102])]);
    }

    #[test]
    fn embed_refusals_name_the_field() {
        assert!(matches!(refusal(embed(b"{", &B, 384)), Refusal::Malformed(_)));
        assert!(matches!(refusal(embed(b"[]", &B, 384)), Refusal::Invalid { param: "body", .. }));
        assert!(matches!(refusal(embed(b"{}", &B, 384)), Refusal::Invalid { param: "inputs", .. }));
        assert!(matches!(refusal(embed(br#"{"inputs": []}"#, &B, 384)), Refusal::Invalid { param: "inputs", .. }));
        assert!(matches!(refusal(embed(br#"{"inputs": 3}"#, &B, 384)), Refusal::Invalid { param: "inputs", .. }));
        assert!(matches!(refusal(embed(br#"{"inputs": ["a", "b", "c", "d", "e"]}"#, &B, 384)), Refusal::TooLarge { param: "inputs", .. }));
        let long = format!(r#"{{"inputs": "{}"}}"#, "x".repeat(33));
        assert!(matches!(refusal(embed(long.as_bytes(), &B, 384)), Refusal::TooLarge { param: "inputs", .. }));
        assert!(matches!(refusal(embed(br#"{"inputs": "a", "dimensions": 0}"#, &B, 384)), Refusal::Invalid { param: "dimensions", .. }));
        assert!(matches!(refusal(embed(br#"{"inputs": "a", "dimensions": 385}"#, &B, 384)), Refusal::Invalid { param: "dimensions", .. }));
        assert!(matches!(refusal(embed(br#"{"inputs": "a", "dimensions": 1.5}"#, &B, 384)), Refusal::Invalid { param: "dimensions", .. }));
        assert!(matches!(refusal(embed(br#"{"inputs": "a", "normalize": "yes"}"#, &B, 384)), Refusal::Invalid { param: "normalize", .. }));
        assert!(matches!(refusal(embed(br#"{"inputs": [-1]}"#, &B, 384)), Refusal::Invalid { param: "inputs", .. }));
        assert!(matches!(refusal(embed(br#"{"inputs": [[]]}"#, &B, 384)), Refusal::Invalid { param: "inputs", .. }));
        assert!(matches!(refusal(embed(br#"{"inputs": "a", "truncation_direction": "up"}"#, &B, 384)), Refusal::Invalid { .. }));
        assert!(matches!(refusal(embed(br#"{"inputs": "a", "prompt_name": 3}"#, &B, 384)), Refusal::Invalid { param: "prompt_name", .. }));
        // A name is taken here; whether the model has that prompt is the route's to say.
        assert_eq!(embed(br#"{"inputs": "a", "prompt_name": "query"}"#, &B, 384).unwrap().prompt_name.as_deref(), Some("query"));
    }

    #[test]
    fn predict_tells_single_pair_and_batch_apart() {
        let r = predict(br#"{"inputs": "a"}"#, &B).unwrap();
        assert_eq!((r.inputs, r.batch), (vec![Sequence::Single("a".into())], false));
        let r = predict(br#"{"inputs": ["q", "p"], "raw_scores": true}"#, &B).unwrap();
        assert_eq!((r.inputs, r.batch, r.raw_scores), (vec![Sequence::Pair("q".into(), "p".into())], false, true));
        let r = predict(br#"{"inputs": [["a"], ["q", "p"]]}"#, &B).unwrap();
        assert_eq!(r.inputs, vec![Sequence::Single("a".into()), Sequence::Pair("q".into(), "p".into())]);
        assert!(r.batch);
        assert!(predict(br#"{"inputs": ["a", "b", "c"]}"#, &B).is_err());
        assert!(predict(br#"{"inputs": [[]]}"#, &B).is_err());
        assert!(predict(br#"{"inputs": []}"#, &B).is_err());
        assert!(predict(br#"{"inputs": [["a"], "b"]}"#, &B).is_err());
    }

    #[test]
    fn rerank_similarity_tokenize_decode() {
        let r = rerank(br#"{"query": "q", "texts": ["a", "b"], "return_text": true}"#, &B).unwrap();
        assert_eq!((r.query.as_str(), r.texts.len(), r.return_text, r.raw_scores), ("q", 2, true, false));
        assert!(matches!(refusal(rerank(br#"{"query": "q", "texts": []}"#, &B)), Refusal::Invalid { param: "texts", .. }));
        assert!(matches!(refusal(rerank(br#"{"query": "q", "texts": "a"}"#, &B)), Refusal::Invalid { param: "texts", .. }));
        assert!(matches!(refusal(rerank(br#"{"texts": ["a"]}"#, &B)), Refusal::Invalid { param: "query", .. }));
        let s = similarity(br#"{"inputs": {"source_sentence": "s", "sentences": ["a"]}, "parameters": {"truncate": true}}"#, &B).unwrap();
        assert_eq!((s.source.as_str(), s.sentences.len(), s.truncate.truncate), ("s", 1, Some(true)));
        assert!(similarity(br#"{"inputs": "s"}"#, &B).is_err());
        let t = tokenize(br#"{"inputs": "a b", "add_special_tokens": false}"#, &B).unwrap();
        assert_eq!((t.inputs.len(), t.add_special_tokens), (1, false));
        let d = decode(br#"{"ids": [101, 102]}"#, &B).unwrap();
        assert_eq!((d.ids, d.skip_special_tokens), (vec![vec![101, 102]], true));
        assert_eq!(decode(br#"{"ids": [[1], [2, 3]], "skip_special_tokens": false}"#, &B).unwrap().ids, vec![vec![1], vec![2, 3]]);
        assert!(matches!(refusal(decode(br#"{"ids": [1, 2, 3, 4, 5, 6, 7, 8, 9]}"#, &B)), Refusal::TooLarge { .. }));
        assert!(decode(br#"{"ids": ["a"]}"#, &B).is_err());
    }
}
