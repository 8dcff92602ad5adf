//! The ONNX side of `trt compare --layers`, checked against Python
//! onnxruntime: the default model's intermediate float tensors that
//! TensorRT's parser also names (the list the TensorRT side marks as
//! outputs), read through `trt_onnx::dataset::run_exposing` on the CPU,
//! equal what Python onnxruntime computes for the same model with the same
//! extra outputs (tests/python/onnx_layers.py). Runs on CI: TensorRT-RTX
//! parses without a GPU, and both sides run ONNX Runtime on the CPU.

mod common;
#[path = "common/serve.rs"]
#[allow(dead_code)]
mod serve;

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use common::{default_model, deps};
use ndarray::{ArrayD, IxDyn};
use trt_onnx::dataset::{self, Batch};
use trt_onnx::graph::{edit, Model};
use trt_onnx::runtime::SessionOptions;

/// Two rows of 12 tokens; the second padded after 7 (mask 0, id 0).
fn batch() -> Batch {
    let (rows, seq) = (2, 12);
    let ids: Vec<i64> = (0..rows * seq).map(|i| if i >= seq && i % seq >= 7 { 0 } else { 1000 + (i as i64 * 37) % 900 }).collect();
    let mask: Vec<i64> = (0..rows * seq).map(|i| i64::from(!(i >= seq && i % seq >= 7))).collect();
    let a = |v: Vec<i64>| ArrayD::from_shape_vec(IxDyn(&[rows, seq]), v).unwrap();
    Batch {
        inputs: vec![
            ("input_ids".into(), a(ids)),
            ("attention_mask".into(), a(mask.clone())),
            ("token_type_ids".into(), a(vec![0; rows * seq])),
        ],
        mask: Some(a(mask)),
    }
}

fn write_inputs(dir: &Path, batch: &Batch, names: &[String]) {
    let inputs: serde_json::Map<String, serde_json::Value> = batch
        .inputs
        .iter()
        .map(|(n, a)| (n.clone(), serde_json::json!({"shape": a.shape(), "data": a.iter().collect::<Vec<_>>()})))
        .collect();
    std::fs::write(dir.join("inputs.json"), serde_json::to_vec(&inputs).unwrap()).unwrap();
    std::fs::write(dir.join("names.json"), serde_json::to_vec(names).unwrap()).unwrap();
}

#[test]
fn the_onnx_side_of_layers_equals_python_onnxruntime_on_the_tensors_tensorrt_names() {
    let path = default_model(false);
    let builder = trt::Builder::new().unwrap();
    let network = trt::OnnxParser::parse_file(&builder, &path).unwrap();
    let trt_names: HashSet<String> =
        network.layer_outputs().into_iter().filter(|l| l.is_float_activation()).map(|l| l.tensor.name).collect();
    let model = Model::load(&path).unwrap();
    let onnx_names = edit::intermediate_float_tensors(model.graph());
    let names: Vec<String> = onnx_names.iter().filter(|n| trt_names.contains(*n)).cloned().collect();
    println!("{} ONNX float tensors, {} TensorRT float layer outputs, {} matched", onnx_names.len(), trt_names.len(), names.len());
    assert!(names.len() * 10 >= onnx_names.len() * 8, "most ONNX tensors have a TensorRT layer output of the same name");
    assert!(names.iter().any(|n| n == "embeddings/word/Gather_out") && names.iter().any(|n| n == "logits"));

    let batch = batch();
    let options = SessionOptions { intra_threads: 1, ..SessionOptions::default() };
    let ours = dataset::run_exposing(&model, &names, &batch, &options).unwrap();
    assert_eq!(ours.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), names.iter().map(String::as_str).collect::<Vec<_>>());

    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path(), &batch, &names);
    let python = serve::venv_python(&deps(), "onnx, onnxruntime, numpy", "onnx and onnxruntime");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/python/onnx_layers.py");
    let o = Command::new(python).arg(script).arg(&path).arg(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    println!("{}", String::from_utf8_lossy(&o.stdout).trim());

    let index: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(dir.path().join("index.json")).unwrap()).unwrap();
    let bytes = std::fs::read(dir.path().join("values.bin")).unwrap();
    let values: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert_eq!(index.len(), names.len());
    let (mut worst, mut identical) = (0f64, 0);
    for ((name, a), entry) in ours.iter().zip(&index) {
        assert_eq!(entry["name"].as_str().unwrap(), name);
        let shape: Vec<usize> = entry["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
        assert_eq!(a.shape(), shape.as_slice(), "{name}");
        let offset = entry["offset"].as_u64().unwrap() as usize;
        let theirs = &values[offset..offset + a.len()];
        let scale = theirs.iter().fold(1f64, |m, v| m.max(f64::from(v.abs())));
        let diff = a.iter().zip(theirs).fold(0f64, |m, (x, y)| m.max(f64::from((x - y).abs())));
        assert!(diff <= 1e-5 * scale, "{name}: max |rust - python| {diff:e} (scale {scale})");
        worst = worst.max(diff / scale);
        identical += usize::from(diff == 0.0);
    }
    println!("{} tensors: {identical} bit-identical, largest difference {worst:e} of the tensor's scale", names.len());
}
