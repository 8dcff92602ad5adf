//! ONNX Runtime: the library, loaded at run time like TensorRT
//! ([`OrtLibrary`]), and sessions over one model each ([`Session`]).

mod binding;
mod cuda;
mod library;
mod session;

pub use binding::{BoundTensor, IoBinding};
pub use cuda::{cuda_device_count, cuda_usable, CudaOptions};
pub use library::{OrtLibrary, MIN_MINOR_VERSION};
pub use session::{ElementType, InputTensor, Optimization, OutputRef, OutputTensor, Provider, Session, SessionOptions, TensorInfo};
