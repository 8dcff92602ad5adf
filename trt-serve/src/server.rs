//! Binds the three listeners (HTTP, gRPC, metrics), serves until a shutdown
//! signal, then stops accepting, lets requests in flight finish, and unloads
//! every model (draining each).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::auth::Access;
use crate::connections::Transport;
use crate::service::Service;
use crate::tls::{TlsConfigs, TlsFiles};

/// Where the server listens (port 0: any free port).
#[derive(Debug, Clone)]
pub struct Ports {
    /// KServe v2 REST.
    pub http: SocketAddr,
    /// KServe v2 gRPC.
    pub grpc: SocketAddr,
    /// Prometheus `/metrics`.
    pub metrics: SocketAddr,
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

    /// Serves `service` under `transport`'s bounds until `shutdown`
    /// completes, then drains and unloads.
    pub async fn serve(
        self,
        service: Arc<Service>,
        transport: &Transport,
        access: &Access,
        tls: Option<&TlsConfigs>,
        cors: &[String],
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (tx, rx) = tokio::sync::watch::channel(false);
        let drain = service.repository.limits().drain_timeout;
        let access = Arc::new(access.clone());
        let cors = crate::cors::layer(cors);
        // The checks wrap the whole router and the whole gRPC service, so every
        // route is covered; CORS outside them (a preflight carries no key); the
        // request's span outermost, so refusals are logged inside it too.
        let guard = |router: axum::Router| {
            let router = router.layer(axum::middleware::from_fn_with_state(access.clone(), crate::auth::http));
            let router = match &cors {
                Some(c) => router.layer(c.clone()),
                None => router,
            };
            router.layer(crate::request_span::RequestSpanLayer)
        };
        let http = crate::connections::serve_http(
            self.http,
            guard(crate::http::router(service.clone())),
            transport.clone(),
            transport.max_connections,
            tls.map(|t| t.http.clone()),
            rx.clone(),
            drain,
        );
        let metrics = crate::connections::serve_http(
            self.metrics,
            guard(crate::http::metrics_router(service.clone())),
            transport.clone(),
            crate::connections::METRICS_MAX_CONNECTIONS,
            tls.and_then(|t| t.metrics.clone()),
            rx.clone(),
            drain,
        );
        let mut grpc_stopped = rx.clone();
        let grpc = crate::connections::grpc_builder(transport)
            .layer(crate::request_span::RequestSpanLayer)
            .layer(crate::auth::GrpcAuthLayer(access.clone()))
            .add_service(crate::grpc::server(service.clone()))
            .add_service(crate::grpc_health::server(service.clone()))
            .serve_with_incoming_shutdown(
                crate::connections::grpc_incoming(self.grpc, transport, tls.map(|t| t.grpc.clone()), rx),
                async move {
                    let _ = grpc_stopped.wait_for(|&s| s).await;
                },
            );
        let trigger = async move {
            shutdown.await;
            tracing::info!("shutting down: no new connections; requests in flight finish");
            let _ = tx.send(true);
        };
        let (_, _, g, _) = tokio::join!(trigger, http, grpc, metrics);
        service.repository.shutdown().await;
        g.map_err(std::io::Error::other)?;
        Ok(())
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

/// Everything `trt serve` needs to run.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The model repository.
    pub repository: std::path::PathBuf,
    /// Listen addresses.
    pub ports: Ports,
    /// Limits.
    pub limits: crate::limits::Limits,
    /// Connection timeouts and caps.
    pub transport: Transport,
    /// API keys.
    pub access: Access,
    /// Model-control mode and readiness.
    pub control: crate::model_control::ModelControl,
    /// TLS for HTTP and gRPC.
    pub tls: Option<TlsFiles>,
    /// Origins browsers may call from (`*`: any); none: no CORS headers.
    pub cors_allow_origin: Vec<String>,
    /// How versions are opened.
    pub loader: crate::loader::NlpLoader,
    /// Threads that serve HTTP and gRPC requests (parsing, single-text
    /// tokenization, encoding the answer); `None`: one per core. Fewer than
    /// the cores leaves the rest to the batch workers and, on a shared host,
    /// to the clients.
    pub request_threads: Option<std::num::NonZeroUsize>,
}

/// Runs the server on its own runtime until Ctrl-C or SIGTERM: binds, loads
/// every model, calls `on_ready` with the bound addresses, serves, drains.
pub fn run(options: ServeOptions, on_ready: impl FnOnce(Bound)) -> Result<(), crate::ServeError> {
    let io = |e: std::io::Error| crate::ServeError::Unavailable(e.to_string());
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = options.request_threads {
        runtime.worker_threads(n.get());
    }
    let runtime = runtime.enable_all().build().map_err(io)?;
    runtime.block_on(async move {
        let tls = options.tls.as_ref().map(TlsFiles::load).transpose()?;
        crate::cors::check(&options.cors_allow_origin)?;
        let listeners = Listeners::bind(&options.ports).await.map_err(io)?;
        let bound = listeners.addresses().map_err(io)?;
        let control = options.control.clone();
        let repository = crate::repository::Repository::new(&options.repository, options.limits, Arc::new(options.loader))?;
        let repository = Arc::new(repository.with_control(control.clone()));
        crate::repository_sync::load_at_start(&control, &repository).await?;
        crate::repository_sync::spawn_poller(&control, repository.clone());
        let shutdown = shutdown_signal();
        let service = Arc::new(Service { repository, metrics: Arc::new(crate::metrics::Metrics::new()) });
        on_ready(bound);
        listeners.serve(service, &options.transport, &options.access, tls.as_ref(), &options.cors_allow_origin, shutdown).await.map_err(io)
    })
}
