//! An ONNX Runtime session over one model, with typed inputs and outputs.
//!
//! Inputs are checked against the model before ONNX Runtime sees them (every
//! input given once, element type, rank and fixed dimensions), so a wrong
//! tensor is an [`Error::Tensor`] naming it. Inputs are borrowed views:
//! ONNX Runtime reads the caller's memory in place (no copy). Outputs come
//! back either as views borrowed from the run ([`Session::run_with`]) or as
//! owned arrays ([`Session::run`]).
//!
//! `run` takes `&mut self`: ONNX Runtime allows concurrent runs of one
//! session, but `ort` 2.0 models a run as exclusive; callers that want
//! parallel batches keep one session per worker (a pool), each with its own
//! intra-op threads.

use std::path::Path;

use half::{bf16, f16};
use ndarray::{ArrayD, ArrayViewD};
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{RunOptions, SessionInputValue};
use ort::value::{DynValue, TensorElementType, TensorRef, ValueType};
use ort::AsPointer;

use super::binding::IoBinding;
use super::cuda::{self, CudaOptions, PinnedArena};
use super::OrtLibrary;
use crate::{Error, Result};

/// Element type of a model tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ElementType {
    /// f32
    F32,
    /// f16
    F16,
    /// bf16
    BF16,
    /// f64
    F64,
    /// i64
    I64,
    /// i32
    I32,
    /// i8
    I8,
    /// u8
    U8,
    /// bool
    Bool,
    /// string
    String,
    /// Anything else (complex, 4- and 8-bit types, ...).
    Other,
}

impl ElementType {
    fn from_ort(t: TensorElementType) -> Self {
        match t {
            TensorElementType::Float32 => Self::F32,
            TensorElementType::Float16 => Self::F16,
            TensorElementType::Bfloat16 => Self::BF16,
            TensorElementType::Float64 => Self::F64,
            TensorElementType::Int64 => Self::I64,
            TensorElementType::Int32 => Self::I32,
            TensorElementType::Int8 => Self::I8,
            TensorElementType::Uint8 => Self::U8,
            TensorElementType::Bool => Self::Bool,
            TensorElementType::String => Self::String,
            _ => Self::Other,
        }
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, Self::F32 | Self::F16 | Self::BF16 | Self::F64)
    }
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::BF16 => "bf16",
            Self::F64 => "f64",
            Self::I64 => "i64",
            Self::I32 => "i32",
            Self::I8 => "i8",
            Self::U8 => "u8",
            Self::Bool => "bool",
            Self::String => "string",
            Self::Other => "other",
        };
        f.write_str(s)
    }
}

/// A model input or output: name, element type, shape (-1 for a dynamic
/// dimension), and the symbolic names of dynamic dimensions where the model
/// gives them (`""` otherwise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// Name in the graph.
    pub name: String,
    /// Element type ([`ElementType::Other`] for non-tensor values).
    pub element: ElementType,
    /// Dimensions, -1 where dynamic.
    pub shape: Vec<i64>,
    /// The name of each dynamic dimension (e.g. `batch`), empty where none.
    pub symbols: Vec<String>,
}

impl TensorInfo {
    fn from_outlet(name: &str, t: &ValueType) -> Self {
        match t {
            ValueType::Tensor { ty, shape, dimension_symbols } => TensorInfo {
                name: name.to_owned(),
                element: ElementType::from_ort(*ty),
                shape: shape.iter().copied().collect(),
                symbols: dimension_symbols.iter().map(|s| s.to_string()).collect(),
            },
            _ => TensorInfo { name: name.to_owned(), element: ElementType::Other, shape: Vec::new(), symbols: Vec::new() },
        }
    }
}

/// Which execution provider a session asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Provider {
    /// CUDA on the first GPU where the library has the CUDA provider, a
    /// driver and a GPU are present and the provider registers; else the
    /// CPU, with a log line that says why.
    #[default]
    Auto,
    /// The CPU only.
    Cpu,
    /// CUDA on the GPU of this index; any reason it cannot run there is an
    /// error ([`Error::ProviderLibrary`], [`Error::CudaDriver`],
    /// [`Error::NoSuchDevice`]), never a fall-back to the CPU.
    Cuda {
        /// The device index, as the driver counts them.
        device: u32,
    },
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Provider::Auto => f.write_str("auto"),
            Provider::Cpu => f.write_str("cpu"),
            Provider::Cuda { device } => write!(f, "cuda:{device}"),
        }
    }
}

