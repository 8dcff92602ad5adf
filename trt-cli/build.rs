//! Gates this crate's code on the TensorRT version exactly as `trt` does: trt's
//! build script passes its cfgs on through `links` metadata.
fn main() {
    for cfg in std::env::var("DEP_TRT_API_ALL_CFGS").unwrap_or_default().split(',').filter(|c| !c.is_empty()) {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    for cfg in std::env::var("DEP_TRT_API_CFGS").unwrap_or_default().split(',').filter(|c| !c.is_empty()) {
        println!("cargo:rustc-cfg={cfg}");
    }
}
