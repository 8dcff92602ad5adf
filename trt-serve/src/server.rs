//! The server as a process or inside an application: binds the three
//! listeners (HTTP, gRPC, metrics), loads the models, serves until a
//! shutdown future completes, then stops accepting, lets requests in flight
//! finish, and unloads every model (draining each).
//!
//! | entry | runtime | stops on | bound addresses |
//! |---|---|---|---|
//! | [`serve`] | the caller's (tokio) | the `shutdown` future given | [`ServeHandle::bound`], once bound and loaded |
//! | [`run`] (`trt serve`) | its own, `request_threads` workers | Ctrl-C or SIGTERM ([`shutdown_signal`]) | the `on_ready` callback |
//!
//! [`ServeHandle::http_router`] is the HTTP front end as an
//! [`axum::Router`], for mounting beside an application's own routes.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::error::{ServeError, ServeResult};
use crate::protocols::service::Service;
use crate::transport::auth::Access;
use crate::transport::connections::Transport;
use crate::transport::tls::{TlsConfigs, TlsFiles};

/// Where the server listens (port 0: any free port). Default: Triton's
/// ports on loopback, `127.0.0.1:8000` (HTTP), `:8001` (gRPC), `:8002`
/// (metrics), as `trt serve` without flags.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Ports {
    /// KServe v2 REST.
    pub http: SocketAddr,
    /// KServe v2 gRPC.
    pub grpc: SocketAddr,
    /// Prometheus `/metrics`.
    pub metrics: SocketAddr,
}

impl Ports {
    /// The three ports on one address (`Ports::new(Ipv4Addr::LOCALHOST.into(), 0, 0, 0)`:
    /// any free ports on loopback, read back from [`ServeHandle::bound`]).
    pub fn new(host: IpAddr, http: u16, grpc: u16, metrics: u16) -> Self {
        Ports { http: SocketAddr::new(host, http), grpc: SocketAddr::new(host, grpc), metrics: SocketAddr::new(host, metrics) }
    }
}

impl Default for Ports {
    fn default() -> Self {
        Ports::new(Ipv4Addr::LOCALHOST.into(), 8000, 8001, 8002)
    }
}

/// The bound addresses, known before serving starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// HTTP.
    pub http: SocketAddr,
    /// gRPC.
    pub grpc: SocketAddr,
    /// Metrics.
    pub metrics: SocketAddr,
}

/// Listeners bound and ready to serve.
#[derive(Debug)]
pub struct Listeners {
    http: TcpListener,
    grpc: TcpListener,
    metrics: TcpListener,
}

/// The listen backlog: connections the kernel completes before they are
/// accepted (capped by `net.core.somaxconn`). tokio's default, 1024, drops
/// SYNs in a burst of new clients, which then wait seconds to retry.
const BACKLOG: u32 = 4096;

async fn bind(addr: SocketAddr, what: &str) -> std::io::Result<TcpListener> {
    let listen = || {
        let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(BACKLOG)
    };
    listen().map_err(|e: std::io::Error| std::io::Error::new(e.kind(), format!("cannot listen for {what} on {addr}: {e}")))
}

impl Listeners {
    /// Binds all three.
    pub async fn bind(ports: &Ports) -> std::io::Result<Self> {
        Ok(Listeners {
            http: bind(ports.http, "HTTP").await?,
            grpc: bind(ports.grpc, "gRPC").await?,
            metrics: bind(ports.metrics, "metrics").await?,
        })
    }

    /// The addresses actually bound.
    pub fn addresses(&self) -> std::io::Result<Bound> {
        Ok(Bound { http: self.http.local_addr()?, grpc: self.grpc.local_addr()?, metrics: self.metrics.local_addr()? })
    }

