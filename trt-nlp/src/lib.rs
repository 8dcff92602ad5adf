//! trt-nlp: from text to TensorRT token tensors, and from engine outputs back
//! to labels and embeddings.
//!
//! | Module | What it does |
//! |---|---|
//! | [`TokenizerPipeline`] | Hugging Face `tokenizer.json` → padded `[batch, seq_len]` i32/i64 tensors, written in place, in parallel |
//! | [`Backend`] | the seam to a model executor: one batch of token tensors in, named outputs out ([`backend`]); how it runs batches is one [`Capabilities`](backend::Capabilities) value |
//! | [`Error`] | what went wrong, by kind: bad input, a setting out of range ([`Error::InvalidOption`]), a model that cannot do what was asked ([`Error::UnsupportedModel`]), a runtime failure |
//! | [`ModelLayout`] | a model's token inputs, float outputs and the batch / sequence ranges it accepts |
//! | [`TokenizerPipeline::tokenize_pairs`] | text pairs for cross-encoders (segments, `token_type_ids`, [`PairTruncation`]) |
//! | [`TokenRow`] | one text's tokens, owned: tokenize at one moment ([`TokenizerPipeline::tokenize`]), pack into a batch later ([`TokenizerPipeline::pack`]) |
//! | [`TextModel`] | texts in, answers out: `embed`, `classify`, or any [`Selection`] of raw and pooled outputs as [`OutputRows`]; its [`Head`] holds labels, pooling, normalisation |
//! | [`rerank`] | causal-LM rerankers (Qwen3-Reranker): the card's prompt around a pair, `P(yes)` ([`TextModel::rerank_scores`]) |
//! | [`sparse`] | SPLADE: a vocabulary-sized vector per text as its non-zero `(token id, weight)` pairs ([`TextModel::sparse_embed`]) |
//! | [`ner`] | token classification: entities by transformers' five aggregation strategies ([`TextModel::token_classify`]) |
//! | [`Embedder`], [`Classifier`] | a [`TextModel`] checked for hidden states, or for logits |
//! | [`tensor`] | models over named tensors of any element type (no tokenizer): [`TensorBackend`](tensor::TensorBackend) on ONNX Runtime or TensorRT |
//! | [`batching`] | dynamic batching: a [`Scheduler`](batching::Scheduler) over a [`Backend`] for many threads and tasks |
//! | [`InputSpec`], [`EncodedBatch`] | which tensors an engine takes (name, role, dtype) and the caller's buffers for them |
//! | [`softmax`], [`top_k`], [`Labels`] | classifier logits → probabilities → named top-k classes |
//! | [`mean_pool`], [`cls_pool`], [`l2_normalize`], [`Pooling`] | hidden states → sentence embeddings (sentence-transformers semantics) |
//!
//! Nothing here needs a GPU.
//!
//! # Speed and exactness
//!
//! The ids are those of the Python `tokenizers` package for the same
//! `tokenizer.json` (the tests compare them). Texts are tokenized in parallel
//! on a rayon pool the caller sizes ([`PipelineBuilder::threads`]; default
//! [`default_threads`]), and rows are written straight into the caller's
//! buffers. For a BERT WordPiece tokenizer, ASCII texts take a byte-level path
//! that reproduces `tokenizers` rule by rule without its per-token allocations
//! and Unicode table look-ups; other texts and tokenizers go through
//! `tokenizers`' `encode_fast` ([`PipelineBuilder::fast_path`]).
//!
//! # Example
//!
//! Tokenize a batch for a BERT engine whose profile allows 128 tokens, into
//! i32 buffers sized for the worst case:
//!
//! ```
//! use trt_nlp::ElementType;
//! use trt_nlp::{EncodedBatch, InputSpec, Padding, TokenizerPipeline};
//!
//! # fn main() -> trt_nlp::Result<()> {
//! # // The all-MiniLM-L6-v2 tokenizer that `scripts/setup` fetches.
//! # let tokenizer_json = concat!(env!("TRT_DEPS_DIR"), "/minilm/tokenizer.json");
//! # assert!(std::path::Path::new(tokenizer_json).exists(), "{tokenizer_json} is missing: run scripts/setup");
//! let pipeline = TokenizerPipeline::builder(128)
//!     .padding(Padding::Bucket(16))
//!     .threads(4)
//!     .from_file(tokenizer_json)?;
//!
//! let texts = ["A short one.", "A somewhat longer sentence to embed."];
//! let [ids_spec, mask_spec, types_spec] = InputSpec::bert(ElementType::I32)?;
//! let n = pipeline.buffer_len(texts.len());
//! let (mut ids, mut mask, mut types) = (vec![0i32; n], vec![0i32; n], vec![0i32; n]);
//! let mut outputs = EncodedBatch::new()
//!     .with(ids_spec, &mut ids)?
//!     .with(mask_spec, &mut mask)?
//!     .with(types_spec, &mut types)?;
//!
//! let layout = pipeline.encode_into(&texts, &mut outputs)?;
//! assert_eq!(layout.shape(), [2, 16]); // longest text, rounded up to the bucket
//! assert_eq!(&ids[..2], &[101, 1037]); // [CLS] a ...
//! # Ok(())
//! # }
//! ```
//!
//! and turn the engine's outputs into answers:
//!
//! ```
//! use ndarray::array;
//! use trt_nlp::{l2_normalize, mean_pool, softmax, top_k, Labels};
//!
//! # fn main() -> trt_nlp::Result<()> {
//! let logits = array![[-1.0f32, 2.5]];
//! let labels = Labels::from_config_json(r#"{"id2label": {"0": "NEGATIVE", "1": "POSITIVE"}}"#)?;
//! let best = &top_k(softmax(logits.view()).view(), 1, &labels)[0][0];
//! assert_eq!(best.label, "POSITIVE");
//!
//! let hidden = array![[[1.0f32, 0.0], [0.0, 1.0], [9.0, 9.0]]]; // [batch, seq, dim]
//! let mask = array![[1i32, 1, 0]];                               // from the pipeline
//! let mut emb = mean_pool(hidden.view(), mask.view())?;
//! l2_normalize(emb.view_mut());
//! assert!((emb[[0, 0]] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs)]

