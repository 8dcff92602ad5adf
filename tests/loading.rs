//! Loading the real TensorRT libraries (process-global state: its own test binary).

mod common;

use trt::{Error, Flavor, Library, LibraryKind};

#[test]
fn loads_the_library_matching_the_headers_and_reports_its_version() {
    let lib = Library::load().expect("the TensorRT library for these headers (run scripts/setup)");
    let v = lib.version();
    println!("loaded {v} from {} (parser {:?}); headers {}", lib.path().display(), lib.parser_path(), trt::header_version());
    assert_eq!(v.flavor, trt::header_version().flavor);
    assert_eq!(v.major, trt::header_version().major);
    if v.flavor == Flavor::TensorRtRtx {
        // The setup step installs TensorRT-RTX 1.7.1 (PyPI tensorrt-rtx-cu13-libs 1.7.1.116).
        assert_eq!((v.major, v.minor, v.patch), (1, 7, 1));
    }
}

#[test]
fn a_missing_library_file_is_a_typed_error_naming_it() {
    let err = Library::load_from(LibraryKind::Full, "/nonexistent/libnvinfer.so.10").unwrap_err();
    println!("{err}");
    assert!(matches!(&err, Error::LibraryNotFound { tried, .. } if tried[0].to_str() == Some("/nonexistent/libnvinfer.so.10")));
}

#[test]
fn a_library_that_is_not_tensorrt_is_a_typed_error() {
    // libm exists everywhere and exports no TensorRT symbol.
    let err = Library::load_from(LibraryKind::Full, "libm.so.6").unwrap_err();
    println!("{err}");
    assert!(matches!(err, Error::MissingSymbol { symbol: "getInferLibVersion", .. }), "{err}");
}

/// The TensorRT 11.4 lean runtime: only in builds against 11.x headers (CI builds
/// the tests a second time with TENSORRT_INCLUDE_DIR pointing at them).
#[cfg(trt_lean)]
#[test]
fn lean_runtime_loads_and_creates_a_runtime_or_reports_why_not() {
    let lib = Library::load_lean().expect("libnvinfer_lean.so.11 (run scripts/setup)");
    println!("loaded lean runtime {} from {}", lib.version(), lib.path().display());
    assert_eq!((lib.version().major, lib.version().minor), (11, 4));
    let gpu = trt::cuda::driver_available() && trt::cuda::device_count().unwrap_or(0) > 0;
    match (gpu, trt::Runtime::with_library(lib)) {
        (true, Ok(_)) => println!("lean runtime object created (CUDA available)"),
        (false, Err(e)) => {
            println!("lean runtime creation failed as expected without a GPU: {e}");
            assert!(matches!(&e, Error::TensorRt { operation: "createInferRuntime", messages } if !messages.is_empty()), "{e}");
        }
        (gpu, r) => panic!("GPU present: {gpu}, but runtime creation gave {:?}", r.map(|_| "a runtime")),
    }
}

#[cfg(trt_rtx)]
#[test]
fn lean_runtime_is_unsupported_on_tensorrt_rtx() {
    let err = Library::load_lean().unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err}");
}
