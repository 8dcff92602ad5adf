//! `trt serve`'s model-control modes over the default model (ONNX Runtime),
//! on 127.0.0.1 with ephemeral ports: `none` refuses the repository API's
//! load and unload naming the mode; `explicit` loads only `--load-model`
//! (or `*`) and allows load / unload; `poll` picks up a new version under
//! traffic with no failed request, a new model, and a removed one, and
//! reopens a version whose files changed; readiness
//! follows `--strict-readiness`. Bounded: each server ready within 120 s,
//! every wait and the traffic loop with a deadline and a count.

mod common;
#[path = "common/serve.rs"]
#[allow(dead_code)]
mod serve;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serve::{add_model, text_config, Server};

/// One request on its own connection: the status code and the body.
fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let (code, _, body) = serve::http_request(addr, method, path, "", body);
    (code, body)
}

const INFER: &str = r#"{"inputs":[{"name":"text","shape":[1,1],"datatype":"BYTES","data":["hello world"]}]}"#;

fn config() -> String {
    text_config("onnxruntime_onnx", 4, &[("logits", "2")], "")
}

fn start(repo: &Path, extra: &[&str]) -> Server {
    let mut flags = vec!["--threads", "1"];
    flags.extend_from_slice(extra);
    Server::start(Path::new(env!("CARGO_BIN_EXE_trt")), repo, &flags, Duration::from_secs(120))
}

fn stop(server: Server) {
    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "trt serve exited with {exit} after SIGTERM");
}

