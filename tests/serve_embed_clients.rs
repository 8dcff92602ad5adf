//! `trt serve`'s TEI and OpenAI routes driven by the real clients (PyPI
//! `openai` and `huggingface_hub` in `.deps/venv`): tests/python/embed_clients.py
//! checks embeddings, similarities, rerank order and logits against Python
//! tokenizers + onnxruntime on the same files, and bad input for every route.
//! The repository: `embed` (the default model, exposing `embedding` and
//! `last_hidden_state`, dynamically batched) and `rerank` (the cross-encoder
//! of scripts/make_cross_encoder.py, one logit). Loopback only, bounded: the
//! server must be ready within 120 s, the client finish within 300 s, the
//! server exit within 30 s of SIGTERM.

mod common;
#[path = "common/serve.rs"]
mod serve;

use std::process::Command;
use std::time::Duration;

use serve::{add_model, run_client, text_config, Server};

#[test]
fn openai_and_huggingface_hub_drive_the_embedding_routes() {
    let deps = common::deps();
    let python = serve::venv_python(&deps, "openai, huggingface_hub, onnxruntime, tokenizers", "openai and huggingface_hub");
    let minilm = serve::minilm(&deps);
    let cross = deps.join("models/cross-encoder");
    assert!(cross.join("model.onnx").exists(), "{} is missing: run scripts/setup", cross.display());
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    let batching = "dynamic_batching { max_queue_delay_microseconds: 2000 }";
    let embed_outputs = [("embedding", "384"), ("last_hidden_state", "-1, 384")];
    add_model(root, "embed", &text_config("onnxruntime_onnx", 8, &embed_outputs, batching), &minilm, ("model.onnx", None));
    add_model(root, "rerank", &text_config("onnxruntime_onnx", 8, &[("logits", "1")], batching), &cross, ("model.onnx", None));

    let server = Server::start(std::path::Path::new(env!("CARGO_BIN_EXE_trt")), root, &["--threads", "1"], Duration::from_secs(120));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/python/embed_clients.py");
    let mut client = Command::new(&python);
    client
        .arg(script)
        .args(["--http", &server.http, "--metrics", &server.metrics])
        .arg("--repo")
        .arg(root)
        .env("HF_HUB_DISABLE_TELEMETRY", "1");
    run_client(client, "tests/python/embed_clients.py", Duration::from_secs(300));
    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "trt serve exited with {exit} after SIGTERM");
}
