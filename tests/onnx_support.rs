//! Shared helpers of the trt-onnx integration tests (`#[path]`-included):
//! the setup folder, the default model, its reference inputs, a tiny model.
#![allow(dead_code)]

use std::path::PathBuf;

use ndarray::ArrayD;
use trt_onnx::dataset::Batch;

/// The setup folder: `$TRT_DEPS_DIR`, or `.deps` at the workspace root.
pub fn deps() -> PathBuf {
    std::env::var_os("TRT_DEPS_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.deps"))
}

/// A file of the default model's folder; missing means setup has not run.
pub fn default_model(file: &str) -> PathBuf {
    let p = deps().join("models/minilm").join(file);
    assert!(p.exists(), "{} is missing: run scripts/setup first", p.display());
    p
}

/// The committed English texts for calibration and evaluation.
pub fn texts() -> Vec<String> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/precision_texts.txt");
    std::fs::read_to_string(p).unwrap().lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect()
}

/// setup's reference.json.
pub fn reference() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(default_model("reference.json")).unwrap()).unwrap()
}

/// The reference texts' token tensors as one batch.
pub fn reference_batch() -> Batch {
    let r = reference();
    let tensor = |key: &str| {
        let rows: Vec<Vec<i64>> = serde_json::from_value(r[key].clone()).unwrap();
        let (b, s) = (rows.len(), rows[0].len());
        ArrayD::from_shape_vec(ndarray::IxDyn(&[b, s]), rows.into_iter().flatten().collect()).unwrap()
    };
    let mask = tensor("attention_mask");
    Batch {
        inputs: vec![
            ("input_ids".into(), tensor("input_ids")),
            ("attention_mask".into(), mask.clone()),
            ("token_type_ids".into(), tensor("token_type_ids")),
        ],
        mask: Some(mask),
    }
}

/// Python's figure for its FP16 model: max |logits - FP32 logits|.
pub fn python_fp16_logit_diff() -> f64 {
    reference()["diffs"]["fp16_vs_fp32_logits_max_abs"].as_f64().unwrap()
}

/// The venv's Python, when setup made one.
pub fn python() -> Option<PathBuf> {
    let p = deps().join("venv/bin/python");
    p.exists().then_some(p)
}
