//! Tensor models on `trt serve`, driven by the real Triton client (PyPI
//! `tritonclient[http,grpc]` in `.deps/venv`) as a client that tokenizes
//! itself: tests/python/serve_tensor.py sends INT64 `input_ids` /
//! `attention_mask` / `token_type_ids` over HTTP (binary and JSON) and gRPC
//! and compares every output with Python onnxruntime's on the same ids.
//!
//! The repository, served with `--strict-readiness false` on 127.0.0.1 with
//! ephemeral ports:
//!
//! | model | what it is |
//! |---|---|
//! | `bert_ids` | the default model with int64 token inputs (`.deps/models/minilm-int64`), its config declaring them; dynamic batching |
//! | `bert_auto` | the same model, a config with no input or output: completed from the model |
//! | `bert_padded` | `bert_ids` with its three inputs declared paddable (`pad.*` parameters) and `last_hidden_state` cut back (`unpad.*`): ragged requests share batches |
//! | `fp16` | the FP16 default model: INT32 inputs, FP16 outputs, completed from the model |
//! | `mlp` | a small FP32 model with a fixed feature dimension (`.deps/models/test/external_weights.onnx`) |
//! | `minilm` | a text model next to them |
//! | `mlp_whole` | the same model with `max_batch_size: 0` (shapes are whole, no batch axis added) |
//! | `plan_ids` | a `tensorrt_plan` tensor model that cannot run here: UNAVAILABLE with the reason |
//! | `broken` | a config that declares TYPE_INT32 where the model takes INT64: fails to load, the others serve |
//!
//! Bounded: ready within 120 s, the client done within 300 s, exit within 30 s of SIGTERM.

mod common;
#[path = "common/serve.rs"]
mod serve;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serve::{add_model, run_client, text_config, Server};

/// `ROOT/<name>/config.pbtxt`, `tokenizer.json` from `tokenizer_dir`, and
/// version 1 holding symlinks to `files` (the first named `model.onnx`).
fn add_tensor_model(root: &Path, name: &str, config: &str, tokenizer_dir: &Path, files: &[(&Path, &str)]) {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("1")).unwrap();
    std::fs::write(dir.join("config.pbtxt"), config).unwrap();
    std::fs::copy(tokenizer_dir.join("tokenizer.json"), dir.join("tokenizer.json")).unwrap();
    for (src, as_name) in files {
        std::os::unix::fs::symlink(src.canonicalize().unwrap(), dir.join("1").join(as_name)).unwrap();
    }
}

fn ids_config(data_type: &str, extra: &str) -> String {
    let inputs: Vec<String> = common::BERT_INPUTS
        .iter()
        .map(|n| format!("  {{ name: \"{n}\" data_type: {} dims: [ -1 ] }}", if *n == "input_ids" { data_type } else { "TYPE_INT64" }))
        .collect();
    format!(
        "platform: \"onnxruntime_onnx\"\nmax_batch_size: 8\ninput [\n{}\n]\noutput [\n  {{ name: \"logits\" data_type: TYPE_FP32 dims: [ 2 ] }},\n  {{ name: \"last_hidden_state\" data_type: TYPE_FP32 dims: [ -1, 384 ] }}\n]\n{extra}\n",
        inputs.join(",\n")
    )
}

#[test]
fn tritonclient_sends_int64_token_tensors_to_tensor_models() {
    let deps = common::deps();
    let python = serve::venv_python(&deps, "tritonclient.http, tritonclient.grpc, onnxruntime, tokenizers", "tritonclient[http,grpc]");
    let minilm = serve::minilm(&deps);
    let int64 = common::generated("models/minilm-int64");
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    let batching = "dynamic_batching { max_queue_delay_microseconds: 20000 }\ninstance_group [ { count: 1 kind: KIND_CPU } ]";
    let int64_model = int64.join("model.onnx");
    add_tensor_model(root, "bert_ids", &ids_config("TYPE_INT64", batching), &int64, &[(&int64_model, "model.onnx")]);
    let padded = concat!(
        "parameters [ { key: \"pad.input_ids\" value { string_value: \"0\" } }, { key: \"pad.attention_mask\" value { string_value: \"0\" } },\n",
        "  { key: \"pad.token_type_ids\" value { string_value: \"0 along 0\" } }, { key: \"unpad.last_hidden_state\" value { string_value: \"0=input_ids:0\" } } ]",
    );
    add_tensor_model(
        root,
        "bert_padded",
        &ids_config("TYPE_INT64", &format!("{batching}\n{padded}")),
        &int64,
        &[(&int64_model, "model.onnx")],
    );
    add_tensor_model(root, "bert_auto", "platform: \"onnxruntime_onnx\"\nmax_batch_size: 4\n", &int64, &[(&int64_model, "model.onnx")]);
    add_tensor_model(root, "broken", &ids_config("TYPE_INT32", ""), &int64, &[(&int64_model, "model.onnx")]);
    let fp16 = minilm.join("model_fp16.onnx");
    add_tensor_model(root, "fp16", "backend: \"onnxruntime\"\nmax_batch_size: 8\n", &minilm, &[(&fp16, "model.onnx")]);
    let (mlp, weights) = (common::generated("models/test/external_weights.onnx"), common::generated("models/test/external_weights.bin"));
    let mlp_config = "platform: \"onnxruntime_onnx\"\nmax_batch_size: 8\ninput [ { name: \"x\" data_type: TYPE_FP32 dims: [ 64 ] } ]\n";
    add_tensor_model(root, "mlp", mlp_config, &minilm, &[(&mlp, "model.onnx"), (&weights, "external_weights.bin")]);
    let whole = "platform: \"onnxruntime_onnx\"\nmax_batch_size: 0\n";
    add_tensor_model(root, "mlp_whole", whole, &minilm, &[(&mlp, "model.onnx"), (&weights, "external_weights.bin")]);
    add_tensor_model(root, "plan_ids", "platform: \"tensorrt_plan\"\nmax_batch_size: 8\n", &int64, &[]);
    std::fs::write(root.join("plan_ids/1/model.plan"), b"not a plan: TensorRT cannot execute here anyway").unwrap();
    add_model(root, "minilm", &text_config("onnxruntime_onnx", 8, &[("logits", "2")], ""), &minilm, ("model.onnx", None));

    let server = Server::start(
        Path::new(env!("CARGO_BIN_EXE_trt")),
        root,
        &["--threads", "1", "--strict-readiness", "false"],
        Duration::from_secs(120),
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/python/serve_tensor.py");
    let mut client = Command::new(&python);
    client.arg(script).args(["--http", &server.http, "--grpc", &server.grpc, "--metrics", &server.metrics]).arg("--repo").arg(root);
    run_client(client, "tests/python/serve_tensor.py", Duration::from_secs(300));
    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "trt serve exited with {exit} after SIGTERM");
}
