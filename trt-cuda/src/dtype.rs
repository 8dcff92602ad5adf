//! [`ElementType`]: the element types a buffer of this crate may hold.

/// The element type of a [`DeviceBuffer`](crate::DeviceBuffer) or
/// [`PinnedBuffer`](crate::PinnedBuffer): one per [`Element`](crate::Element).
///
/// The tensor libraries above this crate (TensorRT, ONNX Runtime) have richer
/// enums of their own; each converts from this one. Exhaustive, so that those
/// conversions need no fallback: the set is that of the sealed
/// [`Element`](crate::Element) trait, and growing it is a breaking change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// 32-bit float.
    F32,
    /// IEEE 16-bit float.
    F16,
    /// bfloat16.
    BF16,
    /// Signed 8-bit integer.
    I8,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Boolean stored as one byte (0 or 1).
    Bool,
}

impl ElementType {
    /// Size of one element in bits.
    pub const fn bits(self) -> usize {
        match self {
            ElementType::F32 | ElementType::I32 => 32,
            ElementType::F16 | ElementType::BF16 => 16,
            ElementType::I64 => 64,
            ElementType::I8 | ElementType::U8 | ElementType::Bool => 8,
        }
    }

    /// Is this a floating-point type?
    pub const fn is_float(self) -> bool {
        matches!(self, ElementType::F32 | ElementType::F16 | ElementType::BF16)
    }
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ElementType::F32 => "f32",
            ElementType::F16 => "f16",
            ElementType::BF16 => "bf16",
            ElementType::I8 => "i8",
            ElementType::U8 => "u8",
            ElementType::I32 => "i32",
            ElementType::I64 => "i64",
            ElementType::Bool => "bool",
        })
    }
}
