//! Network definitions written by hand: inputs, layers, outputs.
//!
//! [`Network`] borrows its [`Builder`](crate::Builder) (TensorRT: a network must
//! not outlive its builder). [`Tensor`] handles borrow the network and are
//! checked to belong to it, so a tensor can neither outlive its network nor be
//! wired into another one. Layer parameters are given when the layer is added.
//!
//! Precision: on TensorRT 11.x and TensorRT-RTX networks are strongly typed:
//! every tensor's type follows from the inputs, constants and explicit casts.
//! [`Network::with_precision`] lets one piece of code write an FP32 network and
//! get an FP16 one (see [`Precision`]).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::NonNull;

use trt_sys::ffi;

use crate::call::{call, call_ptr};
use crate::{DataType, Error, Result};

mod intermediate;
pub use intermediate::LayerOutput;

/// Floating-point precision a hand-written network is emitted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// Everything as written.
    #[default]
    AsWritten,
    /// FP16 conversion of an FP32 network: float constants are stored as FP16,
    /// float inputs are cast to FP16 after the input, and the numerically
    /// sensitive layers (normalization, softmax, reductions) run in FP32 with
    /// casts around them. Float outputs stay FP16.
    Fp16,
}

/// A tensor of a network. Cheap to copy; valid while the network lives.
#[derive(Clone, Copy)]
pub struct Tensor<'n> {
    raw: NonNull<ffi::ITensor>,
    network: *const NetworkState,
    _network: PhantomData<&'n ()>,
}

impl std::fmt::Debug for Tensor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor").field("name", &self.name()).field("dims", &self.dims()).finish()
    }
}

impl<'n> Tensor<'n> {
    fn get(&self) -> &ffi::ITensor {
        // SAFETY: alive while the network is ('n).
        unsafe { self.raw.as_ref() }
    }

    fn pin(&self) -> Pin<&'n mut ffi::ITensor> {
        // SAFETY: see Network::pin; tensors are only mutated through shim calls.
        // The same tensor may be passed twice (e.g. `x * x`): the handle is an
        // opaque zero-sized type, so the two references cover no Rust bytes.
        unsafe { Pin::new_unchecked(&mut *self.raw.as_ptr()) }
    }

    /// The tensor's name.
    pub fn name(&self) -> String {
        ffi::tensor_name(self.get()).unwrap_or_default()
    }

    /// Rename the tensor.
    pub fn set_name(&self, name: &str) -> Result<()> {
        call("ITensor::setName", || ffi::tensor_set_name(self.pin(), name)).map(|_| ())
    }

    /// Element type.
    pub fn dtype(&self) -> Result<DataType> {
        let t = ffi::tensor_type(self.get()).map_err(|e| Error::Cpp { operation: "ITensor::getType", what: e.what().into() })?;
        DataType::from_sys(t).ok_or_else(|| Error::InvalidArgument(format!("unknown data type {}", t.repr)))
    }

    /// Dimensions, with -1 for dynamic ones.
    pub fn dims(&self) -> Vec<i64> {
        ffi::tensor_dims(self.get()).unwrap_or_default()
    }

    /// Is this a shape tensor (its values are dimensions)?
    pub fn is_shape_tensor(&self) -> bool {
        ffi::tensor_is_shape(self.get()).unwrap_or(false)
    }
}

/// What is known about a network input or output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// Name.
    pub name: String,
    /// Element type.
    pub dtype: DataType,
    /// Dimensions (-1 = dynamic).
    pub dims: Vec<i64>,
    /// A shape tensor?
    pub is_shape_tensor: bool,
}

impl TensorInfo {
    /// Does any dimension depend on the input (-1)?
    pub fn is_dynamic(&self) -> bool {
        crate::shape::is_dynamic(&self.dims)
    }
}

/// A layer's kind, as TensorRT names it (`kMATRIX_MULTIPLY`, ...).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LayerKind(ffi::LayerType);

