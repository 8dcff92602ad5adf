//! Runtime and Engine: deserialize plans and describe their I/O.
//!
//! Ownership (TensorRT: a runtime must outlive the engines it deserialized, an
//! engine its execution contexts): an [`Engine`] holds an `Arc` of its runtime,
//! an [`ExecutionContext`](crate::ExecutionContext) an `Arc` of its engine, and
//! the runtime an `Arc` of the loaded library, so any drop order is safe.

use std::path::Path;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use trt_sys::ffi;

use crate::call::{call, call_owned};
use crate::library::Library;
use crate::profile::ShapeRange;
use crate::serialized::SerializedEngine;
use crate::{DataType, Error, Result};

struct RuntimeInner {
    raw: Mutex<NonNull<ffi::IRuntime>>,
    library: Arc<Library>,
}

// SAFETY: every use of the IRuntime goes through the Mutex, so TensorRT sees one
// thread at a time; the runtime has no thread affinity.
unsafe impl Send for RuntimeInner {}
unsafe impl Sync for RuntimeInner {}

impl Drop for RuntimeInner {
    fn drop(&mut self) {
        let raw = *self.raw.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: created by the factory, deleted once, after all engines (they hold an Arc).
        unsafe { drop(cxx::UniquePtr::from_raw(raw.as_ptr())) };
    }
}

/// Deserializes plans into engines. `Send + Sync` (calls are serialized internally).
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("library", &self.inner.library.path()).finish()
    }
}

impl Runtime {
    /// A runtime from the full library ([`Library::load`]).
    pub fn new() -> Result<Runtime> {
        Runtime::with_library(Library::load()?)
    }

    /// A runtime from a given library (e.g. [`Library::load_lean`]).
    pub fn with_library(library: Arc<Library>) -> Result<Runtime> {
        let factory = library.runtime_factory();
        // SAFETY: createInferRuntime_INTERNAL of a version-checked library.
        let (raw, messages) = call("createInferRuntime", || unsafe { ffi::create_runtime(factory) })?;
        // An error logged during the factory call means failure even with a
        // non-null pointer (the 11.x lean runtime returns an invalid one when CUDA
        // cannot start); such a pointer is leaked, never dereferenced.
        let raw = match NonNull::new(raw) {
            Some(raw) if messages.is_empty() => raw,
            _ => return Err(Error::TensorRt { operation: "createInferRuntime", messages }),
        };
        let mut pinned_raw = raw;
        // SAFETY: valid runtime, used by this thread only here.
        let pinned = unsafe { Pin::new_unchecked(pinned_raw.as_mut()) };
        call("IRuntime::setErrorRecorder", || ffi::runtime_set_error_recorder(pinned))?;
        Ok(Runtime { inner: Arc::new(RuntimeInner { raw: Mutex::new(raw), library }) })
    }

    pub(crate) fn raw_ptr(&self) -> *mut ffi::IRuntime {
        self.inner.raw.lock().unwrap_or_else(|e| e.into_inner()).as_ptr()
    }

    /// The library this runtime came from.
    pub fn library(&self) -> &Arc<Library> {
        &self.inner.library
    }

    /// Deserialize a plan onto `device` (its context is made current for
    /// TensorRT), and remember the device: the engine's contexts then refuse
    /// streams of another GPU.
    pub fn deserialize_on(&self, plan: &[u8], device: &crate::cuda::Device) -> Result<Engine> {
        device.bind()?;
        let mut engine = self.deserialize(plan)?;
        Arc::get_mut(&mut engine.inner).expect("a fresh engine is not shared").device = Some(device.clone());
        Ok(engine)
    }

