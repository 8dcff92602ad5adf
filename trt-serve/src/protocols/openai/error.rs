//! OpenAI's error body, `{"error": {"message", "type", "param", "code"}}`,
//! and its statuses: 400 `invalid_request_error` for a bad request (too long
//! inputs included), 404 `invalid_request_error` with code `model_not_found`
//! for an unknown model, 429 / 503 when overloaded or not ready, 500
//! `server_error` when the backend fails.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::error::ServeError;
use crate::protocols::api_request::Refusal;

/// A failed OpenAI request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// `type`.
    pub kind: &'static str,
    /// `param`, the field at fault.
    pub param: Option<&'static str>,
    /// `code`.
    pub code: Option<&'static str>,
    /// `message`.
    pub message: String,
}

impl OpenAiError {
    /// A 400 `invalid_request_error`.
    pub fn invalid(param: Option<&'static str>, message: impl Into<String>) -> Self {
        OpenAiError { status: StatusCode::BAD_REQUEST, kind: "invalid_request_error", param, code: None, message: message.into() }
    }

    /// A 404 for a model this server does not have.
    pub fn no_model(model: &str) -> Self {
        OpenAiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            param: Some("model"),
            code: Some("model_not_found"),
            message: format!("The model '{model}' does not exist"),
        }
    }
}

impl From<Refusal> for OpenAiError {
    fn from(r: Refusal) -> Self {
        let param = r.param().filter(|p| *p != "body");
        OpenAiError::invalid(param, r.message())
    }
}

impl From<ServeError> for OpenAiError {
    fn from(e: ServeError) -> Self {
        let (status, kind) = match &e {
            ServeError::InvalidArgument(_) | ServeError::TooLarge(_) | ServeError::Unsupported(_) => {
                (StatusCode::BAD_REQUEST, "invalid_request_error")
            }
            ServeError::NotFound(_) => (StatusCode::NOT_FOUND, "invalid_request_error"),
            ServeError::Unavailable(m) if m.contains("not ready") || m.contains("shutting down") => {
                (StatusCode::SERVICE_UNAVAILABLE, "server_error")
            }
            ServeError::Unavailable(_) => (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "server_error"),
        };
        OpenAiError { status, kind, param: None, code: None, message: e.to_string() }
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let body = json!({ "error": { "message": self.message, "type": self.kind, "param": self.param, "code": self.code } });
        (self.status, Json(body)).into_response()
    }
}
