//! Connection-level bounds of the listeners: how many connections each
//! holds, how long a client may take to send a request's head or body, how
//! long an idle keep-alive connection stays open, and gRPC's stream cap,
//! idle timeout and keepalive pings. A client that is too slow is
//! disconnected, so a slow, half-open or idle client cannot hold descriptors
//! for long.
//!
//! | bound | default | `trt serve` flag | applies to |
//! |---|---|---|---|
//! | [`Transport::header_timeout`] | 10 s | `--header-timeout-secs` | HTTP: a request's head, from its first byte (or from the connection's start); gRPC: the HTTP/2 preface |
//! | [`Transport::idle_timeout`] | 60 s | `--idle-timeout-secs` | HTTP: a keep-alive connection with no request in flight |
//! | [`Transport::body_timeout`] | 30 s | `--body-timeout-secs` | HTTP: the whole request body, from the end of its head (408) |
//! | [`Transport::max_connections`] | 4096 | `--max-connections` | HTTP and gRPC, each: past it the listener stops accepting until one closes |
//! | [`Transport::grpc_max_streams`] | 128 | `--grpc-max-streams` | gRPC (and HTTP/2 on the HTTP port): concurrent streams per connection |
//! | [`Transport::grpc_idle_timeout`] | 300 s | `--grpc-idle-timeout-secs` | gRPC: a connection with no stream open |
//! | [`Transport::grpc_keepalive_interval`] / `_timeout` | 60 s / 20 s | `--grpc-keepalive-secs` / `--grpc-keepalive-timeout-secs` | gRPC: a ping every interval; no answer within the timeout closes the connection |
//!
//! With TLS ([`crate::transport::tls`]) the handshake must finish within the header
//! timeout too.
//!
//! tonic serves the gRPC connections itself and has no idle bound, so a
//! connection's open streams are counted by a layer around the gRPC service
//! ([`GrpcStreamsLayer`], which finds the connection through tonic's
//! connect info) and its reads close the connection once none has been open
//! for the idle timeout. Keepalive pings and their answers do not count as
//! activity (as gRPC's own `MAX_CONNECTION_IDLE`), so an idle client that
//! pings is still closed. The default, 300 s, is longer than the HTTP idle
//! timeout because a gRPC client keeps its channel for its next call and a
//! new HTTP/2 (and TLS) connection costs more than an HTTP/1.1 one, and
//! shorter than the 350 s after which AWS's network load balancer forgets an
//! idle flow, so the server's close reaches the client instead of the
//! client's next call meeting a reset. The close is a plain TCP close (tonic
//! holds the HTTP/2 connection, so no GOAWAY can be sent for it alone); a
//! gRPC client sees its idle transport closed and connects again for its
//! next call.
//!
//! The per-request inference timeout is a [`crate::transport::limits::Limits`] bound
//! (it applies to a request, whichever front end took it).
//!
//! axum's own `serve` has none of the HTTP bounds, so HTTP connections are
//! served here with hyper's connection builder: each connection's reads and
//! writes and its requests in flight are tracked (`Activity`), and a
//! watchdog closes it at the deadline its state implies. hyper's own header
//! timeout is left off because it also runs while a keep-alive connection
//! waits for its next request, which is the idle timeout's job.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;

/// The listeners' connection bounds (see the module table for defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transport {
    /// Longest time to receive a request's head (HTTP) or the preface (gRPC).
    pub header_timeout: Duration,
    /// Longest time an HTTP connection stays open with no request in flight.
    pub idle_timeout: Duration,
    /// Longest time to receive a whole HTTP request body.
    pub body_timeout: Duration,
    /// Most connections open at once on each of the HTTP and gRPC listeners.
    pub max_connections: usize,
    /// Most concurrent HTTP/2 streams per connection.
    pub grpc_max_streams: u32,
    /// Longest time a gRPC connection stays open with no stream open.
    pub grpc_idle_timeout: Duration,
    /// Interval of HTTP/2 keepalive pings on gRPC connections.
    pub grpc_keepalive_interval: Duration,
    /// How long a keepalive ping may go unanswered.
    pub grpc_keepalive_timeout: Duration,
}

impl Default for Transport {
    fn default() -> Self {
        Transport {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            max_connections: 4096,
            grpc_max_streams: 128,
            grpc_idle_timeout: Duration::from_secs(300),
            grpc_keepalive_interval: Duration::from_secs(60),
            grpc_keepalive_timeout: Duration::from_secs(20),
        }
    }
}

