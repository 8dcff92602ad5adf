//! Prometheus metrics at `/metrics`, under Triton's names so that existing
//! dashboards work: counters of requests, inferences and executions, and
//! cumulative microseconds per phase, labelled by `model` and `version`.
//! `trt_serve_tokenize_duration_us` (not a Triton metric) is the time spent
//! tokenizing inside the server, which Triton leaves to a Python ensemble.

use prometheus::{Encoder, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder};

/// The server's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// `nv_inference_request_success`.
    pub request_success: IntCounterVec,
    /// `nv_inference_request_failure` (label `reason`).
    pub request_failure: IntCounterVec,
    /// `nv_inference_count`: inferences (rows) performed.
    pub inference_count: IntCounterVec,
    /// `nv_inference_exec_count`: batch executions.
    pub exec_count: IntCounterVec,
    /// `nv_inference_request_duration_us`: end to end, cumulative.
    pub request_duration_us: IntCounterVec,
    /// `nv_inference_queue_duration_us`: waiting for a batch slot, cumulative.
    pub queue_duration_us: IntCounterVec,
    /// `nv_inference_compute_infer_duration_us`: the backend's run, cumulative.
    pub compute_infer_duration_us: IntCounterVec,
    /// `trt_serve_tokenize_duration_us`: tokenizing, cumulative.
    pub tokenize_duration_us: IntCounterVec,
    /// `nv_inference_pending_request_count`: requests waiting or running.
    pub pending_requests: IntGaugeVec,
    /// `trt_serve_route_request_count` (labels `route`, `outcome`): requests
    /// per protocol route (`v2_infer`, `tei_embed`, `openai_embeddings`, ...),
    /// which all share the model's batches.
    pub route_requests: IntCounterVec,
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric name and labels");
    registry.register(Box::new(c.clone())).expect("each name is registered once");
    c
}

const MV: &[&str] = &["model", "version"];

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric, registered at zero.
    pub fn new() -> Self {
        let r = Registry::new();
        let pending = IntGaugeVec::new(
            Opts::new("nv_inference_pending_request_count", "Instantaneous number of pending requests awaiting execution per-model."),
            MV,
        )
        .expect("valid gauge");
        r.register(Box::new(pending.clone())).expect("registered once");
        Metrics {
            request_success: counter(&r, "nv_inference_request_success", "Number of successful inference requests, all batch sizes", MV),
            request_failure: counter(
                &r,
                "nv_inference_request_failure",
                "Number of failed inference requests, all batch sizes",
                &["model", "version", "reason"],
            ),
            inference_count: counter(&r, "nv_inference_count", "Number of inferences performed (does not include cached requests)", MV),
            exec_count: counter(
                &r,
                "nv_inference_exec_count",
                "Number of model executions performed (does not include cached requests)",
                MV,
            ),
            request_duration_us: counter(
                &r,
                "nv_inference_request_duration_us",
                "Cumulative inference request duration in microseconds (includes cached requests)",
                MV,
            ),
            queue_duration_us: counter(
                &r,
                "nv_inference_queue_duration_us",
                "Cumulative inference queuing duration in microseconds (includes cached requests)",
                MV,
            ),
            compute_infer_duration_us: counter(
                &r,
                "nv_inference_compute_infer_duration_us",
                "Cumulative compute inference duration in microseconds (does not include cached requests)",
                MV,
            ),
            tokenize_duration_us: counter(
                &r,
                "trt_serve_tokenize_duration_us",
                "Cumulative tokenization duration inside the server in microseconds",
                MV,
            ),
            pending_requests: pending,
            route_requests: counter(
                &r,
                "trt_serve_route_request_count",
                "Number of inference requests per protocol route, by outcome (success or failure)",
                &["model", "version", "route", "outcome"],
            ),
            registry: r,
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut out).expect("text encoding into a Vec cannot fail");
        String::from_utf8(out).expect("the text format is UTF-8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_tritons() {
        let m = Metrics::new();
        m.request_success.with_label_values(&["m", "1"]).inc();
        m.request_failure.with_label_values(&["m", "1", "REJECTED"]).inc_by(2);
        let text = m.render();
        assert!(text.contains("nv_inference_request_success{model=\"m\",version=\"1\"} 1"), "{text}");
        assert!(text.contains("nv_inference_request_failure{model=\"m\",reason=\"REJECTED\",version=\"1\"} 2"), "{text}");
        assert!(text.contains("# TYPE nv_inference_request_success counter"), "{text}");
    }
}
