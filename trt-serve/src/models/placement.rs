//! Where a model's instances run: `instance_group` read as Triton reads it,
//! checked against the GPUs this machine has.
//!
//! | config | placement |
//! |---|---|
//! | no `KIND_GPU` group | [`Placement::Unplaced`]: the sum of the counts, where the backend runs (CPU sessions, or TensorRT on the server's GPU) |
//! | `KIND_GPU`, `gpus: [0, 1]`, `count: 2` | two device instances of two instances each, on GPUs 0 and 1 |
//! | `KIND_GPU`, no `gpus` | one device instance of `count` on every visible GPU |
//! | `KIND_GPU`, `gpus: [0, 0]` | two device instances on GPU 0 (a GPU listed twice is placed twice) |
//! | `KIND_GPU`, `gpus: [3]` on a machine with two GPUs | a load error naming GPU 3 and the GPUs there are |
//!
//! Groups without a kind (`KIND_AUTO`) go with a `KIND_GPU` group of the same
//! model. The server opens one backend per device instance and puts them
//! behind trt-nlp's `LeastLoaded`, under one batcher.

use crate::config::{InstanceKind, ModelConfig};
use crate::error::{ServeError, ServeResult};

/// Most instances one model may place, summed over its device instances: a
/// config cannot make the server open backends without bound.
pub const MAX_INSTANCES: usize = 1024;

/// One backend on one GPU: `count` instances (contexts or sessions) on CUDA device `gpu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuInstance {
    /// The CUDA device ordinal (as `CUDA_VISIBLE_DEVICES` leaves them).
    pub gpu: u32,
    /// Instances of this device instance.
    pub count: usize,
}

/// Where a model runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Not placed on GPUs by the config: this many instances, where the backend runs.
    Unplaced {
        /// The sum of the groups' counts.
        instances: usize,
    },
    /// On GPUs, one backend per entry, in config order.
    Gpus(Vec<GpuInstance>),
}

impl Placement {
    /// Instances in all.
    pub fn instances(&self) -> usize {
        match self {
            Placement::Unplaced { instances } => *instances,
            Placement::Gpus(members) => members.iter().map(|m| m.count).sum(),
        }
    }
}

/// The placement of `config` on a machine with `visible_gpus` CUDA devices
/// (`Err(why)`: the driver cannot say; only a `KIND_GPU` model needs it).
pub fn place(config: &ModelConfig, visible_gpus: Result<usize, String>) -> ServeResult<Placement> {
    let name = &config.name;
    if config.instance_kind != InstanceKind::Gpu {
        return Ok(Placement::Unplaced { instances: config.instance_count });
    }
    let visible = match visible_gpus {
        Ok(0) => return Err(ServeError::Unavailable(format!("model '{name}': KIND_GPU, but the CUDA driver reports no GPU"))),
        Ok(n) => n,
        Err(why) => return Err(ServeError::Unavailable(format!("model '{name}': KIND_GPU, but no GPU can be used here: {why}"))),
    };
    let mut members = Vec::new();
    for (i, group) in config.instance_groups.iter().enumerate() {
        let gpus: Vec<u32> = if group.gpus.is_empty() { (0..visible as u32).collect() } else { group.gpus.clone() };
        for gpu in gpus {
            if gpu as usize >= visible {
                let there = if visible == 1 { "GPU 0".to_string() } else { format!("GPUs 0 to {}", visible - 1) };
                return Err(ServeError::invalid(format!(
                    "model '{name}': instance_group {i} lists GPU {gpu}, but this machine has {visible} GPU{} ({there})",
                    if visible == 1 { "" } else { "s" }
                )));
            }
            members.push(GpuInstance { gpu, count: group.count });
        }
    }
    let placement = Placement::Gpus(members);
    if placement.instances() > MAX_INSTANCES {
        return Err(ServeError::invalid(format!(
            "model '{name}': instance_group places {} instances; at most {MAX_INSTANCES} are served",
            placement.instances()
        )));
    }
    Ok(placement)
}
