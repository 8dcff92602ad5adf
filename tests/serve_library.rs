//! trt-serve as a library: [`trt_serve::serve`] on the test's own tokio
//! runtime, on 127.0.0.1 with ephemeral ports, over an empty repository (no
//! model to load, so each test takes well under a second).
//!
//! | test | what it holds |
//! |---|---|
//! | `serves_on_the_callers_runtime_and_stops_on_its_future` | the bound addresses, the server's port and its router answer, the shutdown future stops it and closes the listeners |
//! | `the_router_keeps_the_api_key_check` | the router handed out for mounting is behind the same keys as the port |
//! | `a_polling_server_stops_too` | model-control `poll`: the poller ends with the server (`stopped` would wait for it) |
//! | `a_busy_port_is_an_error_before_anything_loads` | binding fails first, typed |

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;
use trt_serve::{ApiKey, Mode, ModelControl, Ports, ServeError, ServeOptions};

/// The longest a test waits for the server (to answer, to stop).
const WAIT: Duration = Duration::from_secs(30);

fn options(repository: &std::path::Path) -> ServeOptions {
    let mut options = ServeOptions::new(repository);
    options.ports = Ports::new(Ipv4Addr::LOCALHOST.into(), 0, 0, 0);
    options
}

/// A shutdown future and the sender that completes it.
fn shutdown() -> (tokio::sync::oneshot::Sender<()>, impl std::future::Future<Output = ()> + Send + 'static) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    (tx, async move {
        let _ = rx.await;
    })
}

/// The status code of `GET path` on `addr`, over a connection of its own.
async fn status_over_tcp(addr: SocketAddr, path: &str) -> u16 {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&answer).into_owned())
    };
    let answer = tokio::time::timeout(WAIT, exchange).await.expect("an answer in time").expect("HTTP exchange");
    answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"))
}

async fn status_of(router: &axum::Router, request: Request<Body>) -> StatusCode {
    router.clone().oneshot(request).await.expect("the router answers").status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_on_the_callers_runtime_and_stops_on_its_future() {
    let repo = tempfile::tempdir().unwrap();
    let (stop, stopping) = shutdown();
    let server = trt_serve::serve(options(repo.path()), stopping).await.unwrap();
    let bound = server.bound();
    for addr in [bound.http, bound.grpc, bound.metrics] {
        assert!(addr.ip().is_loopback() && addr.port() != 0, "{bound:?}");
    }
    assert_eq!(status_over_tcp(bound.http, "/v2/health/live").await, 200);
    assert_eq!(status_over_tcp(bound.metrics, "/metrics").await, 200);
    let router = server.http_router();
    assert_eq!(status_of(&router, Request::get("/v2/health/live").body(Body::empty()).unwrap()).await, StatusCode::OK);
    assert_eq!(status_of(&router, Request::get("/no/such/route").body(Body::empty()).unwrap()).await, StatusCode::NOT_FOUND);

    stop.send(()).unwrap();
    tokio::time::timeout(WAIT, server.stopped()).await.expect("stopped in time").unwrap();
    for addr in [bound.http, bound.grpc, bound.metrics] {
        assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "{addr} still accepts after the server stopped");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_keeps_the_api_key_check() {
    let repo = tempfile::tempdir().unwrap();
    let mut options = options(repo.path());
    options.access.api_key = Some(ApiKey::new("s3cret").unwrap());
    let (stop, stopping) = shutdown();
    let server = trt_serve::serve(options, stopping).await.unwrap();
    let router = server.http_router();
    let metadata = |key: Option<&str>| {
        let request = Request::get("/v2");
        let request = match key {
            Some(k) => request.header("authorization", format!("Bearer {k}")),
            None => request,
        };
        request.body(Body::empty()).unwrap()
    };
    assert_eq!(status_of(&router, metadata(None)).await, StatusCode::UNAUTHORIZED);
    assert_eq!(status_of(&router, metadata(Some("wrong"))).await, StatusCode::UNAUTHORIZED);
    assert_eq!(status_of(&router, metadata(Some("s3cret"))).await, StatusCode::OK);
    assert_eq!(status_over_tcp(server.bound().http, "/v2").await, 401);
    stop.send(()).unwrap();
    tokio::time::timeout(WAIT, server.stopped()).await.expect("stopped in time").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polling_server_stops_too() {
    let repo = tempfile::tempdir().unwrap();
    let mut options = options(repo.path());
    options.control = ModelControl { mode: Mode::Poll(Duration::from_millis(20)), strict_readiness: true };
    let (stop, stopping) = shutdown();
    let server = trt_serve::serve(options, stopping).await.unwrap();
    // A few polls go by.
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).unwrap();
    tokio::time::timeout(WAIT, server.stopped()).await.expect("the poller ended with the server").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_port_is_an_error_before_anything_loads() {
    let repo = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let mut options = options(repo.path());
    options.ports.http = taken.local_addr().unwrap();
    let (_stop, stopping) = shutdown();
    match trt_serve::serve(options, stopping).await {
        Err(ServeError::Unavailable(m)) => assert!(m.contains("cannot listen for HTTP"), "{m}"),
        other => panic!("expected a bind error, got {other:?}"),
    }
}
