//! TensorRT behind [`TensorBackend`]: a pool of execution contexts of one
//! plan. Each run sets the input shapes, uploads the inputs into device
//! buffers made for the run, sizes the outputs from the shapes TensorRT
//! infers, enqueues, and downloads the outputs on the context's stream.
//!
//! Buffers are allocated per run (tensor requests vary in shape and type,
//! so nothing is sized ahead as the text path's staging is); the text path
//! ([`crate::backend::tensorrt`]) is the one tuned for throughput. An output
//! whose shape depends on the data (-1 after the input shapes are set) is
//! refused at open, naming it, as there is no output allocator here.

use std::path::Path;

use half::{bf16, f16};
use trt::cuda::{Device, DeviceBuffer, Stream};
use trt::{Bindings, ContextPool, Engine, IoMode, Runtime, SerializedEngine};

use super::{check_inputs, Tensor, TensorBackend, TensorData, TensorSpec};
use crate::{ElementType, Error, Result};

/// A TensorRT plan as a [`TensorBackend`].
pub struct TensorRtTensorBackend {
    pool: ContextPool<()>,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
    max_batch: Option<usize>,
    device: Device,
}

impl std::fmt::Debug for TensorRtTensorBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorRtTensorBackend")
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("contexts", &self.pool.size())
            .finish()
    }
}

/// One tensor's device memory, by element type.
enum DeviceTensor {
    F32(DeviceBuffer<f32>),
    F16(DeviceBuffer<f16>),
    BF16(DeviceBuffer<bf16>),
    I8(DeviceBuffer<i8>),
    U8(DeviceBuffer<u8>),
    I32(DeviceBuffer<i32>),
    I64(DeviceBuffer<i64>),
    Bool(DeviceBuffer<bool>),
}

impl DeviceTensor {
    fn upload(data: &TensorData, stream: &Stream) -> trt_cuda::Result<Self> {
        Ok(match data {
            TensorData::F32(v) => DeviceTensor::F32(DeviceBuffer::from_slice(v, stream)?),
            TensorData::F16(v) => DeviceTensor::F16(DeviceBuffer::from_slice(v, stream)?),
            TensorData::BF16(v) => DeviceTensor::BF16(DeviceBuffer::from_slice(v, stream)?),
            TensorData::I8(v) => DeviceTensor::I8(DeviceBuffer::from_slice(v, stream)?),
            TensorData::U8(v) => DeviceTensor::U8(DeviceBuffer::from_slice(v, stream)?),
            TensorData::I32(v) => DeviceTensor::I32(DeviceBuffer::from_slice(v, stream)?),
            TensorData::I64(v) => DeviceTensor::I64(DeviceBuffer::from_slice(v, stream)?),
            TensorData::Bool(v) => DeviceTensor::Bool(DeviceBuffer::from_slice(v, stream)?),
        })
    }

    fn zeros(element: ElementType, len: usize, stream: &Stream) -> trt_cuda::Result<Self> {
        Ok(match element {
            ElementType::F32 => DeviceTensor::F32(DeviceBuffer::zeros(len, stream)?),
            ElementType::F16 => DeviceTensor::F16(DeviceBuffer::zeros(len, stream)?),
            ElementType::BF16 => DeviceTensor::BF16(DeviceBuffer::zeros(len, stream)?),
            ElementType::I8 => DeviceTensor::I8(DeviceBuffer::zeros(len, stream)?),
            ElementType::U8 => DeviceTensor::U8(DeviceBuffer::zeros(len, stream)?),
            ElementType::I32 => DeviceTensor::I32(DeviceBuffer::zeros(len, stream)?),
            ElementType::I64 => DeviceTensor::I64(DeviceBuffer::zeros(len, stream)?),
            ElementType::Bool => DeviceTensor::Bool(DeviceBuffer::zeros(len, stream)?),
        })
    }

