//! INT8 quantization of the default model end to end on ONNX Runtime, with
//! a calibration set small enough for CI, and the bad inputs. Runs anywhere (CPU).

#[path = "onnx_support.rs"]
mod support;

use support::default_model;
use trt_onnx::dataset::Batch;
use trt_onnx::graph::proto::{self, GraphProto, ModelProto, NodeProto, OperatorSetIdProto};
use trt_onnx::graph::{edit, tensor, Model};
use trt_onnx::quantize::{self, QuantizeOptions};
use trt_onnx::runtime::SessionOptions;
use trt_onnx::Error;

/// Texts as batches of `rows`, tokenized with the default model's tokenizer
/// (the `tokenizers` crate; trt-onnx cannot use trt-nlp's pipeline, which sits above it).
fn batches(texts: &[String], rows: usize) -> Vec<Batch> {
    let tok = tokenizers::Tokenizer::from_file(default_model("tokenizer.json")).unwrap();
    texts
        .chunks(rows)
        .map(|chunk| {
            let enc: Vec<Vec<u32>> = chunk
                .iter()
                .map(|t| {
                    let mut ids = tok.encode(t.as_str(), true).unwrap().get_ids().to_vec();
                    ids.truncate(128);
                    ids
                })
                .collect();
            let seq = enc.iter().map(Vec::len).max().unwrap();
            let mut ids = ndarray::ArrayD::<i64>::zeros(ndarray::IxDyn(&[chunk.len(), seq]));
            let mut mask = ids.clone();
            for (r, row) in enc.iter().enumerate() {
                for (s, &id) in row.iter().enumerate() {
                    ids[[r, s]] = id as i64;
                    mask[[r, s]] = 1;
                }
            }
            let types = ndarray::ArrayD::<i64>::zeros(ids.raw_dim());
            Batch {
                inputs: vec![("input_ids".into(), ids), ("attention_mask".into(), mask.clone()), ("token_type_ids".into(), types)],
                mask: Some(mask),
            }
        })
        .collect()
}

fn options() -> QuantizeOptions {
    let mut o = QuantizeOptions::default();
    o.session = SessionOptions { intra_threads: 2, ..SessionOptions::default() };
    o
}