/// Polls `f` every 100 ms until it holds, at most `within`.
fn eventually(within: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !f() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn mode_none_loads_everything_and_refuses_load_and_unload() {
    let minilm = serve::minilm(&common::deps());
    let repo = tempfile::tempdir().unwrap();
    add_model(repo.path(), "a", &config(), &minilm, ("model.onnx", None));
    add_model(repo.path(), "b", &config(), &minilm, ("model.onnx", None));
    let server = start(repo.path(), &[]);
    assert_eq!(request(&server.http, "GET", "/v2/health/ready", "").0, 200);
    assert_eq!(request(&server.http, "GET", "/v2/models/b/ready", "").0, 200);
    for op in ["unload", "load"] {
        let (code, body) = request(&server.http, "POST", &format!("/v2/repository/models/a/{op}"), "");
        assert_eq!(code, 400, "{op} in mode none: {body}");
        assert!(body.contains("model-control mode 'none'"), "{body}");
    }
    assert_eq!(request(&server.http, "POST", "/v2/models/a/infer", INFER).0, 200, "a still serves");
    assert_eq!(request(&server.http, "POST", "/v2/models/a/infer", INFER).0, 200);

    // The latency histograms agree with the success counter, end to end.
    let (_, metrics) = request(&server.metrics, "GET", "/metrics", "");
    let value = |prefix: &str| -> f64 {
        let line = metrics.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix} in\n{metrics}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let success = value(r#"nv_inference_request_success{model="a",version="1"}"#);
    assert_eq!(success, 2.0);
    for phase in ["request", "queue", "compute_input", "compute_infer", "compute_output"] {
        let name = format!("trt_serve_{phase}_latency_us");
        assert_eq!(value(&format!(r#"{name}_count{{model="a",version="1"}}"#)), success, "{name}");
        assert_eq!(value(&format!(r#"{name}_bucket{{model="a",version="1",le="+Inf"}}"#)), success, "{name}");
    }
    stop(server);
}

#[test]
fn mode_explicit_loads_only_what_is_named_and_allows_load_and_unload() {
    let minilm = serve::minilm(&common::deps());
    let repo = tempfile::tempdir().unwrap();
    add_model(repo.path(), "a", &config(), &minilm, ("model.onnx", None));
    add_model(repo.path(), "b", &config(), &minilm, ("model.onnx", None));
    let server = start(repo.path(), &["--model-control-mode", "explicit", "--load-model", "a"]);
    assert_eq!(request(&server.http, "GET", "/v2/models/a/ready", "").0, 200);
    assert_eq!(request(&server.http, "GET", "/v2/models/b/ready", "").0, 400, "b was not asked for");
    assert_eq!(request(&server.http, "GET", "/v2/health/ready", "").0, 200, "ready: every model asked for is ready");
    let (_, index) = request(&server.http, "POST", "/v2/repository/index", "");
    assert!(index.contains(r#""name":"b","reason":"not loaded""#) || index.contains("not loaded"), "{index}");
    assert_eq!(request(&server.http, "POST", "/v2/repository/models/b/load", "").0, 200);
    assert_eq!(request(&server.http, "POST", "/v2/models/b/infer", INFER).0, 200);
    assert_eq!(request(&server.http, "POST", "/v2/repository/models/a/unload", "").0, 200);
    assert_eq!(request(&server.http, "GET", "/v2/models/a/ready", "").0, 400);
    stop(server);

    let server = start(repo.path(), &["--model-control-mode", "explicit", "--load-model", "*"]);
    assert_eq!(request(&server.http, "GET", "/v2/models/a/ready", "").0, 200);
    assert_eq!(request(&server.http, "GET", "/v2/models/b/ready", "").0, 200);
    stop(server);
}

#[test]
fn strict_readiness_follows_the_flag() {
    let minilm = serve::minilm(&common::deps());
    let repo = tempfile::tempdir().unwrap();
    add_model(repo.path(), "a", &config(), &minilm, ("model.onnx", None));
    let plan = text_config("tensorrt_plan", 4, &[("logits", "2")], "");
    add_model(repo.path(), "plan", &plan, &minilm, ("model.plan", Some(b"not a plan")));
    let server = start(repo.path(), &[]);
    assert_eq!(request(&server.http, "GET", "/v2/health/ready", "").0, 400, "strict: a model that cannot load keeps it unready");
    stop(server);
    let server = start(repo.path(), &["--strict-readiness", "false"]);
    assert_eq!(request(&server.http, "GET", "/v2/health/ready", "").0, 200, "not strict: ready once serving");
    assert_eq!(request(&server.http, "GET", "/v2/models/a/ready", "").0, 200);
    stop(server);
}

#[test]
fn mode_poll_picks_up_versions_and_models_under_traffic_with_no_failure() {
    let minilm = serve::minilm(&common::deps());
    let repo = tempfile::tempdir().unwrap();
    add_model(repo.path(), "a", &config(), &minilm, ("model.onnx", None));
    let server = start(repo.path(), &["--model-control-mode", "poll", "--repository-poll-secs", "1"]);
    let (code, body) = request(&server.http, "POST", "/v2/repository/models/a/unload", "");
    assert!(code == 400 && body.contains("model-control mode 'poll'"), "{code} {body}");

    // Traffic: one client, bounded in count and time, counting versions answered and failures.
    let stop_traffic = Arc::new(AtomicBool::new(false));
    let traffic = {
        let (addr, stop_traffic) = (server.http.clone(), stop_traffic.clone());
        std::thread::spawn(move || {
            let (mut v1, mut v2, mut failed) = (0, 0, Vec::new());
            let deadline = Instant::now() + Duration::from_secs(120);
            for _ in 0..5000 {
                if stop_traffic.load(Ordering::Relaxed) || Instant::now() > deadline {
                    break;
                }
                match request(&addr, "POST", "/v2/models/a/infer", INFER) {
                    (200, b) if b.contains(r#""model_version":"2""#) => v2 += 1,
                    (200, _) => v1 += 1,
                    (code, b) => failed.push((code, b)),
                }
            }
            (v1, v2, failed)
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let v2 = repo.path().join("a/2");
    std::fs::create_dir_all(&v2).unwrap();
    std::os::unix::fs::symlink(minilm.join("model.onnx").canonicalize().unwrap(), v2.join("model.onnx")).unwrap();
    eventually(Duration::from_secs(60), "version 2 served", || {
        request(&server.http, "GET", "/v2/models/a", "").1.contains(r#""versions":["2"]"#)
    });
    std::thread::sleep(Duration::from_millis(500));
    stop_traffic.store(true, Ordering::Relaxed);
    let (on_v1, on_v2, failed) = traffic.join().unwrap();
    println!("poll: {on_v1} requests on version 1, {on_v2} on version 2, {} failed", failed.len());
    assert!(failed.is_empty(), "requests failed during the version switch: {failed:?}");
    assert!(on_v1 > 0 && on_v2 > 0, "the traffic did not span the switch ({on_v1} on 1, {on_v2} on 2)");

    // A new model appears; then its folder goes.
    add_model(repo.path(), "c", &config(), &minilm, ("model.onnx", None));
    eventually(Duration::from_secs(60), "new model c ready", || request(&server.http, "GET", "/v2/models/c/ready", "").0 == 200);
    std::fs::remove_dir_all(repo.path().join("c")).unwrap();
    eventually(Duration::from_secs(60), "removed model c unloaded", || request(&server.http, "GET", "/v2/models/c/ready", "").0 != 200);
    assert_eq!(request(&server.http, "POST", "/v2/models/a/infer", INFER).0, 200, "a still serves");
    stop(server);
}

#[test]
fn mode_poll_reopens_a_version_whose_files_changed() {
    let minilm = serve::minilm(&common::deps());
    let repo = tempfile::tempdir().unwrap();
    // Version 1 starts as the FP32 model (a symlink), then its model.onnx is
    // replaced by the FP16 model: same version number, same config, other
    // weights, so other logits once the version is reopened.
    add_model(repo.path(), "a", &config(), &minilm, ("model.onnx", None));
    let server = start(repo.path(), &["--model-control-mode", "poll", "--repository-poll-secs", "1"]);
    let logits = || {
        let (code, body) = request(&server.http, "POST", "/v2/models/a/infer", INFER);
        assert_eq!(code, 200, "{body}");
        body
    };
    let before = logits();
    let file = repo.path().join("a/1/model.onnx");
    let staged = repo.path().join("a/1/.model.onnx.new");
    std::os::unix::fs::symlink(minilm.join("model_fp16.onnx").canonicalize().unwrap(), &staged).unwrap();
    std::fs::rename(&staged, &file).unwrap();
    eventually(Duration::from_secs(60), "version 1 reopened with the new file", || logits() != before);
    assert!(logits().contains(r#""model_version":"1""#));
    stop(server);
}

#[test]
fn single_model_mode_serves_a_model_folder_under_its_name() {
    let minilm = serve::minilm(&common::deps());
    let repo = tempfile::tempdir().unwrap();
    add_model(repo.path(), "folder", &config(), &minilm, ("model.onnx", None));
    let models = repo.path().join("folder");
    let flags = ["serve", "--model-dir", models.to_str().unwrap(), "--model-name", "embedder", "--threads", "1"];
    let server = Server::start_with_args(Path::new(env!("CARGO_BIN_EXE_trt")), &flags, Duration::from_secs(120));
    assert_eq!(request(&server.http, "GET", "/v2/models/embedder/ready", "").0, 200);
    let (code, body) = request(&server.http, "POST", "/v2/models/embedder/infer", INFER);
    assert!(code == 200 && body.contains(r#""model_name":"embedder""#), "{code} {body}");
    assert_eq!(request(&server.http, "GET", "/v2/health/ready", "").0, 200);
    stop(server);
}
