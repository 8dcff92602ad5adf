//! OpenAI's embeddings API on `trt serve`: the request decoder ([`request`])
//! and the error body ([`error`]).

pub mod error;
pub mod request;

pub use error::OpenAiError;
