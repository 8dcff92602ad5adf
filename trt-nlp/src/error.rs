//! One error type for the whole crate.
//!
//! Every variant names what was wrong (the file, the text's index in the batch,
//! the tensor and its sizes) so a caller can act on it without reading logs.
//! Bad input never panics: it comes back as one of these.

use std::ops::RangeInclusive;
use std::path::PathBuf;

use crate::ElementType;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `tokenizer.json` could not be read or parsed.
    #[error("cannot load tokenizer from {path}: {source}")]
    TokenizerLoad {
        /// The file that was read.
        path: PathBuf,
        /// What `tokenizers` reported.
        #[source]
        source: tokenizers::Error,
    },

    /// `tokenizers` failed on one text of a batch.
    #[error("tokenizing text #{index} failed: {source}")]
    Tokenize {
        /// Index of the text in the batch.
        index: usize,
        /// What `tokenizers` reported.
        #[source]
        source: tokenizers::Error,
    },

    /// A text has more tokens than the maximum sequence length and the
    /// pipeline was built with [`Truncation::Reject`](crate::Truncation::Reject).
    #[error("text #{index} has {tokens} tokens, more than the maximum sequence length {max_len}")]
    TooLong {
        /// Index of the text in the batch.
        index: usize,
        /// Its token count, special tokens included.
        tokens: usize,
        /// The pipeline's maximum sequence length.
        max_len: usize,
    },

    /// A caller-provided buffer cannot hold the `[batch, seq_len]` tensor.
    #[error(
        "buffer for tensor '{tensor}' holds {len} elements, \
         but [batch {batch}, seq_len {seq_len}] needs {needed}"
    )]
    BufferTooSmall {
        /// The tensor's name.
        tensor: String,
        /// Elements needed (`batch * seq_len`).
        needed: usize,
        /// Elements the buffer holds.
        len: usize,
        /// Rows in the batch.
        batch: usize,
        /// Padded sequence length of the batch.
        seq_len: usize,
    },

    /// A buffer's element type differs from its [`InputSpec`](crate::InputSpec)'s dtype.
    #[error("tensor '{tensor}' is declared {declared} but its buffer holds {buffer}")]
    DtypeMismatch {
        /// The tensor's name.
        tensor: String,
        /// The dtype the spec declares.
        declared: ElementType,
        /// The element type of the buffer given.
        buffer: ElementType,
    },

    /// A token tensor declared with a dtype other than i32 or i64.
    #[error("tensor '{tensor}' has dtype {dtype}; token tensors must be i32 or i64")]
    UnsupportedDtype {
        /// The tensor's name.
        tensor: String,
        /// The dtype that was declared.
        dtype: ElementType,
    },

    /// Two buffers were bound under the same tensor name.
    #[error("tensor '{0}' is bound twice")]
    DuplicateTensor(String),

    /// A token id does not fit the i32 tensor it must be written to.
    #[error("token id {id} does not fit tensor '{tensor}' (i32); declare it i64")]
    IdOutOfRange {
        /// The tensor's name.
        tensor: String,
        /// The largest id the tokenizer can produce.
        id: u32,
    },

    /// Ready token ids given by the caller cannot be a row of a batch (empty,
    /// an id outside the vocabulary, ...).
    #[error("invalid token row: {0}")]
    InvalidTokens(String),

    /// The tokenizer defines no padding token and none was configured.
    #[error("the tokenizer defines no padding token; set one with PipelineBuilder::pad_id")]
    NoPadToken,

    /// A tensor of a tensor model is not what the model takes (name, type,
    /// shape), or its values do not fill its shape.
    #[error("tensor '{tensor}': {problem}")]
    Tensor {
        /// The tensor's name.
        tensor: String,
        /// What is wrong with it.
        problem: String,
    },

    /// A setting outside what it can be: a pipeline length, a batching
    /// limit, a backend name, a device placement.
    #[error("{option} {value}: {expected}")]
    InvalidOption {
        /// The setting, as its builder method or field is called (`max_len`, `batching.max_queue_size`).
        option: &'static str,
        /// The value given.
        value: String,
        /// What it must be instead, and why.
        expected: String,
    },

    /// The model cannot do what was asked: its inputs are not token tensors,
    /// it has no output of the kind a task needs (logits for `classify`, a
    /// vocabulary-sized output for `sparse_embed`), or it uses a feature this
    /// crate does not run.
    #[error("unsupported model: {reason}")]
    UnsupportedModel {
        /// What the model lacks or has, naming its file or tensor where known.
        reason: String,
    },

    /// An output was asked for by a name the model (or the response) does not have.
    #[error("no output '{name}' (there are {available:?})")]
    NoSuchOutput {
        /// The name asked for.
        name: String,
        /// The names there are.
        available: Vec<String>,
    },

    /// A model folder or file lacks a file the model needs (a model file, a
    /// `tokenizer.json`).
    #[error("{path} {what}")]
    MissingFile {
        /// The folder searched, or the file that is missing.
        path: PathBuf,
        /// What is missing and where it was looked for, said of `path`
        /// (`holds no model file (looked for ...)`, `is missing: ...`).
        what: String,
    },

    /// `tokenizers` refused a setting or a template (truncation, a reranker's prompt).
    #[error("{what}: {source}")]
    TokenizerSetup {
        /// The setting or template.
        what: String,
        /// What `tokenizers` reported.
        #[source]
        source: tokenizers::Error,
    },

    /// Values do not fill the shape they were given (an output a backend
    /// returned, logits put together from rows).
    #[error("{what}: {source}")]
    ArrayShape {
        /// The array.
        what: String,
        /// What `ndarray` reported.
        #[source]
        source: ndarray::ShapeError,
    },

    /// A call with no texts (or rows) where at least one is needed.
    #[error("no texts to run: the batch is empty")]
    EmptyBatch,

    /// An executor outside this crate (a [`Backend`](crate::Backend) of the
    /// caller's own, a test double) or a set of device instances failed.
    #[error("{backend}: {source}")]
    Runtime {
        /// Which executor.
        backend: String,
        /// What failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A thread could not be started.
    #[error("cannot start thread {thread}: {source}")]
    ThreadSpawn {
        /// The thread's name (`trt-nlp-batcher`, ...).
        thread: String,
        /// What the OS reported.
        #[source]
        source: std::io::Error,
    },

    /// Parts of this crate disagree (a backend returned without reading its
    /// outputs, rows left without outputs): a bug to report, not bad input.
    #[error("internal error: {0}")]
    Internal(String),

    /// A batch's shape lies outside the ranges the model accepts.
    #[error("a batch of [{batch}, {seq_len}] is outside the model's range (batch {batch_range:?}, sequence {seq_range:?})")]
    BatchOutOfRange {
        /// Rows in the batch.
        batch: usize,
        /// Its padded sequence length.
        seq_len: usize,
        /// The batch sizes the model accepts.
        batch_range: RangeInclusive<usize>,
        /// The sequence lengths the model accepts.
        seq_range: RangeInclusive<usize>,
    },

    /// A backend cannot run on this machine at all (no CUDA driver for
    /// TensorRT); the model file itself may be fine.
    #[error("{backend} cannot run on this machine: {reason}")]
    BackendUnavailable {
        /// `"TensorRT"`, ...
        backend: &'static str,
        /// Why, e.g. `"no CUDA driver found"`.
        reason: String,
    },

    /// The thread pool could not be started.
    #[error("cannot start the tokenizer thread pool: {0}")]
    ThreadPool(#[from] rayon::ThreadPoolBuildError),

    /// Arrays given to post-processing have shapes that do not fit together.
    #[error("shape mismatch: {what}: expected {expected:?}, got {got:?}")]
    Shape {
        /// What was being compared.
        what: &'static str,
        /// The shape that was expected.
        expected: Vec<usize>,
        /// The shape that was given.
        got: Vec<usize>,
    },

    /// TensorRT failed (engine, context, bindings).
    #[cfg(feature = "tensorrt")]
    #[error(transparent)]
    Trt(#[from] trt::Error),

    /// CUDA failed (device, stream, buffers).
    #[error(transparent)]
    Cuda(#[from] trt_cuda::Error),

    /// ONNX Runtime failed (library, model, run).
    #[cfg(feature = "onnxruntime")]
    #[error(transparent)]
    Onnx(#[from] trt_onnx::Error),

    /// A HuggingFace model folder could not be imported (the error names
    /// the file and the field or tensor at fault).
    #[error(transparent)]
    Import(#[from] trt_hf::Error),

    /// A prompt name the model does not define (the message lists those it has).
    #[error("{0}")]
    UnknownPrompt(String),

    /// A model configuration file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// A model configuration file is not the JSON we expect.
    #[error("cannot parse {path}: {source}")]
    Config {
        /// The file (or `<memory>` when parsed from a string).
        path: PathBuf,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
}

impl Error {
    /// [`Error::UnsupportedModel`] with `reason`.
    pub(crate) fn unsupported(reason: impl Into<String>) -> Self {
        Error::UnsupportedModel { reason: reason.into() }
    }
}
