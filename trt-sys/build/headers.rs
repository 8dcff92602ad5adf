//! Finding the TensorRT and CUDA headers, and reading their version.

use std::path::{Path, PathBuf};

use crate::vars;

/// The header set the shim is compiled against.
pub struct Headers {
    pub dir: PathBuf,
    pub rtx: bool,
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

const SETUP_HINT: &str = "run `scripts/setup` at the workspace root (fetches the TensorRT headers from crates.io and \
the CUDA headers from PyPI into .deps/), or set TENSORRT_INCLUDE_DIR / TENSORRT_ROOT to an NVIDIA TensorRT install";

fn deps_dir() -> PathBuf {
    match vars::get(vars::TRT_DEPS_DIR) {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(".deps"),
    }
}

/// Where TensorRT headers are looked for, in order. An explicitly given path
/// (`TENSORRT_INCLUDE_DIR`, `TENSORRT_ROOT`) is the only candidate when set: a
/// wrong explicit path must fail, not silently fall back to another install.
fn tensorrt_candidates() -> (Vec<PathBuf>, bool) {
    if let Some(dir) = vars::get(vars::TENSORRT_INCLUDE_DIR) {
        return (vec![PathBuf::from(dir)], true);
    }
    if let Some(root) = vars::get(vars::TENSORRT_ROOT) {
        return (vec![Path::new(&root).join("include")], true);
    }
    let set = vars::get(vars::TRT_HEADERS).unwrap_or_else(|| "TRT-RTX-1.7".to_owned());
    let mut c = vec![deps_dir().join("headers").join(set)];
    for sys in [
        "/usr/include/x86_64-linux-gnu",
        "/usr/include/aarch64-linux-gnu",
        "/usr/include",
        "/usr/local/tensorrt/include",
        "/usr/local/TensorRT/include",
        "/opt/tensorrt/include",
    ] {
        c.push(PathBuf::from(sys));
    }
    (c, false)
}

pub fn find_tensorrt() -> Result<Headers, String> {
    let (candidates, explicit) = tensorrt_candidates();
    for dir in &candidates {
        let version_h = dir.join("NvInferVersion.h");
        if dir.join("NvInfer.h").is_file() && version_h.is_file() {
            return parse_version(dir, &version_h);
        }
    }
    let list = candidates.iter().map(|p| format!("  - {}", p.display())).collect::<Vec<_>>().join("\n");
    let why = if explicit { "the path given has no NvInfer.h / NvInferVersion.h" } else { "no TensorRT headers found" };
    Err(format!("trt-sys: {why}. Searched:\n{list}\nTo fix: {SETUP_HINT}."))
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
pub fn find_cuda(trt: &Headers) -> Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if let Some(dir) = vars::get(vars::CUDA_INCLUDE_DIR) {
        candidates.push(PathBuf::from(dir));
    } else {
        for root in vars::CUDA_ROOTS {
            if let Some(r) = vars::get(root) {
                candidates.push(Path::new(&r).join("include"));
            }
        }
        candidates.push(trt.dir.clone());
        candidates.push(deps_dir().join("cuda").join("include"));
        candidates.push(PathBuf::from("/usr/local/cuda/include"));
        candidates.push(PathBuf::from("/usr/include"));
    }
    for dir in &candidates {
        if dir.join("cuda_runtime_api.h").is_file() {
            return Ok(dir.clone());
        }
    }
    let list = candidates.iter().map(|p| format!("  - {}", p.display())).collect::<Vec<_>>().join("\n");
    Err(format!(
        "trt-sys: the TensorRT headers include cuda_runtime_api.h, which was not found. Searched:\n{list}\n\
         To fix: {SETUP_HINT}, or set CUDA_INCLUDE_DIR."
    ))
}
