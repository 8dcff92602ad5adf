//! Build configuration: memory, optimization level, profiles, precision flags,
//! timing cache, compatibility, compute-capability targets, progress and cancel.
//!
//! Precision by version:
//! - TensorRT 10.x (weakly typed): [`BuilderConfig::allow_precision`] sets the
//!   FP16/BF16/INT8 builder flags and TensorRT picks per layer.
//! - TensorRT 11.x and TensorRT-RTX (strongly typed): precision comes from the
//!   network's tensor types. Build an FP16 ONNX model, or write the network with
//!   [`Precision::Fp16`](crate::Precision::Fp16); INT8/FP8 through explicit
//!   quantize/dequantize layers. The builder flags do not exist there.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use trt_sys::callbacks::{PanicSlot, ProgressCallbacks, ProgressSink};
use trt_sys::ffi;

use crate::call::{call, call_bool, call_owned};
use crate::network::Network;
use crate::profile::ProfileSpec;
use crate::timing_cache::TimingCache;
use crate::{Builder, Error, Result};

/// Weakly typed precisions TensorRT 10.x may choose per layer.
#[cfg(trt_weakly_typed)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AllowedPrecision {
    /// IEEE half precision.
    Fp16,
    /// bfloat16.
    Bf16,
    /// INT8 (needs a calibrator or explicit dynamic ranges).
    Int8,
}

/// Which GPUs a plan may run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HardwareCompatibility {
    /// Only GPUs like the one it was built on (default).
    None,
    /// Any Ampere or newer GPU.
    AmperePlus,
    /// Any GPU of the same compute capability.
    SameComputeCapability,
}

/// Cancels a running build from any thread (through the progress monitor).
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// Ask the build to stop at its next progress step.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Was cancellation asked for?
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// Wraps the user's callbacks: a cancelled token stops the build.
struct Progress {
    user: Option<Box<dyn ProgressCallbacks>>,
    cancel: CancelToken,
}

impl ProgressCallbacks for Progress {
    fn phase_start(&mut self, phase: &str, parent: &str, steps: i32) {
        if let Some(u) = self.user.as_mut() {
            u.phase_start(phase, parent, steps);
        }
    }
    fn step_complete(&mut self, phase: &str, step: i32) -> bool {
        let go_on = self.user.as_mut().map(|u| u.step_complete(phase, step)).unwrap_or(true);
        if !go_on {
            self.cancel.cancel();
        }
        !self.cancel.is_cancelled()
    }
    fn phase_finish(&mut self, phase: &str) {
        if let Some(u) = self.user.as_mut() {
            u.phase_finish(phase);
        }
    }
}

/// Everything set on a [`BuilderConfig`] that changes the plan, as plain data:
/// the engine cache keys on it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct BuildSettings {
    /// Optimization profiles, in order.
    pub profiles: Vec<ProfileSpec>,
    /// Builder flags switched on (by name), sorted.
    pub flags: std::collections::BTreeSet<String>,
    /// Workspace limit in bytes, if set.
    pub workspace: Option<usize>,
    /// Builder optimization level, if set.
    pub optimization_level: Option<i32>,
    /// Hardware compatibility, if set.
    pub hardware_compatibility: Option<String>,
    /// TensorRT-RTX compute-capability targets, if set.
    pub compute_capabilities: Vec<u32>,
    /// Detailed profiling verbosity.
    pub detailed_profiling: bool,
    /// Anything else the caller wants in the key (e.g. a precision label).
    pub extra: Vec<String>,
}

/// How an engine is built. Borrows its [`Builder`].
pub struct BuilderConfig<'b> {
    raw: cxx::UniquePtr<ffi::IBuilderConfig>,
    builder: &'b Builder,
    settings: BuildSettings,
    timing_cache: Option<TimingCache>,
    monitor: Option<cxx::UniquePtr<ffi::ProgressMonitor>>,
    // TensorRT points at the calibrator until the build ends.
    #[cfg_attr(not(trt_weakly_typed), allow(dead_code))]
    calibrator: Option<cxx::UniquePtr<ffi::Calibrator>>,
    cancel: CancelToken,
    panic: PanicSlot,
}

impl std::fmt::Debug for BuilderConfig<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuilderConfig").field("settings", &self.settings).finish()
    }
}

