//! The element types post-processing accepts.

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
    impl Sealed for u8 {}
    impl Sealed for bool {}
}

/// A float element of logits or hidden states: `f32`, `half::f16` or
/// `half::bf16`. Post-processing reads each as f32.
pub trait FloatElement: Copy + Send + Sync + sealed::Sealed {
    /// The value as f32 (exact for every implementing type).
    fn to_f32(self) -> f32;
}

impl FloatElement for f32 {
    fn to_f32(self) -> f32 {
        self
    }
}

impl FloatElement for half::f16 {
    fn to_f32(self) -> f32 {
        half::f16::to_f32(self)
    }
}

impl FloatElement for half::bf16 {
    fn to_f32(self) -> f32 {
        half::bf16::to_f32(self)
    }
}

/// An element of an attention mask: `i32`, `i64` (what the pipeline writes),
/// `u8` or `bool`. Any non-zero value marks a real token.
pub trait MaskElement: Copy + Send + Sync + sealed::Sealed {
    /// Whether this position holds a real token.
    fn is_token(self) -> bool;
}

impl MaskElement for i32 {
    fn is_token(self) -> bool {
        self != 0
    }
}

impl MaskElement for i64 {
    fn is_token(self) -> bool {
        self != 0
    }
}

impl MaskElement for u8 {
    fn is_token(self) -> bool {
        self != 0
    }
}

impl MaskElement for bool {
    fn is_token(self) -> bool {
        self
    }
}
