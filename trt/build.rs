//! Turns trt-sys's header version (its `links` metadata) into cfgs, so the API
//! offers only what the found TensorRT has:
//! - `trt_rtx`: TensorRT-RTX 1.x (strongly typed, compute-capability targets)
//! - `trt_weakly_typed`: TensorRT 10.x (FP16/BF16/INT8 builder flags, INT8 calibrators)
//! - `trt_lean`: a lean runtime library exists for this flavor (TensorRT 10.x/11.x)
//!
//! The same list is passed on to crates that depend on `trt` (`links = "trt_api"`):
//! their build script reads `DEP_TRT_API_CFGS` (comma-separated) and emits the
//! cfgs, so their code can be gated exactly like trt's (see the crate docs).
fn main() {
    const ALL: [&str; 3] = ["trt_rtx", "trt_weakly_typed", "trt_lean"];
    for cfg in ALL {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    let flavor = std::env::var("DEP_TRT_SHIM_FLAVOR").unwrap_or_default();
    let major: u32 = std::env::var("DEP_TRT_SHIM_MAJOR").ok().and_then(|m| m.parse().ok()).unwrap_or(0);
    let mut on = Vec::new();
    if flavor == "rtx" {
        on.push("trt_rtx");
    } else {
        on.push("trt_lean");
        if major < 11 {
            on.push("trt_weakly_typed");
        }
    }
    for cfg in &on {
        println!("cargo:rustc-cfg={cfg}");
    }
    println!("cargo::metadata=cfgs={}", on.join(","));
    println!("cargo::metadata=all_cfgs={}", ALL.join(","));
}
