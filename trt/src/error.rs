//! One error type for the whole crate.
//!
//! Every variant names what was wrong (the file, tensor, library or call) so that
//! a caller can act on it without reading logs. Messages that TensorRT logged
//! *during the failing call* are attached (captured per call on the calling
//! thread, see [`crate::logger`]), never a process-wide "last error".

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error reported by TensorRT's `IErrorRecorder` or logged at error severity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrtMessage {
    /// TensorRT's `ErrorCode` when the message came through the error recorder.
    pub code: Option<crate::ErrorCode>,
    /// The text TensorRT gave.
    pub text: String,
}

impl std::fmt::Display for TrtMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.code {
            Some(code) => write!(f, "[{code:?}] {}", self.text),
            None => f.write_str(&self.text),
        }
    }
}

/// One error the ONNX parser reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnnxError {
    /// The parser's error code (`nvonnxparser::ErrorCode`, e.g. `kUNSUPPORTED_NODE`).
    pub code: String,
    /// What went wrong.
    pub description: String,
    /// Index of the failing node in the graph, when the parser knows it.
    pub node_index: Option<i32>,
    /// Name of the failing node, when the parser knows it.
    pub node_name: Option<String>,
    /// Operator type of the failing node (e.g. `"NonMaxSuppression"`), when known.
    pub operator: Option<String>,
    /// Source file and function inside the parser that raised it.
    pub location: String,
}