    fn bind<'a>(&'a mut self, name: &'a str, bindings: Bindings<'a>) -> trt::Result<Bindings<'a>> {
        match self {
            DeviceTensor::F32(b) => bindings.bind(name, b),
            DeviceTensor::F16(b) => bindings.bind(name, b),
            DeviceTensor::BF16(b) => bindings.bind(name, b),
            DeviceTensor::I8(b) => bindings.bind(name, b),
            DeviceTensor::U8(b) => bindings.bind(name, b),
            DeviceTensor::I32(b) => bindings.bind(name, b),
            DeviceTensor::I64(b) => bindings.bind(name, b),
            DeviceTensor::Bool(b) => bindings.bind(name, b),
        }
    }

    /// The values, downloaded (blocks until the stream's work before it is done).
    fn download(&mut self, stream: &Stream) -> trt_cuda::Result<TensorData> {
        macro_rules! down {
            ($b:expr, $variant:ident, $zero:expr) => {{
                let mut v = vec![$zero; $b.len()];
                $b.copy_to_host(&mut v, stream)?;
                TensorData::$variant(v)
            }};
        }
        Ok(match self {
            DeviceTensor::F32(b) => down!(b, F32, 0.0),
            DeviceTensor::F16(b) => down!(b, F16, f16::ZERO),
            DeviceTensor::BF16(b) => down!(b, BF16, bf16::ZERO),
            DeviceTensor::I8(b) => down!(b, I8, 0),
            DeviceTensor::U8(b) => down!(b, U8, 0),
            DeviceTensor::I32(b) => down!(b, I32, 0),
            DeviceTensor::I64(b) => down!(b, I64, 0),
            DeviceTensor::Bool(b) => down!(b, Bool, false),
        })
    }
}

fn spec_of(t: &trt::IoTensor) -> Result<TensorSpec> {
    let element = ElementType::try_from(t.dtype)
        .map_err(|d| Error::Tensor { tensor: t.name.clone(), problem: format!("element type {d} is not served") })?;
    if t.is_shape_tensor {
        return Err(Error::Tensor { tensor: t.name.clone(), problem: "a shape tensor, which tensor requests cannot carry".into() });
    }
    Ok(TensorSpec { name: t.name.clone(), element, shape: t.shape.clone() })
}

impl TensorRtTensorBackend {
    /// `contexts` execution contexts of the plan at `path` on GPU `device`.
    pub fn open(path: &Path, device: usize, contexts: usize) -> Result<Self> {
        if !trt_cuda::driver_available() {
            return Err(Error::BackendUnavailable { backend: "TensorRT", reason: "no CUDA driver found".into() });
        }
        let device = Device::new(device)?;
        let plan = SerializedEngine::load(path)?;
        let engine = Runtime::new()?.deserialize_on(plan.as_bytes(), &device)?;
        Self::new(&engine, &device, contexts)
    }

    /// `contexts` execution contexts of `engine` on `device`.
    pub fn new(engine: &Engine, device: &Device, contexts: usize) -> Result<Self> {
        let inputs: Vec<TensorSpec> = engine.inputs().map(spec_of).collect::<Result<_>>()?;
        let outputs: Vec<TensorSpec> = engine.outputs().map(spec_of).collect::<Result<_>>()?;
        // Profile 0's largest first dimension, where every input's is dynamic.
        let max_batch = engine
            .io_tensors()
            .iter()
            .filter(|t| t.mode == IoMode::Input)
            .map(|t| match (t.shape.first(), t.profiles.first().and_then(|p| p.max.first())) {
                (Some(&d), Some(&m)) if d < 0 => Some(m.max(0) as usize),
                _ => None,
            })
            .try_fold(usize::MAX, |acc, m| m.map(|m| acc.min(m)));
        let max_batch = max_batch.filter(|&m| m != usize::MAX);
        let pool = ContextPool::new(engine, device, contexts.max(1))?;
        Ok(TensorRtTensorBackend { pool, inputs, outputs, max_batch, device: device.clone() })
    }
}

impl TensorBackend for TensorRtTensorBackend {
    fn name(&self) -> &str {
        "tensorrt"
    }

    fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    fn instances(&self) -> usize {
        self.pool.size()
    }

    fn max_batch(&self) -> Option<usize> {
        self.max_batch
    }

