//! Raw bindings to the NVIDIA TensorRT C++ API, through [`cxx`] over a small C++
//! shim (`cpp/` at the workspace root). Use the safe `trt` crate instead.
//!
//! | layer | where | what |
//! |---|---|---|
//! | headers | found by `build/headers.rs` | TensorRT 10.x, 11.x or TensorRT-RTX 1.x |
//! | shim | `cpp/include/trt_shim.h`, `cpp/src/*.cc` | free functions over TensorRT's classes; C++ subclasses for callbacks |
//! | bridge | [`ffi`] | cxx declarations; TensorRT enums checked against the headers at compile time |
//! | callbacks | [`callbacks`] | the Rust side of logger, error recorder, progress monitor, output allocator |
//!
//! The shim never links against TensorRT: the `trt` crate loads the library at
//! run time and hands the shim the addresses of the exported factory functions.
//!
//! Which headers were used is visible to dependents as the constants below and,
//! in their build scripts, as `DEP_TRT_SHIM_FLAVOR` (`rtx` or `trt`),
//! `DEP_TRT_SHIM_MAJOR`, `DEP_TRT_SHIM_MINOR`, `DEP_TRT_SHIM_PATCH`.

mod bridge;
pub mod callbacks;

pub use bridge::ffi;
pub use cxx;

/// Major version of the headers this crate was compiled against.
pub const HEADER_MAJOR: u32 = parse(env!("TRT_SYS_HEADER_MAJOR"));
/// Minor version of the headers this crate was compiled against.
pub const HEADER_MINOR: u32 = parse(env!("TRT_SYS_HEADER_MINOR"));
/// Patch version of the headers this crate was compiled against.
pub const HEADER_PATCH: u32 = parse(env!("TRT_SYS_HEADER_PATCH"));
/// Whether the headers are TensorRT-RTX's (`true`) or TensorRT's (`false`).
pub const HEADER_IS_RTX: bool = matches!(env!("TRT_SYS_HEADER_FLAVOR").as_bytes(), b"rtx");
/// The include directory the build used.
pub const HEADER_DIR: &str = env!("TRT_SYS_HEADER_DIR");

const fn parse(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut i = 0;
    let mut v = 0u32;
    while i < b.len() {
        v = v * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    v
}