/// The connections the metrics listener holds at most (scrapers are few).
pub(crate) const METRICS_MAX_CONNECTIONS: usize = 64;

/// What one connection is doing, kept current by its reads and writes
/// ([`Conn`]) and its requests ([`Busy`]).
#[derive(Debug)]
struct Activity {
    state: Mutex<State>,
    /// Woken when the first byte of a request's head arrives.
    head: Notify,
}

#[derive(Debug)]
struct State {
    in_flight: usize,
    /// When the current request's head began arriving (none in flight).
    head_since: Option<Instant>,
    /// When the connection last became idle (opened, or answered).
    idle_since: Instant,
    /// Whether a request has been answered (then idle means keep-alive).
    answered: bool,
    /// When the last byte arrived.
    read_at: Instant,
    /// When the last request or stream ended (or the connection opened);
    /// unlike `idle_since`, writes (keepalive pings) do not move it.
    quiet_since: Instant,
}

/// How long after bytes arrive a gRPC connection is not closed as idle:
/// they may hold a new stream's headers that tonic has read but not yet
/// handed to the service, which is what counts the stream.
const READ_GRACE: Duration = Duration::from_secs(1);

impl Activity {
    fn new() -> Self {
        let now = Instant::now();
        Activity {
            state: Mutex::new(State { in_flight: 0, head_since: None, idle_since: now, answered: false, read_at: now, quiet_since: now }),
            head: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn on_read(&self) {
        let mut s = self.lock();
        s.read_at = Instant::now();
        if s.in_flight == 0 && s.head_since.is_none() {
            s.head_since = Some(Instant::now());
            drop(s);
            self.head.notify_one();
        }
    }

    fn on_write(&self) {
        let mut s = self.lock();
        if s.in_flight == 0 {
            s.idle_since = Instant::now();
        }
    }

    fn begin(&self) {
        let mut s = self.lock();
        s.in_flight += 1;
        s.head_since = None;
    }

    fn end(&self) {
        let mut s = self.lock();
        s.in_flight -= 1;
        if s.in_flight == 0 {
            s.idle_since = Instant::now();
            s.quiet_since = s.idle_since;
            s.answered = true;
        }
    }

    /// When a gRPC connection is to be closed as idle if nothing changes;
    /// `None` while a stream is open.
    fn quiet_deadline(&self, timeout: Duration) -> Option<Instant> {
        let s = self.lock();
        (s.in_flight == 0).then(|| (s.quiet_since + timeout).max(s.read_at + READ_GRACE))
    }

    /// When the connection is to be closed if nothing changes; `None` while
    /// a request is in flight (its body and inference have their own bounds).
    fn deadline(&self, t: &Transport) -> Option<Instant> {
        let s = self.lock();
        if s.in_flight > 0 {
            return None;
        }
        Some(match s.head_since {
            Some(h) => h + t.header_timeout,
            None if s.answered => s.idle_since + t.idle_timeout,
            None => s.idle_since + t.header_timeout,
        })
    }
}

/// A request in flight on a connection, for as long as its handler runs
/// (dropped too when the handler is cancelled).
struct Busy(Arc<Activity>);

impl Busy {
    fn new(a: Arc<Activity>) -> Self {
        a.begin();
        Busy(a)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// An accepted connection: its socket, its slot under the listener's cap
/// (freed when the connection is dropped), and for gRPC the deadline by
/// which the HTTP/2 preface must have arrived and the idle timeout.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    activity: Arc<Activity>,
    /// The preface deadline and the bytes still expected before it.
    preface: Option<(Pin<Box<tokio::time::Sleep>>, usize)>,
    /// gRPC: closes the connection when no stream has been open for a while.
    quiet: Option<QuietTimer>,
    _slot: OwnedSemaphorePermit,
}

/// A gRPC connection's idle timer, checked by its reads (tonic reads every
/// connection for as long as it is open, so a pending read is always there
/// to be woken).
#[derive(Debug)]
struct QuietTimer {
    timeout: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
    /// The instant `timer` is set to.
    armed: Instant,
}

impl QuietTimer {
    fn new(timeout: Duration) -> Self {
        let armed = Instant::now() + timeout;
        QuietTimer { timeout, timer: Box::pin(tokio::time::sleep_until(armed.into())), armed }
    }

    /// Whether the connection has been idle for the timeout; if not, the
    /// timer is set to wake the read when it may have been.
    fn expired(&mut self, activity: &Activity, cx: &mut Context<'_>) -> bool {
        let now = Instant::now();
        let due = match activity.quiet_deadline(self.timeout) {
            Some(due) if due <= now => return true,
            Some(due) => due,
            // A stream is open: look again a timeout from now (its end restarts the clock).
            None if self.armed > now => self.armed,
            None => now + self.timeout,
        };
        if due != self.armed {
            self.armed = due;
            self.timer.as_mut().reset(due.into());
        }
        if self.timer.as_mut().poll(cx).is_ready() {
            cx.waker().wake_by_ref();
        }
        false
    }
}

/// The HTTP/2 client connection preface's length (RFC 9113, 3.4).
const H2_PREFACE_LEN: usize = 24;

impl AsyncRead for Conn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.stream).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let n = buf.filled().len() - before;
            if n > 0 {
                this.activity.on_read();
                if let Some((_, left)) = &mut this.preface {
                    *left = left.saturating_sub(n);
                    if *left == 0 {
                        this.preface = None;
                    }
                }
            }
            return r;
        }
        if let Some((deadline, _)) = &mut this.preface {
            if deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "no HTTP/2 preface within the header timeout")));
            }
        }
        if let Some(quiet) = &mut this.quiet {
            if quiet.expired(&this.activity, cx) {
                tracing::debug!("closing a gRPC connection with no stream open for {:?}", quiet.timeout);
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "no gRPC stream within the idle timeout")));
            }
        }
        r
    }
}