impl std::fmt::Debug for LayerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// A layer of a network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerInfo {
    /// Name (TensorRT generates one when none was given).
    pub name: String,
    /// Kind.
    pub kind: LayerKind,
}

macro_rules! op_enum {
    ($(#[$m:meta])* $name:ident => $sys:ident { $($(#[$vm:meta])* $v:ident = $s:ident),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name { $($(#[$vm])* $v),* }
        impl $name {
            fn to_sys(self) -> ffi::$sys {
                match self { $($name::$v => ffi::$sys::$s),* }
            }
        }
    };
}

op_enum!(
    /// Elementwise binary operations.
    ElementWise => ElementWiseOperation {
        /// a + b
        Sum = kSUM, /// a * b
        Prod = kPROD, /// max(a, b)
        Max = kMAX, /// min(a, b)
        Min = kMIN, /// a - b
        Sub = kSUB, /// a / b
        Div = kDIV, /// a ^ b
        Pow = kPOW, /// floor(a / b)
        FloorDiv = kFLOOR_DIV, /// logical and
        And = kAND, /// logical or
        Or = kOR, /// logical xor
        Xor = kXOR, /// a == b
        Equal = kEQUAL, /// a > b
        Greater = kGREATER, /// a < b
        Less = kLESS,
    }
);

op_enum!(
    /// Unary operations.
    Unary => UnaryOperation {
        /// e^x
        Exp = kEXP, /// ln x
        Log = kLOG, /// sqrt x
        Sqrt = kSQRT, /// 1/x
        Recip = kRECIP, /// |x|
        Abs = kABS, /// -x
        Neg = kNEG, /// sin
        Sin = kSIN, /// cos
        Cos = kCOS, /// tanh via activation is usually faster; this is the unary form
        Erf = kERF, /// ceil
        Ceil = kCEIL, /// floor
        Floor = kFLOOR, /// logical not
        Not = kNOT, /// sign
        Sign = kSIGN, /// round half to even
        Round = kROUND,
    }
);

op_enum!(
    /// Reductions.
    Reduce => ReduceOperation {
        /// Sum
        Sum = kSUM, /// Product
        Prod = kPROD, /// Maximum
        Max = kMAX, /// Minimum
        Min = kMIN, /// Mean
        Avg = kAVG,
    }
);

op_enum!(
    /// How a matrix-multiply operand is used.
    MatrixOp => MatrixOperation {
        /// As is.
        None = kNONE, /// Transposed (last two dims).
        Transpose = kTRANSPOSE, /// A vector (last dim).
        Vector = kVECTOR,
    }
);

/// Activation functions, with their parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Activation {
    /// max(0, x)
    Relu,
    /// 1 / (1 + e^-x)
    Sigmoid,
    /// tanh x
    Tanh,
    /// x if x > 0 else alpha * x
    LeakyRelu(f32),
    /// clamp(x, lo, hi)
    Clip(f32, f32),
    /// GELU, exact (erf) form
    Gelu,
    /// GELU, tanh approximation
    GeluTanh,
}

impl Activation {
    fn to_sys(self) -> (ffi::ActivationType, f32, f32) {
        use ffi::ActivationType as A;
        match self {
            Activation::Relu => (A::kRELU, 0.0, 0.0),
            Activation::Sigmoid => (A::kSIGMOID, 0.0, 0.0),
            Activation::Tanh => (A::kTANH, 0.0, 0.0),
            Activation::LeakyRelu(a) => (A::kLEAKY_RELU, a, 0.0),
            Activation::Clip(lo, hi) => (A::kCLIP, lo, hi),
            Activation::Gelu => (A::kGELU_ERF, 0.0, 0.0),
            Activation::GeluTanh => (A::kGELU_TANH, 0.0, 0.0),
        }
    }
}

