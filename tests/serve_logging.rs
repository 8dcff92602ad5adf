//! `trt serve`'s log: `--log-format json` writes one JSON object per line and
//! each request's lines carry its request id (the client's `x-request-id`, or
//! a new one that the response's header shows) and a valid W3C `traceparent`
//! (a malformed one is ignored, never refused), over HTTP and gRPC (the real
//! gRPC client, Python `grpcio` from the setup venv); `RUST_LOG` decides what
//! is shown (a malformed one is a usage error). The default model on ONNX
//! Runtime, 127.0.0.1, ephemeral ports; each server ready within 120 s.

mod common;
#[path = "common/serve.rs"]
#[allow(dead_code)]
mod serve;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use serve::{add_model, text_config, Server};

const INFER: &str = r#"{"inputs":[{"name":"text","shape":[1,1],"datatype":"BYTES","data":["hello world"]}]}"#;

/// One request on its own connection, with `headers` (`Name: value` lines):
/// the status code and the response's head.
fn request(addr: &str, method: &str, path: &str, headers: &str, body: &str) -> (u16, String) {
    let (code, head, _) = serve::http_request(addr, method, path, headers, body);
    (code, head)
}

/// The value of header `name` (lowercase) in a response head.
fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string()))
}

fn repository() -> tempfile::TempDir {
    let minilm = serve::minilm(&common::deps());
    let repo = tempfile::tempdir().unwrap();
    add_model(repo.path(), "m", &text_config("onnxruntime_onnx", 4, &[("logits", "2")], ""), &minilm, ("model.onnx", None));
    repo
}

/// `trt serve` over `repo` with `RUST_LOG` set to `rust_log` (unset: None) and `extra` flags.
fn serve_command(repo: &Path, rust_log: Option<&str>, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trt"));
    cmd.args(["serve", "--threads", "1", "--model-repository"]).arg(repo).args(extra);
    match rust_log {
        Some(v) => cmd.env("RUST_LOG", v),
        None => cmd.env_remove("RUST_LOG"),
    };
    cmd
}

fn stop(server: Server) {
    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "trt serve exited with {exit} after SIGTERM");
}

/// The log's lines as JSON objects (every line must be one).
fn json_lines(log: &str) -> Vec<Value> {
    log.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"))).collect()
}

/// The `finished` event of the request whose span has `request_id`.
fn finished<'a>(lines: &'a [Value], request_id: &str) -> Option<&'a Value> {
    lines.iter().find(|l| l["message"] == "finished" && l["span"]["name"] == "request" && l["span"]["request_id"] == request_id)
}

