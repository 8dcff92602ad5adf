//! The one place where a serving error becomes an HTTP status, a gRPC code
//! and a metrics reason (Triton maps its error kinds the same way in one
//! function, `HttpCodeFromError`).
//!
//! | kind | HTTP | gRPC | examples |
//! |---|---|---|---|
//! | [`ServeError::InvalidArgument`] | 400 | `INVALID_ARGUMENT` | malformed JSON, protobuf or binary framing; unknown tensor; wrong dtype or shape |
//! | [`ServeError::TooLarge`] | 413 | `RESOURCE_EXHAUSTED` | body, element count or text over a [`crate::transport::limits::Limits`] bound |
//! | [`ServeError::NotFound`] | 404 | `NOT_FOUND` | unknown model or version |
//! | [`ServeError::Unavailable`] | 503 | `UNAVAILABLE` | model not ready, overloaded, queue or inference timeout, shutting down |
//! | [`ServeError::NotAllowed`] | 400 | `UNAVAILABLE` | repository load / unload outside model-control mode `explicit` (Triton's codes) |
//! | [`ServeError::Unauthenticated`] | 401 | `UNAUTHENTICATED` | a missing or wrong API key |
//! | [`ServeError::RequestTimeout`] | 408 | `DEADLINE_EXCEEDED` | the client did not send its request body in time |
//! | [`ServeError::Unsupported`] | 501 | `UNIMPLEMENTED` | a protocol feature `trt serve` does not implement |
//! | [`ServeError::Internal`] | 500 | `INTERNAL` | the backend failed while running a batch |

use axum::http::StatusCode;

/// A failed request, with the message the client sees.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServeError {
    /// The request is malformed or does not fit the model.
    #[error("{0}")]
    InvalidArgument(String),
    /// The request is over a configured size limit.
    #[error("{0}")]
    TooLarge(String),
    /// No such model or version.
    #[error("{0}")]
    NotFound(String),
    /// The model cannot take the request now (not ready, overloaded, timed out, draining).
    #[error("{0}")]
    Unavailable(String),
    /// A protocol feature this server does not implement.
    #[error("{0}")]
    Unsupported(String),
    /// The server's mode does not allow the operation.
    #[error("{0}")]
    NotAllowed(String),
    /// The request lacks the API key its route needs.
    #[error("{0}")]
    Unauthenticated(String),
    /// The client was too slow sending its request.
    #[error("{0}")]
    RequestTimeout(String),
    /// The backend failed.
    #[error("{0}")]
    Internal(String),
}

/// Shorthand for results whose error is a [`ServeError`].
pub type ServeResult<T> = std::result::Result<T, ServeError>;

impl ServeError {
    /// A 400 / `INVALID_ARGUMENT` error.
    pub fn invalid(message: impl Into<String>) -> Self {
        ServeError::InvalidArgument(message.into())
    }

    /// The HTTP status code Triton answers with for this kind of error.
    pub fn http_status(&self) -> StatusCode {
        match self {
            ServeError::InvalidArgument(_) => StatusCode::BAD_REQUEST,
            ServeError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ServeError::NotFound(_) => StatusCode::NOT_FOUND,
            ServeError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServeError::Unsupported(_) => StatusCode::NOT_IMPLEMENTED,
            ServeError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ServeError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            ServeError::NotAllowed(_) => StatusCode::BAD_REQUEST,
            ServeError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The gRPC status code for this kind of error.
    pub fn grpc_code(&self) -> tonic::Code {
        match self {
            ServeError::InvalidArgument(_) => tonic::Code::InvalidArgument,
            ServeError::TooLarge(_) => tonic::Code::ResourceExhausted,
            ServeError::NotFound(_) => tonic::Code::NotFound,
            ServeError::Unavailable(_) => tonic::Code::Unavailable,
            ServeError::Unsupported(_) => tonic::Code::Unimplemented,
            ServeError::RequestTimeout(_) => tonic::Code::DeadlineExceeded,
            ServeError::Unauthenticated(_) => tonic::Code::Unauthenticated,
            ServeError::NotAllowed(_) => tonic::Code::Unavailable,
            ServeError::Internal(_) => tonic::Code::Internal,
        }
    }

    /// The `reason` label of `nv_inference_request_failure` (Triton's values:
    /// REJECTED for admission failures, BACKEND for execution, OTHER otherwise).
    pub fn failure_reason(&self) -> &'static str {
        match self {
            ServeError::Unavailable(_) => "REJECTED",
            ServeError::Internal(_) => "BACKEND",
            _ => "OTHER",
        }
    }
}

impl From<ServeError> for tonic::Status {
    fn from(e: ServeError) -> Self {
        tonic::Status::new(e.grpc_code(), e.to_string())
    }
}

impl axum::response::IntoResponse for ServeError {
    fn into_response(self) -> axum::response::Response {
        let body = serde_json::json!({ "error": self.to_string() });
        (self.http_status(), axum::Json(body)).into_response()
    }
}

impl From<trt_nlp::Error> for ServeError {
    /// What the client sent wrong (a text, a prompt name, a tensor) is a 4xx
    /// naming it; everything else is the server's failure (500).
    fn from(e: trt_nlp::Error) -> Self {
        use trt_nlp::Error as E;
        match e {
            E::TooLong { .. } => ServeError::TooLarge(e.to_string()),
            E::Tokenize { .. } | E::InvalidTokens(_) | E::EmptyBatch | E::UnknownPrompt(_) | E::Tensor { .. } => {
                ServeError::invalid(e.to_string())
            }
            e => ServeError::Internal(e.to_string()),
        }
    }
}