/// Host data for constants, of any element type TensorRT accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum HostData<'a> {
    /// f32 values.
    F32(&'a [f32]),
    /// f16 values.
    F16(&'a [half::f16]),
    /// bf16 values.
    BF16(&'a [half::bf16]),
    /// i32 values.
    I32(&'a [i32]),
    /// i64 values.
    I64(&'a [i64]),
    /// i8 values.
    I8(&'a [i8]),
    /// bool values.
    Bool(&'a [bool]),
}

impl HostData<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            HostData::F32(v) => v.len(),
            HostData::F16(v) => v.len(),
            HostData::BF16(v) => v.len(),
            HostData::I32(v) => v.len(),
            HostData::I64(v) => v.len(),
            HostData::I8(v) => v.len(),
            HostData::Bool(v) => v.len(),
        }
    }

    /// Element type and little-endian bytes, converted to FP16 when asked.
    pub(crate) fn to_bytes(&self, precision: Precision) -> (DataType, Box<[u8]>) {
        let as_bytes = |b: &[u8]| b.to_vec().into_boxed_slice();
        match (self, precision) {
            (HostData::F32(v), Precision::Fp16) => {
                let h: Vec<half::f16> = v.iter().map(|&x| half::f16::from_f32(x)).collect();
                (DataType::Half, as_bytes(bytemuck::cast_slice(&h)))
            }
            (HostData::F32(v), _) => (DataType::Float, as_bytes(bytemuck::cast_slice(v))),
            (HostData::F16(v), _) => (DataType::Half, as_bytes(bytemuck::cast_slice(v))),
            (HostData::BF16(v), _) => (DataType::BF16, as_bytes(bytemuck::cast_slice(v))),
            (HostData::I32(v), _) => (DataType::Int32, as_bytes(bytemuck::cast_slice(v))),
            (HostData::I64(v), _) => (DataType::Int64, as_bytes(bytemuck::cast_slice(v))),
            (HostData::I8(v), _) => (DataType::Int8, as_bytes(bytemuck::cast_slice(v))),
            (HostData::Bool(v), _) => (DataType::Bool, v.iter().map(|&b| b as u8).collect()),
        }
    }
}

/// What a network owns besides the TensorRT object: constant weights (TensorRT
/// does not copy them before the build) and the precision policy.
struct NetworkState {
    weights: RefCell<Vec<Box<[u8]>>>,
    precision: Precision,
}

/// A network definition. Neither `Send` nor `Sync`: it is used on the thread of
/// its builder (TensorRT: a builder and the objects it creates are used by one
/// thread at a time).
pub struct Network<'b> {
    raw: cxx::UniquePtr<ffi::INetworkDefinition>,
    state: Box<NetworkState>,
    _builder: PhantomData<&'b crate::Builder>,
}

impl std::fmt::Debug for Network<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network").field("inputs", &self.inputs()).field("outputs", &self.outputs()).finish()
    }
}

fn rank_ok(what: &str, dims: &[i64]) -> Result<()> {
    if dims.len() > 8 {
        return Err(Error::InvalidArgument(format!("{what}: rank {} exceeds TensorRT's maximum of 8", dims.len())));
    }
    Ok(())
}

impl<'b> Network<'b> {
    pub(crate) fn new(raw: cxx::UniquePtr<ffi::INetworkDefinition>) -> Self {
        Network {
            raw,
            state: Box::new(NetworkState { weights: RefCell::new(Vec::new()), precision: Precision::AsWritten }),
            _builder: PhantomData,
        }
    }

