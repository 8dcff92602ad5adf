//! Every environment variable the build script reads, in one place. The
//! header searches' own variables come from `trt-locate`, which owns the order.

/// Which header set of the setup folder to use: `TRT-RTX-1.7` (default),
/// `TRT-Enterprise-11.4` or `TRT-Enterprise-10.16`.
pub const TRT_HEADERS: &str = trt_locate::HEADER_SET;
/// Set by docs.rs: no headers there, the shim is not compiled.
pub const DOCS_RS: &str = "DOCS_RS";

/// All of them, for `rerun-if-env-changed`.
pub fn all() -> Vec<&'static str> {
    let env = trt_locate::ProcessEnv;
    let mut v = trt_locate::tensorrt_headers(&env).variables_read();
    v.extend(trt_locate::cuda_headers().variables_read());
    v.extend([TRT_HEADERS, DOCS_RS]);
    v.sort_unstable();
    v.dedup();
    v
}

pub fn get(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}