    fn run(&self, inputs: &[(&str, &Tensor)], outputs: &[&str]) -> Result<Vec<Tensor>> {
        check_inputs(&self.inputs, inputs)?;
        self.device.check_deferred_error()?;
        let mut slot = self.pool.checkout();
        let trt::PooledContext { context, stream, .. } = &mut *slot;
        let mut buffers: Vec<(String, DeviceTensor)> = Vec::with_capacity(inputs.len() + outputs.len());
        for (name, t) in inputs {
            let shape: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
            context.set_input_shape(name, &shape)?;
            buffers.push(((*name).to_owned(), DeviceTensor::upload(t.data(), stream)?));
        }
        let mut shapes = Vec::with_capacity(outputs.len());
        for name in outputs {
            let spec = self
                .outputs
                .iter()
                .find(|s| s.name == *name)
                .ok_or_else(|| Error::Tensor { tensor: (*name).to_owned(), problem: "the engine has no such output".into() })?;
            let shape = context.tensor_shape(name)?;
            if shape.iter().any(|&d| d < 0) {
                return Err(Error::Tensor {
                    tensor: (*name).to_owned(),
                    problem: format!("shape {shape:?} depends on the data, which this backend cannot size"),
                });
            }
            let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
            buffers.push(((*name).to_owned(), DeviceTensor::zeros(spec.element, shape.iter().product(), stream)?));
            shapes.push(shape);
        }
        let mut bindings = Bindings::with_capacity(stream, buffers.len());
        for (name, b) in buffers.iter_mut() {
            bindings = b.bind(name, bindings)?;
        }
        // The downloads below run after the enqueue on the same stream.
        context.enqueue(bindings)?.release();
        let mut out = Vec::with_capacity(outputs.len());
        for ((name, b), shape) in buffers[inputs.len()..].iter_mut().zip(shapes) {
            out.push(Tensor::new(name, shape, b.download(stream)?)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs a GPU that TensorRT can execute engines on (TensorRT-RTX: CC 8.0/8.6/8.9/12.x; CI has none, the H200 is 9.0)"]
    fn int64_token_tensors_run_on_a_plan_and_come_back_in_the_plan_s_types() {
        // The int64 variant of the default model (`scripts/setup`), in the setup
        // folder that $TRT_DEPS_DIR names.
        let deps = std::path::PathBuf::from(
            std::env::var_os("TRT_DEPS_DIR").expect("TRT_DEPS_DIR: the setup folder (cargo sets it, .cargo/config.toml)"),
        );
        let onnx = deps.join("models/minilm-int64/model.onnx");
        let builder = trt::Builder::new().unwrap();
        let network = trt::OnnxParser::parse_file(&builder, &onnx).unwrap();
        let mut config = builder.config().unwrap();
        let names = ["input_ids", "attention_mask", "token_type_ids"];
        config.add_profile(trt::ProfileSpec::new().with_all(&names, trt::ShapeRange::new(&[1, 1], &[4, 16], &[8, 128]))).unwrap();
        let plan = builder.build(&network, &config).unwrap();
        let device = Device::new(0).unwrap();
        let engine = Runtime::new().unwrap().deserialize_on(plan.as_bytes(), &device).unwrap();
        let backend = TensorRtTensorBackend::new(&engine, &device, 1).unwrap();
        assert_eq!(backend.max_batch(), Some(8));
        let ids = Tensor::new("input_ids", vec![2, 4], TensorData::I64(vec![101, 7592, 2088, 102, 101, 2088, 102, 0])).unwrap();
        let mask = Tensor::new("attention_mask", vec![2, 4], TensorData::I64(vec![1, 1, 1, 1, 1, 1, 1, 0])).unwrap();
        let types = Tensor::new("token_type_ids", vec![2, 4], TensorData::I64(vec![0; 8])).unwrap();
        let inputs = [("input_ids", &ids), ("attention_mask", &mask), ("token_type_ids", &types)];
        let out = backend.run(&inputs, &["logits", "last_hidden_state"]).unwrap();
        assert_eq!((out[0].shape(), out[1].shape()), (&[2usize, 2][..], &[2usize, 4, 384][..]));
        assert_eq!(out[0].element(), ElementType::F32);
        let wrong = Tensor::new("input_ids", vec![2, 4], TensorData::I32(vec![0; 8])).unwrap();
        let err = backend.run(&[("input_ids", &wrong), inputs[1], inputs[2]], &["logits"]).unwrap_err().to_string();
        assert!(err.contains("'input_ids'"), "{err}");
    }
}