impl AsyncWrite for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.stream).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            if n > 0 {
                this.activity.on_write();
            }
        }
        r
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r {
            if n > 0 {
                this.activity.on_write();
            }
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// What tonic puts in each gRPC request's extensions: the connection's
/// activity, which [`GrpcStreamsLayer`] counts streams on.
#[derive(Debug, Clone)]
pub struct GrpcConnInfo {
    activity: Arc<Activity>,
}

impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = GrpcConnInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        GrpcConnInfo { activity: self.activity.clone() }
    }
}

/// Resolves once `stopped` says the server is stopping.
async fn until_stopped(stopped: &mut watch::Receiver<bool>) {
    let _ = stopped.wait_for(|&s| s).await;
}

/// The next connection on `listener` with a slot under `cap`, or `None`
/// once the server is stopping. While every slot is taken nothing is
/// accepted (new clients wait in the kernel's backlog).
async fn accept(
    listener: &TcpListener,
    cap: &Arc<Semaphore>,
    stopped: &mut watch::Receiver<bool>,
) -> Option<(TcpStream, OwnedSemaphorePermit)> {
    loop {
        let slot = tokio::select! {
            s = cap.clone().acquire_owned() => s.ok()?,
            _ = until_stopped(stopped) => return None,
        };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = until_stopped(stopped) => return None,
        };
        match accepted {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                return Some((stream, slot));
            }
            // Out of descriptors (EMFILE) or a connection reset before it was
            // accepted: wait a little rather than spin.
            Err(e) => {
                tracing::warn!("accept on {:?} failed: {e}", listener.local_addr().ok());
                drop(slot);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Waits (at most `drain`) until every connection under `cap` has closed.
async fn drained(cap: &Semaphore, max: usize, drain: Duration, what: &str) {
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    if tokio::time::timeout(drain, cap.acquire_many(all)).await.is_err() {
        tracing::warn!("{what}: {} connections still open after {drain:?}; closing them", max - cap.available_permits());
    }
}

/// Why a request body was cut off: it did not arrive within the body timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
pub struct BodyTimedOut(pub Duration);

impl BodyTimedOut {
    /// The timeout, when `e` or one of its sources is a [`BodyTimedOut`].
    pub fn find(e: &(dyn std::error::Error + 'static)) -> Option<BodyTimedOut> {
        let mut cur = Some(e);
        while let Some(err) = cur {
            if let Some(t) = err.downcast_ref::<BodyTimedOut>() {
                return Some(*t);
            }
            cur = err.source();
        }
        None
    }
}

/// A request body that fails with [`BodyTimedOut`] once its deadline passes.
struct DeadlineBody {
    inner: Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
    timeout: Duration,
}

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Box::new(BodyTimedOut(this.timeout)))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Serves `router` on `listener` (HTTP/1.1 and HTTP/2) under `t`'s bounds,
/// at most `max_connections` at once, until `stopped`; then asks every
/// connection to finish its requests and close, waiting at most `drain`.
pub(crate) async fn serve_http(
    listener: TcpListener,
    router: axum::Router,
    t: Transport,
    max_connections: usize,
    tls: Option<Arc<rustls::ServerConfig>>,
    mut stopped: watch::Receiver<bool>,
    drain: Duration,
) {
    let cap = Arc::new(Semaphore::new(max_connections));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().header_read_timeout(None);
    builder.http2().max_concurrent_streams(t.grpc_max_streams);
    let builder = Arc::new(builder);
    while let Some((stream, slot)) = accept(&listener, &cap, &mut stopped).await {
        let activity = Arc::new(Activity::new());
        let io = Conn { stream, activity: activity.clone(), preface: None, quiet: None, _slot: slot };
        let (router, builder, t, stopped) = (router.clone(), builder.clone(), t.clone(), stopped.clone());
        match &tls {
            None => drop(tokio::spawn(http_connection(io, activity, router, builder, t, stopped))),
            Some(config) => {
                let acceptor = tokio_rustls::TlsAcceptor::from(config.clone());
                tokio::spawn(async move {
                    if let Some(io) = handshake(&acceptor, io, t.header_timeout).await {
                        http_connection(io, activity, router, builder, t, stopped).await;
                    }
                });
            }
        }
    }
    drop(listener);
    drained(&cap, max_connections, drain, "HTTP").await;
}

/// The TLS handshake on `io`, bounded by `within`; `None` (logged) when it fails or stalls.
async fn handshake(acceptor: &tokio_rustls::TlsAcceptor, io: Conn, within: Duration) -> Option<tokio_rustls::server::TlsStream<Conn>> {
    match tokio::time::timeout(within, acceptor.accept(io)).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            tracing::debug!("TLS handshake failed: {e}");
            None
        }
        Err(_) => {
            tracing::debug!("TLS handshake not done within {within:?}");
            None
        }
    }
}