#[test]
fn default_model_quantizes_end_to_end_with_a_small_calibration_set() {
    let texts = support::texts();
    let calib = batches(&texts[..32], 16);
    let held = batches(&texts[texts.len() - 16..], 16);
    let m = Model::load(default_model("model.onnx")).unwrap();
    let t0 = std::time::Instant::now();
    let (q, report) = quantize::quantize(&m, &calib, &held, &options()).unwrap();
    let e = report.evaluation.clone().unwrap();
    println!(
        "quantized in {:.1} s: {} of {} layers INT8, {:.1}% of FLOPs; held-out cosine min {:.4} mean {:.4}",
        t0.elapsed().as_secs_f64(),
        report.layers.iter().filter(|(_, q)| *q).count(),
        report.layers.len(),
        100.0 * report.int8_flops_share,
        e.cosine_min(),
        e.cosine_mean()
    );
    // Every encoder MatMul (6 layers x 6) and the pooler: the classifier (384x2) is too narrow.
    assert_eq!(report.layers.iter().filter(|(_, q)| *q).count(), 37);
    assert!(report.int8_flops_share > 0.99, "{}", report.int8_flops_share);
    // Symmetric: every zero point is an INT8 zero.
    let g = q.graph();
    let ix = edit::Index::new(g);
    let dq: Vec<&NodeProto> = g.node.iter().filter(|n| n.op_type.as_deref() == Some("DequantizeLinear")).collect();
    assert_eq!(dq.len(), 37 + 25, "37 weights + 25 distinct activations");
    for n in g.node.iter().filter(|n| matches!(n.op_type.as_deref(), Some("QuantizeLinear" | "DequantizeLinear"))) {
        let zp = ix.initializer(g, &n.input[2]).unwrap();
        assert_eq!(zp.data_type, Some(tensor::INT8));
        assert!(tensor::to_i64(zp).unwrap().iter().all(|&v| v == 0));
    }
    // The FP32 weights of quantized layers are gone (INT8 + FP16 rest): smaller than the FP16 model.
    let (a, b) = (m.to_bytes().unwrap().len(), q.to_bytes().unwrap().len());
    let half = std::fs::metadata(default_model("model_fp16.onnx")).unwrap().len() as usize;
    println!("model bytes: FP32 {a}, FP16 {half}, INT8 {b}");
    assert!(b < half, "{b} >= {half}");
    // Honest floor of this small, CI-sized run (the must-show run uses all texts).
    assert!(e.cosine_mean() > 0.9, "{}", e.cosine_mean());
    if let Some(py) = support::python() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.onnx");
        q.save(&path, &trt_onnx::graph::WeightStorage::Inline).unwrap();
        let out = std::process::Command::new(py)
            .args(["-c", "import onnx,sys; onnx.checker.check_model(sys.argv[1], full_check=True)"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn too_few_rows_an_fp16_model_and_a_quantized_model_are_refused() {
    let texts = support::texts();
    let m = Model::load(default_model("model.onnx")).unwrap();
    let few = batches(&texts[..3], 3);
    match quantize::quantize(&m, &few, &[], &options()) {
        Err(Error::Calibration(msg)) => assert!(msg.contains("at least"), "{msg}"),
        other => panic!("expected a calibration error, got {:?}", other.err()),
    }
    let calib = batches(&texts[..16], 16);
    let mut o = options();
    o.target_cosine = Some(0.99);
    assert!(matches!(quantize::quantize(&m, &calib, &[], &o).err(), Some(Error::Calibration(_))), "a target without held-out data");

    let half = Model::load(default_model("model_fp16.onnx")).unwrap();
    match quantize::quantize(&half, &calib, &[], &options()) {
        Err(Error::Unsupported { problem, .. }) => assert!(problem.contains("FP32"), "{problem}"),
        other => panic!("expected Unsupported, got {:?}", other.err()),
    }
    // Quantizing twice.
    let mut q = m.clone();
    let layers = quantize::qdq::weighted_matmuls(q.graph());
    let amax = layers.iter().map(|l| (l.activation.clone(), 1.0f32)).collect();
    quantize::qdq::insert(&mut q, &layers[..1], &[true], &amax).unwrap();
    match quantize::quantize(&q, &calib, &[], &options()) {
        Err(Error::Unsupported { problem, .. }) => assert!(problem.contains("already quantized"), "{problem}"),
        other => panic!("expected Unsupported, got {:?}", other.err()),
    }
}

#[test]
fn a_model_without_matmuls_is_refused() {
    let io = |n: &str| edit::value_info(n, tensor::FLOAT);
    let graph = GraphProto {
        name: Some("relu".into()),
        node: vec![edit::node("Relu", "relu".into(), vec!["x".into()], "y".into(), vec![])],
        input: vec![io("x")],
        output: vec![io("y")],
        ..Default::default()
    };
    let proto = ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
        graph: Some(graph),
        ..Default::default()
    };
    let m = Model { proto };
    let b = Batch { inputs: vec![("x".into(), ndarray::ArrayD::zeros(ndarray::IxDyn(&[8, 4])))], mask: None };
    match quantize::quantize(&m, &[b], &[], &options()) {
        Err(Error::Unsupported { problem, .. }) => assert!(problem.contains("no MatMul"), "{problem}"),
        other => panic!("expected Unsupported, got {:?}", other.err()),
    }
    let _ = proto::tensor_proto::DataType::Float;
}

#[test]
fn exclude_patterns_match_node_names() {
    assert!(quantize::matches("encoder.layer.*.output.dense/MatMul", "encoder.layer.3.output.dense/MatMul"));
    assert!(quantize::matches("*intermediate*", "encoder.layer.0.intermediate.dense/MatMul"));
    assert!(!quantize::matches("encoder.layer.1*", "encoder.layer.0.output.dense/MatMul"));
    assert!(quantize::matches("pooler.dense/MatMul", "pooler.dense/MatMul"));
}
