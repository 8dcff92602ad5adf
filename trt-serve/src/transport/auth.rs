//! Access control: API keys required as `Authorization: Bearer <key>` (HTTP
//! header, gRPC metadata `authorization`), checked around the whole HTTP
//! router and the whole gRPC service, so every route is covered, including
//! ones added later. Keys are compared in constant time (`subtle`); a refusal
//! is logged with the route and the peer, never with the key.
//!
//! | group | routes | key required |
//! |---|---|---|
//! | health | `/v2/health/*`, `/v2/models/{m}[/versions/{v}]/ready`, TEI's `/health` and `/models/{m}/health`; gRPC `ServerLive`, `ServerReady`, `ModelReady`, `grpc.health.v1.Health/Check` | none, or the API key with [`Access::protect_health`] |
//! | metrics | `/metrics` (its own port) | none, or the API key with [`Access::protect_metrics`] |
//! | admin | `/v2/repository/*`; gRPC `Repository*` | the admin key; with none set, the API key |
//! | inference | every other route (infer, metadata, config, statistics, ...) | the API key |
//!
//! Missing or wrong: 401 with `WWW-Authenticate: Bearer` (HTTP),
//! `UNAUTHENTICATED` (gRPC). With no key configured everything is open,
//! as before.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::error::ServeError;

/// An API key; its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key; empty or whitespace-only keys are refused (they would be
    /// sent by a client that forgot to set one).
    pub fn new(key: impl Into<String>) -> Result<Self, ServeError> {
        let key = key.into();
        if key.trim().is_empty() {
            return Err(ServeError::invalid("an API key must not be empty"));
        }
        if key.bytes().any(|b| b.is_ascii_control() || b == b' ') {
            return Err(ServeError::invalid("an API key must not contain spaces or control characters"));
        }
        Ok(ApiKey(key))
    }

    /// Whether `candidate` is this key, in time independent of where they differ.
    fn matches(&self, candidate: &[u8]) -> bool {
        bool::from(self.0.as_bytes().ct_eq(candidate))
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(..)")
    }
}

/// Who may call what (see the module table).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    /// Required on inference routes (and health / metrics when protected).
    pub api_key: Option<ApiKey>,
    /// Required on repository and model-control routes.
    pub admin_api_key: Option<ApiKey>,
    /// Health routes need the API key too.
    pub protect_health: bool,
    /// `/metrics` needs the API key too.
    pub protect_metrics: bool,
}

/// The route groups of the module table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Liveness and readiness.
    Health,
    /// Prometheus metrics.
    Metrics,
    /// Repository index, load, unload.
    Admin,
    /// Everything else.
    Inference,
}

impl Group {
    /// The group of an HTTP path.
    pub fn of_http(path: &str) -> Group {
        let model_ready = path.starts_with("/v2/models/") && path.ends_with("/ready");
        // TEI's health route, at the root and per model.
        let tei_health = path == "/health" || (path.starts_with("/models/") && path.ends_with("/health"));
        if path.starts_with("/v2/health/") || model_ready || tei_health {
            Group::Health
        } else if path.starts_with("/v2/repository/") || path == "/v2/repository" {
            Group::Admin
        } else if path == "/metrics" {
            Group::Metrics
        } else {
            Group::Inference
        }
    }

    /// The group of a gRPC method path (`/package.Service/Method`).
    pub fn of_grpc(path: &str) -> Group {
        if path.starts_with("/grpc.health.v1.Health/") {
            return Group::Health;
        }
        match path.rsplit('/').next().unwrap_or_default() {
            "ServerLive" | "ServerReady" | "ModelReady" => Group::Health,
            m if m.starts_with("Repository") => Group::Admin,
            _ => Group::Inference,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Group::Health => "health",
            Group::Metrics => "metrics",
            Group::Admin => "repository",
            Group::Inference => "inference",
        }
    }
}

impl Access {
    /// Whether any key is configured.
    pub fn enabled(&self) -> bool {
        self.api_key.is_some() || self.admin_api_key.is_some()
    }

    /// The key a group requires, if any.
    fn required(&self, group: Group) -> Option<&ApiKey> {
        match group {
            Group::Health if !self.protect_health => None,
            Group::Metrics if !self.protect_metrics => None,
            Group::Admin => self.admin_api_key.as_ref().or(self.api_key.as_ref()),
            _ => self.api_key.as_ref(),
        }
    }

    /// Checks an `Authorization` value for `group`: `Ok` or why not (the
    /// reason never contains what the client sent).
    pub fn check(&self, group: Group, authorization: Option<&[u8]>) -> Result<(), &'static str> {
        let Some(key) = self.required(group) else { return Ok(()) };
        let Some(value) = authorization else { return Err("no Authorization: Bearer key") };
        let token = match value.split_first_chunk::<7>() {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case(b"bearer ") => rest.trim_ascii(),
            _ => return Err("the Authorization header is not a Bearer key"),
        };
        if key.matches(token) {
            Ok(())
        } else {
            Err("wrong key")
        }
    }
}

fn refusal(group: Group, why: &str) -> ServeError {
    let which = if group == Group::Admin { "an admin" } else { "an" };
    ServeError::Unauthenticated(format!("{} routes need {which} API key ({why})", group.name()))
}