async fn http_connection<I: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    io: I,
    activity: Arc<Activity>,
    router: axum::Router,
    builder: Arc<auto::Builder<TokioExecutor>>,
    t: Transport,
    mut stopped: watch::Receiver<bool>,
) {
    let body_timeout = t.body_timeout;
    let a = activity.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let busy = Busy::new(a.clone());
        let req = req.map(|inner| {
            axum::body::Body::new(DeadlineBody { inner, deadline: Box::pin(tokio::time::sleep(body_timeout)), timeout: body_timeout })
        });
        let call = router.clone().oneshot(req);
        async move {
            let response = call.await;
            drop(busy);
            response
        }
    });
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    tokio::pin!(conn);
    let mut draining = false;
    loop {
        let wake = activity.deadline(&t).unwrap_or_else(|| Instant::now() + t.idle_timeout);
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = activity.head.notified() => {}
            _ = tokio::time::sleep_until(wake.into()) => {
                if activity.deadline(&t).is_some_and(|d| d <= Instant::now()) {
                    // Dropping the connection closes its socket.
                    return;
                }
            }
            _ = until_stopped(&mut stopped), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Accepts gRPC connections on `listener` under `t`'s cap and preface
/// deadline, until `stopped`, as the stream tonic serves from, with the
/// task that accepts (it owns the listener, so the port is closed once it
/// has ended).
pub(crate) fn grpc_incoming(
    listener: TcpListener,
    t: &Transport,
    tls: Option<Arc<rustls::ServerConfig>>,
    mut stopped: watch::Receiver<bool>,
) -> (tokio_stream::wrappers::ReceiverStream<io::Result<GrpcConn>>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let cap = Arc::new(Semaphore::new(t.max_connections));
    let (header_timeout, idle_timeout) = (t.header_timeout, t.grpc_idle_timeout);
    let accepting = tokio::spawn(async move {
        while let Some((stream, slot)) = accept(&listener, &cap, &mut stopped).await {
            let preface = Some((Box::pin(tokio::time::sleep(header_timeout)), H2_PREFACE_LEN));
            let quiet = Some(QuietTimer::new(idle_timeout));
            let conn = Conn { stream, activity: Arc::new(Activity::new()), preface, quiet, _slot: slot };
            match &tls {
                None => {
                    if tx.send(Ok(GrpcConn::Plain(conn))).await.is_err() {
                        break;
                    }
                }
                // Each handshake on its own task, so a slow one holds up no other client.
                Some(config) => {
                    let (acceptor, tx) = (tokio_rustls::TlsAcceptor::from(config.clone()), tx.clone());
                    tokio::spawn(async move {
                        if let Some(tls) = handshake(&acceptor, conn, header_timeout).await {
                            let _ = tx.send(Ok(GrpcConn::Tls(Box::new(tls)))).await;
                        }
                    });
                }
            }
        }
    });
    (tokio_stream::wrappers::ReceiverStream::new(rx), accepting)
}

/// A gRPC connection, plain or TLS.
#[derive(Debug)]
pub enum GrpcConn {
    /// Plain TCP.
    Plain(Conn),
    /// After the TLS handshake.
    Tls(Box<tokio_rustls::server::TlsStream<Conn>>),
}

impl AsyncRead for GrpcConn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            GrpcConn::Plain(c) => Pin::new(c).poll_read(cx, buf),
            GrpcConn::Tls(c) => Pin::new(c.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for GrpcConn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            GrpcConn::Plain(c) => Pin::new(c).poll_write(cx, buf),
            GrpcConn::Tls(c) => Pin::new(c.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            GrpcConn::Plain(c) => Pin::new(c).poll_flush(cx),
            GrpcConn::Tls(c) => Pin::new(c.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            GrpcConn::Plain(c) => Pin::new(c).poll_shutdown(cx),
            GrpcConn::Tls(c) => Pin::new(c.as_mut()).poll_shutdown(cx),
        }
    }
}

impl tonic::transport::server::Connected for GrpcConn {
    type ConnectInfo = GrpcConnInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        match self {
            GrpcConn::Plain(c) => c.connect_info(),
            GrpcConn::Tls(c) => c.get_ref().0.connect_info(),
        }
    }
}