impl std::fmt::Display for OnnxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.description)?;
        if let Some(i) = self.node_index {
            write!(f, " (node #{i}")?;
            if let Some(n) = &self.node_name {
                write!(f, " '{n}'")?;
            }
            if let Some(op) = &self.operator {
                write!(f, ", operator {op}")?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

fn join<T: std::fmt::Display>(items: &[T]) -> String {
    if items.is_empty() {
        return "TensorRT logged no message".to_owned();
    }
    items.iter().map(|m| m.to_string()).collect::<Vec<_>>().join("; ")
}

fn join_paths(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No TensorRT library could be loaded.
    #[error("could not load {library}: tried {}; {}", join_paths(tried), reasons.join("; "))]
    LibraryNotFound {
        /// The library's file name, e.g. `libtensorrt_rtx.so.1`.
        library: String,
        /// Every path (or bare name for the loader path) that was tried.
        tried: Vec<PathBuf>,
        /// Why each attempt failed, in the same order.
        reasons: Vec<String>,
    },

    /// A library was found but its version does not match the headers this crate was built with.
    #[error("{path} reports TensorRT version {found}, but trt was built against headers {expected}")]
    LibraryVersionMismatch {
        /// The library that was loaded.
        path: PathBuf,
        /// The version the library reported through `getInferLibVersion()`.
        found: crate::Version,
        /// The version of the headers at build time.
        expected: crate::Version,
    },

    /// A loaded library lacks an exported symbol the crate needs.
    #[error("{path} does not export `{symbol}`: {reason}")]
    MissingSymbol {
        /// The library.
        path: PathBuf,
        /// The symbol, e.g. `createInferBuilder_INTERNAL`.
        symbol: &'static str,
        /// The loader's explanation.
        reason: String,
    },

    /// A TensorRT call failed. `messages` holds what TensorRT reported during this call.
    #[error("TensorRT {operation} failed: {}", join(messages))]
    TensorRt {
        /// The API call, e.g. `"createInferBuilder"` or `"deserializeCudaEngine"`.
        operation: &'static str,
        /// What TensorRT reported during the call.
        messages: Vec<TrtMessage>,
    },

    /// The ONNX parser rejected a model. All parser errors are listed, not only the first.
    #[error("ONNX parsing of {source_name} failed with {} error(s): {}", errors.len(), join(errors))]
    OnnxParse {
        /// The file path, or `"<bytes>"` for in-memory models.
        source_name: String,
        /// Every error the parser recorded.
        errors: Vec<OnnxError>,
    },

    /// An optimization profile is inconsistent, incomplete or does not fit the network.
    #[error("invalid optimization profile for input '{tensor}': {reason}")]
    InvalidProfile {
        /// The input tensor concerned.
        tensor: String,
        /// What is wrong.
        reason: String,
    },

    /// Dynamic inputs that no optimization profile covers.
    #[error("dynamic input(s) without an optimization profile: {}", inputs.join(", "))]
    MissingProfile {
        /// The names of the uncovered dynamic inputs.
        inputs: Vec<String>,
    },

    /// No tensor of that name exists.
    #[error("no tensor named '{name}' ({context})")]
    UnknownTensor {
        /// The requested name.
        name: String,
        /// Where it was looked up (network inputs, engine I/O, ...).
        context: &'static str,
    },

    /// A tensor's shape does not fit what was expected.
    #[error("shape mismatch for '{tensor}': expected {expected}, got {got}")]
    ShapeMismatch {
        /// The tensor.
        tensor: String,
        /// What was expected, e.g. `[1..32, 16..128]`.
        expected: String,
        /// What was given.
        got: String,
    },

    /// A tensor's element type does not fit what was expected.
    #[error("dtype mismatch for '{tensor}': expected {expected:?}, got {got:?}")]
    DTypeMismatch {
        /// The tensor.
        tensor: String,
        /// The type the engine or network has.
        expected: crate::DataType,
        /// The type that was given.
        got: crate::DataType,
    },

    /// A buffer is not aligned as TensorRT requires.
    #[error("buffer for '{tensor}' at {address:#x} is not {required}-byte aligned")]
    Misaligned {
        /// The tensor.
        tensor: String,
        /// The device address given.
        address: u64,
        /// The alignment required.
        required: usize,
    },

    /// Inputs whose shapes are not (sufficiently) set, as TensorRT's
    /// `inferShapes` names them: set them with `set_input_shape` first.
    #[error("input shape(s) not set: {}", inputs.join(", "))]
    MissingInputShapes {
        /// The inputs.
        inputs: Vec<String>,
    },

    /// This context cannot be captured into a CUDA graph (the reason says
    /// why); run it with ordinary enqueues instead.
    #[error("graph capture refused: {0}")]
    NotCapturable(String),

    /// An argument is out of range or inconsistent (the message says which).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The feature does not exist in the TensorRT version this crate was built against.
    #[error("{feature} is not available in {version}")]
    Unsupported {
        /// The feature.
        feature: &'static str,
        /// The TensorRT flavour and version, e.g. `TensorRT-RTX 1.7.1`.
        version: String,
    },

    /// No usable CUDA driver or device.
    #[error("CUDA is not available: {0}")]
    CudaUnavailable(String),

    /// A CUDA driver call failed.
    #[error("CUDA {operation} failed: {source}")]
    Cuda {
        /// What was being done.
        operation: &'static str,
        /// The driver's error.
        #[source]
        source: cudarc::driver::DriverError,
    },

    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// A C++ exception escaped a TensorRT call inside the shim and was caught there.
    #[error("C++ exception during {operation}: {what}")]
    Cpp {
        /// The API call.
        operation: &'static str,
        /// `std::exception::what()`.
        what: String,
    },

    /// The build was cancelled through the progress monitor.
    #[error("the build was cancelled by the progress monitor")]
    Cancelled,

    /// A user callback (logger, progress monitor, calibrator, ...) panicked.
    #[error("callback panicked: {0}")]
    CallbackPanicked(String),
}

/// A CUDA error of [`crate::cuda`], as the variant of the same name (an
/// error of a later `trt-cuda` it does not know becomes [`Error::InvalidArgument`]
/// with its message).
impl From<trt_cuda::Error> for Error {
    fn from(e: trt_cuda::Error) -> Self {
        match e {
            trt_cuda::Error::CudaUnavailable(msg) => Error::CudaUnavailable(msg),
            trt_cuda::Error::Cuda { operation, source } => Error::Cuda { operation, source },
            trt_cuda::Error::NotCapturable(msg) => Error::NotCapturable(msg),
            trt_cuda::Error::ShapeMismatch { tensor, expected, got } => Error::ShapeMismatch { tensor, expected, got },
            trt_cuda::Error::InvalidArgument(msg) => Error::InvalidArgument(msg),
            other => Error::InvalidArgument(other.to_string()),
        }
    }
}

impl Error {
    /// Wrap an I/O error with the file it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

/// TensorRT's `nvinfer1::ErrorCode`, as reported through the error recorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// Execution completed successfully (never an error).
    Success,
    /// An error that does not fall into any other category.
    Unspecified,
    /// A non-recoverable TensorRT error (internal bug).
    Internal,
    /// An argument passed to the function is invalid.
    InvalidArgument,
    /// An error occurred when comparing the state of an argument relative to other state.
    InvalidConfig,
    /// Memory allocation failed.
    FailedAllocation,
    /// One or more components of TensorRT did not initialize correctly.
    FailedInitialization,
    /// An error during execution.
    FailedExecution,
    /// An error during execution that is not a TensorRT bug.
    FailedComputation,
    /// TensorRT was put into a bad state by an invalid usage.
    InvalidState,
    /// An error occurred due to the network not being supported on the device.
    UnsupportedState,
    /// A code this crate does not know (newer TensorRT).
    Other(i32),
}
