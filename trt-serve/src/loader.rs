//! Opens a model version through trt-nlp's public API: for a text model the
//! model folder's files ([`ModelFolder`]: tokenizer, labels, pooling), the
//! backend the config's platform names ([`trt_nlp::backend::open`]), and a
//! tokenizer pipeline sized to what the backend accepts; for a tensor model
//! the executor of the model file alone ([`trt_nlp::tensor::open`]).
//!
//! The tokenizer files may sit in the version folder (a version with its own
//! vocabulary) or, more usually, in the model folder beside `config.pbtxt`.

use std::path::Path;
use std::sync::Arc;

use trt_nlp::backend::onnxruntime::{cuda_device_count, Provider};
use trt_nlp::backend::{BackendChoice, BackendOptions};
use trt_nlp::tensor::{TensorBackend, TensorRuntime};
use trt_nlp::{Head, HelperOptions, ModelFolder, TextModel};

use crate::config::{InstanceKind, ModelConfig, Platform};
use crate::error::{ServeError, ServeResult};
use crate::repository::VersionLoader;
use crate::text_model::text_input;

/// The loader `trt serve` uses: trt-nlp's TensorRT and ONNX Runtime backends.
#[derive(Debug, Clone, Default)]
pub struct NlpLoader {
    /// Backend settings (threads per ONNX Runtime session, engine cache, ...);
    /// batch size and instance count come from each model's config.
    pub backend: BackendOptions,
    /// Tokenizer settings (threads, padding bucket).
    pub tokenizer: HelperOptions,
}

impl NlpLoader {
    /// The backend settings for `config`: its instance count and batch size,
    /// and where ONNX Runtime runs (`instance_group.kind`, `gpus`).
    fn options_for(&self, config: &ModelConfig) -> ServeResult<BackendOptions> {
        let mut options = self.backend.clone();
        options.onnxruntime.sessions = config.instance_count;
        options.onnxruntime.max_batch = config.max_batch_size;
        options.contexts = config.instance_count;
        options.onnxruntime.cuda_graph_max_batch = config.cuda_graph_max_batch;
        if matches!(config.platform, Platform::OnnxRuntimeOnnx) {
            options.onnxruntime.provider = match config.instance_kind {
                InstanceKind::Auto => options.onnxruntime.provider,
                InstanceKind::Cpu => Provider::Cpu,
                InstanceKind::Gpu => Provider::Cuda { device: gpu_of(config)? },
            };
        }
        Ok(options)
    }
}

impl VersionLoader for NlpLoader {
    fn load_tensor(&self, config: &ModelConfig, _model_dir: &Path, version_dir: &Path) -> ServeResult<Arc<dyn TensorBackend>> {
        let file = version_dir.join(config.platform.default_filename());
        if !file.is_file() {
            return Err(ServeError::NotFound(format!("{} is missing", file.display())));
        }
        let runtime = match config.platform {
            #[cfg(feature = "tensorrt")]
            Platform::TensorRtPlan => TensorRuntime::TensorRt,
            #[cfg(not(feature = "tensorrt"))]
            Platform::TensorRtPlan => {
                return Err(ServeError::Unavailable(format!(
                    "model '{}' is a TensorRT plan and this server was built without TensorRT (the tensorrt feature)",
                    config.name
                )))
            }
            Platform::OnnxRuntimeOnnx => TensorRuntime::OnnxRuntime,
        };
        let options = self.options_for(config)?;
        trt_nlp::tensor::open(&file, runtime, &options).map_err(|e| match e {
            trt_nlp::Error::Tensor { .. } => ServeError::invalid(format!("model '{}': {e}", config.name)),
            e => ServeError::Unavailable(format!("the {} backend cannot run this model here: {e}", config.platform.backend_name())),
        })
    }

    fn load(&self, config: &ModelConfig, model_dir: &Path, version_dir: &Path) -> ServeResult<TextModel> {
        text_input(config)?;
        if config.max_batch_size == 0 {
            return Err(ServeError::invalid(format!(
                "model '{}': max_batch_size 0 is not served; text inputs are [batch, 1], so set max_batch_size to 1 or more",
                config.name
            )));
        }
        let file = version_dir.join(config.platform.default_filename());
        if !file.is_file() {
            return Err(ServeError::NotFound(format!("{} is missing", file.display())));
        }
        let files_dir = if version_dir.join("tokenizer.json").is_file() { version_dir } else { model_dir };
        let folder = ModelFolder::with_model(files_dir.to_path_buf(), file, None).map_err(|e| ServeError::invalid(e.to_string()))?;
        let options = self.options_for(config)?;
        let choice = match config.platform {
            #[cfg(feature = "tensorrt")]
            Platform::TensorRtPlan => BackendChoice::TensorRt,
            #[cfg(not(feature = "tensorrt"))]
            Platform::TensorRtPlan => {
                return Err(ServeError::Unavailable(format!(
                    "model '{}' is a TensorRT plan and this server was built without TensorRT (the tensorrt feature)",
                    config.name
                )))
            }
            Platform::OnnxRuntimeOnnx => BackendChoice::OnnxRuntime,
        };
        let backend = folder.backend(choice, &options).map_err(|e| {
            ServeError::Unavailable(format!("the {} backend cannot run this model here: {e}", config.platform.backend_name()))
        })?;
        let layout = backend.layout();
        if layout.max_batch < config.max_batch_size {
            return Err(ServeError::invalid(format!(
                "max_batch_size {} is more than the model accepts ({})",
                config.max_batch_size, layout.max_batch
            )));
        }
        let pipeline = self.tokenizer.pipeline(&folder.tokenizer, &*backend).map_err(|e| ServeError::invalid(e.to_string()))?;
        Ok(TextModel::new(backend, pipeline, Head::of(&folder)))
    }
}

/// The GPU of a `KIND_GPU` instance group: the one listed in `gpus`, or the
/// only one the driver reports where none is listed (Triton's "all GPUs").
fn gpu_of(config: &ModelConfig) -> ServeResult<u32> {
    let name = &config.name;
    match config.gpus.as_slice() {
        [device] => Ok(*device),
        [] => match cuda_device_count() {
            Ok(1) => Ok(0),
            Ok(0) => Err(ServeError::Unavailable(format!("model '{name}': KIND_GPU, but the CUDA driver reports no GPU"))),
            Ok(n) => Err(ServeError::invalid(format!("model '{name}': KIND_GPU on a machine with {n} GPUs: list the one to use in gpus"))),
            Err(e) => Err(ServeError::Unavailable(format!("model '{name}': KIND_GPU: {e}"))),
        },
        several => Err(ServeError::invalid(format!("model '{name}': gpus {several:?}: one GPU per model is served"))),
    }
}
