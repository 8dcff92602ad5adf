//! HuggingFace folders through the `trt` command as a user runs it:
//! `trt import` of every fixture family in FP32 and FP16, TensorRT-RTX
//! parsing and building each graph into a plan (on the CPU; plans cannot
//! execute on any machine here), `trt inspect` showing the graph's inputs
//! and outputs; `trt embed` on the folder itself; and `trt serve
//! --model-id org/name` resolving the local HuggingFace cache, driven by
//! the `openai` client and TEI's `/embed` with `prompt_name`, checked
//! against sentence-transformers' references (tests/python/hf_serve.py).

mod common;
#[path = "common/dirs.rs"]
mod dirs;
use dirs::copy_dir;
// Only the server guard and the client runner of the shared serving helpers are used here.
#[allow(dead_code)]
#[path = "common/serve.rs"]
mod serve;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf"))
}

/// `trt` with an import cache of its own.
fn trt(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trt")).args(args).env("TRT_IMPORT_CACHE", cache).output().expect("the trt binary runs")
}

fn assert_ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Every fixture family; only the TensorRT build test walks them all.
#[cfg(feature = "tensorrt")]
const FAMILIES: [&str; 25] = [
    "bert-hub",
    "bert-st5",
    "bert-multi",
    "roberta-max",
    "xlmr-weighted",
    "camembert-mean",
    "distilbert-cls",
    "mpnet-mean",
    "electra-mean",
    "bert-cls3",
    "distilbert-multilabel",
    "roberta-cross-encoder",
    "mpnet-cls2",
    "xlmr-cls2",
    "electra-cls2",
    "modernbert-mean",
    "qwen3-embed",
    "qwen3-reranker",
    "qwen2-embed",
    "mistral-embed",
    "nomic-mean",
    "gte-cls",
    "bge-m3",
    "bert-ner",
    "splade",
];

#[cfg(feature = "tensorrt")]
#[test]
fn every_family_imports_and_tensorrt_builds_its_graph_in_fp32_and_fp16() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    for name in FAMILIES {
        for (precision, flag) in [("fp32", None), ("fp16", Some("--fp16"))] {
            let out = work.path().join(format!("{name}-{precision}"));
            let src = fixtures().join(name);
            let mut args = vec!["import", src.to_str().unwrap(), "-o", out.to_str().unwrap()];
            args.extend(flag);
            assert_ok(&trt(cache.path(), &args), &format!("trt import {name} {precision}"));
            let d: Value = serde_json::from_str(&std::fs::read_to_string(out.join("trt_model.json")).unwrap()).unwrap();
            let onnx = out.join("model.onnx");
            let inspect = trt(cache.path(), &["inspect", onnx.to_str().unwrap(), "--json"]);
            assert_ok(&inspect, &format!("trt inspect {name}"));
            let shown: Value = serde_json::from_slice(&inspect.stdout).unwrap();
            let names = |mode: &str| -> Vec<String> {
                shown["tensors"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|t| t["mode"] == mode)
                    .map(|t| t["name"].as_str().unwrap().to_string())
                    .collect()
            };
            let want = |k: &str| -> Vec<String> { d[k].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect() };
            assert_eq!(names("input"), want("inputs"), "{name}: inputs");
            assert_eq!(names("output"), want("outputs"), "{name}: outputs");
            // Shapes for every input: batch 1..8, sequence 1..the model's limit.
            let max = d["max_seq_length"].as_u64().unwrap();
            let shapes = |b: u64, s: u64| names("input").iter().map(|n| format!("{n}:{b}x{s}")).collect::<Vec<_>>().join(",");
            let plan = work.path().join(format!("{name}-{precision}.plan"));
            let build = trt(
                cache.path(),
                &[
                    "build",
                    onnx.to_str().unwrap(),
                    "-o",
                    plan.to_str().unwrap(),
                    "--min-shapes",
                    &shapes(1, 1),
                    "--opt-shapes",
                    &shapes(4, max.min(32)),
                    "--max-shapes",
                    &shapes(8, max),
                ],
            );
            assert_ok(&build, &format!("trt build {name} {precision}"));
            let bytes = std::fs::metadata(&plan).unwrap().len();
            println!("{name} {precision}: TensorRT-RTX plan of {bytes} bytes");
            assert!(bytes > 0);
        }
    }
}