/// tonic's server builder with `t`'s stream cap and keepalive, its streams
/// counted for the idle timeout ([`GrpcStreamsLayer`], outermost).
pub(crate) fn grpc_builder(
    t: &Transport,
) -> tonic::transport::Server<tower::layer::util::Stack<GrpcStreamsLayer, tower::layer::util::Identity>> {
    tonic::transport::Server::builder()
        .max_concurrent_streams(t.grpc_max_streams)
        .http2_keepalive_interval(Some(t.grpc_keepalive_interval))
        .http2_keepalive_timeout(Some(t.grpc_keepalive_timeout))
        .layer(GrpcStreamsLayer)
}

/// Counts each gRPC request as an open stream of its connection (found in
/// the request's [`GrpcConnInfo`]) until its response body is dropped, for
/// the idle timeout. Wrap the whole gRPC service in it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GrpcStreamsLayer;

impl<S> tower::Layer<S> for GrpcStreamsLayer {
    type Service = GrpcStreams<S>;

    fn layer(&self, inner: S) -> GrpcStreams<S> {
        GrpcStreams(inner)
    }
}

/// The service [`GrpcStreamsLayer`] makes.
#[derive(Debug, Clone)]
pub(crate) struct GrpcStreams<S>(S);

impl<S, B, RB> tower::Service<hyper::Request<B>> for GrpcStreams<S>
where
    S: tower::Service<hyper::Request<B>, Response = hyper::Response<RB>>,
    S::Future: Send + 'static,
    RB: Body + Send + 'static,
{
    type Response = hyper::Response<StreamBody<RB>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: hyper::Request<B>) -> Self::Future {
        let busy = req.extensions().get::<GrpcConnInfo>().map(|info| Busy::new(info.activity.clone()));
        let call = self.0.call(req);
        Box::pin(async move {
            let response = call.await?;
            Ok(response.map(|inner| StreamBody { inner: Box::pin(inner), _busy: busy }))
        })
    }
}

/// A gRPC response body that keeps its stream counted until it is dropped.
pub(crate) struct StreamBody<B> {
    inner: Pin<Box<B>>,
    _busy: Option<Busy>,
}

impl<B: Body> Body for StreamBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        self.get_mut().inner.as_mut().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
