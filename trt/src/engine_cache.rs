//! An on-disk engine cache: build once, load the plan afterwards.
//!
//! The key is a SHA-256 over everything that changes the plan: the model's
//! bytes (and its external weight files), the [`BuildSettings`] (profiles,
//! flags, workspace, level, targets, labels), the loaded TensorRT version, and
//! the target: the compute capabilities given to TensorRT-RTX, else the GPU
//! the plan is built on (the cache's [`EngineCache::with_device`], else the
//! device current on the calling thread, which TensorRT's builder uses, else
//! the CUDA runtime's default device)
//! named by its UUID, PCI bus id and compute capability, with the CUDA version
//! of the driver; else "no-gpu". Two different GPUs therefore never share a
//! plan, even of the same model and name. Any change rebuilds.
//!
//! Files: `<key>.plan` and `<key>.json` (size and SHA-256 of the plan, plus the
//! inputs of the key in readable form). Both are written atomically (temporary
//! file, then rename), the plan first, so a reader that finds the metadata also
//! finds the whole plan; a plan whose size or hash does not match is rebuilt,
//! never returned.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::config::{BuildSettings, BuilderConfig};
use crate::onnx::OnnxParser;
use crate::serialized::SerializedEngine;
use crate::{Builder, Error, Result};

/// Whether a plan came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from the cache.
    Hit,
    /// Built now (and stored).
    Built,
}

/// A folder of cached plans.
#[derive(Debug, Clone)]
pub struct EngineCache {
    dir: PathBuf,
    device: Option<crate::cuda::Device>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Meta {
    plan_bytes: u64,
    plan_sha256: String,
    model: String,
    tensorrt: String,
    target: String,
    settings: serde_json::Value,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The ordinal the CUDA runtime makes current on a thread that chose none
/// (`cudaGetDevice` before any `cudaSetDevice`): CUDA's rule, not a choice of this cache.
const CUDA_RUNTIME_DEFAULT_DEVICE: usize = 0;

/// The build target that goes into the key.
fn target(settings: &BuildSettings, device: Option<&crate::cuda::Device>) -> String {
    if !settings.compute_capabilities.is_empty() {
        return format!("sm{:?}", settings.compute_capabilities);
    }
    // Without a device of its own the builder targets the device current on
    // this thread; where none is, the one the CUDA runtime then makes current
    // (its default device, the first `CUDA_VISIBLE_DEVICES` leaves).
    let found = match device {
        Some(d) => Ok(d.clone()),
        None => match crate::cuda::Device::current() {
            Ok(Some(d)) => Ok(d),
            Ok(None) => crate::cuda::Device::new(CUDA_RUNTIME_DEFAULT_DEVICE).map_err(Error::from),
            Err(e) => Err(Error::from(e)),
        },
    };
    match found.and_then(|d| device_identity(&d)) {
        Ok(identity) => identity,
        Err(_) => "no-gpu".to_owned(),
    }
}

/// What tells one GPU and its software apart in a cache key: name, compute
/// capability, UUID, PCI bus id and the CUDA version the driver supports.
fn device_identity(d: &crate::cuda::Device) -> Result<String> {
    let (major, minor) = d.compute_capability()?;
    let (cuda_major, cuda_minor) = crate::cuda::driver_version()?;
    Ok(format!("{} sm{major}{minor} {} pci {} cuda-driver {cuda_major}.{cuda_minor}", d.name()?, d.uuid()?, d.pci_bus_id()?))
}

/// The ONNX file's bytes plus any sibling files it may reference as external data.
fn model_digest(onnx: &Path) -> Result<(Vec<u8>, Sha256)> {
    let bytes = std::fs::read(onnx).map_err(|e| Error::io(onnx, e))?;
    let mut h = Sha256::new();
    h.update(&bytes);
    // External data lives next to the model; any sibling that is not another
    // model or plan counts (names and contents), so replacing weights rebuilds.
    if let Some(dir) = onnx.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut siblings: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p != onnx)
            .filter(|p| {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                name.ends_with(".bin") || name.ends_with(".data") || name.ends_with(".onnx_data") || name.ends_with(".weights")
            })
            .collect();
        siblings.sort();
        for s in siblings {
            let data = std::fs::read(&s).map_err(|e| Error::io(&s, e))?;
            h.update(s.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default().as_bytes());
            h.update(&data);
        }
    }
    Ok((bytes, h))
}