    /// Deserialize a plan on the thread's current CUDA device (device 0 unless
    /// something else was made current; see [`deserialize_on`](Self::deserialize_on)).
    /// An empty, truncated, foreign or corrupt plan, or a GPU this TensorRT
    /// cannot run on, is an error with TensorRT's own message.
    pub fn deserialize(&self, plan: &[u8]) -> Result<Engine> {
        if plan.is_empty() {
            return Err(Error::InvalidArgument("the plan is empty (0 bytes)".into()));
        }
        let guard = self.inner.raw.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: exclusive through the mutex.
        let pinned = unsafe { Pin::new_unchecked(&mut *guard.as_ptr()) };
        let raw = call_owned("deserializeCudaEngine", || ffi::runtime_deserialize(pinned, plan))?;
        drop(guard);
        Engine::new(raw, self.clone())
    }

    /// Deserialize a plan file; errors name the file.
    pub fn load(&self, path: impl AsRef<Path>) -> Result<Engine> {
        let path = path.as_ref();
        let plan = SerializedEngine::load(path)?;
        self.deserialize(plan.as_bytes()).map_err(|e| match e {
            Error::TensorRt { operation, messages } => Error::TensorRt {
                operation,
                messages: std::iter::once(crate::TrtMessage { code: None, text: format!("while loading {}", path.display()) })
                    .chain(messages)
                    .collect(),
            },
            other => other,
        })
    }
}

/// Input or output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum IoMode {
    /// An input.
    Input,
    /// An output.
    Output,
}

/// Everything an engine says about one I/O tensor, read once at load.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IoTensor {
    /// Name.
    pub name: String,
    /// Input or output.
    pub mode: IoMode,
    /// Element type.
    pub dtype: DataType,
    /// Shape, -1 for dynamic dimensions.
    pub shape: Vec<i64>,
    /// TensorRT's description of the memory format in profile 0 (every
    /// profile's: [`Engine::io_format`]).
    pub format: String,
    /// Whether the format is plain row-major (`kLINEAR`) in profile 0.
    pub linear: bool,
    /// The vectorized dimension in profile 0, or -1.
    pub vectorized_dim: i32,
    /// Components per element in profile 0 (1 for linear).
    pub components_per_element: i32,
    /// A shape tensor (its values are dimensions, on the host).
    pub is_shape_tensor: bool,
    /// Host-side tensor (shape tensors).
    pub on_host: bool,
    /// For inputs: the range of each optimization profile.
    pub profiles: Vec<ShapeRange>,
}

/// An I/O tensor's memory format in one optimization profile (formats may
/// differ between profiles: `getTensorFormat(name, profileIndex)`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IoFormat {
    /// TensorRT's description of the format.
    pub description: String,
    /// Plain row-major (`kLINEAR`).
    pub linear: bool,
    /// The vectorized dimension, or -1.
    pub vectorized_dim: i32,
    /// Components per element for vectorized formats (1 for linear).
    pub components_per_element: i32,
}

impl IoTensor {
    /// Does the shape have a dynamic dimension?
    pub fn is_dynamic(&self) -> bool {
        crate::shape::is_dynamic(&self.shape)
    }
}

pub(crate) struct EngineInner {
    raw: cxx::UniquePtr<ffi::ICudaEngine>,
    pub(crate) io: Vec<IoTensor>,
    /// `formats[i][p]`: the format of `io[i]` in profile `p`.
    pub(crate) formats: Vec<Vec<IoFormat>>,
    pub(crate) profiles: usize,
    /// The GPU it was deserialized onto, when known.
    pub(crate) device: Option<crate::cuda::Device>,
    _runtime: Runtime,
}

// SAFETY: TensorRT engines are thread-safe for the const queries used here and
// for creating execution contexts (serialized by `Engine::create_context`'s lock).
unsafe impl Send for EngineInner {}
unsafe impl Sync for EngineInner {}

impl Drop for EngineInner {
    fn drop(&mut self) {
        // TensorRT frees the engine's device memory on the thread's current device.
        if let Some(device) = &self.device {
            if let Err(e) = device.bind() {
                tracing::error!(target: "trt", "binding GPU {} to destroy an engine failed: {e}", device.ordinal());
            }
        }
    }
}

