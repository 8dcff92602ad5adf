//! Build script of trt-sys: find the headers, compile the shim, tell dependents
//! which TensorRT the headers are.

mod headers;
mod shim;
mod vars;

fn main() {
    for var in vars::all() {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if vars::get(vars::DOCS_RS).is_some() {
        // docs.rs has no TensorRT headers: document the TensorRT-RTX 1.7 API
        // without compiling the shim (nothing links there).
        shim::export(&headers::Headers { dir: "<docs.rs>".into(), rtx: true, major: 1, minor: 7, patch: 1 });
        return;
    }
    let headers = headers::find_tensorrt().unwrap_or_else(|e| fail(&e));
    let cuda = headers::find_cuda().unwrap_or_else(|e| fail(&e));
    shim::compile(&headers, &cuda);
    shim::export(&headers);
}

fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(1);
}
