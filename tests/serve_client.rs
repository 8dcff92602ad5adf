//! `trt serve` driven by the real Triton client (PyPI `tritonclient[http,grpc]`
//! in `.deps/venv`): tests/python/serve_client.py runs every protocol check (health, metadata, config, infer
//! in JSON, binary and gRPC, classification, repository, statistics) against a server started here on 127.0.0.1 with
//! ephemeral ports, over ONNX Runtime and the default model laid out as a
//! Triton repository (a classifier, an embedder, a TensorRT plan that cannot
//! run here, a model whose version switches under traffic, one with a queue
//! of four requests); `embed` batches dynamically, `embed_direct` runs each
//! request on its own, so both paths are checked against the reference. Bounded: the server must be ready within 120 s, the
//! client finish within 300 s, the server exit within 30 s of SIGTERM.

mod common;
#[path = "common/serve.rs"]
mod serve;

use std::process::Command;
use std::time::Duration;

use serve::{add_model, run_client, text_config, Server};

#[test]
fn tritonclient_drives_trt_serve() {
    let deps = common::deps();
    let python = serve::venv_python(&deps, "tritonclient.http, tritonclient.grpc, onnxruntime, tokenizers", "tritonclient[http,grpc]");
    let minilm = serve::minilm(&deps);
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    let batching = "dynamic_batching { preferred_batch_size: [ 4, 8 ] max_queue_delay_microseconds: 2000 }";
    add_model(root, "minilm", &text_config("onnxruntime_onnx", 8, &[("logits", "2")], batching), &minilm, ("model.onnx", None));
    let embed_outputs = [("embedding", "384"), ("last_hidden_state", "-1, 384")];
    add_model(root, "embed", &text_config("onnxruntime_onnx", 8, &embed_outputs, batching), &minilm, ("model.onnx", None));
    add_model(root, "embed_direct", &text_config("onnxruntime_onnx", 8, &embed_outputs, ""), &minilm, ("model.onnx", None));
    let plan = text_config("tensorrt_plan", 8, &[("logits", "2")], "");
    add_model(root, "plan", &plan, &minilm, ("model.plan", Some(b"not a plan: TensorRT cannot execute here anyway")));
    add_model(root, "switch", &text_config("onnxruntime_onnx", 4, &[("logits", "2")], ""), &minilm, ("model.onnx", None));
    let busy = text_config(
        "onnxruntime_onnx",
        1,
        &[("logits", "2")],
        "dynamic_batching { default_queue_policy { max_queue_size: 4 } }\ninstance_group [ { count: 1 } ]",
    );
    add_model(root, "busy", &busy, &minilm, ("model.onnx", None));

    let server = Server::start(
        std::path::Path::new(env!("CARGO_BIN_EXE_trt")),
        root,
        &["--threads", "1", "--max-request-bytes", "1048576", "--model-control-mode", "explicit", "--load-model", "*"],
        Duration::from_secs(120),
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/python/serve_client.py");
    let mut client = Command::new(&python);
    client.arg(script).args(["--http", &server.http, "--grpc", &server.grpc, "--metrics", &server.metrics]).arg("--repo").arg(root);
    run_client(client, "tests/python/serve_client.py", Duration::from_secs(300));
    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "trt serve exited with {exit} after SIGTERM");
}
