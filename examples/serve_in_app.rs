//! trt-serve inside an application: the server runs on the application's
//! tokio runtime, its HTTP routes are mounted beside the application's own,
//! and it stops when the application says so.
//!
//! | step | call |
//! |---|---|
//! | a HuggingFace folder as a one-model repository (imported on first use) | `SingleModel::from_hf(..)?` |
//! | options: the repository, any free ports on loopback | `ServeOptions::new(view.root())`, `Ports::new(..)` |
//! | load and serve until a future completes | `trt_serve::serve(options, shutdown).await?` |
//! | the server's routes beside the application's `/hello` | `Router::new().route("/hello", ..).merge(server.http_router())` |
//! | stop: complete the future, then wait for the drain | `server.stopped().await?` |
//!
//! It asks itself, over HTTP on its own port, for `/hello` and for TEI's
//! `/embed` of one text, prints the vector's length, shuts both down and
//! exits 0. Every network step has a deadline.
//!
//! `cargo run -p trt-serve --example serve_in_app [MODEL]` (default
//! `$TRT_DEPS_DIR/minilm`, else `.deps/minilm`: all-MiniLM-L6-v2 as
//! `scripts/setup` fetches it).

use std::future::IntoFuture;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use trt_serve::{Ports, ServeOptions, SingleModel};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The longest any network step (a request, the drain) may take.
const DEADLINE: Duration = Duration::from_secs(60);

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Error> {
    let model = std::env::args().nth(1).unwrap_or_else(|| default_model().display().to_string());
    // The folder seen as a one-model repository (`trt serve --model-id`'s
    // way), imported into the import cache on first use; removed on drop.
    let view = SingleModel::from_hf(&model, "minilm", &trt_hf::default_cache(), &trt_hf::ImportOptions::default(), 8)?;
    let mut options = ServeOptions::new(view.root());
    options.ports = Ports::new(Ipv4Addr::LOCALHOST.into(), 0, 0, 0);
    // As sentence-transformers: a text past the model's length is cut, not refused.
    options.limits.auto_truncate = true;

    // One stop signal for the server and the application's listener.
    let (stop, stopping) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|&s| s).await;
    };
    let server = trt_serve::serve(options, stopped(stopping.clone())).await?;
    let bound = server.bound();
    println!("trt serve: http={} grpc={} metrics={}", bound.http, bound.grpc, bound.metrics);

    let app = Router::new().route("/hello", get(|| async { "hello from the application\n" })).merge(server.http_router());
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let addr = listener.local_addr()?;
    let app_task = tokio::spawn(axum::serve(listener, app).with_graceful_shutdown(stopped(stopping)).into_future());
    println!("application: http://{addr} (/hello and trt-serve's routes)");

    let result = ask(addr).await;
    let _ = stop.send(true);
    tokio::time::timeout(DEADLINE, app_task).await.map_err(|_| "the application's listener did not stop")???;
    tokio::time::timeout(DEADLINE, server.stopped()).await.map_err(|_| "the server did not stop")??;
    drop(view);
    println!("stopped");
    result
}

/// `/hello` and one embedding, asked of the application at `addr`.
async fn ask(addr: SocketAddr) -> Result<(), Error> {
    let hello = request(addr, "GET", "/hello", "").await?;
    print!("GET /hello: {hello}");
    let body = request(addr, "POST", "/embed", r#"{"inputs": "What is Deep Learning?"}"#).await?;
    let vectors: Vec<Vec<f32>> = serde_json::from_str(&body).map_err(|e| format!("/embed answered {body:?}: {e}"))?;
    let length = vectors.first().map_or(0, Vec::len);
    println!("POST /embed: {} vector of length {length}", vectors.len());
    if length == 0 {
        return Err("/embed answered no vector".into());
    }
    Ok(())
}

/// One HTTP/1.1 request on a connection of its own; the body of a 200 answer.
/// (A client library would do; this keeps the example to the crate's own dependencies.)
async fn request(addr: SocketAddr, method: &str, path: &str, body: &str) -> Result<String, Error> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&answer).into_owned())
    };
    let answer =
        tokio::time::timeout(DEADLINE, exchange).await.map_err(|_| format!("{method} {path}: no answer within {DEADLINE:?}"))??;
    let (head, body) = answer.split_once("\r\n\r\n").ok_or_else(|| format!("{method} {path}: not an HTTP answer: {answer:?}"))?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("{method} {path}: {head}\n{body}").into());
    }
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        return Err(format!("{method} {path}: a chunked answer, which this small client does not read").into());
    }
    Ok(body.to_owned())
}

/// The folder `scripts/setup` fills: `$TRT_DEPS_DIR` (set by the workspace's
/// `.cargo/config.toml` for `cargo run`), else `.deps` under the current folder.
fn default_model() -> PathBuf {
    std::env::var_os("TRT_DEPS_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(".deps")).join("minilm")
}
