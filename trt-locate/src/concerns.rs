//! The concerns: for each thing looked for, its folders in each tier of the
//! order ([`Tier`](crate::Tier)). Callers look for their own files in the
//! places (`libnvinfer.so.10`, `NvInfer.h`, ...).

use crate::{get, Env, Spec, Var};

/// The folders pip's TensorRT wheels put their libraries in (full, RTX, lean).
pub const TENSORRT_WHEEL_DIRS: [&str; 3] = ["tensorrt_libs", "tensorrt_rtx_libs", "tensorrt_lean_libs"];

/// Which header set of the setup folder (`$TRT_DEPS_DIR/headers/<set>`) to use.
pub const HEADER_SET: &str = "TRT_HEADERS";
/// The setup folder's default header set.
pub const DEFAULT_HEADER_SET: &str = "TRT-RTX-1.7";

/// The TensorRT libraries (`libnvinfer.so.N`, `libtensorrt_rtx.so.N`, their
/// ONNX parsers, the lean runtime).
pub fn tensorrt_library() -> Spec {
    Spec {
        explicit: &[Var { name: "TENSORRT_LIB_DIR", sub: "" }],
        variables: &[],
        setup: TENSORRT_WHEEL_DIRS.iter().map(|w| format!("lib/{w}")).collect(),
        loader_path: true,
        installed: &["/usr/local/tensorrt/lib", "/usr/local/TensorRT/lib", "/opt/tensorrt/lib"],
        site_packages: &TENSORRT_WHEEL_DIRS,
    }
}

/// The folder holding `NvInfer.h` and `NvInferVersion.h`. `TRT_HEADERS` picks
/// the setup folder's header set (default [`DEFAULT_HEADER_SET`]).
pub fn tensorrt_headers(env: &dyn Env) -> Spec {
    let set = get(env, HEADER_SET).map_or_else(|| DEFAULT_HEADER_SET.to_owned(), |s| s.to_string_lossy().into_owned());
    Spec {
        explicit: &[Var { name: "TENSORRT_INCLUDE_DIR", sub: "" }, Var { name: "TENSORRT_ROOT", sub: "include" }],
        variables: &[],
        setup: vec![format!("headers/{set}")],
        loader_path: false,
        installed: &[
            "/usr/include/x86_64-linux-gnu",
            "/usr/include/aarch64-linux-gnu",
            "/usr/include",
            "/usr/local/tensorrt/include",
            "/usr/local/TensorRT/include",
            "/opt/tensorrt/include",
        ],
        // The TensorRT wheels ship no headers.
        site_packages: &[],
    }
}

/// The folder holding `cuda_runtime_api.h` (the TensorRT headers include it).
pub fn cuda_headers() -> Spec {
    Spec {
        explicit: &[Var { name: "CUDA_INCLUDE_DIR", sub: "" }],
        variables: &[
            Var { name: "CUDA_PATH", sub: "include" },
            Var { name: "CUDA_HOME", sub: "include" },
            Var { name: "CUDA_ROOT", sub: "include" },
        ],
        setup: vec!["cuda/include".to_owned()],
        loader_path: false,
        installed: &["/usr/local/cuda/include", "/usr/include"],
        // PyPI nvidia-cuda-runtime (CUDA 13 layout, then CUDA 12's).
        site_packages: &["nvidia/cu13/include", "nvidia/cuda_runtime/include"],
    }
}

/// ONNX Runtime's library (`libonnxruntime.so*`). `ORT_DYLIB_PATH`, as `ort`
/// itself reads it, may name the file or its folder.
pub fn onnxruntime_library() -> Spec {
    Spec {
        explicit: &[Var { name: "ORT_DYLIB_PATH", sub: "" }],
        variables: &[],
        setup: vec!["lib/onnxruntime".to_owned()],
        loader_path: true,
        // Where the release tarball or an image (the workspace's Dockerfile) puts it.
        installed: &["/opt/onnxruntime", "/opt/onnxruntime/lib"],
        site_packages: &["onnxruntime/capi"],
    }
}
