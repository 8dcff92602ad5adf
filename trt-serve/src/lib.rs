//! trt-serve: a KServe v2 / Triton-protocol inference server over trt-nlp's
//! backends, with tokenization inside. `trt serve` (trt-cli) runs it.
//!
//! | layer | module | what it does |
//! |---|---|---|
//! | front ends | `http` | KServe v2 REST routes (axum), binary tensor extension header, `/metrics` |
//! | | `grpc` | `inference.GRPCInferenceService` (tonic; `proto/inference.proto` compiled by protox) |
//! | | `grpc_health` | `grpc.health.v1.Health/Check` on the gRPC port, for Kubernetes' `grpc` probes |
//! | protocol | `kserve` | transport-independent requests and responses, JSON and binary tensor codecs, classification extension |
//! | | `tei`, `openai` | text-embeddings-inference and OpenAI embeddings requests decoded and checked, their error bodies |
//! | | `token_classification` | entities per text: the HF Inference API's token-classification route, KServe's `entities` output |
//! | | `api_model` | the model behind a TEI / OpenAI route: inputs to token rows, rows through the version's dispatcher |
//! | | `api_request` | what both decoders share: bounds, refusals, field readers; `vectors`: Matryoshka truncation, base64 |
//! | | `service` | what each protocol method does, shared by both front ends |
//! | | `error` | the one mapping of errors to HTTP status, gRPC code and metrics reason |
//! | | `limits` | body, element, text and queue bounds checked at the edge |
//! | models | `repository` | Triton's repository layout, version policy, load / unload, atomic version switch with drain |
//! | | `model_control` | model-control modes `none` / `explicit` / `poll`, strict readiness |
//! | | `single_model` | one model folder served directly (KServe's `/mnt/models`) |
//! | | [`config`] | `config.pbtxt` (protobuf text format) parsed and checked |
//! | | `dispatch` | admission, queue timeout and execution for one version |
//! | | `text_model` | a config bound to trt-nlp's `TextModel`: the text input, the outputs it exposes (and the pooled `embedding`) |
//! | | `tensor_model` | a config bound to trt-nlp's `TensorBackend`: tensor inputs and outputs of any numeric type, checked or read from the model |
//! | | `tensor_dispatch` | a tensor model's queue: requests of equal shapes stacked along the batch axis |
//! | | `tensor_padding` | ragged requests in one batch: `pad.<input>` / `unpad.<output>` config parameters, padding to the longest, outputs cut back |
//! | | `loader` | a version folder opened through trt-nlp (model folder, backend for the platform, tokenizer) |
//! | | `placement` | `instance_group` on the GPUs: device instances, checked against the GPUs there are |
//! | | `metrics` | Prometheus metrics under Triton's names |
//! | process | `server` | [`serve`] on the caller's runtime, [`run`] on its own; listeners, graceful shutdown on a future or on Ctrl-C / SIGTERM |
//! | | `auth` | API keys (`Authorization: Bearer`) around every HTTP route and gRPC method |
//! | | `tls`, `cors` | TLS (rustls) for HTTP and gRPC, mTLS; CORS for browsers |
//! | | `connections` | connection caps, header / idle / body timeouts, gRPC streams and keepalive |
//! | | `request_span` | one `tracing` span per HTTP and gRPC request, with its `x-request-id` |
//! | | `traceparent` | W3C Trace Context's `traceparent` header, parsed strictly |
//!
//! Dependencies point down the table; the backends (TensorRT, ONNX Runtime)
//! are reached only through trt-nlp's `Backend` trait.
//!
//! The public face is what an embedder of the server needs: [`serve`] (on
//! the caller's tokio runtime, until a shutdown future completes; its
//! [`ServeHandle`] gives the bound addresses and the HTTP routes as an
//! [`axum::Router`] to mount beside an application's own) and [`run`] (on
//! its own runtime, until Ctrl-C or SIGTERM: what `trt serve` runs), with
//! their [`ServeOptions`] (ports, [`Limits`], transport bounds, access,
//! model control, TLS, the [`NlpLoader`]), the [`config`] types, and
//! [`ServeError`]. Every module above other than `config` is crate-private;
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

mod api_model;
mod api_request;
pub mod config;
mod error;
mod grpc;
mod grpc_health;
mod http;
mod kserve;
mod models;
mod observability;
mod openai;
mod server;
mod service;
mod tei;
mod token_classification;
mod transport;
mod vectors;

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
        pub use crate::api_request::*;
    }
    pub mod dispatch {
        pub use crate::models::dispatch::*;
    }
    pub mod grpc {
        pub use crate::grpc::*;
    }
    pub mod http {
        pub use crate::http::*;
    }
    pub mod kserve {
        pub use crate::kserve::*;
    }
    pub mod metrics {
        pub use crate::observability::metrics::*;
    }
    pub mod openai {
        pub use crate::openai::*;
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
        pub use crate::service::*;
    }
    pub mod tei {
        pub use crate::tei::*;
    }
    pub mod tensor_model {
        pub use crate::models::tensor_model::*;
    }
    pub mod text_model {
        pub use crate::models::text_model::*;
    }
    pub mod token_classification {
        pub use crate::token_classification::*;
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
    use crate::kserve::{InputTensor, RequestedOutput};
    use crate::transport::limits::Limits;
    use crate::ServeResult;

    /// [`crate::service`]'s check of a decoded request's inputs against a text model's config.
    pub fn request_texts(config: &ModelConfig, inputs: Vec<InputTensor>, limits: &Limits) -> ServeResult<Vec<String>> {
        crate::service::request_texts(config, inputs, limits)
    }

    /// [`crate::service`]'s choice of outputs.
    pub fn wanted_outputs(
        model: &str,
        requested: &[RequestedOutput],
        binary_data_output: bool,
        exposed: &[&str],
    ) -> ServeResult<Vec<(String, bool, Option<usize>)>> {
        crate::kserve::wanted_outputs(model, requested, binary_data_output, exposed)
    }
}
