//! Where the setup folder (what `scripts/setup` fills: `.deps/` of the
//! workspace) is, for `trt demo` and the engine cache in it. The libraries
//! default to no such folder: this binary is the one place that does.
//!
//! Looked for, in order: `$TRT_DEPS_DIR` (when set, the only candidate);
//! `.deps` in the current folder or any folder above it (the binary is usually
//! run from the repository: `cargo run --release -p trt-cli --features tensorrt -- demo`); the
//! `TRT_DEPS_DIR` of the build (the workspace's `.cargo/config.toml` names
//! its `.deps/`). The first that exists is handed to the libraries' searches
//! (`trt-locate`) as `TRT_DEPS_DIR`, so a `trt` started outside cargo finds
//! the libraries `scripts/setup` installed.

use std::path::{Path, PathBuf};

use trt_locate::{Env, ProcessEnv, SETUP_DIR};

use crate::error::{CliError, Result};

/// The build's setup folder, if it named one.
const BUILT_IN: Option<&str> = option_env!("TRT_DEPS_DIR");

/// The candidates, in search order.
fn candidates_in(env: &dyn Env, cwd: Option<&Path>, built_in: Option<&str>) -> Vec<PathBuf> {
    if let Some(dir) = env.var(SETUP_DIR).filter(|v| !v.is_empty()) {
        // An explicit setting is the only candidate: a wrong one must not be papered over.
        return vec![PathBuf::from(dir)];
    }
    let mut dirs: Vec<PathBuf> = cwd.map(|c| c.ancestors().map(|a| a.join(".deps")).collect()).unwrap_or_default();
    dirs.extend(built_in.filter(|d| !d.is_empty()).map(PathBuf::from));
    dirs
}

fn candidates() -> Vec<PathBuf> {
    candidates_in(&ProcessEnv, std::env::current_dir().ok().as_deref(), BUILT_IN)
}

/// Hands the setup folder found to the libraries' searches: sets
/// `TRT_DEPS_DIR` when it is unset and a candidate exists. Called first thing
/// in `main`, before any thread is started (setting a variable races with
/// other threads reading the environment).
pub fn export_setup_dir() {
    if std::env::var_os(SETUP_DIR).is_some_and(|v| !v.is_empty()) {
        return;
    }
    if let Some(dir) = candidates().into_iter().find(|d| d.is_dir()) {
        std::env::set_var(SETUP_DIR, dir);
    }
}

/// Where plans built from ONNX files are cached: `cache/` in the first
/// setup folder candidate that exists (none: plans are built in memory).
pub fn engine_cache() -> Option<PathBuf> {
    candidates().into_iter().find(|d| d.is_dir()).map(|d| d.join("cache"))
}

/// The first candidate holding `rel` (e.g. `models/minilm/model.onnx`), as the setup folder.
// `trt demo` and the tests of the TensorRT paths ask (the tensorrt feature).
#[cfg_attr(not(feature = "tensorrt"), allow(dead_code))]
pub fn deps_with(rel: &str) -> Result<PathBuf> {
    let dirs = candidates();
    if let Some(d) = dirs.iter().find(|d| d.join(rel).exists()) {
        return Ok(d.clone());
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.join(rel).display().to_string()).collect();
    Err(CliError::new(format!(
        "cannot find {rel} of the setup folder (looked for {}); run scripts/setup, or set TRT_DEPS_DIR to the folder it fills",
        looked.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    #[test]
    fn trt_deps_dir_alone_then_the_current_folder_upwards_then_the_build_s() {
        let set = |name: &str| (name == SETUP_DIR).then(|| OsString::from("/set"));
        let unset = |_: &str| None;
        let empty = |_: &str| Some(OsString::new());
        let cwd = Path::new("/a/b");
        assert_eq!(candidates_in(&set, Some(cwd), Some("/built")), [PathBuf::from("/set")]);
        let expected: Vec<PathBuf> = ["/a/b/.deps", "/a/.deps", "/.deps", "/built"].map(PathBuf::from).into();
        assert_eq!(candidates_in(&unset, Some(cwd), Some("/built")), expected);
        assert_eq!(candidates_in(&empty, Some(cwd), Some("/built")), expected, "an empty TRT_DEPS_DIR counts as unset");
        assert_eq!(candidates_in(&unset, None, None), Vec::<PathBuf>::new());
    }
}
