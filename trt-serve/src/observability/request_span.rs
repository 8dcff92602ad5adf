//! One `tracing` span per request, HTTP and gRPC alike, carrying a request id.
//!
//! | what | where |
//! |---|---|
//! | the id | the client's `x-request-id` when it is 1 to 128 visible ASCII characters, else a new one ([`new_request_id`]) |
//! | the span | `request` under target `trt_serve::request`, level INFO, fields `request_id`, `method`, `path`, and `trace_id`, `parent_id`, `sampled` from a valid W3C `traceparent` ([`crate::observability::traceparent`]; an invalid one is ignored, logged at DEBUG) |
//! | the answer | the id echoed as the response's `x-request-id` header (gRPC: initial metadata) |
//! | the event | `finished` with `status` (HTTP), `grpc_status` (when the headers carry it) and `latency_ms`, at DEBUG (WARN for a 5xx) |
//!
//! Everything logged while the request is handled (auth refusals, model loads
//! through the repository API, errors) is inside the span, so a subscriber that
//! prints span fields (the CLI's text and JSON formats do) ties each line to
//! its request. The latency runs to the response's headers, not to the end of
//! a streamed body.

use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::http::{HeaderMap, HeaderName, HeaderValue, Request, Response};
use tracing::Instrument;

use crate::observability::traceparent::{TraceParent, TraceParentError};

/// The request id header, read from the request and written on the response.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Longest client request id taken as is; a longer one is replaced.
pub const MAX_REQUEST_ID_LEN: usize = 128;

/// The client's request id if it is usable: 1 to [`MAX_REQUEST_ID_LEN`]
/// visible ASCII characters (no spaces, no control characters), one header.
pub fn client_request_id(headers: &HeaderMap) -> Option<HeaderValue> {
    let mut all = headers.get_all(&REQUEST_ID).iter();
    let (value, None) = (all.next()?, all.next()) else { return None };
    let b = value.as_bytes();
    let ok = !b.is_empty() && b.len() <= MAX_REQUEST_ID_LEN && b.iter().all(|c| c.is_ascii_graphic());
    ok.then(|| value.clone())
}

/// A new request id: 32 lowercase hex digits, distinct within the process (a
/// counter) and hard to guess across processes (hashed under keys the
/// standard library draws from the OS at the first call).
pub fn new_request_id() -> String {
    static KEYS: OnceLock<(RandomState, RandomState)> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (a, b) = KEYS.get_or_init(|| (RandomState::new(), RandomState::new()));
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{:016x}{:016x}", a.hash_one(n), b.hash_one(n))
}

/// The request's `traceparent`: none, valid, or why it is ignored (more than one header counts as invalid).
fn traceparent(headers: &HeaderMap) -> Option<Result<TraceParent, TraceParentError>> {
    let mut all = headers.get_all("traceparent").iter();
    let first = all.next()?;
    Some(match all.next() {
        Some(_) => Err(TraceParentError::Repeated),
        None => TraceParent::parse(first.as_bytes()),
    })
}

/// With the `otel` feature: the caller's span (from `traceparent`) as the
/// OpenTelemetry parent of the request's span, so an exported trace goes on
/// from the caller's.
#[cfg(feature = "otel")]
fn remote_parent(span: &tracing::Span, t: &TraceParent) {
    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let caller = SpanContext::new(
        TraceId::from_bytes(t.trace_id),
        SpanId::from_bytes(t.parent_id),
        TraceFlags::new(t.flags),
        true,
        TraceState::default(),
    );
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(caller));
}

/// Wraps a router (axum) or the gRPC server (tonic) so each request runs in its span.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestSpanLayer;

impl<S> tower::Layer<S> for RequestSpanLayer {
    type Service = RequestSpan<S>;

    fn layer(&self, inner: S) -> RequestSpan<S> {
        RequestSpan { inner }
    }
}

/// [`RequestSpanLayer`]'s service.
#[derive(Debug, Clone)]
pub struct RequestSpan<S> {
    inner: S,
}

impl<S, B, RB> tower::Service<Request<B>> for RequestSpan<S>
where
    S: tower::Service<Request<B>, Response = Response<RB>> + Send,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let id = client_request_id(request.headers())
            .unwrap_or_else(|| HeaderValue::try_from(new_request_id()).unwrap_or(HeaderValue::from_static("-")));
        let span = tracing::info_span!(
            target: "trt_serve::request",
            "request",
            request_id = id.to_str().unwrap_or_default(),
            method = %request.method(),
            path = request.uri().path(),
            trace_id = tracing::field::Empty,
            parent_id = tracing::field::Empty,
            sampled = tracing::field::Empty,
        );
        match traceparent(request.headers()) {
            Some(Ok(t)) => {
                span.record("trace_id", t.trace_id_hex());
                span.record("parent_id", t.parent_id_hex());
                span.record("sampled", t.sampled());
                #[cfg(feature = "otel")]
                remote_parent(&span, &t);
            }
            Some(Err(e)) => span.in_scope(|| tracing::debug!(target: "trt_serve::request", "traceparent ignored: {e}")),
            None => {}
        }
        let start = Instant::now();
        let future = span.in_scope(|| self.inner.call(request));
        Box::pin(
            async move {
                let mut response = future.await?;
                finished(&response, start);
                response.headers_mut().insert(REQUEST_ID, id);
                Ok(response)
            }
            .instrument(span),
        )
    }
}

/// The request's closing event, inside its span.
fn finished<RB>(response: &Response<RB>, start: Instant) {
    let status = response.status().as_u16();
    // gRPC answers HTTP 200; an error's code is in the headers (trailers-only
    // response), a success's in the trailers, after this point.
    let grpc_status = response.headers().get("grpc-status").and_then(|v| v.to_str().ok());
    let latency_ms = start.elapsed().as_secs_f64() * 1e3;
    if status >= 500 {
        tracing::warn!(target: "trt_serve::request", status, grpc_status, latency_ms, "finished");
    } else {
        tracing::debug!(target: "trt_serve::request", status, grpc_status, latency_ms, "finished");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(REQUEST_ID, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn client_ids_taken_only_when_usable() {
        assert_eq!(client_request_id(&headers(&["abc-123"])).unwrap(), "abc-123");
        assert!(client_request_id(&headers(&[])).is_none());
        assert!(client_request_id(&headers(&[""])).is_none());
        assert!(client_request_id(&headers(&["a b"])).is_none());
        assert!(client_request_id(&headers(&["a", "b"])).is_none());
        assert!(client_request_id(&headers(&[&"x".repeat(MAX_REQUEST_ID_LEN + 1)])).is_none());
        assert!(client_request_id(&headers(&[&"x".repeat(MAX_REQUEST_ID_LEN)])).is_some());
        let mut h = HeaderMap::new();
        h.insert(REQUEST_ID, HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap());
        assert!(client_request_id(&h).is_none());
    }

    #[test]
    fn new_ids_are_hex_and_distinct() {
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| new_request_id()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(ids.iter().all(|i| i.len() == 32 && i.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())));
    }
}