impl EngineCache {
    /// A cache in `dir` (created when first written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        EngineCache { dir: dir.into(), device: None }
    }

    /// Builds on `device` (its context is made current for the build) and keys
    /// the plans by its identity.
    pub fn with_device(mut self, device: crate::cuda::Device) -> Self {
        self.device = Some(device);
        self
    }

    /// The device plans are built on, when one was given.
    pub fn device(&self) -> Option<&crate::cuda::Device> {
        self.device.as_ref()
    }

    /// The cache folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Build `onnx` with the settings `configure` applies, or load the cached plan.
    pub fn get_or_build(
        &self,
        builder: &Builder,
        onnx: impl AsRef<Path>,
        configure: impl FnOnce(&mut BuilderConfig<'_>) -> Result<()>,
    ) -> Result<(SerializedEngine, CacheOutcome)> {
        let onnx = onnx.as_ref();
        let (bytes, mut h) = model_digest(onnx)?;
        let mut config = builder.config()?;
        configure(&mut config)?;
        let settings = serde_json::to_value(config.settings()).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        let version = builder.library().version().to_string();
        let target = target(config.settings(), self.device.as_ref());
        h.update(settings.to_string().as_bytes());
        h.update(version.as_bytes());
        h.update(target.as_bytes());
        let key = hex(&h.finalize());
        let (plan_path, meta_path) = (self.dir.join(format!("{key}.plan")), self.dir.join(format!("{key}.json")));

        if let Some(plan) = read_verified(&plan_path, &meta_path) {
            return Ok((plan, CacheOutcome::Hit));
        }
        if let Some(device) = &self.device {
            device.bind()?;
        }
        let network = OnnxParser::parse_bytes(builder, &bytes, Some(onnx))?;
        let plan = builder.build(&network, &config)?;
        crate::fsutil::write_atomic(&plan_path, plan.as_bytes())?;
        let meta = Meta {
            plan_bytes: plan.len() as u64,
            plan_sha256: hex(&Sha256::digest(plan.as_bytes())),
            model: onnx.display().to_string(),
            tensorrt: version,
            target,
            settings,
        };
        let json = serde_json::to_vec_pretty(&meta).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        crate::fsutil::write_atomic(&meta_path, &json)?;
        Ok((plan, CacheOutcome::Built))
    }
}

/// The cached plan, only if its metadata exists and its size and hash match.
fn read_verified(plan_path: &Path, meta_path: &Path) -> Option<SerializedEngine> {
    let meta = std::fs::read(meta_path).ok()?;
    let meta: Meta = serde_json::from_slice(&meta).ok()?;
    // The size first: a plan file that cannot match is never read into memory.
    let on_disk = std::fs::metadata(plan_path).ok()?.len();
    if on_disk != meta.plan_bytes {
        tracing::warn!(target: "trt", "engine cache: {} is damaged; rebuilding", plan_path.display());
        return None;
    }
    let bytes = std::fs::read(plan_path).ok()?;
    verified(&meta, bytes, plan_path)
}

/// `bytes`, only if they are the plan `meta` describes.
fn verified(meta: &Meta, bytes: Vec<u8>, plan_path: &Path) -> Option<SerializedEngine> {
    if bytes.len() as u64 != meta.plan_bytes || hex(&Sha256::digest(&bytes)) != meta.plan_sha256 {
        tracing::warn!(target: "trt", "engine cache: {} is damaged; rebuilding", plan_path.display());
        return None;
    }
    Some(SerializedEngine::from_bytes(bytes))
}

/// The metadata reader and the plan check on bytes instead of files: what the
/// fuzz target `engine_cache_meta` drives (`fuzz/`, built with `--cfg fuzzing`).
#[cfg(fuzzing)]
pub fn verify_entry(meta_json: &[u8], plan: &[u8]) -> Option<SerializedEngine> {
    let meta: Meta = serde_json::from_slice(meta_json).ok()?;
    verified(&meta, plan.to_vec(), Path::new("<fuzz>"))
}
