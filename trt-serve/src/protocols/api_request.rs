//! What the TEI and OpenAI decoders share: the bounds a request is checked
//! against, the kinds of refusal (each protocol renders them in its own error
//! shape), and readers of JSON fields that name the field they refuse.
//!
//! | refusal | TEI | OpenAI |
//! |---|---|---|
//! | [`Refusal::Malformed`]: not JSON | 400 | 400 `invalid_request_error` |
//! | [`Refusal::Invalid`]: a field of the wrong type or value, an empty list, `dimensions` 0 or over the width | 422 `Validation` | 400 `invalid_request_error` |
//! | [`Refusal::TooLarge`]: too many inputs, a text over the byte bound, a text over the model's length with truncation off | 413 `Validation` | 400 `invalid_request_error` (OpenAI answers 400 for too long) |

use serde_json::{Map, Value};

/// Bounds of one request, from the server's limits and the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Most inputs (texts, pairs, token lists) in one request.
    pub max_inputs: usize,
    /// Longest text, in bytes.
    pub max_text_bytes: usize,
    /// Most token ids in one pre-tokenized input.
    pub max_ids: usize,
}

/// Why a request was refused, with the message the client sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The body is not JSON.
    Malformed(String),
    /// A field has the wrong type or value.
    Invalid {
        /// The field.
        param: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A bound was exceeded.
    TooLarge {
        /// The field.
        param: &'static str,
        /// Which bound, by how much.
        message: String,
    },
}

impl Refusal {
    /// An [`Refusal::Invalid`] of `param`.
    pub fn invalid(param: &'static str, message: impl Into<String>) -> Self {
        Refusal::Invalid { param, message: message.into() }
    }

    /// The message the client sees.
    pub fn message(&self) -> &str {
        match self {
            Refusal::Malformed(m) | Refusal::Invalid { message: m, .. } | Refusal::TooLarge { message: m, .. } => m,
        }
    }

    /// The field the refusal names, if any.
    pub fn param(&self) -> Option<&'static str> {
        match self {
            Refusal::Malformed(_) => None,
            Refusal::Invalid { param, .. } | Refusal::TooLarge { param, .. } => Some(param),
        }
    }
}

/// The body as a JSON object.
pub fn object(body: &[u8]) -> Result<Map<String, Value>, Refusal> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(Refusal::invalid("body", format!("the request must be a JSON object, found {}", kind(&other)))),
        Err(e) => Err(Refusal::Malformed(format!("malformed JSON in the request: {e}"))),
    }
}

/// The JSON type of `v`, for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An optional boolean field (`null` counts as absent).
pub fn opt_bool(map: &Map<String, Value>, param: &'static str) -> Result<Option<bool>, Refusal> {
    match map.get(param) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(Refusal::invalid(param, format!("'{param}' must be a boolean, found {}", kind(v)))),
    }
}

/// An optional string field (`null` counts as absent).
pub fn opt_str<'a>(map: &'a Map<String, Value>, param: &'static str) -> Result<Option<&'a str>, Refusal> {
    match map.get(param) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(Refusal::invalid(param, format!("'{param}' must be a string, found {}", kind(v)))),
    }
}

/// An optional `dimensions` field: a whole number from 1 up to `width`, or absent.
pub fn dimensions(map: &Map<String, Value>, width: usize) -> Result<Option<usize>, Refusal> {
    const P: &str = "dimensions";
    match map.get(P) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(0) => Err(Refusal::invalid(P, "'dimensions' must be at least 1")),
            Some(d) if d <= width as u64 => Ok(Some(d as usize)),
            Some(d) => Err(Refusal::invalid(P, format!("'dimensions' {d} is more than the model's {width} dimensions"))),
            None => Err(Refusal::invalid(P, format!("'dimensions' must be a whole number from 1 to {width}, found {n}"))),
        },
        Some(v) => Err(Refusal::invalid(P, format!("'dimensions' must be a number, found {}", kind(v)))),
    }
}

/// A text within the byte bound.
pub fn text(v: &Value, param: &'static str, bounds: &Bounds) -> Result<String, Refusal> {
    match v {
        Value::String(s) if s.len() > bounds.max_text_bytes => Err(Refusal::TooLarge {
            param,
            message: format!("a text of '{param}' is {} bytes, more than the limit of {}", s.len(), bounds.max_text_bytes),
        }),
        Value::String(s) => Ok(s.clone()),
        v => Err(Refusal::invalid(param, format!("'{param}' must hold strings, found {}", kind(v)))),
    }
}

/// A list of token ids (each a u32), within the bound.
pub fn ids(v: &[Value], param: &'static str, bounds: &Bounds) -> Result<Vec<u32>, Refusal> {
    if v.len() > bounds.max_ids {
        return Err(Refusal::TooLarge {
            param,
            message: format!("{} token ids in one input of '{param}', more than the limit of {}", v.len(), bounds.max_ids),
        });
    }
    v.iter()
        .map(|x| {
            x.as_u64().and_then(|id| u32::try_from(id).ok()).ok_or_else(|| {
                Refusal::invalid(param, format!("token ids in '{param}' must be whole numbers from 0 to 4294967295, found {x}"))
            })
        })
        .collect()
}

/// Checks a list's length against the bound and that it is not empty.
pub fn count(n: usize, param: &'static str, bounds: &Bounds) -> Result<(), Refusal> {
    if n == 0 {
        return Err(Refusal::invalid(param, format!("'{param}' must not be empty")));
    }
    if n > bounds.max_inputs {
        return Err(Refusal::TooLarge {
            param,
            message: format!("{n} inputs in '{param}', more than the limit of {} per request", bounds.max_inputs),
        });
    }
    Ok(())
}
