//! Finding the TensorRT and CUDA headers (in `trt-locate`'s order), and reading their version.

use std::path::{Path, PathBuf};

use trt_locate::{Place, ProcessEnv, Tier};

/// The header set the shim is compiled against.
pub struct Headers {
    pub dir: PathBuf,
    pub rtx: bool,
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

const SETUP_HINT: &str = "set TENSORRT_INCLUDE_DIR (or TENSORRT_ROOT) to an NVIDIA TensorRT install, or TRT_DEPS_DIR to a \
folder that the workspace's `scripts/setup` filled (it fetches the TensorRT headers from crates.io and the CUDA headers \
from PyPI; the workspace's own builds set TRT_DEPS_DIR to its .deps/)";

fn listed(places: &[Place]) -> String {
    places.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n")
}

pub fn find_tensorrt() -> Result<Headers, String> {
    let env = ProcessEnv;
    let places = trt_locate::tensorrt_headers(&env).places(None, &env);
    for dir in places.iter().filter_map(|p| p.path.as_deref()) {
        let version_h = dir.join("NvInferVersion.h");
        if dir.join("NvInfer.h").is_file() && version_h.is_file() {
            return parse_version(dir, &version_h);
        }
    }
    let explicit = places.iter().any(|p| p.tier == Tier::Explicit);
    let why = if explicit { "the path given has no NvInfer.h / NvInferVersion.h" } else { "no TensorRT headers found" };
    Err(format!("trt-sys: {why}. Searched:\n{}\nTo fix: {SETUP_HINT}.", listed(&places)))
}

fn define(text: &str, name: &str) -> Option<u32> {
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next() == Some("#define") && it.next() == Some(name)).then(|| it.next()?.parse().ok())?
    })
}

fn parse_version(dir: &Path, file: &Path) -> Result<Headers, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("trt-sys: cannot read {}: {e}", file.display()))?;
    // TensorRT-RTX defines TRT_*_RTX; TensorRT 10.x/11.x define TRT_*_ENTERPRISE
    // (older 10.x releases defined NV_TENSORRT_MAJOR directly).
    let (rtx, prefix) = if define(&text, "TRT_MAJOR_RTX").is_some() { (true, "RTX") } else { (false, "ENTERPRISE") };
    let get = |part: &str| {
        define(&text, &format!("TRT_{part}_{prefix}"))
            .or_else(|| define(&text, &format!("NV_TENSORRT_{part}")))
            .ok_or_else(|| format!("trt-sys: {} has no version define for {part}", file.display()))
    };
    let headers = Headers { dir: dir.to_path_buf(), rtx, major: get("MAJOR")?, minor: get("MINOR")?, patch: get("PATCH")? };
    if !headers.rtx && !(10..=11).contains(&headers.major) {
        return Err(format!(
            "trt-sys: {} is TensorRT {}.{}; supported are TensorRT 10.x, 11.x and TensorRT-RTX 1.x",
            file.display(),
            headers.major,
            headers.minor
        ));
    }
    Ok(headers)
}

/// The include directory holding `cuda_runtime_api.h`, which the TensorRT headers include.
pub fn find_cuda() -> Result<PathBuf, String> {
    let places = trt_locate::cuda_headers().places(None, &ProcessEnv);
    if let Some(dir) = places.iter().filter_map(|p| p.path.as_deref()).find(|d| d.join("cuda_runtime_api.h").is_file()) {
        return Ok(dir.to_owned());
    }
    Err(format!(
        "trt-sys: the TensorRT headers include cuda_runtime_api.h, which was not found. Searched:\n{}\n\
         To fix: {SETUP_HINT}, or set CUDA_INCLUDE_DIR.",
        listed(&places)
    ))
}
