//! trt-hf: HuggingFace model folders in, ONNX graphs out, in Rust (no
//! Python, no torch, no export step).
//!
//! | layer | module | what |
//! |---|---|---|
//! | files | [`weights`] | `model.safetensors` or its shards, F32/F16/BF16, under the family's name prefixes |
//! | files | [`arch`] | `config.json` → one [`ArchConfig`] for every family; the dispatch on `model_type` |
//! | files | [`st`] | sentence-transformers: `modules.json`, Pooling (both layouts), Dense, Normalize, prompts, lengths |
//! | files | [`folder`] | the folder as a whole: task, truncation length, score activation ([`HfFolder`]) |
//! | files | [`hub`] | `org/name` in the local HuggingFace cache, offline |
//! | graph | [`graph`] | the ONNX builder: linear, LayerNorm, activations, attention |
//! | graph | [`family`] | one module per architecture family: embeddings, layer names, classification heads |
//! | graph | [`sentence`] | pooling, Dense and normalisation inside the graph |
//! | graph | [`rerank`] | a causal LM as a yes/no reranker (Qwen3-Reranker's prompt and head) |
//! | graph | [`m3`] | BGE-M3's sparse head (`sparse_linear.safetensors`) beside its dense embedding |
//! | out | [`import()`], [`import_cached`] | the servable folder: `model.onnx`, tokenizer, labels, [`Descriptor`] |
//!
//! The graph is the plain form: opset 17 operators that ONNX Runtime runs
//! and TensorRT's ONNX parser takes, FP32 or FP16 (the project's FP16
//! rules). What sentence-transformers computes after the Transformer
//! (pooling in any of its modes, Dense layers, normalisation) is inside it,
//! so a runtime returns the embedding itself.
//!
//! ```no_run
//! use trt_hf::{import, ImportOptions, Precision};
//!
//! # fn main() -> trt_hf::Result<()> {
//! let d = import("all-MiniLM-L6-v2".as_ref(), "minilm-onnx".as_ref(), &ImportOptions::default().with_precision(Precision::Fp16))?;
//! assert_eq!(d.max_seq_length, 256); // sentence_bert_config.json's, as sentence-transformers cuts
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs)]

pub mod arch;
mod error;
pub mod family;
pub mod folder;
pub mod graph;
pub mod hub;
mod import;
mod json;
pub mod m3;
pub mod rerank;
mod rotary_config;
pub mod sentence;
pub mod st;
pub mod weights;

pub use arch::{ArchConfig, Family};
pub use error::{Error, Result};
pub use folder::{is_hf_folder, HfFolder, ModelTask, ScoreActivation};
pub use import::{
    build, default_cache, import, import_cached, Descriptor, Form, ImportOptions, Precision, DESCRIPTOR, EMBEDDING_OUTPUT, ENTITIES_OUTPUT,
    FORMAT, LOGITS_OUTPUT, SPARSE_OUTPUT, TOKENS_OUTPUT,
};
pub use json::Fields;
