//! The GPU and the engines that run on it: every command that deserializes a
//! plan goes through here, so "no GPU" and "TensorRT cannot run this plan on
//! this GPU" read the same everywhere.

use std::path::Path;

use trt::cuda::Device;
use trt::{Engine, Runtime, SerializedEngine};

use crate::error::{CliError, Context, Result};

/// GPU 0 and its description (`NVIDIA H200 (compute capability 9.0)`), or
/// the typed reason there is none: for the commands that take no `--device`
/// (`demo`, reports that only name the GPU); those that run a plan on a GPU
/// take `--device N` ([`require_on`]).
pub fn probe() -> trt::Result<(Device, String)> {
    probe_on(0)
}

/// GPU `index` and its description, or the typed reason there is none.
pub fn probe_on(index: u32) -> trt::Result<(Device, String)> {
    let device = Device::new(index as usize)?;
    let (major, minor) = device.compute_capability()?;
    let name = device.name()?;
    Ok((device, format!("{name} (compute capability {major}.{minor})")))
}

/// GPU `index`, or an error saying that `command` needs one and why there is none.
pub fn require_on(command: &str, index: u32) -> Result<(Device, String)> {
    probe_on(index).map_err(|e| CliError::new(format!("{command} needs a GPU TensorRT can run on, and there is none here: {e}")))
}

/// Read a plan file (errors name it).
pub fn read_plan(path: &Path) -> Result<SerializedEngine> {
    SerializedEngine::load(path).about(path)
}

/// Deserialize `plan` (read from `path`) onto `device` (named `gpu`): the
/// error names the file, the GPU and TensorRT's reason.
pub fn load_engine(path: &Path, plan: &SerializedEngine, device: &Device, gpu: &str) -> Result<Engine> {
    let runtime = Runtime::new()?;
    runtime.deserialize_on(plan.as_bytes(), device).map_err(|e| CliError::new(format!("cannot load {} on {gpu}: {e}", path.display())))
}

/// Deserialize `plan` (read from `path`) without asking for a GPU first; on
/// failure the error names the file and TensorRT's reason, plus the missing
/// GPU when that is the likely cause.
pub fn deserialize_anywhere(path: &Path, plan: &SerializedEngine) -> Result<Engine> {
    let runtime = Runtime::new()?;
    runtime.deserialize(plan.as_bytes()).map_err(|e| {
        let why = match probe() {
            Ok((_, gpu)) => format!("on {gpu}"),
            Err(gpu_error) => format!("(TensorRT deserializes plans only with a usable GPU, and this machine has none: {gpu_error})"),
        };
        CliError::new(format!("cannot deserialize the plan {}: {e} {why}", path.display()))
    })
}
