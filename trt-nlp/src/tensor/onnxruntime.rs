//! ONNX Runtime behind [`TensorBackend`]: a pool of sessions over one ONNX
//! model, each run on its own thread's checkout. Inputs are read in place
//! from the request's tensors (ONNX Runtime borrows them, no copy); outputs
//! are copied once out of ONNX Runtime's memory into owned tensors.
//!
//! Element types: what both ONNX Runtime and [`ElementType`] have (f32, f16,
//! bf16, i8, u8, i32, i64, bool); a model with an input or output of another
//! type (f64, strings, sequences) is refused at open, naming the tensor.

use std::path::Path;

use ndarray::{ArrayViewD, IxDyn};
use trt_cuda::Pool;
use trt_onnx::runtime::{ElementType as OrtType, InputTensor, OutputRef, Session, SessionOptions, TensorInfo};

use super::{check_inputs, Tensor, TensorBackend, TensorData, TensorSpec};
use crate::backend::BackendOptions;
use crate::{ElementType, Error, Result};

/// An ONNX model on ONNX Runtime as a [`TensorBackend`].
pub struct OrtTensorBackend {
    pool: Pool<Session>,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
    provider: String,
}

impl std::fmt::Debug for OrtTensorBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrtTensorBackend")
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("sessions", &self.pool.size())
            .field("provider", &self.provider)
            .finish()
    }
}

fn element_of(t: &TensorInfo, path: &Path) -> Result<ElementType> {
    Ok(match t.element {
        OrtType::F32 => ElementType::F32,
        OrtType::F16 => ElementType::F16,
        OrtType::BF16 => ElementType::BF16,
        OrtType::I8 => ElementType::I8,
        OrtType::U8 => ElementType::U8,
        OrtType::I32 => ElementType::I32,
        OrtType::I64 => ElementType::I64,
        OrtType::Bool => ElementType::Bool,
        other => {
            return Err(Error::Tensor {
                tensor: t.name.clone(),
                problem: format!("{}: element type {other} is not served (f32, f16, bf16, i8, u8, i32, i64, bool)", path.display()),
            })
        }
    })
}

fn specs(infos: &[TensorInfo], path: &Path) -> Result<Vec<TensorSpec>> {
    infos.iter().map(|t| Ok(TensorSpec { name: t.name.clone(), element: element_of(t, path)?, shape: t.shape.clone() })).collect()
}

impl OrtTensorBackend {
    /// `options.instances` sessions over the ONNX model at `path`, with
    /// `options.onnxruntime`'s session settings ([`OrtBackendOptions::session_options`](crate::backend::onnxruntime::OrtBackendOptions::session_options);
    /// `max_batch`, `max_seq` and CUDA graphs are the text path's and not
    /// used here).
    pub fn new(path: impl AsRef<Path>, options: &BackendOptions) -> Result<Self> {
        let path = path.as_ref();
        let session_options = options.onnxruntime.session_options();
        let first = Session::from_file(path, &session_options)?;
        let inputs = specs(first.inputs(), path)?;
        let outputs = specs(first.outputs(), path)?;
        let provider = first.provider().to_owned();
        // The others on the device the first one chose (Auto resolved once).
        let pinned = SessionOptions {
            provider: first.cuda_device().map_or(trt_onnx::runtime::Provider::Cpu, |device| trt_onnx::runtime::Provider::Cuda { device }),
            ..session_options
        };
        let mut sessions = vec![first];
        for _ in 1..options.instances.max(1) {
            sessions.push(Session::from_file(path, &pinned)?);
        }
        Ok(OrtTensorBackend { pool: Pool::from_items(sessions), inputs, outputs, provider })
    }

    /// The execution provider the sessions run on (`CPUExecutionProvider`, ...).
    pub fn provider(&self) -> &str {
        &self.provider
    }
}

fn input_view<'a>(name: &str, t: &'a Tensor) -> Result<InputTensor<'a>> {
    let shape = IxDyn(t.shape());
    let err = |e: ndarray::ShapeError| Error::Tensor { tensor: name.to_owned(), problem: e.to_string() };
    Ok(match t.data() {
        TensorData::F32(v) => InputTensor::F32(ArrayViewD::from_shape(shape, v).map_err(err)?),
        TensorData::F16(v) => InputTensor::F16(ArrayViewD::from_shape(shape, v).map_err(err)?),
        TensorData::BF16(v) => InputTensor::BF16(ArrayViewD::from_shape(shape, v).map_err(err)?),
        TensorData::I8(v) => InputTensor::I8(ArrayViewD::from_shape(shape, v).map_err(err)?),
        TensorData::U8(v) => InputTensor::U8(ArrayViewD::from_shape(shape, v).map_err(err)?),
        TensorData::I32(v) => InputTensor::I32(ArrayViewD::from_shape(shape, v).map_err(err)?),
        TensorData::I64(v) => InputTensor::I64(ArrayViewD::from_shape(shape, v).map_err(err)?),
        TensorData::Bool(v) => InputTensor::Bool(ArrayViewD::from_shape(shape, v).map_err(err)?),
        #[allow(unreachable_patterns)]
        other => {
            return Err(Error::Tensor { tensor: name.to_owned(), problem: format!("{:?} is not an ONNX Runtime input", other.element()) })
        }
    })
}

fn owned(name: &str, v: &OutputRef<'_>) -> Result<Tensor> {
    // Row-major copies whatever the view's strides.
    macro_rules! copy {
        ($a:expr, $variant:ident) => {
            Tensor::new(name, $a.shape().to_vec(), TensorData::$variant($a.iter().cloned().collect()))
        };
    }
    match v {
        OutputRef::F32(a) => copy!(a, F32),
        OutputRef::F16(a) => copy!(a, F16),
        OutputRef::BF16(a) => copy!(a, BF16),
        OutputRef::I8(a) => copy!(a, I8),
        OutputRef::U8(a) => copy!(a, U8),
        OutputRef::I32(a) => copy!(a, I32),
        OutputRef::I64(a) => copy!(a, I64),
        OutputRef::Bool(a) => copy!(a, Bool),
        OutputRef::Unsupported(t) => {
            Err(Error::Tensor { tensor: name.to_owned(), problem: format!("ONNX Runtime returned {t} values, which are not served") })
        }
        #[allow(unreachable_patterns)]
        _ => Err(Error::Tensor { tensor: name.to_owned(), problem: "ONNX Runtime returned a value of a type not served".into() }),
    }
}

impl TensorBackend for OrtTensorBackend {
    fn name(&self) -> &str {
        "onnxruntime"
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

    fn run(&self, inputs: &[(&str, &Tensor)], outputs: &[&str]) -> Result<Vec<Tensor>> {
        check_inputs(&self.inputs, inputs)?;
        let feeds: Vec<(&str, InputTensor<'_>)> = inputs.iter().map(|(n, t)| Ok((*n, input_view(n, t)?))).collect::<Result<_>>()?;
        let mut session = self.pool.checkout();
        let out =
            session.run_with(&feeds, Some(outputs), |views| Ok(views.iter().map(|(n, v)| owned(n, v)).collect::<Vec<Result<Tensor>>>()))?;
        out.into_iter().collect()
    }
}
