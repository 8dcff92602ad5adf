//! The libraries log through `tracing` with its `log` feature: an application
//! that installs only a `log` logger (no tracing subscriber) still receives
//! their events as `log` records. Shown with the request span layer around a
//! service that answers 500 (its WARN `finished` event). Installs a
//! process-wide logger, so it has its own test binary.

use std::sync::Mutex;

use axum::http::{Request, Response, StatusCode};
use tower::{Layer, Service, ServiceExt};
use trt_serve::test_support::request_span::RequestSpanLayer;

/// A `log` logger that keeps every record (a test double of an application's logger).
struct Recording(Mutex<Vec<(log::Level, String, String)>>);

impl log::Log for Recording {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, r: &log::Record<'_>) {
        self.0.lock().unwrap().push((r.level(), r.target().to_string(), r.args().to_string()));
    }
    fn flush(&self) {}
}

static RECORDS: Recording = Recording(Mutex::new(Vec::new()));

#[test]
fn tracing_events_reach_a_log_logger() {
    log::set_logger(&RECORDS).unwrap();
    log::set_max_level(log::LevelFilter::Trace);
    let failing = tower::service_fn(|_: Request<()>| async {
        Ok::<_, std::convert::Infallible>(Response::builder().status(StatusCode::INTERNAL_SERVER_ERROR).body(()).unwrap())
    });
    let mut service = RequestSpanLayer.layer(failing);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let response = runtime.block_on(async {
        let request = Request::builder().uri("/v2/models/m/infer").header("x-request-id", "rec-1").body(()).unwrap();
        service.ready().await.unwrap().call(request).await.unwrap()
    });
    assert_eq!(response.headers()["x-request-id"], "rec-1");
    let records = RECORDS.0.lock().unwrap();
    let finished = records
        .iter()
        .find(|(level, target, text)| *level == log::Level::Warn && target == "trt_serve::request" && text.contains("finished"))
        .unwrap_or_else(|| panic!("no WARN record from trt_serve::request in {records:?}"));
    assert!(finished.2.contains("status=500"), "{finished:?}");
}
