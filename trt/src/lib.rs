//! trt: NVIDIA TensorRT as a safe, fast Rust library.
//!
//! | layer | crate / module | what |
//! |---|---|---|
//! | raw | `trt-sys` | cxx bridge over a C++ shim; TensorRT enums checked against the headers |
//! | loading | [`Library`] | TensorRT found and loaded at run time (`libloading`), version-checked |
//! | build | [`Builder`], [`Network`], [`OnnxParser`], [`BuilderConfig`], [`ProfileSpec`], [`SerializedEngine`], [`TimingCache`] | ONNX or hand-written network to a plan |
//! | run | [`Runtime`], [`Engine`], [`ExecutionContext`], [`Bindings`], [`ContextGraph`], [`ContextPool`] | plan to results on a CUDA stream; one enqueue as a CUDA graph with its own context |
//! | CUDA | [`cuda`] (the `trt-cuda` crate) | devices, streams, events, typed device and pinned buffers, graphs (cudarc) |
//!
//! Which TensorRT: the headers found when `trt-sys` was built decide (TensorRT
//! 10.x, 11.x or TensorRT-RTX 1.x); the API offers only what that version has
//! (e.g. `BuilderConfig::allow_precision` exists only on 10.x).
//!
//! Gating your own crate on the same version: `trt` passes its cfgs on
//! (`links = "trt_api"`). A build script of two loops does it (trt-cli's
//! `build.rs` is one):
//!
//! ```text
//! for c in env("DEP_TRT_API_ALL_CFGS").split(',') { println!("cargo::rustc-check-cfg=cfg({c})") }
//! for c in env("DEP_TRT_API_CFGS").split(',')     { println!("cargo:rustc-cfg={c}") }
//! ```
//!
//! ```no_run
//! # fn main() -> trt::Result<()> {
//! use trt::{Builder, OnnxParser, ProfileSpec, ShapeRange};
//!
//! let builder = Builder::new()?;                       // loads TensorRT
//! let network = OnnxParser::parse_file(&builder, "model.onnx")?;
//! let mut config = builder.config()?;
//! config.add_profile(ProfileSpec::new().with_all(
//!     &["input_ids", "attention_mask", "token_type_ids"],
//!     ShapeRange::new(&[1, 16], &[8, 128], &[32, 128]),
//! ))?;
//! let plan = builder.build(&network, &config)?;
//! plan.save("model.plan")?;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod binding;
mod builder;
mod call;
mod config;
mod context;
mod dtype;
mod engine;
mod engine_cache;
mod error;
mod fsutil;
mod graph;
pub mod inspector;
mod library;
pub mod logger;
mod network;
mod onnx;
mod onnx_guard;
mod pool;
mod profile;
pub mod profiler;
mod raw;
mod refit;
mod serialized;
mod shape;
mod timing_cache;
mod version;
mod weight_streaming;
mod work;

pub use binding::{Bindings, IO_ALIGNMENT};
pub use builder::Builder;
#[cfg(trt_weakly_typed)]
pub use config::AllowedPrecision;
pub use config::{BuildSettings, BuilderConfig, CancelToken, HardwareCompatibility};
#[cfg(trt_rtx)]
pub use context::KernelSpecialization;
pub use context::{ContextCalls, ContextOptions, Enqueued, ExecutionContext, SharedDeviceMemory};
pub use dtype::DataType;
pub use engine::{Engine, IoFormat, IoMode, IoTensor, Runtime};
pub use engine_cache::{CacheOutcome, EngineCache};
pub use error::{Error, ErrorCode, OnnxError, Result, TrtMessage};
pub use graph::ContextGraph;
pub use inspector::{EngineInfo, EngineLayer};
pub use library::{header_version, Library, LibraryKind};
pub use network::{
    Activation, ElementWise, HostData, LayerInfo, LayerKind, LayerOutput, MatrixOp, Network, Precision, Reduce, Tensor, TensorInfo, Unary,
};
pub use onnx::{OnnxParser, ParsedNetwork};
pub use pool::{ContextPool, PooledContext};
pub use profile::{OptimizationProfile, ProfileSpec, ShapeRange};
pub use profiler::{LayerTime, LayerTimes, Profiler, ProfilerCallbacks};
pub use raw::AsRaw;
pub use refit::Refitter;
pub use serialized::SerializedEngine;
pub use timing_cache::TimingCache;
/// CUDA devices, streams, events, buffers and graphs: the `trt-cuda` crate.
pub use trt_cuda as cuda;
pub use trt_cuda::{Checkout, Pool};
/// INT8 calibration data source (TensorRT 10.x).
#[cfg(trt_weakly_typed)]
pub use trt_sys::callbacks::CalibratorCallbacks as Int8Calibrator;
pub use trt_sys::callbacks::ProgressCallbacks;
pub use trt_sys::callbacks::{OutputCallbacks, Reallocation};
pub use version::{Flavor, Version};

/// Entry points of the fuzz targets in `fuzz/` for what is private here
/// (cargo-fuzz builds with `--cfg fuzzing`); not an API.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::engine_cache::verify_entry as engine_cache_entry;
}
