//! Which backend runs a model file: TensorRT where a GPU it can execute on is
//! present, otherwise ONNX Runtime, and a log line that says which and why.
//!
//! | file | `Auto` | `TensorRt` | `OnnxRuntime` |
//! |---|---|---|---|
//! | plan | TensorRT (nothing else runs a plan) | TensorRT | error |
//! | ONNX | TensorRT (plan built once through the engine cache) if every step works here, else ONNX Runtime | TensorRT, or the step that failed | ONNX Runtime |
//!
//! Without the `tensorrt` feature, `Auto` is ONNX Runtime, `TensorRt` does not
//! exist and a plan file is an error that says so. Without the `onnxruntime`
//! feature, `Auto` is TensorRT (an ONNX file is built into a plan) and
//! `OnnxRuntime` does not exist. With neither, every open is an error.

use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(feature = "tensorrt")]
use trt::{Builder, EngineCache, OnnxParser, ProfileSpec, Runtime, SerializedEngine, ShapeRange};
#[cfg(feature = "tensorrt")]
use trt_cuda::Device;

#[cfg(feature = "onnxruntime")]
use super::onnxruntime::OrtBackend;
#[cfg(feature = "onnxruntime")]
use super::onnxruntime::OrtBackendOptions;
#[cfg(feature = "tensorrt")]
use super::tensorrt::TensorRtBackend;
use super::Backend;
use crate::{Error, Result};

/// Which executor to use. With the `clap` feature it is a `clap::ValueEnum`
/// (`auto`, `tensorrt` or `trt`, `onnxruntime` or `ort`, as [`FromStr`](std::str::FromStr)
/// reads it), the variants' docs its help.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[non_exhaustive]
pub enum BackendChoice {
    /// TensorRT where a GPU it can execute on is present, else ONNX Runtime
    /// (each where this build has it).
    #[default]
    Auto,
    /// TensorRT only: plans, or ONNX built into a plan through the engine
    /// cache (the `tensorrt` feature).
    #[cfg(feature = "tensorrt")]
    #[cfg_attr(feature = "clap", value(name = "tensorrt", alias = "trt"))]
    TensorRt,
    /// ONNX Runtime only: ONNX files (the `onnxruntime` feature).
    #[cfg(feature = "onnxruntime")]
    #[cfg_attr(feature = "clap", value(name = "onnxruntime", alias = "ort"))]
    OnnxRuntime,
}

impl std::str::FromStr for BackendChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Self::Auto),
            #[cfg(feature = "tensorrt")]
            "tensorrt" | "trt" => Ok(Self::TensorRt),
            #[cfg(not(feature = "tensorrt"))]
            "tensorrt" | "trt" => {
                Err(Error::BackendUnavailable { backend: "TensorRT", reason: "this build has no TensorRT (the tensorrt feature)".into() })
            }
            #[cfg(feature = "onnxruntime")]
            "onnxruntime" | "ort" => Ok(Self::OnnxRuntime),
            #[cfg(not(feature = "onnxruntime"))]
            "onnxruntime" | "ort" => Err(Error::BackendUnavailable {
                backend: "ONNX Runtime",
                reason: "this build has no ONNX Runtime (the onnxruntime feature)".into(),
            }),
            other => Err(Error::InvalidOption {
                option: "backend",
                value: format!("'{other}'"),
                expected: "auto, tensorrt or onnxruntime".into(),
            }),
        }
    }
}

