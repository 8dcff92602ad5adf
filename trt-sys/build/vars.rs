//! Every environment variable the build script reads, in one place.

/// Include directory holding `NvInfer.h` (highest priority).
pub const TENSORRT_INCLUDE_DIR: &str = "TENSORRT_INCLUDE_DIR";
/// A TensorRT install root: headers in `$TENSORRT_ROOT/include`.
pub const TENSORRT_ROOT: &str = "TENSORRT_ROOT";
/// Folder filled by `scripts/setup` (default: `<workspace>/.deps`).
pub const TRT_DEPS_DIR: &str = "TRT_DEPS_DIR";
/// Which header set of the setup folder to use: `TRT-RTX-1.7` (default),
/// `TRT-Enterprise-11.4` or `TRT-Enterprise-10.16`.
pub const TRT_HEADERS: &str = "TRT_HEADERS";
/// Include directory holding `cuda_runtime_api.h`.
pub const CUDA_INCLUDE_DIR: &str = "CUDA_INCLUDE_DIR";
/// CUDA toolkit roots (headers in `<root>/include`).
pub const CUDA_ROOTS: [&str; 3] = ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"];
/// Set by docs.rs: no headers there, the shim is not compiled.
pub const DOCS_RS: &str = "DOCS_RS";

/// All of them, for `rerun-if-env-changed`.
pub fn all() -> Vec<&'static str> {
    let mut v = vec![TENSORRT_INCLUDE_DIR, TENSORRT_ROOT, TRT_DEPS_DIR, TRT_HEADERS, CUDA_INCLUDE_DIR, DOCS_RS];
    v.extend(CUDA_ROOTS);
    v
}

pub fn get(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}
