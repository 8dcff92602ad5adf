//! Driver detection and [`Device`] (a retained primary context).

use super::cuda_err;
use crate::{Error, Result};
use cudarc::driver::{result, sys, CudaContext, DriverError};
use once_cell::sync::OnceCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Whether the driver library loads (checked once; loading it has no other effect).
fn library_present() -> bool {
    static PRESENT: OnceCell<bool> = OnceCell::new();
    // SAFETY: `is_culib_present` only tries `dlopen` on the driver's file names
    // (running the library's initializers, as any use of CUDA would) and never
    // calls into it.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// Runs a cudarc call that may panic when a driver symbol is missing (an older
/// driver than the `cuda-13000` bindings expect) and turns the panic into an error.
fn no_panic<R>(what: &str, f: impl FnOnce() -> R) -> Result<R> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("unknown panic");
        Error::CudaUnavailable(format!("{what}: the CUDA driver library is unusable: {msg}"))
    })
}

/// The names cudarc tries when loading the driver, for error messages.
fn searched_names() -> String {
    let mut names = cudarc::get_lib_name_candidates("cuda");
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names.join(", ")
}

/// Checks the library and runs `cuInit`. `Ok(false)`: the driver works but reports no device.
fn init_driver() -> Result<bool> {
    if !library_present() {
        return Err(Error::CudaUnavailable(format!(
            "the CUDA driver library could not be loaded (tried {}); install the NVIDIA driver \
             or add the folder holding libcuda.so.1 to LD_LIBRARY_PATH",
            searched_names()
        )));
    }
    match no_panic("cuInit", result::init)? {
        Ok(()) => Ok(true),
        Err(DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE)) => Ok(false),
        Err(e) => Err(Error::CudaUnavailable(format!("cuInit failed: {e}"))),
    }
}

/// Can CUDA be used here: does the driver library load and does `cuInit` succeed?
///
/// Never panics, also without a driver. `true` does not promise a device:
/// see [`device_count`].
pub fn driver_available() -> bool {
    matches!(init_driver(), Ok(true))
}

/// The number of CUDA devices; `Ok(0)` when the driver works but finds no device.
///
/// Returns [`Error::CudaUnavailable`] when there is no usable driver.
pub fn device_count() -> Result<usize> {
    if !init_driver()? {
        return Ok(0);
    }
    let n = no_panic("cuDeviceGetCount", result::device::get_count)?.map_err(cuda_err("cuDeviceGetCount"))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// The CUDA version the installed driver supports, as `(major, minor)`, e.g. `(13, 0)`.
///
/// Returns [`Error::CudaUnavailable`] when the driver library cannot be loaded.
pub fn driver_version() -> Result<(u32, u32)> {
    init_driver()?;
    let mut v: std::ffi::c_int = 0;
    // SAFETY: `v` is a valid out-pointer; the call needs no context.
    no_panic("cuDriverGetVersion", || unsafe { sys::cuDriverGetVersion(&mut v) }.result())?.map_err(cuda_err("cuDriverGetVersion"))?;
    let v = u32::try_from(v).unwrap_or(0);
    Ok((v / 1000, (v % 1000) / 10))
}

/// One GPU: its primary context, retained for as long as this value or anything
/// made from it (streams, buffers, events, graphs) lives.
///
/// Cloning is cheap (an `Arc`) and clones share the context.
///
/// `Send + Sync`: a CUDA context may be current on several threads at once and
/// the driver API is thread-safe; cudarc makes the context current on the
/// calling thread before every call (`CudaContext::bind_to_thread`).
#[derive(Debug, Clone)]
pub struct Device {
    ctx: Arc<CudaContext>,
}

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        *self.ctx == *other.ctx
    }
}
impl Eq for Device {}

impl Device {
    /// Opens device `ordinal` (0-based) by retaining its primary context.
    ///
    /// Errors: [`Error::CudaUnavailable`] without a usable driver or without any
    /// device; [`Error::InvalidArgument`] when `ordinal` is out of range.
    pub fn new(ordinal: usize) -> Result<Device> {
        let count = device_count()?;
        if count == 0 {
            return Err(Error::CudaUnavailable("the CUDA driver is installed but reports no CUDA-capable device".to_owned()));
        }
        if ordinal >= count {
            return Err(Error::InvalidArgument(format!("CUDA device {ordinal} does not exist ({count} device(s): 0..{count})")));
        }
        let ctx = no_panic("cuDevicePrimaryCtxRetain", || CudaContext::new(ordinal))?.map_err(cuda_err("cuDevicePrimaryCtxRetain"))?;
        Ok(Device { ctx })
    }

