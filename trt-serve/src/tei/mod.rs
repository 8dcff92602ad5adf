//! text-embeddings-inference's HTTP API on `trt serve`: request decoders
//! ([`request`]) and the error body ([`error`]).

pub mod error;
pub mod request;

pub use error::TeiError;