impl std::str::FromStr for Provider {
    type Err = Error;
    /// `auto`, `cpu`, `cuda` (device 0) or `cuda:N`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Provider::Auto),
            "cpu" => Ok(Provider::Cpu),
            "cuda" => Ok(Provider::Cuda { device: 0 }),
            other => other.strip_prefix("cuda:").and_then(|d| d.parse().ok()).map(|device| Provider::Cuda { device }).ok_or_else(|| {
                Error::Unsupported { operation: "choosing a device", problem: format!("'{other}' is not auto, cpu, cuda or cuda:N") }
            }),
        }
    }
}

/// How much ONNX Runtime rewrites the graph before running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Optimization {
    /// No rewrites (what `trt compare --layers` wants: every tensor kept).
    Disable,
    /// Constant folding, redundant nodes.
    Basic,
    /// Plus fusions (attention, GELU, LayerNorm).
    Extended,
    /// Everything, layout changes included (ONNX Runtime's default).
    #[default]
    All,
}

/// Session settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionOptions {
    /// Threads inside one operator (0: ONNX Runtime's default, one per core).
    pub intra_threads: usize,
    /// Threads across independent operators (0: default; 1 runs the graph sequentially).
    pub inter_threads: usize,
    /// Graph optimization level.
    pub optimization: Optimization,
    /// Execution provider.
    pub provider: Provider,
    /// Stream and CUDA graphs, where the session runs on CUDA.
    pub cuda: CudaOptions,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            intra_threads: 0,
            inter_threads: 1,
            optimization: Optimization::All,
            provider: Provider::Auto,
            cuda: CudaOptions::default(),
        }
    }
}

