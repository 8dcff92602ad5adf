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
    assert!(s.contains("tensor             max_abs") && s.contains("emb cosine min"), "{s}");
    for line in ["  logits ", "  last_hidden_state "] {
        assert!(s.lines().any(|l| l.starts_with(line) && l.ends_with("  ok")), "{line} row: {s}");
    }

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

    let o = run(&["compare", "a.plan", "b.engine", "--random", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("are both plans"), "{}", text(&o));
    let o = run(&["compare", p(&fp32), p(&fp32), "--random", "2", "--layers", "--fp16"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("neither side is a plan"), "{}", text(&o));
    // The rebuild flags only mean something with --layers: a usage error.
    let o = run(&["compare", p(&fp32), "m.plan", "--random", "2", "--fp16"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));

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

/// The default model's plan, built here (TensorRT-RTX needs no GPU to build).
fn small_plan(dir: &Path) -> PathBuf {
    let plan = dir.join("minilm.plan");
    let o = run(&[
        "build",
        p(&default_model(false)),
        "-o",
        p(&plan),
        "--min-shapes",
        "input_ids:1x1,attention_mask:1x1,token_type_ids:1x1",
        "--max-shapes",
        "input_ids:8x128,attention_mask:8x128,token_type_ids:8x128",
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    plan
}

#[test]
fn compare_json_holds_the_outputs_and_the_layers_the_text_shows() {
    let (fp32, fp16) = (default_model(false), default_model(true));
    let base = ["compare", p(&fp32), p(&fp16), "--random", "4", "--layers", "--atol", "1e-5", "--threads", "2"];
    let o = run(&[&base[..], &["--json"]].concat());
    assert_eq!(o.status.code(), Some(1), "the FP16 model is beyond --atol 1e-5: {}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json prints one JSON document, also on a failed gate");
    assert!(String::from_utf8_lossy(&o.stderr).contains("error: output 'logits': max abs error"), "{}", text(&o));
    assert_eq!(doc["failure"].as_str().unwrap(), String::from_utf8_lossy(&o.stderr).trim().trim_start_matches("error: "));
    assert_eq!(doc["rows"], 4);
    let names: Vec<&str> = doc["outputs"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["logits", "last_hidden_state"]);
    let layers = &doc["layers"];
    assert!(layers["matched"].as_u64().unwrap() > 200, "{layers}");
    assert_eq!(
        layers["tensors"].as_array().unwrap().len() as u64 + layers["skipped"].as_array().unwrap().len() as u64,
        layers["matched"].as_u64().unwrap()
    );
    let first = layers["first_divergence"]["name"].as_str().unwrap();
    let o = run(&base);
    assert!(text(&o).contains(&format!("first divergence at '{first}'")), "{}", text(&o));
}

#[test]
fn compare_a_plan_without_a_gpu_stops_with_the_reason() {
    if trt_cuda::Device::new(0).is_ok() {
        println!("skipped: this machine has a GPU; the plan comparison itself is plan_against_onnx_on_a_gpu");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = small_plan(dir.path());
    let t = first_texts(dir.path(), 8);
    // Either order: the ONNX model is the reference.
    for args in [[p(&plan), p(&default_model(false))], [p(&default_model(false)), p(&plan)]] {
        let o = run(&["compare", args[0], args[1], "--texts", p(&t), "--layers", "--json"]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.starts_with("error: ") && e.contains("minilm.plan: no GPU TensorRT can execute on: "), "{e}");
        assert!(o.stdout.is_empty(), "no report without a run: {}", text(&o));
    }
}

#[test]
#[ignore = "needs a GPU the loaded TensorRT can execute engines on (TensorRT-RTX: compute capability 8.0/8.6/8.9/12.x; the lent H200 is 9.0 and CI has no GPU)"]
fn plan_against_onnx_on_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let plan = small_plan(dir.path());
    let t = first_texts(dir.path(), 24);
    let onnx = default_model(false);
    let o = run(&["compare", p(&plan), p(&onnx), "--texts", p(&t), "--min-cosine", "0.999", "--layers", "--json"]);
    println!("{}", text(&o));
    assert!(o.status.success(), "{}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["reference"]["path"], p(&onnx));
    assert!(doc["checked"]["backend"].as_str().unwrap().starts_with("tensorrt"), "{doc}");
    assert_eq!(doc["rows"], 24);
    for f in doc["outputs"].as_array().unwrap() {
        assert!(f["cosine_min"].as_f64().unwrap() >= 0.999, "{f}");
    }
    let layers = &doc["layers"];
    assert!(layers["tensorrt_rebuild"].as_str().unwrap().contains("1 optimization profile(s) read from the plan"), "{layers}");
    assert!(layers["tensors"].as_array().unwrap().len() > 200, "{layers}");
    // FP32 on both sides: no tensor parts beyond the default cosine gate.
    assert!(layers["first_divergence"].is_null(), "{layers}");

    // FP16 plan against the FP32 ONNX: the rebuild converts the same way; the figures name a first divergence or none.
    let fp16_plan = dir.path().join("fp16.plan");
    let o = run(&[
        "build",
        p(&onnx),
        "-o",
        p(&fp16_plan),
        "--fp16",
        "--max-shapes",
        "input_ids:8x128,attention_mask:8x128,token_type_ids:8x128",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["compare", p(&onnx), p(&fp16_plan), "--texts", p(&t), "--layers", "--fp16"]);
    println!("{}", text(&o));
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("--fp16)") && text(&o).contains("tensors compared"), "{}", text(&o));
}
