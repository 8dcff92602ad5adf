//! Compiling the C++ shim and exporting the header version.

use std::path::{Path, PathBuf};

use crate::headers::Headers;

/// The shim's sources. They live in the workspace's top-level `cpp/`;
/// `trt-sys/cpp` is a symlink to it, which `cargo package` follows, so the
/// published crate carries the files themselves under `cpp/`. A checkout made
/// without symlink support (git on Windows by default) has a plain file there:
/// then the workspace folder is used directly.
fn cpp_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let packaged = manifest.join("cpp");
    if packaged.join("include").is_dir() {
        packaged
    } else {
        manifest.join("..").join("cpp")
    }
}

pub fn compile(headers: &Headers, cuda: &Path) {
    let cpp = cpp_dir();
    let sources = ["logging.cc", "factories.cc", "builder.cc", "network.cc", "onnx.cc", "runtime.cc"];
    let mut build = cxx_build::bridge("src/bridge.rs");
    for s in sources {
        let path = cpp.join("src").join(s);
        println!("cargo:rerun-if-changed={}", path.display());
        build.file(path);
    }
    println!("cargo:rerun-if-changed={}", cpp.join("include").join("trt_shim.h").display());
    println!("cargo:rerun-if-changed=src/bridge.rs");
    println!("cargo:rerun-if-changed={}", headers.dir.join("NvInferVersion.h").display());
    build
        .std("c++17")
        .include(cpp.join("include"))
        .include(&headers.dir)
        .include(cuda)
        // The headers deprecate APIs that 10.x still needs; those warnings are noise here.
        .flag_if_supported("-Wno-deprecated-declarations")
        .flag_if_supported("-Wno-unused-parameter")
        .compile("trt_shim");
}

/// Expose the header version to this crate (env) and to dependents (`links` metadata).
pub fn export(headers: &Headers) {
    let flavor = if headers.rtx { "rtx" } else { "trt" };
    println!("cargo:rustc-env=TRT_SYS_HEADER_MAJOR={}", headers.major);
    println!("cargo:rustc-env=TRT_SYS_HEADER_MINOR={}", headers.minor);
    println!("cargo:rustc-env=TRT_SYS_HEADER_PATCH={}", headers.patch);
    println!("cargo:rustc-env=TRT_SYS_HEADER_FLAVOR={flavor}");
    println!("cargo:rustc-env=TRT_SYS_HEADER_DIR={}", headers.dir.display());
    println!("cargo:flavor={flavor}");
    println!("cargo:major={}", headers.major);
    println!("cargo:minor={}", headers.minor);
    println!("cargo:patch={}", headers.patch);
    println!(
        "cargo:warning=trt-sys: {} {}.{}.{} headers from {}",
        if headers.rtx { "TensorRT-RTX" } else { "TensorRT" },
        headers.major,
        headers.minor,
        headers.patch,
        headers.dir.display()
    );
}