    /// Emit the layers added from now on in `precision` (see [`Precision`]).
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.state.precision = precision;
        self
    }

    /// The precision policy in force.
    pub fn precision(&self) -> Precision {
        self.state.precision
    }

    // `&self`: see `Builder::pin` for why this is sound.
    #[allow(clippy::mut_from_ref)]
    pub(crate) fn pin(&self) -> Pin<&mut ffi::INetworkDefinition> {
        // SAFETY: the network is !Sync and shim calls do not re-enter Rust code
        // that touches it, so mutable accesses never overlap.
        unsafe { Pin::new_unchecked(&mut *self.raw.as_mut_ptr()) }
    }

    fn get(&self) -> &ffi::INetworkDefinition {
        self.raw.as_ref().expect("non-null network")
    }

    pub(crate) fn raw_ptr(&self) -> *mut ffi::INetworkDefinition {
        self.raw.as_mut_ptr()
    }

    fn id(&self) -> *const NetworkState {
        &*self.state
    }

    fn own<'t>(&self, t: Tensor<'t>) -> Result<Pin<&'t mut ffi::ITensor>> {
        if t.network != self.id() {
            return Err(Error::InvalidArgument(format!("tensor '{}' belongs to another network", t.name())));
        }
        Ok(t.pin())
    }

    /// Re-borrow a tensor of this network with the network's lifetime.
    fn adopt(&self, t: Tensor<'_>) -> Result<Tensor<'_>> {
        self.own(t)?;
        Ok(self.tensor(t.raw))
    }

    fn tensor(&self, raw: NonNull<ffi::ITensor>) -> Tensor<'_> {
        Tensor { raw, network: self.id(), _network: PhantomData }
    }

    /// Output 0 of a layer added by `f`.
    fn layer(
        &self,
        op: &'static str,
        f: impl FnOnce() -> Result<std::result::Result<*mut ffi::ILayer, cxx::Exception>>,
    ) -> Result<Tensor<'_>> {
        let (r, messages) = crate::logger::capture(f);
        let raw = r?.map_err(|e| Error::Cpp { operation: op, what: e.what().to_owned() })?;
        let layer = NonNull::new(raw).ok_or(Error::TensorRt { operation: op, messages })?;
        // SAFETY: a layer returned by the network lives as long as the network.
        let out = call_ptr(op, || ffi::layer_output(unsafe { layer.as_ref() }, 0))?;
        Ok(self.tensor(out))
    }

    fn fp16(&self) -> bool {
        self.state.precision == Precision::Fp16
    }

    /// Add an input. `dims` may hold -1 for dynamic dimensions (then an
    /// optimization profile must give their range). With [`Precision::Fp16`] a
    /// float input is declared as given and cast to FP16 right after.
    pub fn add_input(&self, name: &str, dtype: DataType, dims: &[i64]) -> Result<Tensor<'_>> {
        rank_ok(name, dims)?;
        let t = call_ptr("addInput", || ffi::network_add_input(self.pin(), name, dtype.to_sys(), dims))?;
        let t = self.tensor(t);
        if self.fp16() && dtype == DataType::Float {
            return self.cast(t, DataType::Half);
        }
        Ok(t)
    }

    /// Mark a tensor as a network output, under `name`.
    pub fn mark_output(&self, tensor: Tensor<'_>, name: &str) -> Result<()> {
        let t = self.own(tensor)?;
        call("ITensor::setName", || ffi::tensor_set_name(t, name))?;
        let t = self.own(tensor)?;
        call("markOutput", || ffi::network_mark_output(self.pin(), t))?;
        Ok(())
    }

    /// A constant tensor from host data. The data is copied and kept alive by
    /// the network. With [`Precision::Fp16`], f32 data is stored as f16.
    pub fn constant(&self, dims: &[i64], data: HostData<'_>) -> Result<Tensor<'_>> {
        rank_ok("constant", dims)?;
        let expected: i64 = dims.iter().product();
        if dims.iter().any(|&d| d < 0) || expected != data.len() as i64 {
            return Err(Error::ShapeMismatch {
                tensor: "constant".into(),
                expected: format!("{dims:?} ({expected} elements)"),
                got: format!("{} elements", data.len()),
            });
        }
        let (dtype, bytes) = data.to_bytes(self.state.precision);
        let out = self.layer("addConstant", || Ok(ffi::network_add_constant(self.pin(), dims, dtype.to_sys(), &bytes, expected)))?;
        // The heap block does not move when the Box moves into the Vec.
        self.state.weights.borrow_mut().push(bytes);
        Ok(out)
    }

    /// An activation function.
    pub fn activation(&self, input: Tensor<'_>, kind: Activation) -> Result<Tensor<'_>> {
        let (k, a, b) = kind.to_sys();
        self.layer("addActivation", || Ok(ffi::network_add_activation(self.pin(), self.own(input)?, k, a, b)))
    }

    /// An elementwise binary operation (with broadcasting over size-1 dims).
    pub fn elementwise(&self, a: Tensor<'_>, b: Tensor<'_>, op: ElementWise) -> Result<Tensor<'_>> {
        self.layer("addElementWise", || Ok(ffi::network_add_elementwise(self.pin(), self.own(a)?, self.own(b)?, op.to_sys())))
    }

    /// A unary operation.
    pub fn unary(&self, input: Tensor<'_>, op: Unary) -> Result<Tensor<'_>> {
        self.layer("addUnary", || Ok(ffi::network_add_unary(self.pin(), self.own(input)?, op.to_sys())))
    }

    /// A (batched) matrix multiply.
    pub fn matmul(&self, a: Tensor<'_>, op_a: MatrixOp, b: Tensor<'_>, op_b: MatrixOp) -> Result<Tensor<'_>> {
        self.layer("addMatrixMultiply", || {
            Ok(ffi::network_add_matmul(self.pin(), self.own(a)?, op_a.to_sys(), self.own(b)?, op_b.to_sys()))
        })
    }

    /// Run `f` on `input` in FP32 when the network is being converted to FP16.
    fn in_fp32<'s>(&'s self, input: Tensor<'s>, f: impl FnOnce(Tensor<'s>) -> Result<Tensor<'s>>) -> Result<Tensor<'s>> {
        if self.fp16() && input.dtype()? == DataType::Half {
            let wide = self.cast(input, DataType::Float)?;
            let out = f(wide)?;
            self.cast(out, DataType::Half)
        } else {
            f(input)
        }
    }

    /// Softmax over one axis.
    pub fn softmax(&self, input: Tensor<'_>, axis: usize) -> Result<Tensor<'_>> {
        let axes = axis_mask(&[axis], input.dims().len())?;
        self.in_fp32(self.adopt(input)?, |x| self.layer("addSoftMax", || Ok(ffi::network_add_softmax(self.pin(), self.own(x)?, axes))))
    }

    /// A reduction over `axes`.
    pub fn reduce(&self, input: Tensor<'_>, op: Reduce, axes: &[usize], keep_dims: bool) -> Result<Tensor<'_>> {
        let mask = axis_mask(axes, input.dims().len())?;
        self.in_fp32(self.adopt(input)?, |x| {
            self.layer("addReduce", || Ok(ffi::network_add_reduce(self.pin(), self.own(x)?, op.to_sys(), mask, keep_dims)))
        })
    }

    /// Reshape to `dims` (0 copies the input dimension, -1 is inferred).
    pub fn reshape(&self, input: Tensor<'_>, dims: &[i64]) -> Result<Tensor<'_>> {
        rank_ok("reshape", dims)?;
        self.layer("addShuffle", || Ok(ffi::network_add_shuffle(self.pin(), self.own(input)?, &[], true, dims, &[], true)))
    }

    /// Reshape to a shape given by a shape tensor.
    pub fn reshape_dynamic(&self, input: Tensor<'_>, shape: Tensor<'_>) -> Result<Tensor<'_>> {
        self.layer("addShuffle", || Ok(ffi::network_add_shuffle_dynamic(self.pin(), self.own(input)?, self.own(shape)?)))
    }

    /// Permute dimensions: output dim i is input dim `order[i]`.
    pub fn transpose(&self, input: Tensor<'_>, order: &[i32]) -> Result<Tensor<'_>> {
        check_permutation(order, input.dims().len())?;
        self.layer("addShuffle", || Ok(ffi::network_add_shuffle(self.pin(), self.own(input)?, order, false, &[], &[], true)))
    }

    /// Gather along `axis` with `indices`.
    pub fn gather(&self, data: Tensor<'_>, indices: Tensor<'_>, axis: i32) -> Result<Tensor<'_>> {
        self.layer("addGather", || Ok(ffi::network_add_gather(self.pin(), self.own(data)?, self.own(indices)?, axis)))
    }

    /// Concatenate along `axis`.
    pub fn concat(&self, inputs: &[Tensor<'_>], axis: i32) -> Result<Tensor<'_>> {
        let mut addresses = Vec::with_capacity(inputs.len());
        for t in inputs {
            self.own(*t)?;
            addresses.push(t.raw.as_ptr() as usize);
        }
        // SAFETY: every address is a live tensor of this network (checked above).
        self.layer("addConcatenation", || Ok(unsafe { ffi::network_add_concat(self.pin(), &addresses, axis) }))
    }

    /// A static slice.
    pub fn slice(&self, input: Tensor<'_>, start: &[i64], size: &[i64], stride: &[i64]) -> Result<Tensor<'_>> {
        let rank = input.dims().len();
        if start.len() != rank || size.len() != rank || stride.len() != rank {
            return Err(Error::ShapeMismatch {
                tensor: input.name(),
                expected: format!("start/size/stride of rank {rank}"),
                got: format!("{}/{}/{}", start.len(), size.len(), stride.len()),
            });
        }
        self.layer("addSlice", || Ok(ffi::network_add_slice(self.pin(), self.own(input)?, start, size, stride)))
    }

    /// A slice whose start, size and stride are shape tensors.
    pub fn slice_dynamic(&self, input: Tensor<'_>, start: Tensor<'_>, size: Tensor<'_>, stride: Tensor<'_>) -> Result<Tensor<'_>> {
        self.layer("addSlice", || {
            Ok(ffi::network_add_slice_dynamic(self.pin(), self.own(input)?, self.own(start)?, self.own(size)?, self.own(stride)?))
        })
    }

    /// Convert to another element type.
    pub fn cast(&self, input: Tensor<'_>, to: DataType) -> Result<Tensor<'_>> {
        self.layer("addCast", || Ok(ffi::network_add_cast(self.pin(), self.own(input)?, to.to_sys())))
    }

    /// Normalization over `axes` (LayerNorm when `axes` is the last dimension).
    /// `scale` and `bias` broadcast against the input.
    pub fn normalization<'s>(
        &'s self,
        input: Tensor<'_>,
        scale: Tensor<'_>,
        bias: Tensor<'_>,
        axes: &[usize],
        epsilon: f32,
    ) -> Result<Tensor<'s>> {
        let mask = axis_mask(axes, input.dims().len())?;
        let (scale, bias) = (self.adopt(scale)?, self.adopt(bias)?);
        let wide = |t: Tensor<'s>| -> Result<Pin<&'s mut ffi::ITensor>> {
            if self.fp16() && t.dtype()? == DataType::Half {
                Ok(self.cast(t, DataType::Float)?.pin())
            } else {
                self.own(t)
            }
        };
        self.in_fp32(self.adopt(input)?, |x| {
            let (s, b) = (wide(scale)?, wide(bias)?);
            self.layer("addNormalization", || Ok(ffi::network_add_normalization(self.pin(), self.own(x)?, s, b, mask, epsilon)))
        })
    }

    /// Elementwise `cond ? a : b`.
    pub fn select(&self, cond: Tensor<'_>, a: Tensor<'_>, b: Tensor<'_>) -> Result<Tensor<'_>> {
        self.layer("addSelect", || Ok(ffi::network_add_select(self.pin(), self.own(cond)?, self.own(a)?, self.own(b)?)))
    }

    /// A copy of the input.
    pub fn identity(&self, input: Tensor<'_>) -> Result<Tensor<'_>> {
        self.layer("addIdentity", || Ok(ffi::network_add_identity(self.pin(), self.own(input)?)))
    }

    /// The input's shape as a 1-D i64 shape tensor.
    pub fn shape(&self, input: Tensor<'_>) -> Result<Tensor<'_>> {
        self.layer("addShape", || Ok(ffi::network_add_shape(self.pin(), self.own(input)?)))
    }

    /// A 1-D tensor of `length` elements: `start + i * delta` (a constant fill when `delta` is 0).
    pub fn fill(&self, length: i64, start: f64, delta: f64, dtype: DataType) -> Result<Tensor<'_>> {
        self.layer("addFill", || Ok(ffi::network_add_fill(self.pin(), length, start, delta, dtype.to_sys())))
    }

    /// Quantize to `to` (Int8, Fp8, ...) with `scale` (explicit Q/DQ).
    pub fn quantize(&self, input: Tensor<'_>, scale: Tensor<'_>, to: DataType) -> Result<Tensor<'_>> {
        self.layer("addQuantize", || Ok(ffi::network_add_quantize(self.pin(), self.own(input)?, self.own(scale)?, to.to_sys())))
    }

    /// Dequantize to `to` (Float, Half) with `scale`.
    pub fn dequantize(&self, input: Tensor<'_>, scale: Tensor<'_>, to: DataType) -> Result<Tensor<'_>> {
        self.layer("addDequantize", || Ok(ffi::network_add_dequantize(self.pin(), self.own(input)?, self.own(scale)?, to.to_sys())))
    }

    fn info(&self, raw: *mut ffi::ITensor) -> Option<TensorInfo> {
        let t = self.tensor(NonNull::new(raw)?);
        Some(TensorInfo { name: t.name(), dtype: t.dtype().ok()?, dims: t.dims(), is_shape_tensor: t.is_shape_tensor() })
    }

    /// The network's inputs.
    pub fn inputs(&self) -> Vec<TensorInfo> {
        let n = ffi::network_nb_inputs(self.get()).unwrap_or(0);
        (0..n).filter_map(|i| self.info(ffi::network_input(self.get(), i).ok()?)).collect()
    }

    /// The network's outputs.
    pub fn outputs(&self) -> Vec<TensorInfo> {
        let n = ffi::network_nb_outputs(self.get()).unwrap_or(0);
        (0..n).filter_map(|i| self.info(ffi::network_output(self.get(), i).ok()?)).collect()
    }

    /// Every layer, in order.
    pub fn layers(&self) -> Vec<LayerInfo> {
        let n = ffi::network_nb_layers(self.get()).unwrap_or(0);
        (0..n)
            .filter_map(|i| {
                let l = NonNull::new(ffi::network_layer(self.get(), i).ok()?)?;
                // SAFETY: layers live as long as the network.
                let l = unsafe { l.as_ref() };
                Some(LayerInfo { name: ffi::layer_name(l).ok()?, kind: LayerKind(ffi::layer_type(l).ok()?) })
            })
            .collect()
    }

    /// Is the network strongly typed (always on 11.x and TensorRT-RTX)?
    pub fn is_strongly_typed(&self) -> bool {
        ffi::network_is_strongly_typed(self.get()).unwrap_or(true)
    }
}

/// TensorRT's axis bit mask, with the axes checked against the rank.
fn axis_mask(axes: &[usize], rank: usize) -> Result<u32> {
    let mut mask = 0u32;
    for &a in axes {
        if a >= rank {
            return Err(Error::InvalidArgument(format!("axis {a} out of range for rank {rank}")));
        }
        mask |= 1 << a;
    }
    Ok(mask)
}

fn check_permutation(order: &[i32], rank: usize) -> Result<()> {
    let mut seen = vec![false; rank];
    let ok = order.len() == rank
        && order.iter().all(|&o| {
            let fresh = (0..rank as i32).contains(&o) && !seen[o as usize];
            if fresh {
                seen[o as usize] = true;
            }
            fresh
        });
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!("{order:?} is not a permutation of {rank} dimensions")))
    }
}
