//! TEI's error body, `{"error": "...", "error_type": "..."}`, and the status
//! of each kind of failure (text-embeddings-inference: `ErrorType` and its
//! mapping in `router/src/http/server.rs`).
//!
//! | failure | status | `error_type` |
//! |---|---|---|
//! | malformed JSON | 400 | `Validation` |
//! | a field of the wrong type or value, empty inputs, bad `dimensions` | 422 | `Validation` |
//! | too many inputs, a text over the byte bound, over the model's length with `truncate` false | 413 | `Validation` |
//! | unknown model | 404 | `Validation` |
//! | tokenizer failure | 422 | `Tokenizer` |
//! | overloaded, queue timeout, not ready | 429 / 503 | `Overloaded` / `Unhealthy` |
//! | the backend failed | 424 | `Backend` |

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::error::ServeError;
use crate::protocols::api_request::Refusal;

/// A failed TEI request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// TEI's `error_type`.
    pub error_type: &'static str,
    /// The message.
    pub message: String,
}

impl TeiError {
    /// A 422 `Validation` error.
    pub fn validation(message: impl Into<String>) -> Self {
        TeiError { status: StatusCode::UNPROCESSABLE_ENTITY, error_type: "Validation", message: message.into() }
    }

    /// A 413 `Validation` error (too long, too many).
    pub fn too_large(message: impl Into<String>) -> Self {
        TeiError { status: StatusCode::PAYLOAD_TOO_LARGE, error_type: "Validation", message: message.into() }
    }
}

impl From<Refusal> for TeiError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::Malformed(m) => TeiError { status: StatusCode::BAD_REQUEST, error_type: "Validation", message: m },
            Refusal::Invalid { message, .. } => TeiError::validation(message),
            Refusal::TooLarge { message, .. } => TeiError::too_large(message),
        }
    }
}

impl From<ServeError> for TeiError {
    fn from(e: ServeError) -> Self {
        let (status, error_type) = match &e {
            ServeError::InvalidArgument(_) => (StatusCode::UNPROCESSABLE_ENTITY, "Validation"),
            ServeError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "Validation"),
            ServeError::NotFound(_) => (StatusCode::NOT_FOUND, "Validation"),
            ServeError::Unavailable(m) if m.contains("not ready") || m.contains("shutting down") => {
                (StatusCode::SERVICE_UNAVAILABLE, "Unhealthy")
            }
            ServeError::Unavailable(_) => (StatusCode::TOO_MANY_REQUESTS, "Overloaded"),
            ServeError::Unsupported(_) => (StatusCode::UNPROCESSABLE_ENTITY, "Validation"),
            ServeError::RequestTimeout(_) => (StatusCode::REQUEST_TIMEOUT, "Validation"),
            ServeError::Internal(_) => (StatusCode::FAILED_DEPENDENCY, "Backend"),
            // Server-level refusals (authentication and the like) keep their status.
            _ => (e.http_status(), "Validation"),
        };
        TeiError { status, error_type, message: e.to_string() }
    }
}

impl IntoResponse for TeiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.message, "error_type": self.error_type }))).into_response()
    }
}