#[test]
fn trt_embed_takes_the_folder_itself() {
    let cache = tempfile::tempdir().unwrap();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(fixtures().join("references/bert-hub.json")).unwrap()).unwrap();
    let texts: Vec<&str> =
        r["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).filter(|t| !t.trim().is_empty()).take(3).collect();
    let src = fixtures().join("bert-hub");
    let mut args = vec!["embed", src.to_str().unwrap(), "--json", "--backend", "onnxruntime"];
    args.extend(&texts);
    let o = trt(cache.path(), &args);
    assert_ok(&o, "trt embed");
    let want: Vec<&Value> = r["texts"]
        .as_array()
        .unwrap()
        .iter()
        .zip(r["embeddings"].as_array().unwrap())
        .filter(|(t, _)| texts.contains(&t.as_str().unwrap()))
        .map(|(_, e)| e)
        .collect();
    for (line, want) in String::from_utf8_lossy(&o.stdout).lines().zip(want) {
        let got: Value = serde_json::from_str(line).unwrap();
        let diff = got["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .zip(want.as_array().unwrap())
            .map(|(a, b)| (a.as_f64().unwrap() - b.as_f64().unwrap()).abs())
            .fold(0.0, f64::max);
        assert!(diff <= 1e-4, "{line}: max diff {diff}");
    }
    // An unknown prompt is one line naming the prompts there are.
    let st5 = fixtures().join("bert-st5");
    let o = trt(cache.path(), &["embed", st5.to_str().unwrap(), "--prompt-name", "nope", "x"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("no prompt named 'nope'") && err.contains("passage"), "{err}");
}

#[test]
fn trt_serve_model_id_resolves_the_local_hub_cache_and_answers_like_sentence_transformers() {
    let deps = common::deps();
    let python = serve::venv_python(&deps, "openai", "openai");
    // A hub cache laid out as huggingface_hub writes it.
    let hub = tempfile::tempdir().unwrap();
    let repo = hub.path().join("models--tiny--bert-st5");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "f00d").unwrap();
    copy_dir(&fixtures().join("bert-st5"), &repo.join("snapshots/f00d"));
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trt"));
    cmd.args(["serve", "--model-id", "tiny/bert-st5", "--threads", "1"])
        .env("HF_HUB_CACHE", hub.path())
        .env("TRT_IMPORT_CACHE", cache.path());
    let log = cache.path().join("serve.log");
    let server = serve::Server::start_command_logging_to(cmd, Duration::from_secs(120), &log);
    let mut client = Command::new(&python);
    client
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/python/hf_serve.py"))
        .args(["--http", &server.http, "--model", "bert-st5"])
        .arg("--reference")
        .arg(fixtures().join("references/bert-st5.json"));
    serve::run_client(client, "tests/python/hf_serve.py", Duration::from_secs(120));
    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "trt serve exited with {exit} after SIGTERM");
}

#[test]
fn trt_compare_checks_a_folder_against_saved_sentence_transformers_vectors() {
    let cache = tempfile::tempdir().unwrap();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(fixtures().join("references/mpnet-mean.json")).unwrap()).unwrap();
    let lines: Vec<String> = r["texts"]
        .as_array()
        .unwrap()
        .iter()
        .zip(r["embeddings"].as_array().unwrap())
        .map(|(t, e)| serde_json::json!({"text": t, "embedding": e}).to_string())
        .collect();
    let file = cache.path().join("reference.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let src = fixtures().join("mpnet-mean");
    let (src, file) = (src.to_str().unwrap(), file.to_str().unwrap());
    let o = trt(cache.path(), &["compare", src, "--reference", file, "--backend", "onnxruntime", "--json"]);
    assert_ok(&o, "trt compare --reference");
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(report["worst_cosine"].as_f64().unwrap() >= 0.9999 && report["passed"] == true, "{report}");
    // FP16 against the FP32 reference, held to a bound it cannot meet: exit 1 naming the worst text.
    let o = trt(cache.path(), &["compare", src, "--reference", file, "--backend", "onnxruntime", "--fp16", "--atol", "1e-9"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("above --atol") && err.contains("reference.jsonl"), "{err}");
}

/// `trt serve` on a repository of fixture folders (`(model name, fixture)`,
/// imported by the server), driven by the Python client `script` with
/// `args` after `--http ADDR`, each bounded; the server must then exit 0 on SIGTERM.
fn serve_fixtures_to_client(models: &[(&str, &str)], modules: &str, script: &str, args: &[&std::ffi::OsStr], within: Duration) {
    let python = serve::venv_python(&common::deps(), modules, modules);
    let repo = tempfile::tempdir().unwrap();
    for (name, fixture) in models {
        copy_dir(&fixtures().join(fixture), &repo.path().join(name));
    }
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trt"));
    cmd.args(["serve", "--model-repository"]).arg(repo.path()).args(["--threads", "1"]).env("TRT_IMPORT_CACHE", cache.path());
    let server = serve::Server::start_command_logging_to(cmd, within, &cache.path().join("serve.log"));
    let mut client = Command::new(&python);
    client.arg(format!("{}/../tests/python/{script}", env!("CARGO_MANIFEST_DIR"))).args(["--http", &server.http]).args(args);
    serve::run_client(client, &format!("tests/python/{script}"), within);
    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "trt serve exited with {exit} after SIGTERM");
}

