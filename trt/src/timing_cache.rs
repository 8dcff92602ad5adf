//! Timing caches: kernel timing results that make later builds faster. They
//! round-trip through files and can be merged.

use std::path::Path;
use std::pin::Pin;

use trt_sys::ffi;

use crate::call::{call_bool, call_owned};
use crate::serialized::SerializedEngine;
use crate::{Error, Result};

/// A timing cache (create it with [`BuilderConfig::create_timing_cache`](crate::BuilderConfig::create_timing_cache)).
pub struct TimingCache {
    raw: cxx::UniquePtr<ffi::ITimingCache>,
}

// SAFETY: a timing cache has no thread affinity; `&mut self` for mutation.
unsafe impl Send for TimingCache {}

impl std::fmt::Debug for TimingCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TimingCache")
    }
}

impl TimingCache {
    pub(crate) fn new(raw: cxx::UniquePtr<ffi::ITimingCache>) -> Self {
        TimingCache { raw }
    }

    pub(crate) fn get(&self) -> &ffi::ITimingCache {
        self.raw.as_ref().expect("non-null timing cache")
    }

    pub(crate) fn raw_ptr(&self) -> *mut ffi::ITimingCache {
        self.raw.as_mut_ptr()
    }

    /// The cache's bytes.
    pub fn serialize(&self) -> Result<Vec<u8>> {
        let mem = call_owned("ITimingCache::serialize", || ffi::timing_cache_serialize(self.get()))?;
        Ok(SerializedEngine::from_host_memory(mem).into_bytes())
    }

    /// Write the cache to `path` atomically.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        crate::fsutil::write_atomic(path.as_ref(), &self.serialize()?)
    }

    /// Merge another cache's entries into this one.
    pub fn combine(&mut self, other: &TimingCache, ignore_mismatch: bool) -> Result<()> {
        let raw: Pin<&mut ffi::ITimingCache> = self.raw.as_mut().ok_or_else(|| Error::InvalidArgument("null timing cache".into()))?;
        call_bool("ITimingCache::combine", || ffi::timing_cache_combine(raw, other.get(), ignore_mismatch))
    }
}
