//! The gRPC health checking protocol (`grpc.health.v1.Health/Check`) on the
//! gRPC port, for Kubernetes' `grpc` probes where the gRPC port is the only
//! one a pod exposes (Knative's single `h2c` port) and for load balancers.
//!
//! | `service` asked | answers |
//! |---|---|
//! | `""`, `readiness`, `inference.GRPCInferenceService` | `SERVING` when the server is ready (as `ServerReady`), else `NOT_SERVING` |
//! | `liveness` | `SERVING` while the process answers (as `ServerLive`) |
//! | anything else | status `NOT_FOUND`, as the protocol asks |
//!
//! Like the other health routes it needs no API key unless health is
//! protected ([`crate::transport::auth`]): kubelet's probe sends no metadata.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::protocols::service::Service;

/// The generated protocol types and service trait.
#[allow(missing_docs, clippy::all)]
pub mod proto {
    tonic::include_proto!("grpc.health.v1");
}

use proto::health_check_response::ServingStatus;
use proto::health_server::{Health, HealthServer};
use proto::{HealthCheckRequest, HealthCheckResponse};

/// The service name whose status is the KServe v2 gRPC service's.
const INFERENCE_SERVICE: &str = "inference.GRPCInferenceService";

/// The tonic service over `service`.
pub fn server(service: Arc<Service>) -> HealthServer<HealthCheck> {
    HealthServer::new(HealthCheck { service })
}

/// The health handler.
#[derive(Debug, Clone)]
pub struct HealthCheck {
    service: Arc<Service>,
}

/// The status of `name` given liveness and readiness, or `None` for a name this server does not know.
fn status(name: &str, live: bool, ready: bool) -> Option<ServingStatus> {
    let serving = |up: bool| if up { ServingStatus::Serving } else { ServingStatus::NotServing };
    match name {
        "" | "readiness" | INFERENCE_SERVICE => Some(serving(ready)),
        "liveness" => Some(serving(live)),
        _ => None,
    }
}

#[tonic::async_trait]
impl Health for HealthCheck {
    async fn check(&self, r: Request<HealthCheckRequest>) -> Result<Response<HealthCheckResponse>, Status> {
        let name = r.into_inner().service;
        match status(&name, self.service.live(), self.service.ready()) {
            Some(s) => Ok(Response::new(HealthCheckResponse { status: s.into() })),
            None => Err(Status::not_found(format!("unknown service {name:?} (known: \"\", readiness, liveness, {INFERENCE_SERVICE})"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_readiness_or_liveness() {
        assert_eq!(status("", true, false), Some(ServingStatus::NotServing));
        assert_eq!(status("", true, true), Some(ServingStatus::Serving));
        assert_eq!(status("readiness", true, false), Some(ServingStatus::NotServing));
        assert_eq!(status(INFERENCE_SERVICE, true, true), Some(ServingStatus::Serving));
        assert_eq!(status("liveness", true, false), Some(ServingStatus::Serving));
        assert_eq!(status("other", true, true), None);
    }
}