impl<'b> BuilderConfig<'b> {
    pub(crate) fn new(raw: cxx::UniquePtr<ffi::IBuilderConfig>, builder: &'b Builder) -> Self {
        BuilderConfig {
            raw,
            builder,
            settings: BuildSettings::default(),
            timing_cache: None,
            monitor: None,
            calibrator: None,
            cancel: CancelToken::default(),
            panic: Arc::new(Mutex::new(None)),
        }
    }

    // `&self`: see `Builder::pin` for why this is sound.
    #[allow(clippy::mut_from_ref)]
    pub(crate) fn pin(&self) -> Pin<&mut ffi::IBuilderConfig> {
        // SAFETY: BuilderConfig is !Sync; shim calls do not re-enter Rust code touching it.
        unsafe { Pin::new_unchecked(&mut *self.raw.as_mut_ptr()) }
    }

    fn get(&self) -> &ffi::IBuilderConfig {
        self.raw.as_ref().expect("non-null config")
    }

    pub(crate) fn raw_ptr(&self) -> *mut ffi::IBuilderConfig {
        self.raw.as_mut_ptr()
    }

    /// Limit the scratch memory tactics may use (`MemoryPoolType::kWORKSPACE`).
    pub fn set_workspace(&mut self, bytes: usize) -> Result<&mut Self> {
        call("setMemoryPoolLimit", || ffi::config_set_memory_pool_limit(self.pin(), ffi::MemoryPoolType::kWORKSPACE, bytes))?;
        self.settings.workspace = Some(bytes);
        Ok(self)
    }

    /// The workspace limit.
    pub fn workspace(&self) -> Result<usize> {
        Ok(call("getMemoryPoolLimit", || ffi::config_get_memory_pool_limit(self.get(), ffi::MemoryPoolType::kWORKSPACE))?.0)
    }

    /// Builder optimization level, 0 (fast build) to 5 (most tactics). Default 3.
    pub fn set_optimization_level(&mut self, level: i32) -> Result<&mut Self> {
        if !(0..=5).contains(&level) {
            return Err(Error::InvalidArgument(format!("optimization level {level} is outside 0..=5")));
        }
        call("setBuilderOptimizationLevel", || ffi::config_set_optimization_level(self.pin(), level))?;
        self.settings.optimization_level = Some(level);
        Ok(self)
    }

    /// Add an optimization profile. Checked against the network at build time
    /// (every dynamic input covered, ranks match, min <= opt <= max).
    pub fn add_profile(&mut self, spec: ProfileSpec) -> Result<&mut Self> {
        // Order first (the network is checked at build time): TensorRT's own checks only log.
        for (name, r) in &spec.ranges {
            r.check_order().map_err(|reason| Error::InvalidProfile { tensor: name.clone(), reason })?;
        }
        let mut profile = self.builder.profile()?;
        for (name, range) in &spec.ranges {
            profile.set(name, range).map_err(|e| Error::InvalidProfile { tensor: name.clone(), reason: e.to_string() })?;
        }
        let (index, messages) = call("addOptimizationProfile", || ffi::config_add_profile(self.pin(), profile.get()))?;
        if index < 0 {
            return Err(Error::TensorRt { operation: "addOptimizationProfile", messages });
        }
        self.settings.profiles.push(spec);
        Ok(self)
    }

    /// The profiles added so far.
    pub fn profiles(&self) -> &[ProfileSpec] {
        &self.settings.profiles
    }

