//! Bad input on the build side: every case is a typed error naming the problem.

mod common;

use common::*;
use trt::{Builder, DataType, Error, OnnxParser, ProfileSpec, ShapeRange};

fn parse_err(bytes: &[u8], what: &str) -> Error {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{what}.onnx"));
    std::fs::write(&path, bytes).unwrap();
    let builder = Builder::new().unwrap();
    let err = OnnxParser::parse_file(&builder, &path).err().unwrap_or_else(|| panic!("{what} parsed"));
    let text = err.to_string();
    println!("{what}: {text}");
    assert!(text.contains(&path.display().to_string()), "message must name the file: {text}");
    err
}

#[test]
fn empty_onnx_is_a_typed_error() {
    assert!(matches!(parse_err(b"", "empty"), Error::OnnxParse { .. }));
}

#[test]
fn truncated_onnx_is_a_typed_error() {
    let model = std::fs::read(default_model(false)).unwrap();
    assert!(matches!(parse_err(&model[..model.len() / 3], "truncated"), Error::OnnxParse { .. }));
}

#[test]
fn random_bytes_are_a_typed_error() {
    // Deterministic pseudo-random bytes (xorshift).
    let mut x = 0x2545F4914F6CDD1Du64;
    let bytes: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    assert!(matches!(parse_err(&bytes, "random"), Error::OnnxParse { .. }));
}

/// Regression (fuzz target onnx_parse): TensorRT-RTX 1.7.1's parser segfaults
/// on a node without outputs; the library refuses such a model before parsing.
/// The first file is what the fuzzer found, the second the same defect written
/// with the onnx package (both kept in fuzz/seeds/onnx_parse, so the fuzz run
/// in CI replays them too).
#[test]
fn node_without_outputs_is_refused_before_the_parser_can_crash() {
    let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/onnx_parse");
    for file in ["regress_node_without_outputs_fuzzed.onnx", "regress_add_without_outputs.onnx"] {
        let bytes = std::fs::read(seeds.join(file)).unwrap();
        match parse_err(&bytes, file) {
            Error::OnnxParse { errors, .. } => {
                assert_eq!(errors.len(), 1, "{file}");
                assert_eq!(errors[0].code, "INVALID_NODE", "{file}");
                assert_eq!(errors[0].operator.as_deref(), Some("Add"), "{file}");
                assert_eq!(errors[0].node_index, Some(0), "{file}");
            }
            other => panic!("{file}: expected OnnxParse, got {other:?}"),
        }
    }
}

#[test]
fn missing_onnx_file_is_an_io_error_naming_it() {
    let builder = Builder::new().unwrap();
    let err = OnnxParser::parse_file(&builder, "/nonexistent/model.onnx").unwrap_err();
    assert!(matches!(err, Error::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/model.onnx"));
}

#[test]
fn unsupported_operator_is_named_with_its_node() {
    let builder = Builder::new().unwrap();
    let err = OnnxParser::parse_file(&builder, generated("models/test/unsupported_op.onnx")).unwrap_err();
    println!("{err}");
    let Error::OnnxParse { errors, .. } = &err else { panic!("expected OnnxParse, got {err:?}") };
    let e = errors.iter().find(|e| e.operator.as_deref() == Some("FrobnicateTensor")).expect("operator named");
    assert_eq!(e.node_name.as_deref(), Some("frobnicate_0"));
    assert_eq!(e.node_index, Some(0));
}

#[test]
fn profile_with_min_greater_than_max_is_rejected() {
    let builder = Builder::new().unwrap();
    let mut config = builder.config().unwrap();
    let err = config.add_profile(ProfileSpec::new().with("input_ids", ShapeRange::new(&[8, 128], &[4, 64], &[1, 16]))).unwrap_err();
    println!("{err}");
    assert!(matches!(&err, Error::InvalidProfile { tensor, .. } if tensor == "input_ids"));
}

#[test]
fn dynamic_input_without_profile_is_rejected_before_building() {
    let builder = Builder::new().unwrap();
    let network = OnnxParser::parse_file(&builder, default_model(false)).unwrap();
    let config = builder.config().unwrap();
    let err = builder.build(&network, &config).unwrap_err();
    println!("{err}");
    let Error::MissingProfile { inputs } = err else { panic!("expected MissingProfile") };
    assert_eq!(inputs, BERT_INPUTS);
}

#[test]
fn profile_missing_one_input_or_with_wrong_rank_is_rejected() {
    let builder = Builder::new().unwrap();
    let network = OnnxParser::parse_file(&builder, default_model(false)).unwrap();
    let mut config = builder.config().unwrap();
    config.add_profile(ProfileSpec::new().with_all(&BERT_INPUTS[..2], ShapeRange::new(&[1, 16], &[8, 64], &[32, 128]))).unwrap();
    let err = builder.build(&network, &config).unwrap_err();
    assert!(matches!(&err, Error::MissingProfile { inputs } if inputs == &["token_type_ids"]), "{err}");

    let mut config = builder.config().unwrap();
    config.add_profile(ProfileSpec::new().with_all(&BERT_INPUTS, ShapeRange::new(&[1], &[8], &[32]))).unwrap();
    let err = builder.build(&network, &config).unwrap_err();
    println!("{err}");
    assert!(matches!(&err, Error::InvalidProfile { reason, .. } if reason.contains("rank")), "{err}");
}

#[test]
fn tensor_of_another_network_is_rejected() {
    let builder = Builder::new().unwrap();
    let a = builder.network(true).unwrap();
    let b = builder.network(true).unwrap();
    let ta = a.add_input("x", DataType::Float, &[1, 4]).unwrap();
    let err = b.identity(ta).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(ref m) if m.contains("another network")), "{err}");
}

#[test]
fn constant_with_wrong_element_count_is_rejected() {
    let builder = Builder::new().unwrap();
    let n = builder.network(true).unwrap();
    let err = n.constant(&[2, 3], trt::HostData::F32(&[1.0; 5])).unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
}