pub mod backend;
pub mod batching;
mod buffers;
mod classifier;
mod embedder;
mod error;
mod fast_path;
mod layout;
mod model_folder;
pub mod ner;
mod options;
mod parallel;
mod pipeline;
mod postprocess;
pub mod rerank;
mod rows;
pub mod sparse;
mod spec;
pub mod tensor;
mod text_model;
mod texts;

pub use backend::{Backend, OutputView, Outputs};
pub use buffers::{EncodedBatch, TokenBuffer};
pub use classifier::{Classifier, Ranked};
pub use embedder::Embedder;
pub use error::{Error, Result};
pub use layout::{ModelLayout, OutputSpec};
pub use model_folder::{resolve_model, ModelFolder};
pub use options::HelperOptions;
pub use parallel::default_threads;
pub use pipeline::{BatchLayout, Padding, PairTruncation, PipelineBuilder, TokenizerPipeline, Truncation, TruncationSide};
pub use postprocess::{cls_pool, l2_normalize, mean_pool, scores, softmax, top_k, FloatElement, Labels, MaskElement, Pooling, Prediction};
pub use rows::TokenRow;
pub use spec::{InputRole, InputSpec};
pub use text_model::{
    Classification, Head, OutputRows, Prompts, Selected, Selection, Source, TextModel, TextModelBuilder, TextOutputs, EMBEDDING,
};
/// The element type of token and output tensors at this crate's boundary
/// (i32/i64 tokens, f32/f16/bf16 outputs): the buffers' own type, which
/// TensorRT's and ONNX Runtime's element types convert to and from.
pub use trt_cuda::ElementType;
/// How a CUDA backend's workers wait for their batch (spin or sleep): the
/// stream setting, re-exported for `OrtBackendOptions::cuda_host_wait`.
pub use trt_cuda::HostWait;
/// How a classifier's logits become scores (softmax, sigmoid, identity), as the model folder says.
pub use trt_hf::ScoreActivation;
/// The precision a HuggingFace folder is imported in ([`TextModelBuilder::precision`]).
pub use trt_hf::{Form, Precision};
