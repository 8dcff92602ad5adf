//! trt: safe NVIDIA TensorRT for Rust.
#![warn(missing_docs)]

pub mod cuda;
mod dtype;
mod error;
mod version;

pub use dtype::DataType;
pub use error::{Error, ErrorCode, OnnxError, Result, TrtMessage};
pub use version::{Flavor, Version};
