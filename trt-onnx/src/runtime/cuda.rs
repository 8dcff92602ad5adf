//! ONNX Runtime's CUDA execution provider: which device, which stream, CUDA
//! graphs, and typed errors for everything that can be missing.
//!
//! Before the provider is registered the driver is asked directly (`libcuda.so.1`
//! through `dlopen`: `cuInit`, `cuDeviceGetCount`), so a machine without a
//! driver or a device index past the last GPU is a typed error
//! ([`Error::CudaDriver`], [`Error::NoSuchDevice`]) rather than ONNX Runtime's
//! text at session creation. When registration fails, the provider's own
//! libraries are looked at: the CUDA provider is `libonnxruntime_providers_cuda.so`
//! and `libonnxruntime_providers_shared.so` beside `libonnxruntime`, and the
//! first needs cuBLAS(Lt), cuRAND and cudart on the loader path; the error
//! ([`Error::ProviderLibrary`]) names the file that is missing or the library
//! the loader could not find for it.

use std::path::Path;

use once_cell::sync::OnceCell;

use super::OrtLibrary;
use crate::{Error, Result};

/// CUDA settings of a session, used when it runs on CUDA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CudaOptions {
    stream: usize,
    /// ONNX Runtime's CUDA-graph mode (`enable_cuda_graph`): the first run
    /// of each graph id captures the whole model as a CUDA graph, later runs
    /// with that id replay it. Needs every input and output bound at fixed
    /// device addresses ([`IoBinding`](super::IoBinding)) and every node on CUDA.
    pub graphs: bool,
    /// Let FP32 matrix products run on TF32 tensor cores (ONNX Runtime's
    /// `use_tf32`, on by default in ONNX Runtime itself). Off by default here:
    /// an FP32 model then computes in FP32 (CUDA within 1e-4 of the CPU); on
    /// it is faster and about 1e-3 off (measured on the default model).
    pub tf32: bool,
    /// The most device memory ONNX Runtime's arena of this session may hold
    /// (`gpu_mem_limit`); `None`: no limit. A run that needs more fails with
    /// ONNX Runtime's allocation error; the session stays usable.
    pub memory_limit: Option<usize>,
}

impl CudaOptions {
    /// Run the session's work on `stream` (a `CUstream` of the device's
    /// primary context) instead of ONNX Runtime's own, so that the caller's
    /// copies and the model are ordered on one stream.
    ///
    /// # Safety
    /// `stream` must be a valid CUDA stream on the session's device and
    /// outlive every session made with these options.
    pub unsafe fn with_stream(mut self, stream: *mut std::ffi::c_void) -> Self {
        self.stream = stream as usize;
        self
    }

    /// The stream given to [`with_stream`](Self::with_stream), if any.
    pub fn stream(&self) -> Option<*mut std::ffi::c_void> {
        (self.stream != 0).then_some(self.stream as *mut std::ffi::c_void)
    }
}

/// How many CUDA devices the driver reports: [`Error::CudaDriver`] where no
/// driver can be loaded or initialised; 0 where it finds no GPU.
pub fn cuda_device_count() -> Result<usize> {
    driver().map(|d| d.devices).map_err(|reason| Error::CudaDriver { reason })
}

/// Whether sessions can run on CUDA here: the ONNX Runtime library loads
/// and has the CUDA provider, and the driver reports a GPU. For choosing
/// defaults (a server puts a model on the GPU where this holds); an explicit
/// [`Provider::Cuda`](super::Provider::Cuda) still reports why it cannot run.
pub fn cuda_usable() -> bool {
    OrtLibrary::load().is_ok_and(|l| l.has_provider("CUDAExecutionProvider")) && cuda_device_count().is_ok_and(|n| n > 0)
}

/// The few driver entry points used here (`libcuda.so.1`, loaded once for the
/// process, as every CUDA user keeps it).
struct Driver {
    devices: usize,
    device_get: unsafe extern "C" fn(*mut i32, i32) -> i32,
    primary_retain: unsafe extern "C" fn(*mut *mut std::ffi::c_void, i32) -> i32,
    primary_release: unsafe extern "C" fn(i32) -> i32,
    push: unsafe extern "C" fn(*mut std::ffi::c_void) -> i32,
    pop: unsafe extern "C" fn(*mut *mut std::ffi::c_void) -> i32,
    synchronize: unsafe extern "C" fn() -> i32,
    _lib: libloading::Library,
}

