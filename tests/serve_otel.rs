//! `trt serve --otlp-endpoint` (feature `otel`): the request spans reach a
//! real OTLP/HTTP receiver (tests/python/otlp_receiver.py: Python's HTTP
//! server decoding with PyPI `opentelemetry-proto`), and a request's valid
//! `traceparent` is the exported span's parent (same trace id, parent span
//! id the caller's). 127.0.0.1 only; the receiver exits by itself after 120 s.

mod common;
#[path = "common/serve.rs"]
#[allow(dead_code)]
mod serve;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serve::{add_model, text_config, Server};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

fn get(addr: &str, path: &str, headers: &str) -> u16 {
    serve::http_request(addr, "GET", path, headers, "").0
}

#[test]
fn request_spans_reach_an_otlp_receiver_with_the_callers_trace() {
    let deps = common::deps();
    let python = serve::venv_python(&deps, "opentelemetry.proto.collector.trace.v1.trace_service_pb2", "opentelemetry-proto");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/python/otlp_receiver.py");
    let mut receiver = Command::new(python).arg(script).arg("120").stdout(Stdio::piped()).spawn().expect("python runs");
    let mut lines = BufReader::new(receiver.stdout.take().unwrap()).lines();
    let first = lines.next().expect("the receiver prints its port").unwrap();
    let port = first.strip_prefix("port ").expect("port N").to_string();

    let minilm = serve::minilm(&deps);
    let repo = tempfile::tempdir().unwrap();
    add_model(repo.path(), "m", &text_config("onnxruntime_onnx", 4, &[("logits", "2")], ""), &minilm, ("model.onnx", None));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trt"));
    cmd.args(["serve", "--threads", "1", "--model-repository"]).arg(repo.path());
    cmd.args(["--otlp-endpoint", &format!("http://127.0.0.1:{port}/v1/traces")]).env_remove("RUST_LOG");
    let server = Server::start_command_logging_to(cmd, Duration::from_secs(120), &repo.path().join("serve.log"));
    let traceparent = format!("traceparent: 00-{TRACE_ID}-{PARENT_ID}-01\r\nX-Request-Id: otel-1\r\n");
    assert_eq!(get(&server.http, "/v2/health/ready", &traceparent), 200);
    assert_eq!(get(&server.http, "/v2/health/live", "X-Request-Id: otel-2\r\n"), 200);
    // SIGTERM: the server drains and exits, and the exporter flushes on the way out.
    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "trt serve exited with {exit}");
    let _ = receiver.kill();
    let spans: Vec<serde_json::Value> = lines.map_while(|l| l.ok()).map(|l| serde_json::from_str(&l).unwrap()).collect();
    let _ = receiver.wait();

    let by_id = |id: &str| spans.iter().find(|s| s["name"] == "request" && s["attributes"]["request_id"] == id);
    let traced = by_id("otel-1").unwrap_or_else(|| panic!("no exported span for otel-1 in {spans:?}"));
    assert_eq!(traced["trace_id"], TRACE_ID, "the caller's trace goes on: {traced}");
    assert_eq!(traced["parent_span_id"], PARENT_ID, "{traced}");
    assert_eq!(traced["attributes"]["path"], "/v2/health/ready");
    let fresh = by_id("otel-2").unwrap_or_else(|| panic!("no exported span for otel-2 in {spans:?}"));
    assert_ne!(fresh["trace_id"], TRACE_ID, "a request without traceparent starts its own trace");
    assert_eq!(fresh["parent_span_id"], "", "{fresh}");
}