/// The HTTP middleware (wraps a whole router; see [`axum::middleware::from_fn_with_state`]).
pub async fn http(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    let group = Group::of_http(request.uri().path());
    let header = request.headers().get(header::AUTHORIZATION).map(HeaderValue::as_bytes);
    match access.check(group, header) {
        Ok(()) => next.run(request).await,
        Err(why) => {
            tracing::warn!("401 {} {}: {why}", request.method(), request.uri().path());
            let mut r = refusal(group, why).into_response();
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            r
        }
    }
}

/// The gRPC layer (wraps the whole tonic service).
#[derive(Debug, Clone)]
pub struct GrpcAuthLayer(pub Arc<Access>);

impl<S> tower::Layer<S> for GrpcAuthLayer {
    type Service = GrpcAuth<S>;

    fn layer(&self, inner: S) -> GrpcAuth<S> {
        GrpcAuth { inner, access: self.0.clone() }
    }
}

/// [`GrpcAuthLayer`]'s service.
#[derive(Debug, Clone)]
pub struct GrpcAuth<S> {
    inner: S,
    access: Arc<Access>,
}

fn grpc_authorization(headers: &HeaderMap) -> Option<&[u8]> {
    headers.get(header::AUTHORIZATION).map(HeaderValue::as_bytes)
}

impl<S, B, RB> tower::Service<axum::http::Request<B>> for GrpcAuth<S>
where
    S: tower::Service<axum::http::Request<B>, Response = axum::http::Response<RB>> + Send,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    RB: Default + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: axum::http::Request<B>) -> Self::Future {
        let group = Group::of_grpc(request.uri().path());
        match self.access.check(group, grpc_authorization(request.headers())) {
            Ok(()) => Box::pin(self.inner.call(request)),
            Err(why) => {
                tracing::warn!("UNAUTHENTICATED {}: {why}", request.uri().path());
                let status: tonic::Status = refusal(group, why).into();
                Box::pin(std::future::ready(Ok(status.into_http())))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access() -> Access {
        Access { api_key: Some(ApiKey::new("k1").unwrap()), admin_api_key: Some(ApiKey::new("adm").unwrap()), ..Access::default() }
    }

    #[test]
    fn groups_and_keys() {
        let a = access();
        assert_eq!(a.check(Group::of_http("/v2/models/m/infer"), Some(b"Bearer k1")), Ok(()));
        assert_eq!(a.check(Group::of_http("/v2/models/m/infer"), Some(b"bearer  k1 ")), Ok(()));
        assert!(a.check(Group::of_http("/v2/models/m/infer"), Some(b"Bearer k2")).is_err());
        assert!(a.check(Group::of_http("/v2/models/m/infer"), Some(b"Basic k1")).is_err());
        assert!(a.check(Group::of_http("/v2/models/m/infer"), Some(b"Bearer")).is_err());
        assert!(a.check(Group::of_http("/v2/models/m/infer"), None).is_err());
        assert!(a.check(Group::of_http("/v2/repository/models/m/unload"), Some(b"Bearer k1")).is_err());
        assert_eq!(a.check(Group::of_http("/v2/repository/models/m/unload"), Some(b"Bearer adm")), Ok(()));
        assert_eq!(a.check(Group::of_http("/v2/health/ready"), None), Ok(()));
        assert_eq!(a.check(Group::of_http("/v2/models/m/versions/1/ready"), None), Ok(()));
        assert_eq!(a.check(Group::of_http("/health"), None), Ok(()));
        assert_eq!(a.check(Group::of_http("/models/m/health"), None), Ok(()));
        assert!(a.check(Group::of_http("/embed"), None).is_err());
        assert!(a.check(Group::of_http("/v1/embeddings"), None).is_err());
        assert_eq!(a.check(Group::of_http("/metrics"), None), Ok(()));
        let p = Access { protect_health: true, protect_metrics: true, ..access() };
        assert!(p.check(Group::of_http("/v2/health/ready"), None).is_err());
        assert!(p.check(Group::Metrics, None).is_err());
        assert_eq!(Group::of_grpc("/inference.GRPCInferenceService/RepositoryModelUnload"), Group::Admin);
        assert_eq!(Group::of_grpc("/inference.GRPCInferenceService/ServerReady"), Group::Health);
        assert_eq!(Group::of_grpc("/grpc.health.v1.Health/Check"), Group::Health);
        assert_eq!(Group::of_grpc("/inference.GRPCInferenceService/ModelInfer"), Group::Inference);
        // Without an admin key, the API key opens the repository routes.
        let one = Access { admin_api_key: None, ..access() };
        assert_eq!(one.check(Group::Admin, Some(b"Bearer k1")), Ok(()));
        assert_eq!(Access::default().check(Group::Inference, None), Ok(()));
    }

    #[test]
    fn keys_are_never_shown() {
        let k = ApiKey::new("secret-value").unwrap();
        assert!(!format!("{k:?}").contains("secret"));
        assert!(!format!("{:?}", access()).contains("k1"));
        assert!(ApiKey::new(" ").is_err());
        assert!(ApiKey::new("a b").is_err());
    }
}
