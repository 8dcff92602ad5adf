//! OpenAI's embeddings request (`POST /v1/embeddings`) decoded and checked:
//! `input` (a string, a list of strings, a list of token ids or a list of
//! such lists), `model`, `encoding_format` (`float` or `base64`),
//! `dimensions`, `user` (accepted and ignored), as the OpenAI API reference
//! and the `openai` Python package's `EmbeddingCreateParams` define them.

use crate::protocols::api_request::{dimensions, object, opt_str, Bounds, Refusal};
use crate::protocols::tei::request::{embed_inputs, Input};

/// How embeddings are written in the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EncodingFormat {
    /// JSON numbers.
    #[default]
    Float,
    /// Base64 of the little-endian f32 bytes.
    Base64,
}

/// `/v1/embeddings`.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingsRequest {
    /// The inputs, in order.
    pub input: Vec<Input>,
    /// The model asked for.
    pub model: String,
    /// Float or base64.
    pub encoding_format: EncodingFormat,
    /// Keep the first this many dimensions, normalised again.
    pub dimensions: Option<usize>,
}

/// The `model` field alone, to find the model (and its width) before the rest is checked.
pub fn model_of(body: &[u8]) -> Result<String, Refusal> {
    model_field(&object(body)?)
}

fn model_field(map: &serde_json::Map<String, serde_json::Value>) -> Result<String, Refusal> {
    match opt_str(map, "model")? {
        Some(m) if !m.is_empty() => Ok(m.to_owned()),
        _ => Err(Refusal::invalid("model", "you must provide a model parameter")),
    }
}

/// `/v1/embeddings`; `width` is the model's embedding size (the bound of `dimensions`).
pub fn embeddings(body: &[u8], bounds: &Bounds, width: usize) -> Result<EmbeddingsRequest, Refusal> {
    let map = object(body)?;
    let model = model_field(&map)?;
    let input = match map.get("input") {
        None | Some(serde_json::Value::Null) => return Err(Refusal::invalid("input", "you must provide an input parameter")),
        Some(v) => embed_inputs(v, "input", bounds)?,
    };
    let encoding_format = match opt_str(&map, "encoding_format")? {
        None | Some("float") => EncodingFormat::Float,
        Some("base64") => EncodingFormat::Base64,
        Some(other) => {
            return Err(Refusal::invalid("encoding_format", format!("encoding_format must be 'float' or 'base64', found '{other}'")))
        }
    };
    opt_str(&map, "user")?;
    Ok(EmbeddingsRequest { input, model, encoding_format, dimensions: dimensions(&map, width)? })
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Bounds = Bounds { max_inputs: 4, max_text_bytes: 32, max_ids: 8 };

    #[test]
    fn every_input_shape_and_format() {
        let r = embeddings(br#"{"input": "hi", "model": "m"}"#, &B, 384).unwrap();
        assert_eq!((r.input, r.encoding_format, r.dimensions), (vec![Input::Text("hi".into())], EncodingFormat::Float, None));
        let r = embeddings(
            br#"{"input": [[101, 102], [101, 7592, 102]], "model": "m", "encoding_format": "base64", "dimensions": 8, "user": "u"}"#,
            &B,
            384,
        )
        .unwrap();
        assert_eq!(r.input, vec![Input::Ids(vec![101, 102]), Input::Ids(vec![101, 7592, 102])]);
        assert_eq!((r.encoding_format, r.dimensions), (EncodingFormat::Base64, Some(8)));
        assert_eq!(model_of(br#"{"model": "minilm"}"#).unwrap(), "minilm");
    }

    #[test]
    fn refusals_name_the_param() {
        let param = |body: &[u8]| embeddings(body, &B, 384).unwrap_err().param();
        assert_eq!(param(br#"{"input": "hi"}"#), Some("model"));
        assert_eq!(param(br#"{"model": "m"}"#), Some("input"));
        assert_eq!(param(br#"{"model": "m", "input": []}"#), Some("input"));
        assert_eq!(param(br#"{"model": "m", "input": {"a": 1}}"#), Some("input"));
        assert_eq!(param(br#"{"model": "m", "input": "a", "encoding_format": "hex"}"#), Some("encoding_format"));
        assert_eq!(param(br#"{"model": "m", "input": "a", "dimensions": 0}"#), Some("dimensions"));
        assert_eq!(param(br#"{"model": "m", "input": "a", "dimensions": 999}"#), Some("dimensions"));
        assert_eq!(param(br#"{"model": "m", "input": "a", "user": 3}"#), Some("user"));
        assert_eq!(param(b"not json"), None);
    }
}