    /// How many optimization profiles TensorRT itself holds for this config
    /// (`getNbOptimizationProfiles`), as opposed to what [`profiles`](Self::profiles) recorded.
    pub fn num_profiles_in_tensorrt(&self) -> Result<usize> {
        let (n, _) = call("getNbOptimizationProfiles", || ffi::config_nb_profiles(self.get()))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Everything set so far that changes the plan.
    pub fn settings(&self) -> &BuildSettings {
        &self.settings
    }

    /// Add a label to the settings (and so to the engine cache key).
    pub fn add_cache_label(&mut self, label: &str) -> &mut Self {
        self.settings.extra.push(label.to_owned());
        self
    }

    /// Check the config against a network before building.
    pub(crate) fn validate_for(&self, network: &Network<'_>) -> Result<()> {
        let inputs = network.inputs();
        if self.settings.profiles.is_empty() {
            let dynamic: Vec<String> = inputs.iter().filter(|i| i.is_dynamic()).map(|i| i.name.clone()).collect();
            if !dynamic.is_empty() {
                return Err(Error::MissingProfile { inputs: dynamic });
            }
        }
        for p in &self.settings.profiles {
            p.validate(&inputs)?;
        }
        Ok(())
    }

    fn flag(&mut self, flag: ffi::ShimBuilderFlag, on: bool, feature: &'static str) -> Result<&mut Self> {
        let (ok, _) = call("setFlag", || ffi::config_set_flag(self.pin(), flag, on))?;
        if !ok {
            return Err(Error::Unsupported { feature, version: crate::header_version().to_string() });
        }
        let name = format!("{flag:?}");
        if on {
            self.settings.flags.insert(name);
        } else {
            self.settings.flags.remove(&name);
        }
        Ok(self)
    }

    /// Let TensorRT 10.x use a lower precision where it is faster (weakly typed builds).
    #[cfg(trt_weakly_typed)]
    pub fn allow_precision(&mut self, precision: AllowedPrecision) -> Result<&mut Self> {
        let flag = match precision {
            AllowedPrecision::Fp16 => ffi::ShimBuilderFlag::Fp16,
            AllowedPrecision::Bf16 => ffi::ShimBuilderFlag::Bf16,
            AllowedPrecision::Int8 => ffi::ShimBuilderFlag::Int8,
        };
        self.flag(flag, true, "weakly typed precision flags")
    }

    /// INT8 with implicit quantization: TensorRT runs `calibrator`'s batches
    /// through the network to choose scales (TensorRT 10.x only; on 11.x and
    /// TensorRT-RTX use explicit quantize/dequantize layers instead).
    #[cfg(trt_weakly_typed)]
    pub fn set_int8_calibrator(&mut self, calibrator: Box<dyn trt_sys::callbacks::CalibratorCallbacks>) -> Result<&mut Self> {
        let sink = trt_sys::callbacks::CalibratorSink::new(calibrator, self.panic.clone());
        let mut c = call_owned("new Calibrator", || ffi::new_calibrator(sink))?;
        let pinned = c.as_mut().expect("non-null calibrator");
        call_bool("setInt8Calibrator", || ffi::config_set_int8_calibrator(self.pin(), pinned))?;
        self.calibrator = Some(c);
        self.allow_precision(AllowedPrecision::Int8)
    }

    /// Allow TF32 tensor cores for FP32 math.
    pub fn set_tf32(&mut self, on: bool) -> Result<&mut Self> {
        self.flag(ffi::ShimBuilderFlag::Tf32, on, "the TF32 flag")
    }

    /// Build a version-compatible plan (runs on later TensorRT versions, and on
    /// the lean runtime unless `exclude_lean_runtime`).
    pub fn set_version_compatible(&mut self, on: bool, exclude_lean_runtime: bool) -> Result<&mut Self> {
        self.flag(ffi::ShimBuilderFlag::VersionCompatible, on, "version-compatible plans")?;
        self.flag(ffi::ShimBuilderFlag::ExcludeLeanRuntime, on && exclude_lean_runtime, "excluding the lean runtime")
    }

    /// Allow the plan to be refitted with new weights.
    pub fn set_refittable(&mut self, on: bool) -> Result<&mut Self> {
        self.flag(ffi::ShimBuilderFlag::Refit, on, "refittable plans")
    }

    /// Build for weight streaming: weights may stay in host memory and stream
    /// to the GPU within a budget set on the engine
    /// ([`Engine::set_weight_streaming_budget`](crate::Engine::set_weight_streaming_budget)).
    /// TensorRT refuses it together with refit.
    pub fn set_weight_streaming(&mut self, on: bool) -> Result<&mut Self> {
        self.flag(ffi::ShimBuilderFlag::WeightStreaming, on, "weight streaming")
    }

    /// Which GPUs the plan may run on.
    pub fn set_hardware_compatibility(&mut self, level: HardwareCompatibility) -> Result<&mut Self> {
        use ffi::HardwareCompatibilityLevel as L;
        let l = match level {
            HardwareCompatibility::None => L::kNONE,
            HardwareCompatibility::AmperePlus => L::kAMPERE_PLUS,
            HardwareCompatibility::SameComputeCapability => L::kSAME_COMPUTE_CAPABILITY,
        };
        call("setHardwareCompatibilityLevel", || ffi::config_set_hardware_compatibility(self.pin(), l))?;
        self.settings.hardware_compatibility = Some(format!("{level:?}"));
        Ok(self)
    }

    /// Keep detailed layer information in the plan (for the engine inspector).
    pub fn set_detailed_profiling(&mut self, on: bool) -> Result<&mut Self> {
        let v = if on { ffi::ProfilingVerbosity::kDETAILED } else { ffi::ProfilingVerbosity::kLAYER_NAMES_ONLY };
        call("setProfilingVerbosity", || ffi::config_set_profiling_verbosity(self.pin(), v))?;
        self.settings.detailed_profiling = on;
        Ok(self)
    }

    /// TensorRT-RTX: build ahead of time for these compute capabilities, given as
    /// `major * 10 + minor` (e.g. 80, 86, 89, 120). No GPU is needed to build.
    #[cfg(trt_rtx)]
    pub fn set_compute_capabilities(&mut self, targets: &[u32]) -> Result<&mut Self> {
        let raw: Vec<i32> = targets.iter().map(|&t| t as i32).collect();
        call_bool("setComputeCapability", || ffi::config_set_compute_capabilities(self.pin(), &raw))
            .map_err(|e| Error::InvalidArgument(format!("compute capabilities {targets:?}: {e}")))?;
        self.settings.compute_capabilities = targets.to_vec();
        Ok(self)
    }

    /// An empty timing cache, or one from serialized bytes (e.g. a file's).
    pub fn create_timing_cache(&self, bytes: &[u8]) -> Result<TimingCache> {
        let raw = call_owned("createTimingCache", || ffi::config_create_timing_cache(self.get(), bytes))?;
        Ok(TimingCache::new(raw))
    }

    /// Use `cache` for this build; TensorRT adds new timings to it. It stays owned
    /// by the config (TensorRT needs it until the build ends): read it back with
    /// [`timing_cache`](Self::timing_cache).
    pub fn set_timing_cache(&mut self, cache: TimingCache, ignore_mismatch: bool) -> Result<&mut Self> {
        call_bool("setTimingCache", || ffi::config_set_timing_cache(self.pin(), cache.get(), ignore_mismatch))?;
        self.timing_cache = Some(cache);
        Ok(self)
    }

    /// The timing cache set on this config.
    pub fn timing_cache(&self) -> Option<&TimingCache> {
        self.timing_cache.as_ref()
    }

    /// Receive build progress (for progress bars). Returning `false` from
    /// `step_complete` cancels the build, like [`cancel_token`](Self::cancel_token).
    pub fn set_progress(&mut self, callbacks: Box<dyn ProgressCallbacks>) -> Result<&mut Self> {
        self.install_monitor(Some(callbacks))?;
        Ok(self)
    }

    /// A token that cancels the build from another thread.
    pub fn cancel_token(&mut self) -> Result<CancelToken> {
        if self.monitor.is_none() {
            self.install_monitor(None)?;
        }
        Ok(self.cancel.clone())
    }

    fn install_monitor(&mut self, user: Option<Box<dyn ProgressCallbacks>>) -> Result<()> {
        let progress = Progress { user, cancel: self.cancel.clone() };
        let sink = ProgressSink::new(Box::new(progress), self.panic.clone());
        let mut monitor = call_owned("new ProgressMonitor", || ffi::new_progress_monitor(sink))?;
        let pinned = monitor.as_mut().expect("non-null monitor");
        call("setProgressMonitor", || ffi::config_set_progress_monitor(self.pin(), pinned))?;
        // The previous monitor (if any) is released only after TensorRT points to the new one.
        self.monitor = Some(monitor);
        Ok(())
    }

    pub(crate) fn take_callback_panic(&self) -> Option<String> {
        self.panic.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Whether the last build was cancelled; resets the token so the config
    /// can build again.
    pub(crate) fn take_cancellation(&self) -> bool {
        self.cancel.0.swap(false, Ordering::AcqRel)
    }
}

impl Drop for BuilderConfig<'_> {
    fn drop(&mut self) {
        // Detach the monitor before either is destroyed (field order would drop
        // the config first anyway; this keeps it explicit).
        if self.monitor.is_some() {
            let _ = ffi::config_clear_progress_monitor(self.pin());
        }
    }
}
