//! OpenAI's embeddings API on `trt serve`: the request decoder ([`request`])
//! the error body ([`error`]) and the routes ([`routes`]).

pub mod error;
pub mod request;
pub mod routes;

pub use error::OpenAiError;
