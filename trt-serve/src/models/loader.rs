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

#[cfg(feature = "onnxruntime")]
use trt_nlp::backend::onnxruntime::{cuda_device_count, Provider};
use trt_nlp::backend::{BackendChoice, BackendOptions, DeviceInstance, LeastLoaded};
use trt_nlp::tensor::{TensorBackend, TensorRuntime};
use trt_nlp::{Backend, Head, HelperOptions, ModelFolder, TextModel};

use crate::config::{InstanceKind, ModelConfig, Platform};
use crate::error::{ServeError, ServeResult};
use crate::models::placement::{place, Placement};
use crate::models::repository::VersionLoader;
use crate::models::text_model::text_input;

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
    /// The backend settings for `config` off the GPUs placement puts it on:
    /// its instance count and batch size, and the CPU for `KIND_CPU`.
    fn options_for(&self, config: &ModelConfig) -> BackendOptions {
        let mut options = self.backend.clone();
        options.instances = config.instance_count;
        options.max_batch = config.max_batch_size;
        #[cfg(feature = "onnxruntime")]
        {
            options.onnxruntime.cuda_graph_max_batch = config.cuda_graph_max_batch;
            options.onnxruntime.cuda_row_buckets = config.cuda_row_buckets;
            options.onnxruntime.cuda_host_wait = config.cuda_host_wait;
            if matches!(config.platform, Platform::OnnxRuntimeOnnx) && config.instance_kind == InstanceKind::Cpu {
                options.onnxruntime.provider = Provider::Cpu;
            }
        }
        options
    }
}

/// `options` for one device instance: `count` instances on GPU `gpu`, whichever backend runs them.
fn on_gpu(options: &BackendOptions, gpu: u32, count: usize) -> BackendOptions {
    let mut options = options.clone();
    options.instances = count;
    #[cfg(feature = "onnxruntime")]
    {
        options.onnxruntime.provider = Provider::Cuda { device: gpu };
    }
    options.tensorrt_device = gpu as usize;
    options
}

/// Where `config` places its instances, the GPUs counted only for `KIND_GPU`.
fn placement_of(config: &ModelConfig) -> ServeResult<Placement> {
    let visible = if config.instance_kind == InstanceKind::Gpu { visible_gpus() } else { Ok(0) };
    place(config, visible)
}

/// The GPUs the CUDA driver reports (ONNX Runtime's probe where it is built
/// in, else trt-cuda's: both open libcuda without panicking).
fn visible_gpus() -> Result<usize, String> {
    #[cfg(feature = "onnxruntime")]
    let count = cuda_device_count().map_err(|e| e.to_string());
    #[cfg(not(feature = "onnxruntime"))]
    let count = trt_cuda::device_count().map_err(|e| e.to_string());
    count
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
            Platform::TensorRtPlan => return Err(without_tensorrt(config)),
            #[cfg(feature = "onnxruntime")]
            Platform::OnnxRuntimeOnnx => TensorRuntime::OnnxRuntime,
            #[cfg(not(feature = "onnxruntime"))]
            Platform::OnnxRuntimeOnnx => return Err(without_onnxruntime(config)),
        };
        let mut options = self.options_for(config);
        if let Placement::Gpus(members) = placement_of(config)? {
            // A tensor model runs on one device instance: no dispatcher sits above its backend.
            let [m] = members.as_slice() else {
                return Err(ServeError::invalid(format!(
                    "model '{}': instance_group places {} device instances; a tensor model is served on one GPU (list one in gpus)",
                    config.name,
                    members.len()
                )));
            };
            options = on_gpu(&options, m.gpu, m.count);
        }
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
        let placement = placement_of(config)?;
        let options = self.options_for(config);
        let choice = match config.platform {
            #[cfg(feature = "tensorrt")]
            Platform::TensorRtPlan => BackendChoice::TensorRt,
            #[cfg(not(feature = "tensorrt"))]
            Platform::TensorRtPlan => return Err(without_tensorrt(config)),
            #[cfg(feature = "onnxruntime")]
            Platform::OnnxRuntimeOnnx => BackendChoice::OnnxRuntime,
            #[cfg(not(feature = "onnxruntime"))]
            Platform::OnnxRuntimeOnnx => return Err(without_onnxruntime(config)),
        };
        let open = |options: &BackendOptions, on: &str| {
            folder.backend(choice, options).map_err(|e| {
                ServeError::Unavailable(format!("the {} backend cannot run this model {on}here: {e}", config.platform.backend_name()))
            })
        };
        let backend: Arc<dyn Backend> = match &placement {
            Placement::Gpus(members) => {
                let mut placed = Vec::with_capacity(members.len());
                for m in members {
                    let backend = open(&on_gpu(&options, m.gpu, m.count), &format!("on GPU {} ", m.gpu))?;
                    placed.push(DeviceInstance::on_gpu(backend, m.gpu as usize));
                }
                Arc::new(LeastLoaded::new(placed).map_err(|e| ServeError::invalid(format!("model '{}': {e}", config.name)))?)
            }
            Placement::Unplaced { .. } => {
                let backend = open(&options, "")?;
                if matches!(config.platform, Platform::TensorRtPlan) {
                    // TensorRT runs on a GPU whatever the kind: labelled for per-GPU metrics.
                    let member = DeviceInstance::on_gpu(backend, options.tensorrt_device);
                    Arc::new(LeastLoaded::new(vec![member]).map_err(|e| ServeError::invalid(e.to_string()))?)
                } else {
                    backend
                }
            }
        };
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

/// Why a `tensorrt_plan` model cannot load in a build without the `tensorrt` feature.
#[cfg(not(feature = "tensorrt"))]
fn without_tensorrt(config: &ModelConfig) -> ServeError {
    ServeError::Unavailable(format!(
        "model '{}' is a TensorRT plan and this server was built without TensorRT (the tensorrt feature)",
        config.name
    ))
}

/// Why an `onnxruntime_onnx` model cannot load in a build without the `onnxruntime` feature.
#[cfg(not(feature = "onnxruntime"))]
fn without_onnxruntime(config: &ModelConfig) -> ServeError {
    ServeError::Unavailable(format!(
        "model '{}' is an ONNX model and this server was built without ONNX Runtime (the onnxruntime feature)",
        config.name
    ))
}
