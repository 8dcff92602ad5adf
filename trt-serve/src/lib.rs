//! trt-serve: a KServe v2 / Triton-protocol inference server over trt-nlp's
//! backends, with tokenization inside. `trt serve` (trt-cli) runs it.
//!
//! The source is grouped by concern; each folder's `mod.rs` lists its modules.
//!
//! | folder | modules | what lives there |
//! |---|---|---|
//! | `protocols/` | `http`, `grpc`, `grpc_health`, `kserve`, `service`, `tensor_infer`, `tei`, `openai`, `token_classification`, `api_model`, `api_request`, `vectors` | the front ends and the protocols they speak: decoders that check every field, routes, answers, each protocol's error body |
//! | `models/` | `repository`, `repository_sync`, `model_control`, `single_model`, `loader`, `placement`, `dispatch`, `text_model`, `tensor_model`, `tensor_dispatch`, `tensor_padding` | the models behind every protocol: Triton's repository and its versions, loading through trt-nlp, GPU placement, the queues |
//! | `transport/` | `connections`, `tls`, `auth`, `cors`, `limits` | the connection under every request: caps and timeouts, TLS, API keys, CORS, bounds checked at the edge |
//! | `observability/` | `metrics`, `gpu_metrics`, `request_span`, `traceparent` | Prometheus metrics under Triton's names, NVML, one span per request, W3C trace context |
//! | [`config`] | `text_format` | `config.pbtxt` (protobuf text format) parsed and checked |
//! | `error.rs` | | the one mapping of errors to HTTP status, gRPC code and metrics reason |
//! | `server.rs` | | [`serve`] on the caller's runtime, [`run`] on its own; listeners, graceful shutdown on a future or on Ctrl-C / SIGTERM |
//!
//! Protocols sit on models; models use only KServe's tensor types
//! (`protocols::kserve`) and the bounds (`transport::limits`) from the other
//! folders; transport and observability depend on neither. The backends (TensorRT, ONNX Runtime) are
//! reached only through trt-nlp's `Backend` trait.
//!
//! The public face is what an embedder of the server needs: [`serve`] (on
//! the caller's tokio runtime, until a shutdown future completes; its
//! [`ServeHandle`] gives the bound addresses and the HTTP routes as an
//! [`axum::Router`] to mount beside an application's own) and [`run`] (on
//! its own runtime, until Ctrl-C or SIGTERM: what `trt serve` runs), with
//! their [`ServeOptions`] (ports, [`Limits`], transport bounds, access,
//! model control, TLS, the [`NlpLoader`]), the [`config`] types, and
//! [`ServeError`]. Every folder above and its modules, other than `config`, is crate-private;
//! the workspace's integration tests and fuzz targets reach them through
//! the hidden `test_support` module, which is no API.
//!
//! ```no_run
//! use std::net::Ipv4Addr;
//! use trt_serve::{Ports, ServeOptions};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), trt_serve::ServeError> {
//!     let mut options = ServeOptions::new("models"); // DIR/<model>/config.pbtxt, version folders
//!     options.ports = Ports::new(Ipv4Addr::LOCALHOST.into(), 0, 0, 0); // any free ports
//!     let server = trt_serve::serve(options, async {
//!         let _ = tokio::signal::ctrl_c().await;
//!     })
//!     .await?;
//!     println!("http={} grpc={} metrics={}", server.bound().http, server.bound().grpc, server.bound().metrics);
//!     let app = axum::Router::new().route("/hello", axum::routing::get(|| async { "hello" })).merge(server.http_router());
//!     # drop(app);
//!     server.stopped().await // requests in flight finish, models unload
//! }
//! ```
//!
//! `examples/serve_in_app.rs` runs the router inside an application, end to end.
#![warn(missing_docs)]

pub mod config;
mod error;
mod models;
mod observability;
mod protocols;
mod server;
mod transport;

pub use error::{ServeError, ServeResult};
pub use models::loader::NlpLoader;
pub use models::model_control::{Mode, ModelControl};
pub use models::single_model::SingleModel;
pub use server::{run, serve, shutdown_signal, Bound, Ports, ServeHandle, ServeOptions};
pub use transport::auth::{Access, ApiKey};
pub use transport::connections::Transport;
pub use transport::limits::Limits;
pub use transport::tls::TlsFiles;

/// The crate's insides for the workspace's integration tests (`tests/`, built by
/// several packages) and fuzz targets (`fuzz/`). Not an API: hidden from the
/// docs and free to change in any release. Each module here re-exports the
/// public items of the crate-private module of the same name.
///
/// A hidden module rather than a `testing` feature: the tests live in other
/// packages (trt-cli's and trt-serve's `[[test]]`s, the fuzz workspace), and a
/// feature they enabled would be unified into every build of the workspace, so
/// the crate's surface would differ between `cargo build` and `cargo test`.
#[doc(hidden)]
pub mod test_support {
    #![allow(missing_docs)]
    pub mod api_request {
        pub use crate::protocols::api_request::*;
    }
    pub mod dispatch {
        pub use crate::models::dispatch::*;
    }
    pub mod grpc {
        pub use crate::protocols::grpc::*;
    }
    pub mod http {
        pub use crate::protocols::http::*;
    }
    pub mod kserve {
        pub use crate::protocols::kserve::*;
    }
    pub mod metrics {
        pub use crate::observability::metrics::*;
    }
    pub mod openai {
        pub use crate::protocols::openai::*;
    }
    pub mod placement {
        pub use crate::models::placement::*;
    }
    pub mod repository {
        pub use crate::models::repository::*;
    }
    pub mod request_span {
        pub use crate::observability::request_span::*;
    }
    pub mod service {
        pub use crate::protocols::service::*;
    }
    pub mod tei {
        pub use crate::protocols::tei::*;
    }
    pub mod tensor_model {
        pub use crate::models::tensor_model::*;
    }
    pub mod text_model {
        pub use crate::models::text_model::*;
    }
    pub mod token_classification {
        pub use crate::protocols::token_classification::*;
    }
    pub mod traceparent {
        pub use crate::observability::traceparent::*;
    }
}

/// Entry points of the fuzz targets in `fuzz/` for what is crate-private here
/// (cargo-fuzz builds with `--cfg fuzzing`); not an API.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    use crate::config::ModelConfig;
    use crate::protocols::kserve::{InputTensor, RequestedOutput};
    use crate::transport::limits::Limits;
    use crate::ServeResult;

    /// [`crate::protocols::service`]'s check of a decoded request's inputs against a text model's config.
    pub fn request_texts(config: &ModelConfig, inputs: Vec<InputTensor>, limits: &Limits) -> ServeResult<Vec<String>> {
        crate::protocols::service::request_texts(config, inputs, limits)
    }

    /// [`crate::protocols::service`]'s choice of outputs.
    pub fn wanted_outputs(
        model: &str,
        requested: &[RequestedOutput],
        binary_data_output: bool,
        exposed: &[&str],
    ) -> ServeResult<Vec<(String, bool, Option<usize>)>> {
        crate::protocols::kserve::wanted_outputs(model, requested, binary_data_output, exposed)
    }
}