fn driver() -> std::result::Result<&'static Driver, String> {
    static DRIVER: OnceCell<std::result::Result<Driver, String>> = OnceCell::new();
    DRIVER.get_or_init(load_driver).as_ref().map_err(Clone::clone)
}

fn load_driver() -> std::result::Result<Driver, String> {
    // SAFETY: the driver library's initialisers are benign.
    let lib = unsafe { libloading::Library::new("libcuda.so.1") }.map_err(|e| format!("libcuda.so.1 cannot be loaded: {e}"))?;
    /// A driver symbol as a plain function pointer of type `T`.
    ///
    /// # Safety
    /// `T` must be the symbol's C signature.
    unsafe fn sym<T: Copy>(lib: &libloading::Library, name: &str) -> std::result::Result<T, String> {
        // SAFETY: forwarded to the caller.
        unsafe { lib.get::<T>(name.as_bytes()) }.map(|s| *s).map_err(|e| format!("libcuda.so.1 has no {name}: {e}"))
    }
    // SAFETY: each type is the driver API's signature of that name (cuda.h;
    // the `_v2` names are what cuda.h maps the plain ones to).
    let (init, count, device_get, primary_retain, primary_release, push, pop, synchronize) = unsafe {
        (
            sym::<unsafe extern "C" fn(u32) -> i32>(&lib, "cuInit")?,
            sym::<unsafe extern "C" fn(*mut i32) -> i32>(&lib, "cuDeviceGetCount")?,
            sym(&lib, "cuDeviceGet")?,
            sym(&lib, "cuDevicePrimaryCtxRetain")?,
            sym(&lib, "cuDevicePrimaryCtxRelease_v2")?,
            sym(&lib, "cuCtxPushCurrent_v2")?,
            sym(&lib, "cuCtxPopCurrent_v2")?,
            sym(&lib, "cuCtxSynchronize")?,
        )
    };
    // SAFETY: cuInit takes flags (0) and may be called more than once.
    let devices = match unsafe { init(0) } {
        0 => {
            let mut n = 0i32;
            // SAFETY: `n` is a valid out-pointer.
            match unsafe { count(&mut n) } {
                0 => n.max(0) as usize,
                code => return Err(format!("cuDeviceGetCount failed with CUresult {code}")),
            }
        }
        100 => 0, // CUDA_ERROR_NO_DEVICE
        35 => return Err("the driver is older than this CUDA runtime (CUDA_ERROR_INSUFFICIENT_DRIVER)".into()),
        code => return Err(format!("cuInit failed with CUresult {code}")),
    };
    Ok(Driver { devices, device_get, primary_retain, primary_release, push, pop, synchronize, _lib: lib })
}

/// Waits until all work queued on `device` (its primary context, where ONNX
/// Runtime and this workspace's streams live) has finished, host functions
/// queued on its streams included.
fn synchronize_device(device: u32) -> std::result::Result<(), String> {
    let d = driver()?;
    let check = |what: &str, code: i32| if code == 0 { Ok(()) } else { Err(format!("{what} failed with CUresult {code}")) };
    let (mut dev, mut ctx) = (0i32, std::ptr::null_mut());
    // SAFETY: valid out-pointers; the context retained here is pushed, popped
    // and released in turn on this thread.
    unsafe {
        check("cuDeviceGet", (d.device_get)(&mut dev, device as i32))?;
        check("cuDevicePrimaryCtxRetain", (d.primary_retain)(&mut ctx, dev))?;
        let pushed = check("cuCtxPushCurrent", (d.push)(ctx));
        let synced = pushed.clone().and_then(|()| check("cuCtxSynchronize", (d.synchronize)()));
        if pushed.is_ok() {
            let mut popped = std::ptr::null_mut();
            (d.pop)(&mut popped);
        }
        (d.primary_release)(dev);
        synced
    }
}

/// Keeps a CUDA session's pinned host-memory arena alive until the session
/// is gone and the device has finished what the session queued.
///
/// ONNX Runtime's CUDA kernels stage small host arrays (the pointer lists of
/// batched matrix products over broadcast dimensions, as in grouped-query
/// attention) in pinned memory and free them from a host function queued on
/// the session's stream, which holds a reference to the arena. Where that
/// host function runs after the session has been dropped, its reference is
/// the arena's last, so the arena is destroyed inside the host function;
/// the CUDA call that returns its memory is not permitted there (CUDA error
/// 800) and the exception it throws ends the process. Holding another
/// reference here, and dropping it only after the device has finished the
/// queued work, destroys the arena on the dropping thread instead.
pub(super) struct PinnedArena {
    allocator: Option<ort::memory::Allocator>,
    device: u32,
}

