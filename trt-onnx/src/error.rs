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

    /// ONNX Runtime could not allocate device memory: its arena is at the
    /// session's memory limit (`gpu_mem_limit`) or the GPU is full. Raised
    /// when a session is created (its weights) or a batch runs (its
    /// activations); a smaller batch or a higher limit may pass.
    #[error("ONNX Runtime: {context}: out of device memory{}: {message}", requested.map(|b| format!(" ({b} bytes requested)")).unwrap_or_default())]
    OutOfDeviceMemory {
        /// What was being done (the file, the run).
        context: String,
        /// The allocation that failed, where ONNX Runtime says.
        requested: Option<u64>,
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
    /// An allocation failure (ONNX Runtime's arena or CUDA running out)
    /// becomes [`Error::OutOfDeviceMemory`].
    pub(crate) fn ort(context: impl Into<String>, e: impl std::fmt::Display) -> Self {
        let (context, message) = (context.into(), e.to_string());
        match out_of_memory(&message) {
            Some(requested) => Error::OutOfDeviceMemory { context, requested, message },
            None => Error::Ort { context, message },
        }
    }
}

/// Whether ONNX Runtime's `message` reports a failed allocation, and the
/// bytes asked for where it says. ONNX Runtime has no error code for it
/// (its status is a generic failure), so the message is what tells: the BFC
/// arena's "Available memory of N is smaller than requested bytes of M" and
/// "Failed to allocate memory", and CUDA's own out-of-memory errors.
fn out_of_memory(message: &str) -> Option<Option<u64>> {
    const SIGNS: [&str; 4] = ["is smaller than requested bytes", "Failed to allocate memory", "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"];
    if !SIGNS.iter().any(|s| message.contains(s)) {
        return None;
    }
    let requested = ["requested bytes of ", "requested buffer of size "].iter().find_map(|key| {
        let rest = &message[message.find(key)? + key.len()..];
        rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    });
    Some(requested)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_failures_are_out_of_device_memory_with_the_size_asked_for() {
        let arena = "Non-zero status code returned while running Add node. Status Message: bfc_arena.cc:360 \
                     Available memory of 0 is smaller than requested bytes of 201326592";
        match Error::ort("running model.onnx", arena) {
            Error::OutOfDeviceMemory { requested, context, .. } => {
                assert_eq!(requested, Some(201_326_592));
                assert_eq!(context, "running model.onnx");
            }
            e => panic!("{e:?}"),
        }
        let alloc = "Failed to allocate memory for requested buffer of size 1536";
        assert!(matches!(Error::ort("loading", alloc), Error::OutOfDeviceMemory { requested: Some(1536), .. }));
        let cuda = "CUDA failure 2: out of memory ; GPU=0";
        assert!(matches!(Error::ort("loading", cuda), Error::OutOfDeviceMemory { requested: None, .. }));
        let e = Error::ort("loading", alloc).to_string();
        assert!(e.contains("out of device memory (1536 bytes requested)"), "{e}");
    }

    #[test]
    fn other_failures_stay_ort_errors() {
        assert!(matches!(Error::ort("loading", "Invalid model: bad input"), Error::Ort { .. }));
    }
}
