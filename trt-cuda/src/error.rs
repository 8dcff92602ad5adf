//! [`Error`]: what a CUDA call of this crate can fail with.

/// Result of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Why a CUDA operation failed.
///
/// `trt` converts it into its own error (`From<trt_cuda::Error> for trt::Error`)
/// variant by variant, so `?` works in code returning `trt::Result`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
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

    /// This work cannot be captured into a CUDA graph (the reason says why);
    /// run it with ordinary launches instead.
    #[error("graph capture refused: {0}")]
    NotCapturable(String),

    /// An array's shape does not fit a buffer.
    #[error("shape mismatch for '{tensor}': expected {expected}, got {got}")]
    ShapeMismatch {
        /// The buffer or tensor.
        tensor: String,
        /// What was expected.
        expected: String,
        /// What was given.
        got: String,
    },

    /// An argument is out of range or inconsistent (the message says which).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}
