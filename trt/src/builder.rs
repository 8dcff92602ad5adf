//! The builder: creates networks, configs and profiles, and turns a network
//! into a serialized engine.
//!
//! Ownership (TensorRT: objects created by a builder must be destroyed before
//! it): [`Network`], [`BuilderConfig`] and [`OptimizationProfile`] borrow their
//! [`Builder`], so the compiler rejects dropping the builder first. The builder
//! holds an `Arc` of the loaded library, which is never unloaded anyway.

use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;

use trt_sys::ffi;

use crate::call::{call, call_owned, call_ptr};
use crate::config::BuilderConfig;
use crate::library::Library;
use crate::network::Network;
use crate::profile::OptimizationProfile;
use crate::serialized::SerializedEngine;
use crate::{Error, Result};

/// Builds engines. Not thread-safe in TensorRT: `Send`, not `Sync`.
pub struct Builder {
    raw: NonNull<ffi::IBuilder>,
    library: Arc<Library>,
}

// SAFETY: TensorRT allows a builder to be used from any thread, one at a time
// ("IBuilder ... is not thread-safe"; no thread affinity). `!Sync` keeps it to one.
unsafe impl Send for Builder {}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder").field("version", &self.library.version()).finish()
    }
}

impl Builder {
    /// A builder from the default library ([`Library::load`]).
    pub fn new() -> Result<Builder> {
        Builder::with_library(Library::load()?)
    }

    /// A builder from a given library.
    pub fn with_library(library: Arc<Library>) -> Result<Builder> {
        let factory = library.builder_factory()?;
        // SAFETY: `factory` is createInferBuilder_INTERNAL of a library whose
        // major version matches the headers (checked at load).
        let (raw, messages) = call("createInferBuilder", || unsafe { ffi::create_builder(factory) })?;
        // An error logged during a factory call means failure, whatever came back:
        // the pointer may be invalid. It is leaked rather than deleted.
        match NonNull::new(raw) {
            Some(raw) if messages.is_empty() => Ok(Builder { raw, library }),
            _ => Err(Error::TensorRt { operation: "createInferBuilder", messages }),
        }
    }

    pub(crate) fn raw_ptr(&self) -> *mut ffi::IBuilder {
        self.raw.as_ptr()
    }

    /// The library this builder came from.
    pub fn library(&self) -> &Arc<Library> {
        &self.library
    }

    // `&self` because networks, configs and profiles borrow the builder while it
    // keeps building. The Rust side only holds an opaque, zero-sized handle of the
    // C++ object (no Rust-visible bytes alias), and `!Sync` plus non-reentrant
    // shim calls mean two mutable uses never overlap.
    #[allow(clippy::mut_from_ref)]
    pub(crate) fn pin(&self) -> Pin<&mut ffi::IBuilder> {
        // SAFETY: the pointer is valid for self's lifetime; Builder is !Sync and
        // no shim call re-enters Rust code that could touch the builder, so no
        // two mutable accesses overlap.
        unsafe { Pin::new_unchecked(&mut *self.raw.as_ptr()) }
    }

    /// A new, empty network. On TensorRT 11.x and TensorRT-RTX every network is
    /// strongly typed; on 10.x `strongly_typed` chooses.
    pub fn network(&self, strongly_typed: bool) -> Result<Network<'_>> {
        let raw = call_owned("createNetworkV2", || ffi::builder_create_network(self.pin(), strongly_typed))?;
        Ok(Network::new(raw))
    }

    /// A new build configuration with TensorRT's defaults.
    pub fn config(&self) -> Result<BuilderConfig<'_>> {
        let raw = call_owned("createBuilderConfig", || ffi::builder_create_config(self.pin()))?;
        Ok(BuilderConfig::new(raw, self))
    }

    /// A new optimization profile (owned by the builder; add it to a config).
    pub fn profile(&self) -> Result<OptimizationProfile<'_>> {
        let raw = call_ptr("createOptimizationProfile", || ffi::builder_create_profile(self.pin()))?;
        Ok(OptimizationProfile::new(raw))
    }

    /// Build and serialize an engine. The config is validated first (profiles
    /// cover every dynamic input, ranks match, min <= opt <= max).
    pub fn build(&self, network: &Network<'_>, config: &BuilderConfig<'_>) -> Result<SerializedEngine> {
        config.validate_for(network)?;
        let result = call_owned("buildSerializedNetwork", || ffi::builder_build_serialized(self.pin(), network.pin(), config.pin()));
        let cancelled = config.take_cancellation();
        if let Some(panic) = config.take_callback_panic() {
            return Err(Error::CallbackPanicked(panic));
        }
        if result.is_err() && cancelled {
            return Err(Error::Cancelled);
        }
        Ok(SerializedEngine::from_host_memory(result?))
    }
}

impl Drop for Builder {
    fn drop(&mut self) {
        // SAFETY: created by the factory; deleted once, after everything that
        // borrows it (enforced by lifetimes).
        unsafe { drop(cxx::UniquePtr::from_raw(self.raw.as_ptr())) };
    }
}