/// A borrowed input tensor, read in place by ONNX Runtime.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum InputTensor<'a> {
    /// i32 values.
    I32(ArrayViewD<'a, i32>),
    /// i64 values.
    I64(ArrayViewD<'a, i64>),
    /// f32 values.
    F32(ArrayViewD<'a, f32>),
    /// f16 values.
    F16(ArrayViewD<'a, f16>),
    /// bf16 values.
    BF16(ArrayViewD<'a, bf16>),
    /// i8 values.
    I8(ArrayViewD<'a, i8>),
    /// u8 values.
    U8(ArrayViewD<'a, u8>),
    /// bool values.
    Bool(ArrayViewD<'a, bool>),
}

/// `$body` with `$a` bound to the array view of whichever variant `$t` is.
macro_rules! on_input {
    ($t:expr, $a:ident => $body:expr) => {
        match $t {
            InputTensor::I32($a) => $body,
            InputTensor::I64($a) => $body,
            InputTensor::F32($a) => $body,
            InputTensor::F16($a) => $body,
            InputTensor::BF16($a) => $body,
            InputTensor::I8($a) => $body,
            InputTensor::U8($a) => $body,
            InputTensor::Bool($a) => $body,
        }
    };
}

impl InputTensor<'_> {
    fn element(&self) -> ElementType {
        match self {
            Self::I32(_) => ElementType::I32,
            Self::I64(_) => ElementType::I64,
            Self::F32(_) => ElementType::F32,
            Self::F16(_) => ElementType::F16,
            Self::BF16(_) => ElementType::BF16,
            Self::I8(_) => ElementType::I8,
            Self::U8(_) => ElementType::U8,
            Self::Bool(_) => ElementType::Bool,
        }
    }

    fn shape(&self) -> &[usize] {
        on_input!(self, a => a.shape())
    }

    fn value(&self) -> ort::Result<SessionInputValue<'_>> {
        Ok(on_input!(self, a => TensorRef::from_array_view(a.view())?.into()))
    }
}

/// An output borrowed from the run that produced it.
#[derive(Debug)]
#[non_exhaustive]
pub enum OutputRef<'a> {
    /// f32 values.
    F32(ArrayViewD<'a, f32>),
    /// f16 values.
    F16(ArrayViewD<'a, f16>),
    /// bf16 values.
    BF16(ArrayViewD<'a, bf16>),
    /// i32 values.
    I32(ArrayViewD<'a, i32>),
    /// i64 values.
    I64(ArrayViewD<'a, i64>),
    /// i8 values.
    I8(ArrayViewD<'a, i8>),
    /// u8 values.
    U8(ArrayViewD<'a, u8>),
    /// bool values.
    Bool(ArrayViewD<'a, bool>),
    /// A type these helpers do not read (strings, sequences, ...).
    Unsupported(ElementType),
}

impl OutputRef<'_> {
    /// An owned copy.
    pub fn to_owned(&self) -> OutputTensor {
        match self {
            Self::F32(a) => OutputTensor::F32(a.to_owned()),
            Self::F16(a) => OutputTensor::F16(a.to_owned()),
            Self::BF16(a) => OutputTensor::BF16(a.to_owned()),
            Self::I32(a) => OutputTensor::I32(a.to_owned()),
            Self::I64(a) => OutputTensor::I64(a.to_owned()),
            Self::I8(a) => OutputTensor::I8(a.to_owned()),
            Self::U8(a) => OutputTensor::U8(a.to_owned()),
            Self::Bool(a) => OutputTensor::Bool(a.to_owned()),
            Self::Unsupported(t) => OutputTensor::Unsupported(*t),
        }
    }
}

/// An owned output.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OutputTensor {
    /// f32 values.
    F32(ArrayD<f32>),
    /// f16 values.
    F16(ArrayD<f16>),
    /// bf16 values.
    BF16(ArrayD<bf16>),
    /// i32 values.
    I32(ArrayD<i32>),
    /// i64 values.
    I64(ArrayD<i64>),
    /// i8 values.
    I8(ArrayD<i8>),
    /// u8 values.
    U8(ArrayD<u8>),
    /// bool values.
    Bool(ArrayD<bool>),
    /// A type these helpers do not read.
    Unsupported(ElementType),
}

impl OutputTensor {
    /// The values as f32 (floats converted, integers cast); `None` for
    /// unsupported types.
    pub fn to_f32(&self) -> Option<ArrayD<f32>> {
        Some(match self {
            Self::F32(a) => a.clone(),
            Self::F16(a) => a.mapv(f32::from),
            Self::BF16(a) => a.mapv(f32::from),
            Self::I32(a) => a.mapv(|v| v as f32),
            Self::I64(a) => a.mapv(|v| v as f32),
            Self::I8(a) => a.mapv(f32::from),
            Self::U8(a) => a.mapv(f32::from),
            Self::Bool(a) => a.mapv(|v| v as u8 as f32),
            Self::Unsupported(_) => return None,
        })
    }
}

/// One model loaded into ONNX Runtime.
pub struct Session {
    inner: ort::session::Session,
    inputs: Vec<TensorInfo>,
    outputs: Vec<TensorInfo>,
    placement: Placement,
    cuda: CudaOptions,
    source: String,
    /// On CUDA: dropped after `inner` (field order), and shared with the
    /// session's binding, which keeps the ONNX Runtime session alive too.
    pinned: Option<std::sync::Arc<PinnedArena>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("source", &self.source)
            .field("placement", &self.placement)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish()
    }
}

impl Session {
    /// Load the model at `path` (external-data files beside it are found by
    /// ONNX Runtime).
    pub fn from_file(path: impl AsRef<Path>, options: &SessionOptions) -> Result<Self> {
        let path = path.as_ref();
        // Checked here so a missing file is an I/O error, not ONNX Runtime's text.
        std::fs::metadata(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        let source = path.display().to_string();
        let (mut builder, provider) = builder(options, &source)?;
        let inner = builder.commit_from_file(path).map_err(|e| Error::ort(format!("loading {source}"), e))?;
        Ok(Self::wrap(inner, provider, options.cuda, source))
    }

    /// Load a model from bytes (external data is not available this way).
    pub fn from_bytes(bytes: &[u8], options: &SessionOptions) -> Result<Self> {
        let source = format!("<{} bytes in memory>", bytes.len());
        let (mut builder, provider) = builder(options, &source)?;
        let inner = builder.commit_from_memory(bytes).map_err(|e| Error::ort(format!("loading {source}"), e))?;
        Ok(Self::wrap(inner, provider, options.cuda, source))
    }

    fn wrap(inner: ort::session::Session, placement: Placement, cuda: CudaOptions, source: String) -> Self {
        let inputs = inner.inputs().iter().map(|o| TensorInfo::from_outlet(o.name(), o.dtype())).collect();
        let outputs = inner.outputs().iter().map(|o| TensorInfo::from_outlet(o.name(), o.dtype())).collect();
        let pinned = match placement {
            Placement::Cuda(device) => PinnedArena::hold(&inner, device).map(std::sync::Arc::new),
            Placement::Cpu => None,
        };
        Session { inner, inputs, outputs, placement, cuda, source, pinned }
    }

    /// The model's inputs, in graph order.
    pub fn inputs(&self) -> &[TensorInfo] {
        &self.inputs
    }

    /// The model's outputs, in graph order.
    pub fn outputs(&self) -> &[TensorInfo] {
        &self.outputs
    }

    /// The execution provider the session asked for (`CPUExecutionProvider`,
    /// `CUDAExecutionProvider`).
    pub fn provider(&self) -> &str {
        self.placement.name()
    }

    /// The CUDA device the session runs on (`None`: the CPU).
    pub fn cuda_device(&self) -> Option<u32> {
        match self.placement {
            Placement::Cuda(d) => Some(d),
            Placement::Cpu => None,
        }
    }

    /// A binding of inputs and outputs at device addresses, for
    /// [`run_bound`](Self::run_bound); the session must run on CUDA.
    pub fn io_binding(&self) -> Result<IoBinding> {
        let Some(device) = self.cuda_device() else {
            return Err(Error::Unsupported {
                operation: "IO binding",
                problem: format!("{} runs on the CPU; device addresses need a CUDA session", self.source),
            });
        };
        let raw = self.inner.create_binding().map_err(|e| Error::ort(format!("binding {}", self.source), e))?;
        IoBinding::new(raw, device, self.cuda.stream().is_none(), self.pinned.clone())
    }

    /// Runs on the tensors bound in `binding`, replaying CUDA graph `graph`
    /// where the session was made with CUDA graphs (`None`: an ordinary run;
    /// the first runs of a new id capture it). On the caller's stream
    /// ([`CudaOptions::with_stream`]) this returns once the work is enqueued:
    /// work enqueued after it on that stream sees the outputs.
    pub fn run_bound(&mut self, binding: &mut IoBinding, graph: Option<u32>) -> Result<()> {
        let context = format!("running {} on bound tensors", self.source);
        let options = binding.run_options(graph)?.ptr();
        let api = ort::api();
        // SAFETY: the session, run options and binding are live ONNX Runtime
        // objects; the bound memory's validity is the binder's promise.
        super::binding::status(unsafe { (api.RunWithBinding)(self.inner.ptr_mut(), options, binding.raw().ptr()) }, &context)
    }

    /// Where the model came from (a path, or a note for bytes).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Run and copy the outputs out. `outputs`: which to compute (`None`: all).
    pub fn run(&mut self, inputs: &[(&str, InputTensor<'_>)], outputs: Option<&[&str]>) -> Result<Vec<(String, OutputTensor)>> {
        self.run_with(inputs, outputs, |views| Ok(views.iter().map(|(n, v)| ((*n).to_owned(), v.to_owned())).collect()))
    }

    /// Run and hand `read` the outputs as views into ONNX Runtime's memory
    /// (no copy), in the order asked for (`None`: graph order).
    pub fn run_with<R>(
        &mut self,
        inputs: &[(&str, InputTensor<'_>)],
        outputs: Option<&[&str]>,
        read: impl FnOnce(&[(&str, OutputRef<'_>)]) -> Result<R>,
    ) -> Result<R> {
        self.check_inputs(inputs)?;
        let wanted: Vec<&str> = match outputs {
            Some(names) => {
                for n in names {
                    if !self.outputs.iter().any(|o| o.name == *n) {
                        return Err(Error::Tensor { tensor: (*n).to_owned(), problem: format!("{} has no such output", self.source) });
                    }
                }
                names.to_vec()
            }
            None => self.outputs.iter().map(|o| o.name.as_str()).collect(),
        };
        let values: Vec<(&str, SessionInputValue<'_>)> = inputs
            .iter()
            .map(|(n, t)| t.value().map(|v| (*n, v)).map_err(|e| Error::Tensor { tensor: (*n).to_owned(), problem: e.to_string() }))
            .collect::<Result<_>>()?;
        let context = format!("running {}", self.source);
        let selector = wanted.iter().fold(ort::session::OutputSelector::no_default(), |s, n| s.with(*n));
        let options = RunOptions::new().map_err(|e| Error::ort(&context, e))?.with_outputs(selector);
        let result = self.inner.run_with_options(values, &options).map_err(|e| Error::ort(&context, e))?;
        let mut views = Vec::with_capacity(wanted.len());
        for name in &wanted {
            let value = result
                .get(*name)
                .ok_or_else(|| Error::Tensor { tensor: (*name).to_owned(), problem: "ONNX Runtime returned no value".into() })?;
            views.push((*name, view(name, value)?));
        }
        read(&views)
    }

    fn check_inputs(&self, inputs: &[(&str, InputTensor<'_>)]) -> Result<()> {
        for (i, (name, tensor)) in inputs.iter().enumerate() {
            if inputs[..i].iter().any(|(n, _)| n == name) {
                return Err(Error::Tensor { tensor: (*name).to_owned(), problem: "given twice".into() });
            }
            let Some(info) = self.inputs.iter().find(|t| t.name == *name) else {
                let names: Vec<&str> = self.inputs.iter().map(|t| t.name.as_str()).collect();
                return Err(Error::Tensor {
                    tensor: (*name).to_owned(),
                    problem: format!("{} has no such input (inputs: {})", self.source, names.join(", ")),
                });
            };
            if info.element != tensor.element() {
                return Err(Error::Tensor {
                    tensor: (*name).to_owned(),
                    problem: format!("the model takes {}, got {}", info.element, tensor.element()),
                });
            }
            let shape = tensor.shape();
            let fits = shape.len() == info.shape.len() && info.shape.iter().zip(shape).all(|(&d, &s)| d < 0 || d as usize == s);
            if !fits {
                return Err(Error::Tensor {
                    tensor: (*name).to_owned(),
                    problem: format!("the model takes shape {:?} (-1: any), got {shape:?}", info.shape),
                });
            }
        }
        let missing: Vec<&str> =
            self.inputs.iter().filter(|t| !inputs.iter().any(|(n, _)| *n == t.name)).map(|t| t.name.as_str()).collect();
        if !missing.is_empty() {
            return Err(Error::Tensor { tensor: missing.join(", "), problem: "required input(s) not given".into() });
        }
        Ok(())
    }
}

fn view<'a>(name: &str, value: &'a DynValue) -> Result<OutputRef<'a>> {
    let err = |e: ort::Error| Error::Tensor { tensor: name.to_owned(), problem: e.to_string() };
    let Some(ty) = value.dtype().tensor_type() else {
        return Ok(OutputRef::Unsupported(ElementType::Other));
    };
    Ok(match ty {
        TensorElementType::Float32 => OutputRef::F32(value.try_extract_array::<f32>().map_err(err)?),
        TensorElementType::Float16 => OutputRef::F16(value.try_extract_array::<f16>().map_err(err)?),
        TensorElementType::Bfloat16 => OutputRef::BF16(value.try_extract_array::<bf16>().map_err(err)?),
        TensorElementType::Int32 => OutputRef::I32(value.try_extract_array::<i32>().map_err(err)?),
        TensorElementType::Int64 => OutputRef::I64(value.try_extract_array::<i64>().map_err(err)?),
        TensorElementType::Int8 => OutputRef::I8(value.try_extract_array::<i8>().map_err(err)?),
        TensorElementType::Uint8 => OutputRef::U8(value.try_extract_array::<u8>().map_err(err)?),
        TensorElementType::Bool => OutputRef::Bool(value.try_extract_array::<bool>().map_err(err)?),
        other => OutputRef::Unsupported(ElementType::from_ort(other)),
    })
}

/// Where a session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    Cpu,
    Cuda(u32),
}

impl Placement {
    fn name(self) -> &'static str {
        match self {
            Placement::Cpu => "CPUExecutionProvider",
            Placement::Cuda(_) => "CUDAExecutionProvider",
        }
    }
}

/// A session builder with `options` applied, and where it runs.
fn builder(options: &SessionOptions, source: &str) -> Result<(ort::session::builder::SessionBuilder, Placement)> {
    let library = OrtLibrary::load()?;
    let context = |what: &str| format!("{what} for {source}");
    let e = |what: &'static str| move |err: ort::Error| Error::ort(context(what), err);
    let mut b = ort::session::Session::builder(&library.environment).map_err(e("creating a session"))?;
    b = b
        .with_optimization_level(match options.optimization {
            Optimization::Disable => GraphOptimizationLevel::Disable,
            Optimization::Basic => GraphOptimizationLevel::Level1,
            Optimization::Extended => GraphOptimizationLevel::Level2,
            Optimization::All => GraphOptimizationLevel::All,
        })
        .map_err(|err| Error::ort(context("setting the optimization level"), err))?;
    if options.intra_threads > 0 {
        b = b.with_intra_threads(options.intra_threads).map_err(|err| Error::ort(context("setting intra-op threads"), err))?;
    }
    if options.inter_threads > 0 {
        b = b.with_inter_threads(options.inter_threads).map_err(|err| Error::ort(context("setting inter-op threads"), err))?;
    }
    let provider = match options.provider {
        Provider::Cpu => Placement::Cpu,
        Provider::Cuda { device } => {
            cuda::register(&mut b, library, device, &options.cuda, source)?;
            Placement::Cuda(device)
        }
        Provider::Auto => match cuda::register(&mut b, library, 0, &options.cuda, source) {
            Ok(()) => Placement::Cuda(0),
            Err(why) => {
                tracing::info!("{source}: ONNX Runtime runs on the CPU (CUDA cannot be used: {why})");
                Placement::Cpu
            }
        },
    };
    tracing::info!("ONNX Runtime {} runs {source} on {}", library.version(), provider.name());
    Ok((b, provider))
}
