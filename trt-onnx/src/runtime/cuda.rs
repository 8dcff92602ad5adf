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
    static COUNT: OnceCell<std::result::Result<usize, String>> = OnceCell::new();
    COUNT.get_or_init(probe_driver).clone().map_err(|reason| Error::CudaDriver { reason })
}

/// Whether sessions can run on CUDA here: the ONNX Runtime library loads
/// and has the CUDA provider, and the driver reports a GPU. For choosing
/// defaults (a server puts a model on the GPU where this holds); an explicit
/// [`Provider::Cuda`](super::Provider::Cuda) still reports why it cannot run.
pub fn cuda_usable() -> bool {
    OrtLibrary::load().is_ok_and(|l| l.has_provider("CUDAExecutionProvider")) && cuda_device_count().is_ok_and(|n| n > 0)
}

fn probe_driver() -> std::result::Result<usize, String> {
    // SAFETY: the driver library's initialisers are benign; the handle stays
    // loaded for the process (as every CUDA user keeps it).
    let lib = unsafe { libloading::Library::new("libcuda.so.1") }.map_err(|e| format!("libcuda.so.1 cannot be loaded: {e}"))?;
    type Init = unsafe extern "C" fn(u32) -> i32;
    type Count = unsafe extern "C" fn(*mut i32) -> i32;
    // SAFETY: the symbols' C signatures are the driver API's `cuInit` and `cuDeviceGetCount`.
    let (init, count) = unsafe {
        let init: libloading::Symbol<'_, Init> = lib.get(b"cuInit\0").map_err(|e| format!("libcuda.so.1 has no cuInit: {e}"))?;
        let count: libloading::Symbol<'_, Count> =
            lib.get(b"cuDeviceGetCount\0").map_err(|e| format!("libcuda.so.1 has no cuDeviceGetCount: {e}"))?;
        (*init, *count)
    };
    // SAFETY: cuInit takes flags (0) and may be called more than once.
    match unsafe { init(0) } {
        0 => {}
        100 => return Ok(0), // CUDA_ERROR_NO_DEVICE
        35 => return Err("the driver is older than this CUDA runtime (CUDA_ERROR_INSUFFICIENT_DRIVER)".into()),
        code => return Err(format!("cuInit failed with CUresult {code}")),
    }
    let mut n = 0i32;
    // SAFETY: `n` is a valid out-pointer.
    let code = unsafe { count(&mut n) };
    std::mem::forget(lib);
    if code != 0 {
        return Err(format!("cuDeviceGetCount failed with CUresult {code}"));
    }
    Ok(n.max(0) as usize)
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