/// Settings for [`open`], [`TextModel::open_with`](crate::TextModel::open_with)
/// and the backends' own constructors: what every backend reads (instances,
/// batch and sequence limits), then each backend's own part.
///
/// ```
/// use trt_nlp::backend::onnxruntime::{OrtBackendOptions, Provider};
/// use trt_nlp::backend::BackendOptions;
///
/// let options = BackendOptions::default()
///     .with_instances(2)
///     .with_max_seq(128)
///     .with_onnxruntime(OrtBackendOptions::default().with_provider(Provider::Cpu).with_intra_threads(1));
/// assert_eq!(options.max_batch, 32);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BackendOptions {
    /// Instances: ONNX Runtime sessions or TensorRT execution contexts, the
    /// batches that run at once. Default 1.
    pub instances: usize,
    /// Largest batch, where the model does not fix it (ONNX Runtime), and the
    /// batch bound of the TensorRT profile built from an ONNX file. Default 32.
    pub max_batch: usize,
    /// Longest sequence, as `max_batch`. Default 512 (BERT's position table).
    pub max_seq: usize,
    /// ONNX Runtime: threads, provider, optimization, CUDA graphs.
    #[cfg(feature = "onnxruntime")]
    pub onnxruntime: OrtBackendOptions,
    /// Where plans built from ONNX files are kept; `None`: built in memory
    /// on every open, kept nowhere.
    pub engine_cache: Option<PathBuf>,
    /// The GPU (CUDA ordinal) TensorRT builds and runs on; the engine cache
    /// keys its plans by that GPU's identity.
    pub tensorrt_device: usize,
}

impl Default for BackendOptions {
    fn default() -> Self {
        BackendOptions {
            instances: 1,
            max_batch: 32,
            max_seq: 512,
            #[cfg(feature = "onnxruntime")]
            onnxruntime: OrtBackendOptions::default(),
            engine_cache: None,
            tensorrt_device: 0,
        }
    }
}

impl BackendOptions {
    crate::options::setters! {
        instances: usize => with_instances;
        max_batch: usize => with_max_batch;
        max_seq: usize => with_max_seq;
        #[cfg(feature = "onnxruntime")]
        onnxruntime: OrtBackendOptions => with_onnxruntime;
        engine_cache: Option<PathBuf> => with_engine_cache;
        tensorrt_device: usize => with_tensorrt_device;
    }
}

/// The defaults, with these ONNX Runtime settings.
#[cfg(feature = "onnxruntime")]
impl From<OrtBackendOptions> for BackendOptions {
    fn from(onnxruntime: OrtBackendOptions) -> Self {
        BackendOptions { onnxruntime, ..BackendOptions::default() }
    }
}

/// The backend for `model` (a plan or an ONNX file) under `choice`.
/// ```
/// use trt_nlp::backend::{self, BackendChoice, BackendOptions};
/// use trt_nlp::ModelFolder;
///
/// # fn main() -> trt_nlp::Result<()> {
/// # // A small random-weight model (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
/// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
/// let folder = ModelFolder::open(path)?; // a HuggingFace folder: its graph is written on first use
/// let backend = backend::open(&folder.model, BackendChoice::OnnxRuntime, &BackendOptions::default().with_instances(2))?;
/// assert_eq!((backend.name(), backend.capabilities().instances), ("onnxruntime", 2));
/// # Ok(())
/// # }
/// ```
pub fn open(model: &Path, choice: BackendChoice, options: &BackendOptions) -> Result<Arc<dyn Backend>> {
    let plan = is_plan(model);
    match choice {
        #[cfg(feature = "onnxruntime")]
        BackendChoice::OnnxRuntime if plan => {
            Err(Error::UnsupportedModel { reason: format!("{} is a TensorRT plan; ONNX Runtime runs ONNX files", model.display()) })
        }
        #[cfg(feature = "onnxruntime")]
        BackendChoice::OnnxRuntime => onnxruntime(model, options),
        #[cfg(feature = "tensorrt")]
        BackendChoice::TensorRt => tensorrt_logged(model, plan, options),
        BackendChoice::Auto => auto(model, plan, options),
    }
}

/// `Auto` with both backends: TensorRT for plans; for ONNX files TensorRT
/// where every step works here, else ONNX Runtime, with the reason logged.
#[cfg(all(feature = "tensorrt", feature = "onnxruntime"))]
fn auto(model: &Path, plan: bool, options: &BackendOptions) -> Result<Arc<dyn Backend>> {
    if plan {
        return tensorrt_logged(model, plan, options);
    }
    match tensorrt(model, false, options) {
        Ok(backend) => {
            tracing::info!("{}: backend tensorrt", model.display());
            Ok(backend)
        }
        Err(why) => {
            tracing::info!("{}: backend onnxruntime (TensorRT cannot run it here: {why})", model.display());
            onnxruntime(model, options)
        }
    }
}

