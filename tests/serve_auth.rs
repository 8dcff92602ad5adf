//! `trt serve`'s API keys driven by the real Triton client (PyPI
//! `tritonclient[http,grpc]` in `.deps/venv`, headers `Authorization: Bearer`):
//! tests/python/serve_auth.py checks health and metrics open, inference and
//! metadata refused without the key (HTTP 401, gRPC `UNAUTHENTICATED`),
//! repository routes refused without the admin key, and everything working
//! with the right key. The server runs on 127.0.0.1 with ephemeral ports
//! over the default model (ONNX Runtime); its log is checked not to contain
//! either key. Bounded: ready within 120 s, the client within 180 s, exit
//! within 30 s of SIGTERM.

mod common;
#[path = "common/serve.rs"]
#[allow(dead_code)]
mod serve;

use std::process::{Command, Stdio};
use std::time::Duration;

use serve::{add_model, text_config, wait_bounded, Server};

#[test]
fn api_keys_guard_inference_and_repository_routes() {
    let deps = common::deps();
    let python = serve::venv_python(&deps, "tritonclient.http, tritonclient.grpc", "tritonclient[http,grpc]");
    let minilm = serve::minilm(&deps);
    let repo = tempfile::tempdir().unwrap();
    add_model(repo.path(), "m", &text_config("onnxruntime_onnx", 4, &[("logits", "2")], ""), &minilm, ("model.onnx", None));
    let key = "inference-key-7f3a9c";
    let admin = "admin-key-41be07";
    let key_file = repo.path().join("api.key");
    std::fs::write(&key_file, format!("{key}\n")).unwrap();
    let log = repo.path().join("server.log");
    let server = Server::start_logging_to(
        std::path::Path::new(env!("CARGO_BIN_EXE_trt")),
        repo.path(),
        &[
            "--threads",
            "1",
            "--api-key-file",
            key_file.to_str().unwrap(),
            "--admin-api-key",
            admin,
            "--model-control-mode",
            "explicit",
            "--load-model",
            "*",
        ],
        Duration::from_secs(120),
        &log,
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/python/serve_auth.py");
    let mut client = Command::new(&python)
        .arg(script)
        .args(["--http", &server.http, "--grpc", &server.grpc, "--metrics", &server.metrics, "--key", key, "--admin", admin])
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python runs");
    let status = wait_bounded(&mut client, Duration::from_secs(180)).unwrap_or_else(|| {
        let _ = client.kill();
        panic!("the auth checks did not finish within 180 s")
    });
    let exit = server.terminate(Duration::from_secs(30));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "tests/python/serve_auth.py failed ({status}); its output above names the check\n{logged}");
    assert!(exit.success(), "trt serve exited with {exit} after SIGTERM");
    assert!(logged.contains("401 POST /v2/models/m/infer"), "refusals are logged:\n{logged}");
    assert!(logged.contains("UNAUTHENTICATED /inference.GRPCInferenceService/ModelInfer"), "gRPC refusals are logged:\n{logged}");
    assert!(!logged.contains(key) && !logged.contains(admin) && !logged.contains("not-the-key"), "the log shows a key:\n{logged}");
}