    /// Serves `http` (the router, guarded) and `service`'s metrics and gRPC
    /// behind `guard`, under `transport`'s bounds, until `stop` turns true;
    /// the caller drains and unloads after.
    async fn serve(
        self,
        http: axum::Router,
        service: Arc<Service>,
        guard: Guard,
        transport: Transport,
        tls: Option<TlsConfigs>,
        stop: watch::Receiver<bool>,
    ) -> std::io::Result<()> {
        let drain = service.repository.limits().drain_timeout;
        let http = crate::transport::connections::serve_http(
            self.http,
            http,
            transport.clone(),
            transport.max_connections,
            tls.as_ref().map(|t| t.http.clone()),
            stop.clone(),
            drain,
        );
        let metrics = crate::transport::connections::serve_http(
            self.metrics,
            guard.wrap(crate::protocols::http::metrics_router(service.clone())),
            transport.clone(),
            crate::transport::connections::METRICS_MAX_CONNECTIONS,
            tls.as_ref().and_then(|t| t.metrics.clone()),
            stop.clone(),
            drain,
        );
        let mut grpc_stopped = stop.clone();
        let (incoming, accepting) =
            crate::transport::connections::grpc_incoming(self.grpc, &transport, tls.as_ref().map(|t| t.grpc.clone()), stop);
        let grpc = crate::transport::connections::grpc_builder(&transport)
            .layer(crate::observability::request_span::RequestSpanLayer)
            .layer(crate::transport::auth::GrpcAuthLayer(guard.access))
            .add_service(crate::protocols::grpc::server(service.clone()))
            .add_service(crate::protocols::grpc_health::server(service))
            .serve_with_incoming_shutdown(incoming, async move {
                let _ = grpc_stopped.wait_for(|&s| s).await;
            });
        let (_, g, _) = tokio::join!(http, grpc, metrics);
        // The accepting task owns the gRPC listener: once it has ended, the
        // port is closed, which `ServeHandle::stopped` promises.
        let _ = accepting.await;
        g.map_err(std::io::Error::other)
    }
}

/// What wraps every HTTP router: API keys, CORS, the request's span.
struct Guard {
    access: Arc<Access>,
    cors: Option<tower_http::cors::CorsLayer>,
}

impl Guard {
    /// The checks wrap the whole router, so every route is covered; CORS
    /// outside them (a preflight carries no key); the request's span
    /// outermost, so refusals are logged inside it too.
    fn wrap(&self, router: axum::Router) -> axum::Router {
        let router = router.layer(axum::middleware::from_fn_with_state(self.access.clone(), crate::transport::auth::http));
        let router = match &self.cors {
            Some(c) => router.layer(c.clone()),
            None => router,
        };
        router.layer(crate::observability::request_span::RequestSpanLayer)
    }
}

