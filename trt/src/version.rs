//! TensorRT versions: the headers' (fixed at build time) and the loaded library's.

/// Which TensorRT product a version belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// NVIDIA TensorRT (`libnvinfer`), 10.x or 11.x.
    TensorRt,
    /// NVIDIA TensorRT-RTX (`libtensorrt_rtx`), 1.x.
    TensorRtRtx,
}

/// A TensorRT version, e.g. 10.16.0 or TensorRT-RTX 1.7.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Version {
    /// The product.
    pub flavor: Flavor,
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch version.
    pub patch: u32,
}

impl Version {
    /// Decode `getInferLibVersion()`'s `major * 10000 + minor * 100 + patch`.
    pub const fn from_encoded(flavor: Flavor, encoded: i32) -> Self {
        let v = if encoded < 0 { 0 } else { encoded as u32 };
        Version { flavor, major: v / 10000, minor: (v / 100) % 100, patch: v % 100 }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.flavor {
            Flavor::TensorRt => "TensorRT",
            Flavor::TensorRtRtx => "TensorRT-RTX",
        };
        write!(f, "{name} {}.{}.{}", self.major, self.minor, self.patch)
    }
}