    /// The ordinal this device was opened with.
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// The device's name, e.g. `"NVIDIA H200"`.
    pub fn name(&self) -> Result<String> {
        self.ctx.name().map_err(cuda_err("cuDeviceGetName"))
    }

    /// The compute capability as `(major, minor)`, e.g. `(9, 0)` for Hopper.
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        let (major, minor) = self.ctx.compute_capability().map_err(cuda_err("cuDeviceGetAttribute"))?;
        Ok((major.max(0) as u32, minor.max(0) as u32))
    }

    /// The device's UUID as `nvidia-smi` and Triton's `gpu_uuid` label write
    /// it: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`. Unlike the ordinal, it
    /// names the same physical GPU whatever `CUDA_VISIBLE_DEVICES` says.
    pub fn uuid(&self) -> Result<String> {
        let raw = self.ctx.uuid().map_err(cuda_err("cuDeviceGetUuid"))?;
        Ok(format_uuid(&raw.bytes.map(|b| b as u8)))
    }

    /// The device's PCI bus id, e.g. `0000:19:00.0` (`cuDeviceGetPCIBusId`).
    pub fn pci_bus_id(&self) -> Result<String> {
        let mut buf = [0 as std::ffi::c_char; 32];
        // SAFETY: `buf` is writable for its whole length, which is passed; the
        // driver writes a NUL-terminated string of at most that many bytes.
        unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as std::ffi::c_int, self.ctx.cu_device()) }
            .result()
            .map_err(cuda_err("cuDeviceGetPCIBusId"))?;
        let bytes: Vec<u8> = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Total device memory in bytes.
    pub fn total_memory(&self) -> Result<usize> {
        self.ctx.total_mem().map_err(cuda_err("cuDeviceTotalMem"))
    }

    /// Device memory that is free right now, in bytes (`cuMemGetInfo`).
    pub fn free_memory(&self) -> Result<usize> {
        Ok(self.memory_info()?.0)
    }

    /// `(free, total)` device memory in bytes, from one `cuMemGetInfo` call.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.ctx.mem_get_info().map_err(cuda_err("cuMemGetInfo"))
    }

    /// Blocks until all work on every stream of this context has completed.
    pub fn synchronize(&self) -> Result<()> {
        self.ctx.synchronize().map_err(cuda_err("cuCtxSynchronize"))
    }

    /// Returns (and clears) an error that a drop stored because it could not return it.
    pub fn check_deferred_error(&self) -> Result<()> {
        self.ctx.check_err().map_err(cuda_err("a deferred operation (drop or event record)"))
    }

    /// Escape hatch: the cudarc context.
    pub fn cudarc_context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Escape hatch: the raw `CUcontext`. Do not destroy it.
    pub fn as_raw(&self) -> sys::CUcontext {
        self.ctx.cu_ctx()
    }

    pub(crate) fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Makes this device's context current on the calling thread.
    pub fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cuda_err("cuCtxSetCurrent"))
    }

    /// The device whose context is current on the calling thread (what
    /// TensorRT's builder and runtime use when given no device), or `None`
    /// when no context is current there.
    pub fn current() -> Result<Option<Device>> {
        if !init_driver()? {
            return Ok(None);
        }
        if no_panic("cuCtxGetCurrent", result::ctx::get_current)?.map_err(cuda_err("cuCtxGetCurrent"))?.is_none() {
            return Ok(None);
        }
        let mut ordinal: sys::CUdevice = 0;
        // SAFETY: `ordinal` is a valid out-pointer and a context is current on this thread.
        no_panic("cuCtxGetDevice", || unsafe { sys::cuCtxGetDevice(&mut ordinal) }.result())?.map_err(cuda_err("cuCtxGetDevice"))?;
        Device::new(usize::try_from(ordinal).unwrap_or(0)).map(Some)
    }
}

/// 16 UUID bytes in `nvidia-smi`'s form (`GPU-` and 8-4-4-4-12 hex digits).
fn format_uuid(b: &[u8; 16]) -> String {
    let hex = |r: std::ops::Range<usize>| b[r].iter().map(|x| format!("{x:02x}")).collect::<String>();
    format!("GPU-{}-{}-{}-{}-{}", hex(0..4), hex(4..6), hex(6..8), hex(8..10), hex(10..16))
}

#[cfg(test)]
mod uuid_tests {
    #[test]
    fn uuids_are_written_as_nvidia_smi_writes_them() {
        let b: [u8; 16] = [0x1f, 0x2e, 0x3d, 0x4c, 0x5b, 0x6a, 0x79, 0x88, 0x97, 0xa6, 0xb5, 0xc4, 0xd3, 0xe2, 0xf1, 0x00];
        assert_eq!(super::format_uuid(&b), "GPU-1f2e3d4c-5b6a-7988-97a6-b5c4d3e2f100");
    }
}
