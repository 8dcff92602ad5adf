//! Element types of TensorRT tensors, one mapping for the whole crate.

/// The element type of a tensor (TensorRT's `nvinfer1::DataType`).
///
/// The numeric values of TensorRT's enum are checked against the headers at
/// compile time in `trt-sys`; this Rust enum is the safe face of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum DataType {
    /// 32-bit float.
    Float,
    /// IEEE 16-bit float.
    Half,
    /// bfloat16.
    BF16,
    /// Signed 8-bit integer (quantized).
    Int8,
    /// Unsigned 8-bit integer.
    Uint8,
    /// Signed 32-bit integer.
    Int32,
    /// Signed 64-bit integer.
    Int64,
    /// Boolean stored as one byte.
    Bool,
    /// 8-bit float (E4M3).
    Fp8,
    /// Signed 4-bit integer, packed two per byte.
    Int4,
    /// 4-bit float (E2M1), packed two per byte.
    Fp4,
    /// 8-bit exponent-only scale type.
    E8M0,
}

impl DataType {
    /// Size of one element in bits (4 for the packed 4-bit types).
    pub const fn bits(self) -> usize {
        match self {
            DataType::Float | DataType::Int32 => 32,
            DataType::Half | DataType::BF16 => 16,
            DataType::Int64 => 64,
            DataType::Int8 | DataType::Uint8 | DataType::Bool | DataType::Fp8 | DataType::E8M0 => 8,
            DataType::Int4 | DataType::Fp4 => 4,
        }
    }

    /// Bytes needed for `count` elements (rounded up for packed 4-bit types).
    pub const fn bytes_for(self, count: usize) -> usize {
        (count * self.bits()).div_ceil(8)
    }

    /// Is this a floating-point type?
    pub const fn is_float(self) -> bool {
        matches!(self, DataType::Float | DataType::Half | DataType::BF16 | DataType::Fp8 | DataType::Fp4)
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            DataType::Float => "f32",
            DataType::Half => "f16",
            DataType::BF16 => "bf16",
            DataType::Int8 => "i8",
            DataType::Uint8 => "u8",
            DataType::Int32 => "i32",
            DataType::Int64 => "i64",
            DataType::Bool => "bool",
            DataType::Fp8 => "fp8",
            DataType::Int4 => "i4",
            DataType::Fp4 => "fp4",
            DataType::E8M0 => "e8m0",
        };
        f.write_str(s)
    }
}

impl DataType {
    /// From the header-checked enum of trt-sys.
    pub(crate) fn from_sys(t: trt_sys::ffi::DataType) -> Option<DataType> {
        use trt_sys::ffi::DataType as S;
        Some(match t {
            S::kFLOAT => DataType::Float,
            S::kHALF => DataType::Half,
            S::kBF16 => DataType::BF16,
            S::kINT8 => DataType::Int8,
            S::kUINT8 => DataType::Uint8,
            S::kINT32 => DataType::Int32,
            S::kINT64 => DataType::Int64,
            S::kBOOL => DataType::Bool,
            S::kFP8 => DataType::Fp8,
            S::kINT4 => DataType::Int4,
            S::kFP4 => DataType::Fp4,
            S::kE8M0 => DataType::E8M0,
            _ => return None,
        })
    }

    /// To the header-checked enum of trt-sys.
    pub(crate) fn to_sys(self) -> trt_sys::ffi::DataType {
        use trt_sys::ffi::DataType as S;
        match self {
            DataType::Float => S::kFLOAT,
            DataType::Half => S::kHALF,
            DataType::BF16 => S::kBF16,
            DataType::Int8 => S::kINT8,
            DataType::Uint8 => S::kUINT8,
            DataType::Int32 => S::kINT32,
            DataType::Int64 => S::kINT64,
            DataType::Bool => S::kBOOL,
            DataType::Fp8 => S::kFP8,
            DataType::Int4 => S::kINT4,
            DataType::Fp4 => S::kFP4,
            DataType::E8M0 => S::kE8M0,
        }
    }
}

/// The TensorRT type of a CUDA buffer's elements.
impl From<trt_cuda::ElementType> for DataType {
    fn from(t: trt_cuda::ElementType) -> Self {
        use trt_cuda::ElementType as E;
        match t {
            E::F32 => DataType::Float,
            E::F16 => DataType::Half,
            E::BF16 => DataType::BF16,
            E::I8 => DataType::Int8,
            E::U8 => DataType::Uint8,
            E::I32 => DataType::Int32,
            E::I64 => DataType::Int64,
            E::Bool => DataType::Bool,
        }
    }
}

/// The buffer element type of a TensorRT type, where one exists
/// (`Fp8`, `Int4`, `Fp4` and `E8M0` have no [`trt_cuda::Element`]).
impl TryFrom<DataType> for trt_cuda::ElementType {
    type Error = DataType;
    fn try_from(t: DataType) -> std::result::Result<Self, DataType> {
        use trt_cuda::ElementType as E;
        Ok(match t {
            DataType::Float => E::F32,
            DataType::Half => E::F16,
            DataType::BF16 => E::BF16,
            DataType::Int8 => E::I8,
            DataType::Uint8 => E::U8,
            DataType::Int32 => E::I32,
            DataType::Int64 => E::I64,
            DataType::Bool => E::Bool,
            DataType::Fp8 | DataType::Int4 | DataType::Fp4 | DataType::E8M0 => return Err(t),
        })
    }
}