// SAFETY: the allocator is never used, only released once, on drop (the
// `Sync` ONNX Runtime withholds from allocators is about allocating from
// several threads at once).
unsafe impl Sync for PinnedArena {}

impl PinnedArena {
    /// A hold on `session`'s pinned arena on `device` (`None`: ONNX Runtime
    /// gives no pinned allocator for the session, which then keeps none).
    pub(super) fn hold(session: &ort::session::Session, device: u32) -> Option<Self> {
        use ort::memory::{AllocationDevice, Allocator, AllocatorType, MemoryInfo, MemoryType};
        let info = MemoryInfo::new(AllocationDevice::CUDA_PINNED, 0, AllocatorType::Device, MemoryType::CPUOutput);
        match info.and_then(|info| Allocator::new(session, info)) {
            Ok(allocator) => Some(PinnedArena { allocator: Some(allocator), device }),
            Err(e) => {
                tracing::debug!("no pinned-memory allocator to hold for a CUDA session: {e}");
                None
            }
        }
    }
}

impl Drop for PinnedArena {
    fn drop(&mut self) {
        match synchronize_device(self.device) {
            Ok(()) => drop(self.allocator.take()),
            Err(why) => {
                // Releasing now could leave the arena's end to a host function
                // (above); a leak at teardown is the lesser harm.
                tracing::warn!("CUDA device {} could not be synchronized ({why}): its pinned-memory arena is kept", self.device);
                std::mem::forget(self.allocator.take());
            }
        }
    }
}

/// Registers the CUDA provider on `device` with `options`. A failure is
/// typed (module docs); nothing falls back here.
pub(super) fn register(
    builder: &mut ort::session::builder::SessionBuilder,
    library: &OrtLibrary,
    device: u32,
    options: &CudaOptions,
    source: &str,
) -> Result<()> {
    use ort::ep::ExecutionProvider;
    if !library.has_provider("CUDAExecutionProvider") {
        return Err(Error::ProviderLibrary {
            provider: "CUDAExecutionProvider",
            library: library.path().to_owned(),
            reason: format!(
                "this ONNX Runtime is built with {} only (the GPU build is PyPI onnxruntime-gpu)",
                library.providers().join(", ")
            ),
        });
    }
    let count = cuda_device_count()?;
    if device as usize >= count {
        return Err(Error::NoSuchDevice { device, count });
    }
    let mut ep = ort::ep::CUDA::default().with_device_id(device as i32).with_cuda_graph(options.graphs).with_tf32(options.tf32);
    if let Some(limit) = options.memory_limit {
        ep = ep.with_memory_limit(limit);
    }
    if let Some(stream) = options.stream() {
        // SAFETY: the caller of `CudaOptions::with_stream` promised a valid
        // stream that outlives the session.
        ep = unsafe { ep.with_compute_stream(stream.cast()) };
    }
    ep.register(builder).map_err(|e| diagnose(library.path(), &format!("registering CUDA on device {device} for {source}: {e}")))
}

/// The provider libraries' state after a failed registration: which file is
/// missing, or what the loader says about the CUDA provider.
fn diagnose(core: &Path, message: &str) -> Error {
    let dir = core.parent().map(Path::to_owned).unwrap_or_default();
    for name in ["libonnxruntime_providers_shared.so", "libonnxruntime_providers_cuda.so"] {
        let p = dir.join(name);
        if !p.exists() {
            return Error::ProviderLibrary {
                provider: "CUDAExecutionProvider",
                library: p,
                reason: format!("missing (it must sit beside {}); ONNX Runtime said: {message}", core.display()),
            };
        }
    }
    let cuda = dir.join("libonnxruntime_providers_cuda.so");
    // SAFETY: loading the provider runs its initialisers, as ONNX Runtime's
    // own registration just did; the handle is closed again at once.
    match unsafe { libloading::Library::new(&cuda) } {
        Err(e) => Error::ProviderLibrary {
            provider: "CUDAExecutionProvider",
            library: cuda,
            reason: format!(
                "cannot be loaded ({e}); put the CUDA libraries it needs (cuBLAS, cuBLASLt, cuRAND, cudart) on LD_LIBRARY_PATH"
            ),
        },
        Ok(_) => Error::ProviderLibrary { provider: "CUDAExecutionProvider", library: cuda, reason: message.to_owned() },
    }
}