#[test]
fn json_lines_carry_each_requests_id_over_http_and_grpc() {
    let deps = common::deps();
    let python = serve::venv_python(&deps, "grpc, tritonclient.grpc", "tritonclient[grpc]");
    let repo = repository();
    let log = repo.path().join("serve.log");
    let cmd = serve_command(repo.path(), Some("trt_serve::request=debug"), &["--log-format", "json"]);
    let server = Server::start_command_logging_to(cmd, Duration::from_secs(120), &log);

    let traced = "X-Request-Id: http-req-42\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n";
    let (code, head) = request(&server.http, "POST", "/v2/models/m/infer", traced, INFER);
    assert_eq!(code, 200, "{head}");
    assert_eq!(header(&head, "x-request-id").as_deref(), Some("http-req-42"), "the client's id is echoed: {head}");
    // A malformed traceparent (all-zero trace id) is ignored: no refusal.
    let bad = "traceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01\r\n";
    let (code, head) = request(&server.http, "GET", "/v2/health/ready", bad, "");
    assert_eq!(code, 200, "{head}");
    let generated = header(&head, "x-request-id").expect("a new id when the client sends none");
    assert!(generated.len() == 32 && generated.bytes().all(|c| c.is_ascii_hexdigit()), "{generated}");
    // An unusable client id (a space inside) is replaced, not echoed.
    let (_, head) = request(&server.http, "GET", "/v2/health/live", "X-Request-Id: two words\r\n", "");
    let replaced = header(&head, "x-request-id").unwrap();
    assert_ne!(replaced, "two words");

    let grpc = r#"
import sys, grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc
stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(sys.argv[1]))
reply, call = stub.ServerLive.with_call(service_pb2.ServerLiveRequest(), metadata=[("x-request-id", "grpc-req-7")], timeout=30)
assert reply.live
print(dict(call.initial_metadata()).get("x-request-id"))
"#;
    let out = Command::new(&python).args(["-c", grpc, &server.grpc]).output().unwrap();
    assert!(out.status.success(), "gRPC client: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "grpc-req-7", "the gRPC answer's metadata echoes the id");
    stop(server);

    let text = std::fs::read_to_string(&log).unwrap();
    let lines = json_lines(&text);
    let infer = finished(&lines, "http-req-42").unwrap_or_else(|| panic!("no line for http-req-42 in\n{text}"));
    assert_eq!(infer["span"]["path"], "/v2/models/m/infer");
    assert_eq!(infer["span"]["method"], "POST");
    assert_eq!(infer["status"], 200);
    assert_eq!(infer["level"], "DEBUG");
    assert!(infer["latency_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{infer}");
    assert_eq!(infer["span"]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736", "the traceparent is on the span: {infer}");
    assert_eq!(infer["span"]["parent_id"], "00f067aa0ba902b7");
    assert_eq!(infer["span"]["sampled"], true);
    let ready = finished(&lines, &generated).unwrap_or_else(|| panic!("no line for the generated id {generated} in\n{text}"));
    assert!(ready["span"].get("trace_id").is_none(), "a malformed traceparent recorded: {ready}");
    assert!(
        lines.iter().any(|l| l["span"]["request_id"] == generated.as_str()
            && l["message"] == "traceparent ignored: the traceparent's trace id is all zero"),
        "the ignored traceparent is logged with its reason:\n{text}"
    );
    assert!(finished(&lines, &replaced).is_some(), "no line for {replaced} in\n{text}");
    let live = finished(&lines, "grpc-req-7").unwrap_or_else(|| panic!("no line for grpc-req-7 in\n{text}"));
    assert_eq!(live["span"]["path"], "/inference.GRPCInferenceService/ServerLive");
    // RUST_LOG named only the request target: the model's load (INFO) is not shown.
    assert!(lines.iter().all(|l| l["target"] == "trt_serve::request"), "other targets shown:\n{text}");
}

#[test]
fn rust_log_filters_and_the_default_is_info() {
    let repo = repository();
    // Default (RUST_LOG unset): INFO, so the model's load is shown and a request's DEBUG line is not.
    let log = repo.path().join("default.log");
    let server = Server::start_command_logging_to(serve_command(repo.path(), None, &[]), Duration::from_secs(120), &log);
    assert_eq!(request(&server.http, "POST", "/v2/models/m/infer", "X-Request-Id: quiet-1\r\n", INFER).0, 200);
    stop(server);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("model 'm' version 1: ready"), "{text}");
    assert!(text.contains(" INFO "), "text format, one level per line:\n{text}");
    assert!(!text.contains("quiet-1"), "DEBUG request lines shown at the default level:\n{text}");
    assert!(!text.trim_start().starts_with('{'), "text, not JSON, by default:\n{text}");

    // RUST_LOG=warn: nothing at INFO.
    let log = repo.path().join("warn.log");
    let server = Server::start_command_logging_to(serve_command(repo.path(), Some("warn"), &[]), Duration::from_secs(120), &log);
    stop(server);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(" INFO "), "INFO lines under RUST_LOG=warn:\n{text}");
    assert!(!text.contains("ready"), "{text}");

    // A malformed RUST_LOG is a usage error naming it.
    let out = serve_command(repo.path(), Some("trt_serve=loud"), &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("RUST_LOG") && err.contains("loud"), "{err}");
}
