//! One error type for the crate; every variant names the file, library or
//! tensor it is about.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No usable ONNX Runtime library was found.
    #[error("ONNX Runtime library not found; tried: {}", tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    LibraryNotFound {
        /// Every path tried, in order.
        tried: Vec<PathBuf>,
    },

    /// A library was found but cannot be used (wrong version, not ONNX Runtime).
    #[error("cannot use ONNX Runtime at {path}: {reason}")]
    LibraryUnusable {
        /// The library file.
        path: PathBuf,
        /// Why.
        reason: String,
    },

    /// No CUDA driver can be loaded or initialised.
    #[error("no usable CUDA driver: {reason}")]
    CudaDriver {
        /// What the driver (or the loader) said.
        reason: String,
    },

    /// A CUDA device index past the last GPU.
    #[error("CUDA device {device} does not exist (the driver reports {count})")]
    NoSuchDevice {
        /// The index asked for.
        device: u32,
        /// How many devices there are.
        count: usize,
    },

    /// An execution provider's library is missing or cannot be loaded.
    #[error("{provider} cannot be used: {}: {reason}", library.display())]
    ProviderLibrary {
        /// The provider (`CUDAExecutionProvider`).
        provider: &'static str,
        /// The library file at fault.
        library: PathBuf,
        /// Why.
        reason: String,
    },

    /// A model file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// ONNX Runtime refused a model, a setting or a run.
    #[error("ONNX Runtime: {context}: {message}")]
    Ort {
        /// What was being done (the file, the tensor).
        context: String,
        /// ONNX Runtime's message.
        message: String,
    },

    /// A tensor given to or produced by a session has the wrong shape or type.
    #[error("tensor '{tensor}': {problem}")]
    Tensor {
        /// The tensor's name.
        tensor: String,
        /// What was wrong.
        problem: String,
    },

    // --- graph tools (ONNX I/O, FP16, quantization, compare) ---
    /// Bytes that are not a (complete) ONNX model.
    #[error("{what} is not a valid ONNX model: {message}")]
    Decode {
        /// The file, or "model bytes".
        what: String,
        /// The protobuf decoder's message.
        message: String,
    },

    /// A tensor's external data is missing, outside the model's folder or short.
    #[error("external data of tensor '{tensor}' ({location}): {problem}")]
    ExternalData {
        /// The tensor.
        tensor: String,
        /// Its `location` entry.
        location: String,
        /// What was wrong.
        problem: String,
    },

    /// The model is well-formed but cannot be processed as asked.
    #[error("{operation}: {problem}")]
    Unsupported {
        /// What was being done ("FP16 conversion", "quantization").
        operation: &'static str,
        /// What in the model stops it.
        problem: String,
    },

    /// The model's graph is inconsistent (dangling tensor, cycle, duplicate name).
    #[error("invalid graph: {0}")]
    Graph(String),

    /// Calibration or evaluation data that cannot be used.
    #[error("calibration: {0}")]
    Calibration(String),

    /// An accuracy target was not reached.
    #[error("accuracy target not met: {0}")]
    Accuracy(String),
}

impl Error {
    /// An ONNX Runtime error with what was being done.
    pub(crate) fn ort(context: impl Into<String>, e: impl std::fmt::Display) -> Self {
        Error::Ort { context: context.into(), message: e.to_string() }
    }
}
