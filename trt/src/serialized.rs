//! Serialized engines (TensorRT "plans"): bytes you can save, load and deserialize.

use std::path::Path;

use crate::{Error, Result};

/// The bytes of a built engine.
#[derive(Clone, PartialEq, Eq)]
pub struct SerializedEngine {
    bytes: Vec<u8>,
}

impl std::fmt::Debug for SerializedEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SerializedEngine({} bytes)", self.bytes.len())
    }
}

impl SerializedEngine {
    pub(crate) fn from_host_memory(memory: cxx::UniquePtr<trt_sys::ffi::IHostMemory>) -> Self {
        let bytes = memory.as_ref().map(|m| trt_sys::ffi::host_memory_bytes(m).to_vec()).unwrap_or_default();
        SerializedEngine { bytes }
    }

    /// Wrap plan bytes (e.g. read from elsewhere). Nothing is checked until deserialization.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        SerializedEngine { bytes }
    }

    /// Read a plan file. An empty file is an error naming it.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        if bytes.is_empty() {
            return Err(Error::InvalidArgument(format!("{}: the plan file is empty", path.display())));
        }
        Ok(SerializedEngine { bytes })
    }

    /// Write the plan to `path` atomically (temporary file, then rename), so a
    /// crash never leaves a truncated plan behind.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        crate::fsutil::write_atomic(path.as_ref(), &self.bytes)
    }

    /// The plan bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Is the plan empty?
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Take the bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}
