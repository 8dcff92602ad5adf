//! text-embeddings-inference's HTTP API on `trt serve`: request decoders
//! ([`request`]), the error body ([`error`]) and the routes ([`routes`]).

pub mod error;
pub mod request;
pub mod routes;

pub use error::TeiError;
