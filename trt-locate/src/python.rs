//! pip's site-packages folders, where the TensorRT, CUDA and ONNX Runtime
//! wheels put their libraries and headers.

use std::path::{Path, PathBuf};

use crate::{get, Env, SETUP_DIR};

/// The variables read here.
pub(crate) const VARIABLES: [&str; 4] = ["PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "HOME"];

/// System Python prefixes, after every prefix an environment variable names.
pub(crate) const SYSTEM_PREFIXES: [&str; 3] = ["/usr/local", "/usr", "/opt/conda"];

/// The site-packages folders that exist, in the order Python itself prefers
/// them: `PYTHONPATH`'s entries, then `lib/python3*/{site,dist}-packages` of
/// the active virtualenv (`VIRTUAL_ENV`), of conda (`CONDA_PREFIX`), of the
/// setup folder's venv (`$TRT_DEPS_DIR/venv`), of the user's `~/.local`, then
/// of the system prefixes (`/usr/local`, `/usr`, `/opt/conda`).
pub fn site_packages(env: &dyn Env) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    if let Some(pp) = get(env, "PYTHONPATH") {
        out.extend(std::env::split_paths(&pp).filter(|p| p.is_dir()));
    }
    let mut prefixes: Vec<PathBuf> = Vec::new();
    prefixes.extend(get(env, "VIRTUAL_ENV").map(PathBuf::from));
    prefixes.extend(get(env, "CONDA_PREFIX").map(PathBuf::from));
    prefixes.extend(get(env, SETUP_DIR).map(|d| PathBuf::from(d).join("venv")));
    prefixes.extend(get(env, "HOME").map(|h| PathBuf::from(h).join(".local")));
    prefixes.extend(SYSTEM_PREFIXES.map(PathBuf::from));
    for prefix in prefixes {
        for dir in prefix_sites(&prefix) {
            if !out.contains(&dir) {
                out.push(dir);
            }
        }
    }
    out
}

/// `lib/python3*/site-packages` and `dist-packages` under `prefix`, by Python
/// version name (a directory listing's order is arbitrary).
fn prefix_sites(prefix: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(prefix.join("lib")) else { return Vec::new() };
    let mut pythons: Vec<PathBuf> =
        entries.flatten().filter(|e| e.file_name().to_string_lossy().starts_with("python3")).map(|e| e.path()).collect();
    pythons.sort();
    pythons.iter().flat_map(|p| [p.join("site-packages"), p.join("dist-packages")]).filter(|p| p.is_dir()).collect()
}
