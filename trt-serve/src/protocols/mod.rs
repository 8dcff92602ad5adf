//! The protocols the server speaks, each decoded, checked and answered in its own module over
//! the shared [`service`] (what each KServe method does) and the models behind it.
//!
//! | module | what it does |
//! |---|---|
//! | `http` | KServe v2 REST routes (axum), binary tensor extension header; mounts the routes below |
//! | `grpc` | `inference.GRPCInferenceService` (tonic; `proto/inference.proto` compiled by protox) |
//! | `grpc_health` | `grpc.health.v1.Health/Check` on the gRPC port, for Kubernetes' `grpc` probes |
//! | `kserve` | transport-independent requests and responses, JSON and binary tensor codecs, classification extension |
//! | `service` | what each KServe v2 method does, shared by both front ends |
//! | `tensor_infer` | the `infer` method on a tensor model |
//! | `tei`, `openai` | text-embeddings-inference and OpenAI requests decoded and checked, their routes and error bodies |
//! | `token_classification` | entities per text: the HF Inference API's token-classification route, KServe's `entities` output |
//! | `api_model` | the model behind a TEI / OpenAI route: inputs to token rows, rows through the version's dispatcher |
//! | `api_request` | what the JSON decoders share: bounds, refusals, field readers |
//! | `vectors` | Matryoshka truncation, base64 |

pub mod api_model;
pub mod api_request;
pub mod grpc;
pub mod grpc_health;
pub mod http;
pub mod kserve;
pub mod openai;
pub mod service;
pub mod tei;
pub mod tensor_infer;
pub mod token_classification;
pub mod vectors;