impl EngineInner {
    pub(crate) fn get(&self) -> &ffi::ICudaEngine {
        self.raw.as_ref().expect("non-null engine")
    }

    /// The runtime that deserialized it (and so the library to make a refitter with).
    pub(crate) fn runtime(&self) -> &Runtime {
        &self._runtime
    }
}

/// A deserialized engine. Cheap to clone (`Arc`); `Send + Sync`.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<EngineInner>,
    context_lock: Arc<Mutex<()>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("io", &self.inner.io).field("profiles", &self.inner.profiles).finish()
    }
}

impl Engine {
    fn new(raw: cxx::UniquePtr<ffi::ICudaEngine>, runtime: Runtime) -> Result<Engine> {
        let e = raw.as_ref().expect("non-null engine");
        let (n, _) = call("getNbIOTensors", || ffi::engine_nb_io(e))?;
        let (profiles, _) = call("getNbOptimizationProfiles", || ffi::engine_nb_profiles(e))?;
        let mut io = Vec::with_capacity(n.max(0) as usize);
        let mut formats = Vec::with_capacity(n.max(0) as usize);
        for i in 0..n {
            let (d, _) = call("getIOTensorName", || ffi::engine_tensor(e, i))?;
            let mode = match d.mode {
                ffi::TensorIOMode::kINPUT => IoMode::Input,
                ffi::TensorIOMode::kOUTPUT => IoMode::Output,
                _ => continue,
            };
            let dtype = DataType::from_sys(d.dtype)
                .ok_or_else(|| Error::InvalidArgument(format!("tensor '{}' has an unknown data type", d.name)))?;
            let mut ranges = Vec::new();
            if mode == IoMode::Input && !d.is_shape_binding {
                for p in 0..profiles {
                    use ffi::OptProfileSelector as S;
                    let get = |w| call("getProfileShape", || ffi::engine_profile_dims(e, &d.name, p, w)).map(|r| r.0);
                    ranges.push(ShapeRange { min: get(S::kMIN)?, opt: get(S::kOPT)?, max: get(S::kMAX)? });
                }
            }
            let mut per_profile = Vec::with_capacity(profiles.max(1) as usize);
            for p in 0..profiles.max(1) {
                let (f, _) = call("getTensorFormat(profile)", || ffi::engine_tensor_format(e, &d.name, p))?;
                per_profile.push(IoFormat {
                    description: f.format_desc,
                    linear: f.format == ffi::TensorFormat::kLINEAR,
                    vectorized_dim: f.vectorized_dim,
                    components_per_element: f.components_per_element,
                });
            }
            formats.push(per_profile);
            io.push(IoTensor {
                name: d.name,
                mode,
                dtype,
                shape: d.shape,
                format: d.format_desc,
                linear: d.format == ffi::TensorFormat::kLINEAR,
                vectorized_dim: d.vectorized_dim,
                components_per_element: d.components_per_element,
                is_shape_tensor: d.is_shape_binding,
                on_host: d.location == ffi::TensorLocation::kHOST,
                profiles: ranges,
            });
        }
        Ok(Engine {
            inner: Arc::new(EngineInner { raw, io, formats, profiles: profiles.max(0) as usize, device: None, _runtime: runtime }),
            context_lock: Arc::new(Mutex::new(())),
        })
    }

    pub(crate) fn raw_ptr(&self) -> *mut ffi::ICudaEngine {
        self.inner.raw.as_mut_ptr()
    }