#[test]
fn a_model_repository_may_hold_a_huggingface_folder() {
    let reference = fixtures().join("references/bert-cls3.json");
    let args = ["--model".as_ref(), "sentiment".as_ref(), "--reference".as_ref(), reference.as_os_str()];
    serve_fixtures_to_client(&[("sentiment", "bert-cls3")], "tritonclient.http", "hf_repository.py", &args, Duration::from_secs(120));
}

#[test]
fn the_heads_routes_answer_like_the_libraries_with_their_clients() {
    let references = fixtures().join("references");
    let models = [("splade", "splade"), ("qwen3", "qwen3-reranker"), ("cross", "roberta-cross-encoder"), ("ner", "bert-ner")];
    let modules = "tritonclient.http, huggingface_hub";
    serve_fixtures_to_client(
        &models,
        modules,
        "hf_routes.py",
        &["--references".as_ref(), references.as_os_str()],
        Duration::from_secs(240),
    );
}

#[test]
fn trt_ner_prints_the_entities_of_transformers_pipeline() {
    let cache = tempfile::tempdir().unwrap();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(fixtures().join("references/bert-ner.json")).unwrap()).unwrap();
    let texts: Vec<&str> = r["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).filter(|t| !t.is_empty()).collect();
    let src = fixtures().join("bert-ner");
    for strategy in ["none", "simple", "first", "max", "average"] {
        let mut args = vec!["ner", src.to_str().unwrap(), "--json", "--backend", "onnxruntime", "--aggregation", strategy];
        args.extend(&texts);
        let o = trt(cache.path(), &args);
        assert_ok(&o, &format!("trt ner --aggregation {strategy}"));
        let want: Vec<&Value> = r["texts"]
            .as_array()
            .unwrap()
            .iter()
            .zip(r["entities"][strategy].as_array().unwrap())
            .filter(|(t, _)| !t.as_str().unwrap().is_empty())
            .map(|(_, e)| e)
            .collect();
        let lines: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
        assert_eq!(lines.len(), texts.len(), "one line per text");
        for ((line, want), text) in lines.iter().zip(want).zip(&texts) {
            let got: Value = serde_json::from_str(line).unwrap();
            assert_eq!(got["text"], *text);
            let (got, want) = (got["entities"].as_array().unwrap(), want.as_array().unwrap());
            assert_eq!(got.len(), want.len(), "{strategy} {text:?}: {got:?} vs {want:?}");
            for (g, w) in got.iter().zip(want) {
                for key in ["entity", "entity_group", "index", "word", "start", "end"] {
                    assert_eq!(g.get(key), w.get(key), "{strategy} {text:?}: {key} of {g} vs {w}");
                }
                assert!((g["score"].as_f64().unwrap() - w["score"].as_f64().unwrap()).abs() <= 1e-4, "{strategy} {text:?}: {g} vs {w}");
            }
        }
    }
    // A model that does not classify tokens is refused, naming why.
    let o = trt(cache.path(), &["ner", fixtures().join("bert-cls3").to_str().unwrap(), "--backend", "onnxruntime", "x"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("token classification needs"), "{err}");
}