/// Resolves on Ctrl-C or SIGTERM. The handlers are installed by the call,
/// not at the first poll: a signal sent right after the caller announced
/// that it is ready must stop it gracefully, not by the default action.
/// Call it inside the runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, Signal, SignalKind};
        async fn received(s: Option<Signal>) {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        let term = received(signal(SignalKind::terminate()).ok());
        let interrupt = received(signal(SignalKind::interrupt()).ok());
        async move {
            tokio::select! {
                _ = term => {}
                _ = interrupt => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Everything the server needs: [`ServeOptions::new`] with the repository,
/// the rest at their defaults (what `trt serve --model-repository DIR` does
/// without other flags), then set what differs:
///
/// ```
/// use std::net::Ipv4Addr;
/// use trt_serve::{Ports, ServeOptions};
///
/// let mut options = ServeOptions::new("models");
/// options.ports = Ports::new(Ipv4Addr::LOCALHOST.into(), 0, 0, 0); // any free ports
/// options.limits.max_queue = 64;
/// ```
///
/// No `Default`: a server without a repository has nothing to serve, so
/// the one required field is the constructor's argument.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The model repository (Triton's layout: `DIR/<model>/config.pbtxt`, version folders).
    pub repository: PathBuf,
    /// Listen addresses (default [`Ports::default`]: loopback, 8000, 8001, 8002).
    pub ports: Ports,
    /// Limits (default [`Limits::default`](crate::Limits)).
    pub limits: crate::transport::limits::Limits,
    /// Connection timeouts and caps (default [`Transport::default`]).
    pub transport: Transport,
    /// API keys (default: none, every route open).
    pub access: Access,
    /// Model-control mode and readiness (default: [`Mode::None`](crate::Mode::None),
    /// every model loaded at start, strict readiness, as `trt serve`; note that
    /// [`ModelControl::default`](crate::ModelControl) is `explicit` instead).
    pub control: crate::models::model_control::ModelControl,
    /// TLS for HTTP and gRPC (default: none, plain).
    pub tls: Option<TlsFiles>,
    /// Origins browsers may call from (`*`: any); none (the default): no CORS headers.
    pub cors_allow_origin: Vec<String>,
    /// How versions are opened (default [`NlpLoader::default`](crate::NlpLoader)).
    pub loader: crate::models::loader::NlpLoader,
    /// Threads of the runtime [`run`] builds to serve HTTP and gRPC
    /// requests (parsing, single-text tokenization, encoding the answer);
    /// `None` (the default): one per core. Fewer than the cores leaves the
    /// rest to the batch workers and, on a shared host, to the clients.
    /// [`serve`] runs on the caller's runtime and ignores it.
    pub request_threads: Option<std::num::NonZeroUsize>,
}

impl ServeOptions {
    /// Options serving `repository`, every other field at its default (see the fields).
    pub fn new(repository: impl Into<PathBuf>) -> Self {
        ServeOptions {
            repository: repository.into(),
            ports: Ports::default(),
            limits: crate::transport::limits::Limits::default(),
            transport: Transport::default(),
            access: Access::default(),
            control: crate::models::model_control::ModelControl { mode: crate::models::model_control::Mode::None, strict_readiness: true },
            tls: None,
            cors_allow_origin: Vec::new(),
            loader: crate::models::loader::NlpLoader::default(),
            request_threads: None,
        }
    }
}

/// A running server, from [`serve`]: where it listens, its HTTP routes,
/// and its end.
///
/// Dropping the handle does not stop the server: the `shutdown` future
/// given to [`serve`] does. The server runs as a task of the caller's
/// runtime, so keep the runtime alive until [`stopped`](Self::stopped)
/// returns, or requests in flight are cut off instead of drained.
#[derive(Debug)]
pub struct ServeHandle {
    bound: Bound,
    router: axum::Router,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl ServeHandle {
    /// The addresses actually bound (port 0 resolved).
    pub fn bound(&self) -> Bound {
        self.bound
    }

    /// The HTTP front end (KServe v2 REST, TEI's and OpenAI's embedding
    /// routes) as an axum 0.8 router, for mounting beside an application's
    /// own routes (`Router::merge`, or `nest` under a prefix). It serves the
    /// same models as the server's own HTTP port, behind the same API keys,
    /// CORS and request spans, with the same body limit; the connection
    /// bounds ([`Transport`]: header, idle and body timeouts, connection
    /// cap) are the application's listener's to set. Unknown paths answer
    /// 404 with trt-serve's JSON error. Once the server has stopped, its
    /// models are unloaded and inference routes answer 404 or 503.
    pub fn http_router(&self) -> axum::Router {
        self.router.clone()
    }

    /// Waits until the server has stopped: `shutdown` completed, the
    /// listeners closed, requests in flight answered, every model unloaded.
    pub async fn stopped(self) -> ServeResult<()> {
        match self.task.await {
            Ok(r) => r.map_err(|e| ServeError::Unavailable(e.to_string())),
            Err(e) => Err(ServeError::Internal(format!("the server task failed: {e}"))),
        }
    }
}

/// A server bound and loaded, not yet serving: what [`serve`] and [`run`] share.
struct Started {
    listeners: Listeners,
    bound: Bound,
    service: Arc<Service>,
    guard: Guard,
    transport: Transport,
    tls: Option<TlsConfigs>,
}

fn io(e: std::io::Error) -> ServeError {
    ServeError::Unavailable(e.to_string())
}

impl Started {
    /// Checks the options, binds the listeners (a busy port fails before a
    /// slow model load), and loads what the model-control mode loads at start.
    async fn new(options: ServeOptions) -> ServeResult<Self> {
        let tls = options.tls.as_ref().map(TlsFiles::load).transpose()?;
        crate::transport::cors::check(&options.cors_allow_origin)?;
        let listeners = Listeners::bind(&options.ports).await.map_err(io)?;
        let bound = listeners.addresses().map_err(io)?;
        let control = options.control.clone();
        let repository = crate::models::repository::Repository::new(&options.repository, options.limits, Arc::new(options.loader))?;
        let repository = Arc::new(repository.with_control(control.clone()));
        crate::models::repository_sync::load_at_start(&control, &repository).await?;
        let service = Arc::new(Service { repository, metrics: Arc::new(crate::observability::metrics::Metrics::new()) });
        let guard = Guard { access: Arc::new(options.access), cors: crate::transport::cors::layer(&options.cors_allow_origin) };
        Ok(Started { listeners, bound, service, guard, transport: options.transport, tls })
    }

    /// Serves on a task of the current runtime until `shutdown` completes.
    fn spawn(self, shutdown: impl Future<Output = ()> + Send + 'static) -> ServeHandle {
        let Started { listeners, bound, service, guard, transport, tls } = self;
        let router = guard.wrap(crate::protocols::http::router(service.clone()));
        let (tx, rx) = watch::channel(false);
        let poller = crate::models::repository_sync::spawn_poller(service.repository.control(), service.repository.clone(), rx.clone());
        let serving = listeners.serve(router.clone(), service.clone(), guard, transport, tls, rx);
        let task = tokio::spawn(async move {
            let trigger = async move {
                shutdown.await;
                tracing::info!("shutting down: no new connections; requests in flight finish");
                let _ = tx.send(true);
            };
            let (_, served) = tokio::join!(trigger, serving);
            if let Some(p) = poller {
                let _ = p.await;
            }
            service.repository.shutdown().await;
            served
        });
        ServeHandle { bound, router, task }
    }
}

/// Runs the server on the caller's tokio runtime: binds
/// [`ServeOptions::ports`], loads the repository's models as
/// [`ServeOptions::control`] says, and returns once it serves, with the
/// bound addresses and the HTTP router ([`ServeHandle`]). It serves until
/// `shutdown` completes, then stops accepting, lets requests in flight
/// finish (each model drains for up to [`Limits::drain_timeout`](crate::Limits)),
/// and unloads every model; [`ServeHandle::stopped`] waits for that.
///
/// Errors: bad TLS files or CORS origins (400 kinds), a port that cannot be
/// bound ([`ServeError::Unavailable`]), a missing repository or a
/// `--load-model` name it lacks ([`ServeError::NotFound`]). A model that
/// fails to load does not fail the call: it is listed unavailable.
///
/// ```no_run
/// # async fn demo() -> trt_serve::ServeResult<()> {
/// use std::net::Ipv4Addr;
/// use trt_serve::{Ports, ServeOptions};
///
/// let mut options = ServeOptions::new("models");
/// options.ports = Ports::new(Ipv4Addr::LOCALHOST.into(), 0, 0, 0);
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let server = trt_serve::serve(options, async move {
///     let _ = stopped.await;
/// })
/// .await?;
/// println!("HTTP on {}", server.bound().http);
/// // ... later:
/// let _ = stop.send(());
/// server.stopped().await?;
/// # Ok(())
/// # }
/// ```
pub async fn serve(options: ServeOptions, shutdown: impl Future<Output = ()> + Send + 'static) -> ServeResult<ServeHandle> {
    Ok(Started::new(options).await?.spawn(shutdown))
}

/// Runs the server on its own runtime until Ctrl-C or SIGTERM: binds, loads
/// every model, calls `on_ready` with the bound addresses, serves, drains.
/// What `trt serve` runs; [`serve`] is the same on the caller's runtime.
pub fn run(options: ServeOptions, on_ready: impl FnOnce(Bound)) -> ServeResult<()> {
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = options.request_threads {
        runtime.worker_threads(n.get());
    }
    let runtime = runtime.enable_all().build().map_err(io)?;
    runtime.block_on(async move {
        let started = Started::new(options).await?;
        // After the load (a signal during a long import still ends the
        // process at once) and before `on_ready` (a signal right after the
        // announcement stops it gracefully).
        let server = started.spawn(shutdown_signal());
        on_ready(server.bound());
        server.stopped().await
    })
}