    /// `f` with the engine mutable, serialized with context creation (the
    /// engine setters TensorRT has apply before contexts exist).
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(Pin<&mut ffi::ICudaEngine>) -> R) -> R {
        let _serial = self.context_lock.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the lock serializes mutation with context creation; the engine lives in `inner`.
        f(unsafe { Pin::new_unchecked(&mut *self.raw_ptr()) })
    }

    /// All I/O tensors, in engine order.
    pub fn io_tensors(&self) -> &[IoTensor] {
        &self.inner.io
    }

    /// One I/O tensor by name.
    pub fn io_tensor(&self, name: &str) -> Result<&IoTensor> {
        self.inner.io.iter().find(|t| t.name == name).ok_or_else(|| Error::UnknownTensor { name: name.to_owned(), context: "engine I/O" })
    }

    /// The position of I/O tensor `name` in [`io_tensors`](Self::io_tensors).
    pub(crate) fn io_index(&self, name: &str) -> Result<usize> {
        self.inner
            .io
            .iter()
            .position(|t| t.name == name)
            .ok_or_else(|| Error::UnknownTensor { name: name.to_owned(), context: "engine I/O" })
    }

    /// The memory format of I/O tensor `name` in optimization profile `profile`.
    pub fn io_format(&self, name: &str, profile: usize) -> Result<&IoFormat> {
        let i = self.io_index(name)?;
        self.inner.formats[i]
            .get(profile)
            .ok_or_else(|| Error::InvalidArgument(format!("profile {profile} does not exist (the engine has {})", self.inner.profiles)))
    }

    /// The formats of every I/O tensor: `[io index][profile]`.
    pub(crate) fn formats(&self) -> &[Vec<IoFormat>] {
        &self.inner.formats
    }

    /// The inputs.
    pub fn inputs(&self) -> impl Iterator<Item = &IoTensor> {
        self.inner.io.iter().filter(|t| t.mode == IoMode::Input)
    }

    /// The outputs.
    pub fn outputs(&self) -> impl Iterator<Item = &IoTensor> {
        self.inner.io.iter().filter(|t| t.mode == IoMode::Output)
    }

    /// The GPU the engine was deserialized onto with [`Runtime::deserialize_on`].
    pub fn device(&self) -> Option<&crate::cuda::Device> {
        self.inner.device.as_ref()
    }

    /// Number of optimization profiles.
    pub fn num_profiles(&self) -> usize {
        self.inner.profiles
    }

    /// Device memory an execution context needs (all profiles).
    pub fn device_memory_size(&self) -> Result<usize> {
        Ok(call("getDeviceMemorySizeV2", || ffi::engine_device_memory_size(self.inner.get()))?.0.max(0) as usize)
    }

    /// Number of layers after optimization.
    pub fn num_layers(&self) -> Result<usize> {
        Ok(call("getNbLayers", || ffi::engine_nb_layers(self.inner.get()))?.0.max(0) as usize)
    }

    /// Layer information from the engine inspector (JSON). Detailed only when
    /// the plan was built with detailed profiling verbosity.
    pub fn layer_info_json(&self) -> Result<String> {
        Ok(call("IEngineInspector::getEngineInformation", || ffi::engine_layer_info(self.inner.get(), true))?.0)
    }

    /// Serialize the engine back into a plan.
    pub fn serialize(&self) -> Result<SerializedEngine> {
        let mem = call_owned("ICudaEngine::serialize", || ffi::engine_serialize(self.inner.get()))?;
        Ok(SerializedEngine::from_host_memory(mem))
    }

    /// `specialization` and `rtx_graphs` are TensorRT-RTX runtime options (-1: default).
    pub(crate) fn create_context_raw(
        &self,
        strategy: ffi::ExecutionContextAllocationStrategy,
        specialization: i32,
        rtx_graphs: i32,
    ) -> Result<cxx::UniquePtr<ffi::IExecutionContext>> {
        // TensorRT allocates the context's activation memory on the thread's current device.
        if let Some(device) = &self.inner.device {
            device.bind()?;
        }
        let _serial = self.context_lock.lock().unwrap_or_else(|e| e.into_inner());
        let ptr = self.inner.raw.as_mut_ptr();
        // SAFETY: creating a context mutates engine bookkeeping; serialized by the lock.
        let pinned = unsafe { Pin::new_unchecked(&mut *ptr) };
        call_owned("createExecutionContext", || ffi::engine_create_context(pinned, strategy, specialization, rtx_graphs))
    }
}