/// `Auto` with TensorRT alone.
#[cfg(all(feature = "tensorrt", not(feature = "onnxruntime")))]
fn auto(model: &Path, plan: bool, options: &BackendOptions) -> Result<Arc<dyn Backend>> {
    tensorrt_logged(model, plan, options)
}

/// `Auto` with ONNX Runtime alone.
#[cfg(all(not(feature = "tensorrt"), feature = "onnxruntime"))]
fn auto(model: &Path, plan: bool, options: &BackendOptions) -> Result<Arc<dyn Backend>> {
    if plan {
        return Err(Error::BackendUnavailable {
            backend: "TensorRT",
            reason: format!("{} is a TensorRT plan and this build has no TensorRT (the tensorrt feature)", model.display()),
        });
    }
    onnxruntime(model, options)
}

/// `Auto` with no backend built in.
#[cfg(not(any(feature = "tensorrt", feature = "onnxruntime")))]
fn auto(model: &Path, _plan: bool, _options: &BackendOptions) -> Result<Arc<dyn Backend>> {
    Err(Error::BackendUnavailable {
        backend: "any backend",
        reason: format!("{}: this build has none (enable the tensorrt or onnxruntime feature of trt-nlp)", model.display()),
    })
}

#[cfg(feature = "onnxruntime")]
fn onnxruntime(model: &Path, options: &BackendOptions) -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(OrtBackend::new(model, options)?))
}

#[cfg(feature = "tensorrt")]
fn tensorrt_logged(model: &Path, plan: bool, options: &BackendOptions) -> Result<Arc<dyn Backend>> {
    let backend = tensorrt(model, plan, options)?;
    tracing::info!("{}: backend tensorrt", model.display());
    Ok(backend)
}

/// TensorRT on the GPU `options.tensorrt_device` names, each step's failure a
/// typed error (the caller may fall back).
#[cfg(feature = "tensorrt")]
fn tensorrt(model: &Path, plan: bool, options: &BackendOptions) -> Result<Arc<dyn Backend>> {
    if !trt_cuda::driver_available() {
        return Err(Error::BackendUnavailable { backend: "TensorRT", reason: "no CUDA driver found".into() });
    }
    let device = Device::new(options.tensorrt_device)?;
    let bytes = if plan { SerializedEngine::load(model)? } else { build_plan(model, options, &device)? };
    let engine = Runtime::new()?.deserialize_on(bytes.as_bytes(), &device)?;
    Ok(Arc::new(TensorRtBackend::new(&engine, &device, options.instances.max(1))?))
}

/// The plan of an ONNX file, from the engine cache or built into it, with one
/// profile over every dynamic input: batch 1..=max_batch, sequence 1..=max_seq.
#[cfg(feature = "tensorrt")]
fn build_plan(model: &Path, options: &BackendOptions, device: &Device) -> Result<SerializedEngine> {
    // The builder targets the GPU whose context is current.
    device.bind()?;
    let builder = Builder::new()?;
    let dynamic: Vec<String> = {
        let parsed = OnnxParser::parse_file(&builder, model)?;
        parsed.network().inputs().into_iter().filter(|i| i.is_dynamic()).map(|i| i.name).collect()
    };
    let names: Vec<&str> = dynamic.iter().map(String::as_str).collect();
    let (b, s) = (options.max_batch.max(1) as i64, options.max_seq.max(1) as i64);
    let range = ShapeRange::new(&[1, 1], &[b.min(8), s.min(128)], &[b, s]);
    let spec = ProfileSpec::new().with_all(&names, range);
    match &options.engine_cache {
        Some(dir) => {
            let (plan, _) = EngineCache::new(dir).with_device(device.clone()).get_or_build(&builder, model, |config| {
                config.add_profile(spec)?;
                Ok(())
            })?;
            Ok(plan)
        }
        None => {
            let network = OnnxParser::parse_file(&builder, model)?;
            let mut config = builder.config()?;
            config.add_profile(spec)?;
            Ok(builder.build(&network, &config)?)
        }
    }
}

/// Whether `path` names a TensorRT plan (`.plan`, `.engine`, `.trt`).
pub fn is_plan(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("plan" | "engine" | "trt"))
}
