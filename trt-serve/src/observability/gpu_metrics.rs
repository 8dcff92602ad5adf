//! GPU metrics from NVML with Triton's names: `nv_gpu_utilization` (0.0 to
//! 1.0), `nv_gpu_memory_used_bytes` and `nv_gpu_memory_total_bytes`, one
//! sample per GPU labelled `gpu_uuid`, read at each scrape.
//!
//! NVML (`libnvidia-ml.so.1`, installed with the driver) is opened with
//! `dlopen` on first use; where it is absent or does not initialise, there
//! are no GPU metrics (logged once), which is not an error.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::fmt::Write as _;

use once_cell::sync::OnceCell;

type Device = *mut c_void;

#[repr(C)]
struct Memory {
    total: u64,
    free: u64,
    used: u64,
}

#[repr(C)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

struct Nvml {
    count: unsafe extern "C" fn(*mut c_uint) -> c_int,
    handle: unsafe extern "C" fn(c_uint, *mut Device) -> c_int,
    uuid: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int,
    utilization: unsafe extern "C" fn(Device, *mut Utilization) -> c_int,
    memory: unsafe extern "C" fn(Device, *mut Memory) -> c_int,
    _lib: libloading::Library,
}

// SAFETY: NVML's device queries are thread-safe (NVML documents its API as such).
unsafe impl Send for Nvml {}
unsafe impl Sync for Nvml {}

fn open() -> Result<Nvml, String> {
    // SAFETY: NVML's initialisers are benign.
    let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }.map_err(|e| format!("libnvidia-ml.so.1: {e}"))?;
    // SAFETY: the symbols' C signatures are NVML's (nvml.h); the library
    // stays loaded in `_lib` as long as the pointers are used.
    unsafe {
        macro_rules! sym {
            ($name:literal) => {
                *lib.get($name).map_err(|e| format!("NVML: {e}"))?
            };
        }
        let init: unsafe extern "C" fn() -> c_int = sym!(b"nvmlInit_v2\0");
        let code = init();
        if code != 0 {
            return Err(format!("nvmlInit_v2 returned {code}"));
        }
        Ok(Nvml {
            count: sym!(b"nvmlDeviceGetCount_v2\0"),
            handle: sym!(b"nvmlDeviceGetHandleByIndex_v2\0"),
            uuid: sym!(b"nvmlDeviceGetUUID\0"),
            utilization: sym!(b"nvmlDeviceGetUtilizationRates\0"),
            memory: sym!(b"nvmlDeviceGetMemoryInfo\0"),
            _lib: lib,
        })
    }
}

fn nvml() -> Option<&'static Nvml> {
    static NVML: OnceCell<Option<Nvml>> = OnceCell::new();
    NVML.get_or_init(|| match open() {
        Ok(n) => Some(n),
        Err(why) => {
            tracing::info!("no GPU metrics: {why}");
            None
        }
    })
    .as_ref()
}

/// One GPU's sample: UUID, utilization (0.0 to 1.0), memory used and total in bytes.
pub fn samples() -> Vec<(String, f64, u64, u64)> {
    let Some(n) = nvml() else { return Vec::new() };
    let mut out = Vec::new();
    let mut count: c_uint = 0;
    // SAFETY: out-pointers to live locals; the handle comes from NVML.
    unsafe {
        if (n.count)(&mut count) != 0 {
            return out;
        }
        for i in 0..count {
            let mut device: Device = std::ptr::null_mut();
            if (n.handle)(i, &mut device) != 0 {
                continue;
            }
            let mut uuid = [0 as c_char; 96];
            let mut util = Utilization { gpu: 0, memory: 0 };
            let mut mem = Memory { total: 0, free: 0, used: 0 };
            if (n.uuid)(device, uuid.as_mut_ptr(), uuid.len() as c_uint) != 0 || (n.memory)(device, &mut mem) != 0 {
                continue;
            }
            let busy = if (n.utilization)(device, &mut util) == 0 { f64::from(util.gpu) / 100.0 } else { 0.0 };
            let uuid = CStr::from_ptr(uuid.as_ptr()).to_string_lossy().into_owned();
            out.push((uuid, busy, mem.used, mem.total));
        }
    }
    out
}

/// The Prometheus text of the GPU metrics (empty without NVML).
pub fn render() -> String {
    let samples = samples();
    let mut out = String::new();
    if samples.is_empty() {
        return out;
    }
    let families: [(&str, &str, &str); 3] = [
        ("nv_gpu_utilization", "gauge", "GPU utilization rate [0.0 - 1.0)"),
        ("nv_gpu_memory_used_bytes", "gauge", "GPU used memory (bytes)"),
        ("nv_gpu_memory_total_bytes", "gauge", "GPU total memory (bytes)"),
    ];
    for (k, (name, kind, help)) in families.iter().enumerate() {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (uuid, busy, used, total) in &samples {
            let value = match k {
                0 => busy.to_string(),
                1 => used.to_string(),
                _ => total.to_string(),
            };
            let _ = writeln!(out, "{name}{{gpu_uuid=\"{uuid}\"}} {value}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn without_nvml_there_are_no_gpu_metrics_and_with_it_every_gpu_has_all_three() {
        let text = super::render();
        if text.is_empty() {
            println!("no NVML here: no GPU metrics");
            return;
        }
        for name in ["nv_gpu_utilization", "nv_gpu_memory_used_bytes", "nv_gpu_memory_total_bytes"] {
            assert!(text.contains(&format!("# TYPE {name} gauge")) && text.contains(&format!("{name}{{gpu_uuid=\"GPU-")), "{text}");
        }
    }
}
