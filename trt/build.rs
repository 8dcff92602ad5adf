//! Turns trt-sys's header version (its `links` metadata) into cfgs, so the API
//! offers only what the found TensorRT has:
//! - `trt_rtx`: TensorRT-RTX 1.x (strongly typed, compute-capability targets)
//! - `trt_weakly_typed`: TensorRT 10.x (FP16/BF16/INT8 builder flags, INT8 calibrators)
//! - `trt_lean`: a lean runtime library exists for this flavor (TensorRT 10.x/11.x)
fn main() {
    println!("cargo::rustc-check-cfg=cfg(trt_rtx)");
    println!("cargo::rustc-check-cfg=cfg(trt_weakly_typed)");
    println!("cargo::rustc-check-cfg=cfg(trt_lean)");
    let flavor = std::env::var("DEP_TRT_SHIM_FLAVOR").unwrap_or_default();
    let major: u32 = std::env::var("DEP_TRT_SHIM_MAJOR").ok().and_then(|m| m.parse().ok()).unwrap_or(0);
    if flavor == "rtx" {
        println!("cargo:rustc-cfg=trt_rtx");
    } else {
        println!("cargo:rustc-cfg=trt_lean");
        if major < 11 {
            println!("cargo:rustc-cfg=trt_weakly_typed");
        }
    }
}
