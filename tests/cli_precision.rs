//! `trt convert`, `trt quantize`, `trt compare` and `trt build --fp16`, run as
//! a user runs them, on the default model. Runs on the CPU: ONNX Runtime
//! executes both sides of compare, TensorRT-RTX builds plans without a GPU.
//! Needs `scripts/setup` (the default model and the ONNX Runtime library).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{default_model, generated};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trt")).args(args).output().expect("the trt binary runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn texts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/precision_texts.txt")
}

/// A texts file with the first `n` committed texts.
fn first_texts(dir: &Path, n: usize) -> PathBuf {
    let all = std::fs::read_to_string(texts()).unwrap();
    let path = dir.join(format!("texts{n}.txt"));
    std::fs::write(&path, all.lines().take(n).collect::<Vec<_>>().join("\n")).unwrap();
    path
}

#[test]
fn convert_then_compare_fp32_against_fp16() {
    let dir = tempfile::tempdir().unwrap();
    let fp32 = default_model(false);
    let out = dir.path().join("model_fp16.onnx");
    let o = run(&["convert", "--fp16", p(&fp32), "-o", p(&out)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("LayerNormalization 13"), "{}", text(&o));

    // The model folder's tokenizer is found beside A.
    let t = first_texts(dir.path(), 24);
    let o = run(&["compare", p(&fp32), p(&out), "--texts", p(&t), "--threads", "2"]);
    let s = text(&o);
    println!("{s}");
    assert!(o.status.success(), "{s}");
    assert!(s.contains("logits: max_abs") && s.contains("last_hidden_state: max_abs") && s.contains("embedding cosine min"), "{s}");

    // A tolerance tighter than the real difference fails, naming the output.
    let o = run(&["compare", p(&fp32), p(&out), "--texts", p(&t), "--atol", "1e-6", "--threads", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("error: output 'logits': max abs error"), "{}", text(&o));

    // --layers names the first tensor, in topological order, beyond tolerance:
    // the FP16 word-embedding table's rounding shows in the first Gather.
    let o = run(&["compare", p(&fp32), p(&out), "--random", "8", "--layers", "--atol", "1e-5", "--threads", "2"]);
    assert!(text(&o).contains("first divergence at 'embeddings/word/Gather_out'"), "{}", text(&o));
}

#[test]
fn quantize_writes_a_qdq_model_and_a_calibration_cache() {
    let dir = tempfile::tempdir().unwrap();
    let t = first_texts(dir.path(), 40);
    let out = dir.path().join("int8.onnx");
    let cache = dir.path().join("int8.cache");
    let o = run(&[
        "quantize",
        p(&default_model(false)),
        "--calibration",
        p(&t),
        "-o",
        p(&out),
        "--calibration-cache",
        p(&cache),
        "--threads",
        "2",
    ]);
    let s = text(&o);
    println!("{s}");
    assert!(o.status.success(), "{s}");
    assert!(s.contains("37 of 38 weighted MatMuls in INT8") && s.contains("held-out (10 texts)"), "{s}");
    let c = std::fs::read_to_string(&cache).unwrap();
    assert!(c.starts_with("TRT-101600-EntropyCalibration2\n"), "{c}");
    // Scales name tensors of the original model (the implicit path builds that one).
    assert!(c.contains("\nencoder.layer.0.attention.output.LayerNorm/LayerNormalization_out: "), "{c}");
    assert!(std::fs::metadata(&out).unwrap().len() < std::fs::metadata(default_model(true)).unwrap().len());
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let fp32 = default_model(false);
    let out = dir.path().join("x.onnx");
    let few = first_texts(dir.path(), 5);
    let o = run(&["quantize", p(&fp32), "--calibration", p(&few), "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("at least 8 are needed"), "{}", text(&o));

    let o = run(&["convert", "--fp16", p(&default_model(true)), "-o", p(&out)]);
    assert!(text(&o).contains("already FP16"), "{}", text(&o));

    let truncated = dir.path().join("t.onnx");
    std::fs::write(&truncated, &std::fs::read(&fp32).unwrap()[..1000]).unwrap();
    let o = run(&["compare", p(&fp32), p(&truncated), "--random", "2"]);
    assert!(text(&o).contains("is not a valid ONNX model"), "{}", text(&o));

    let o = run(&["compare", p(&fp32), "model.plan", "--random", "2"]);
    assert!(text(&o).contains("TensorRT plan is not supported yet"), "{}", text(&o));

    // A tokenizer file that is not one.
    let o = run(&["quantize", p(&fp32), "--calibration", p(&texts()), "--tokenizer", p(&texts()), "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(!text(&o).contains("panicked"), "{}", text(&o));
}

#[test]
fn build_fp16_converts_in_memory_on_strongly_typed_versions() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("m.plan");
    let shapes = [
        "--min-shapes",
        "input_ids:1x1,attention_mask:1x1,token_type_ids:1x1",
        "--max-shapes",
        "input_ids:4x64,attention_mask:4x64,token_type_ids:4x64",
    ];
    let model = generated("models/minilm/model.onnx");
    let mut args = vec!["build", "--fp16", p(&model), "-o", p(&plan)];
    args.extend(shapes);
    let o = run(&args);
    let s = text(&o);
    println!("{s}");
    assert!(o.status.success(), "{s}");
    let size = std::fs::metadata(&plan).unwrap().len();
    // FP16 weights: about half the FP32 plan (95.5 MB), as the Python-made FP16 model gives.
    assert!((40_000_000..60_000_000).contains(&size), "{size}");
}
