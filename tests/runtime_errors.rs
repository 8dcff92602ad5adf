//! Runtime error paths against the real library: bad plans are typed errors
//! with TensorRT's own message, never a crash. On a machine without a GPU (CI),
//! deserializing even a valid plan reports the CUDA failure as a typed error.

mod common;

use common::*;
use trt::{Builder, Error, OnnxParser, ProfileSpec, Runtime, ShapeRange};

fn small_plan() -> Vec<u8> {
    let builder = Builder::new().unwrap();
    let network = OnnxParser::parse_file(&builder, generated("models/test/external_weights.onnx")).unwrap();
    let mut config = builder.config().unwrap();
    config.add_profile(ProfileSpec::new().with("x", ShapeRange::new(&[1, 64], &[4, 64], &[8, 64]))).unwrap();
    builder.build(&network, &config).unwrap().into_bytes()
}

fn expect_trt_error(plan: &[u8], what: &str) {
    let runtime = Runtime::new().expect("a runtime object (TensorRT-RTX creates one without a GPU)");
    match runtime.deserialize(plan) {
        Err(e @ Error::TensorRt { .. }) => {
            println!("{what}: {e}");
            let Error::TensorRt { operation, messages } = &e else { unreachable!() };
            assert_eq!(*operation, "deserializeCudaEngine");
            assert!(!messages.is_empty(), "TensorRT's own message must be attached");
        }
        Err(other) => panic!("{what}: expected a TensorRt error, got {other:?}"),
        Ok(_) => panic!("{what}: a bad plan deserialized"),
    }
}

#[test]
fn empty_plan_is_rejected_before_tensorrt() {
    let runtime = Runtime::new().unwrap();
    assert!(matches!(runtime.deserialize(&[]), Err(Error::InvalidArgument(_))));
}

#[test]
fn random_plan_is_a_typed_error() {
    let bytes: Vec<u8> = (0..65536u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    expect_trt_error(&bytes, "random");
}

#[test]
fn truncated_plan_is_a_typed_error() {
    let plan = small_plan();
    expect_trt_error(&plan[..plan.len() / 2], "truncated");
    expect_trt_error(&plan[..16], "header only");
}

#[test]
fn plan_of_another_flavor_is_a_typed_error() {
    // A TensorRT plan starts with a different magic and version stamp; flip the
    // stamp of a real plan to mimic one from another version.
    let mut plan = small_plan();
    for b in plan.iter_mut().take(32).skip(4) {
        *b ^= 0x5a;
    }
    expect_trt_error(&plan, "foreign header");
}

/// Can the loaded TensorRT execute engines on this GPU? TensorRT-RTX supports
/// compute capability 8.0, 8.6, 8.9 and 12.0 or newer.
fn tensorrt_supports(major: u32, minor: u32) -> bool {
    match trt::header_version().flavor {
        trt::Flavor::TensorRtRtx => matches!((major, minor), (8, 0) | (8, 6) | (8, 9)) || major >= 12,
        trt::Flavor::TensorRt => major >= 7,
    }
}

#[test]
fn valid_plan_deserializes_exactly_where_the_gpu_is_supported() {
    let plan = small_plan();
    let runtime = Runtime::new().unwrap();
    let gpu = trt::cuda::Device::new(0).ok().map(|d| d.compute_capability().unwrap());
    let result = runtime.deserialize(&plan);
    match (gpu, result) {
        (Some((major, minor)), Ok(engine)) if tensorrt_supports(major, minor) => {
            println!("deserialized on compute capability {major}.{minor}: {engine:?}");
            assert_eq!(engine.io_tensors().len(), 2);
        }
        (Some((major, minor)), Err(e)) if !tensorrt_supports(major, minor) => {
            println!("refused on compute capability {major}.{minor}: {e}");
            assert!(e.to_string().contains("compute capabilit"), "{e}");
        }
        (None, Err(e)) => {
            println!("refused without a GPU: {e}");
            assert!(matches!(&e, Error::TensorRt { messages, .. } if !messages.is_empty()), "{e}");
        }
        (gpu, r) => panic!("unexpected outcome on GPU {gpu:?}: {:?}", r.map(|_| "an engine")),
    }
}

#[test]
fn missing_and_empty_plan_files_name_the_file() {
    let runtime = Runtime::new().unwrap();
    let err = runtime.load("/nonexistent/model.plan").unwrap_err();
    assert!(err.to_string().contains("/nonexistent/model.plan"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.plan");
    std::fs::write(&empty, b"").unwrap();
    let err = runtime.load(&empty).unwrap_err();
    assert!(err.to_string().contains("empty.plan"), "{err}");
}
