//! Prometheus metrics at `/metrics`, under Triton's names so that existing
//! dashboards work: counters of requests, inferences and executions, and
//! cumulative microseconds per phase, labelled by `model` and `version`.
//! `trt_serve_tokenize_duration_us` (not a Triton metric) is the time spent
//! tokenizing inside the server, which Triton leaves to a Python ensemble
//! (it is also `nv_inference_compute_input_duration_us`).
//!
//! Latency distributions are Prometheus histograms (Triton offers only
//! summaries, `nv_inference_*_summary_us`, which cannot be added up across
//! replicas): `trt_serve_{request,queue,compute_input,compute_infer,compute_output}_latency_us`,
//! per model and version, successful requests only (so each histogram's
//! count equals `nv_inference_request_success`).
//!
//! Per GPU, as Triton labels its instance-level metrics with `gpu_uuid`:
//! `trt_serve_instance_{exec_count,inference_count,failure_count,compute_infer_duration_us}`
//! and the gauge `trt_serve_instance_pending_batch_count`, labelled `model`,
//! `version` and `gpu_uuid`, one series per GPU a model's device instances
//! run on (those on one GPU added up), read from the dispatcher at each
//! scrape ([`instance_text`]). The model-level families above keep their
//! labels, so existing dashboards keep working; a model not placed on a GPU,
//! or on a GPU whose UUID the driver does not give, has no per-GPU series.
//!
//! Failure reasons are Triton's: `REJECTED` (admission: overloaded, queue or
//! inference timeout, not ready), `CANCELED` (the client went away before
//! the answer), `BACKEND` (the backend failed), `OTHER` (the request was
//! wrong). One [`InFlight`] per request records it all, including the
//! pending-request gauge, however the request ends.

use std::time::{Duration, Instant};

use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder};

use crate::error::ServeError;

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
    /// `nv_inference_compute_input_duration_us`: preparing inputs (tokenizing), cumulative.
    pub compute_input_duration_us: IntCounterVec,
    /// `nv_inference_compute_output_duration_us`: building the response tensors, cumulative.
    pub compute_output_duration_us: IntCounterVec,
    /// The latency histograms, by phase.
    pub latency: Latency,
}

/// `trt_serve_*_latency_us` histograms (microseconds).
#[derive(Debug, Clone)]
pub struct Latency {
    /// End to end.
    pub request: HistogramVec,
    /// Waiting for a batch.
    pub queue: HistogramVec,
    /// Tokenizing.
    pub compute_input: HistogramVec,
    /// The backend.
    pub compute_infer: HistogramVec,
    /// Building the outputs.
    pub compute_output: HistogramVec,
}

/// Bucket bounds in microseconds: 50 µs to 60 s, about 2.5x apart.
const BUCKETS_US: [f64; 16] = [50.0, 100.0, 250.0, 500.0, 1e3, 2.5e3, 5e3, 1e4, 2.5e4, 5e4, 1e5, 2.5e5, 5e5, 1e6, 1e7, 6e7];

fn histogram(registry: &Registry, name: &str, help: &str) -> HistogramVec {
    let h = HistogramVec::new(HistogramOpts::new(name, help).buckets(BUCKETS_US.to_vec()), MV).expect("valid histogram");
    registry.register(Box::new(h.clone())).expect("each name is registered once");
    h
}

/// Where one successful request's time went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Phases {
    /// Rows inferred.
    pub rows: u64,
    /// Batches run for it on the direct path (the scheduler counts its own).
    pub executions: u64,
    /// Waiting for a batch.
    pub queue: Duration,
    /// Tokenizing.
    pub compute_input: Duration,
    /// The backend.
    pub compute_infer: Duration,
    /// Building the outputs.
    pub compute_output: Duration,
}

/// One request in flight: counted pending from [`Metrics::start`] until
/// [`InFlight::finish`]; dropped unfinished (the client went away and its
/// handler was cancelled) it counts as `CANCELED`.
#[derive(Debug)]
pub struct InFlight<'a> {
    metrics: &'a Metrics,
    labels: [String; 2],
    route: &'a str,
    started: Instant,
    finished: bool,
}

fn us(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl InFlight<'_> {
    /// Records the outcome.
    pub fn finish(mut self, outcome: Result<Phases, &ServeError>) {
        self.finished = true;
        let m = self.metrics;
        let l = [self.labels[0].as_str(), self.labels[1].as_str()];
        m.pending_requests.with_label_values(&l).dec();
        match outcome {
            Ok(p) => {
                let total = self.started.elapsed();
                m.route_requests.with_label_values(&[l[0], l[1], self.route, "success"]).inc();
                m.request_success.with_label_values(&l).inc();
                m.inference_count.with_label_values(&l).inc_by(p.rows);
                // With dynamic batching the scheduler counts executions (see Service::metrics_text).
                m.exec_count.with_label_values(&l).inc_by(p.executions);
                for (counter, histogram, d) in [
                    (&m.request_duration_us, &m.latency.request, total),
                    (&m.queue_duration_us, &m.latency.queue, p.queue),
                    (&m.compute_input_duration_us, &m.latency.compute_input, p.compute_input),
                    (&m.compute_infer_duration_us, &m.latency.compute_infer, p.compute_infer),
                    (&m.compute_output_duration_us, &m.latency.compute_output, p.compute_output),
                ] {
                    counter.with_label_values(&l).inc_by(us(d));
                    histogram.with_label_values(&l).observe(d.as_secs_f64() * 1e6);
                }
                m.tokenize_duration_us.with_label_values(&l).inc_by(us(p.compute_input));
            }
            Err(e) => self.failed(e.failure_reason()),
        }
    }

    fn failed(&self, reason: &str) {
        let m = self.metrics;
        let l = [self.labels[0].as_str(), self.labels[1].as_str()];
        m.route_requests.with_label_values(&[l[0], l[1], self.route, "failure"]).inc();
        m.request_failure.with_label_values(&[l[0], l[1], reason]).inc();
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.finished {
            let l = [self.labels[0].as_str(), self.labels[1].as_str()];
            self.metrics.pending_requests.with_label_values(&l).dec();
            self.failed("CANCELED");
        }
    }
}

/// One GPU's share of a model version's work, for [`instance_text`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuWork {
    /// The GPU's UUID (`GPU-...`).
    pub gpu_uuid: String,
    /// Batches run (successful or not).
    pub executions: u64,
    /// Rows of the successful batches.
    pub inferences: u64,
    /// Batches that failed.
    pub failures: u64,
    /// Time in the backend, microseconds.
    pub compute_infer_us: u64,
    /// Batches running now.
    pub pending_batches: u64,
}

impl GpuWork {
    /// Per GPU, the work of a backend's device instances (trt-nlp's
    /// `Backend::device_instances`), in first-seen order; instances without
    /// a UUID are left out.
    pub fn per_gpu(instances: &[trt_nlp::backend::DeviceInstanceStats]) -> Vec<GpuWork> {
        let mut out: Vec<GpuWork> = Vec::new();
        for i in instances {
            let Some(uuid) = &i.gpu_uuid else { continue };
            let w = match out.iter_mut().position(|w| &w.gpu_uuid == uuid) {
                Some(k) => &mut out[k],
                None => {
                    out.push(GpuWork { gpu_uuid: uuid.clone(), ..GpuWork::default() });
                    out.last_mut().expect("just pushed")
                }
            };
            w.executions += i.batches;
            w.inferences += i.rows;
            w.failures += i.failures;
            w.compute_infer_us += us(i.busy);
            w.pending_batches += i.in_flight as u64;
        }
        out
    }
}

/// A per-GPU family: name, type, help, and its value in one GPU's work.
type Family = (&'static str, &'static str, &'static str, fn(&GpuWork) -> u64);

/// The Prometheus text of the per-GPU instance metrics of `versions`
/// (`(model, version, work per GPU)`); empty when no version runs on a
/// GPU with a known UUID.
pub fn instance_text(versions: &[(String, String, Vec<GpuWork>)]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if versions.iter().all(|(_, _, w)| w.is_empty()) {
        return out;
    }
    let families: [Family; 5] = [
        ("trt_serve_instance_exec_count", "counter", "Number of model executions per GPU", |w| w.executions),
        ("trt_serve_instance_inference_count", "counter", "Number of inferences (batch rows) per GPU", |w| w.inferences),
        ("trt_serve_instance_failure_count", "counter", "Number of failed model executions per GPU", |w| w.failures),
        ("trt_serve_instance_compute_infer_duration_us", "counter", "Cumulative compute inference duration per GPU in microseconds", |w| {
            w.compute_infer_us
        }),
        ("trt_serve_instance_pending_batch_count", "gauge", "Batches running now per GPU", |w| w.pending_batches),
    ];
    for (name, kind, help, value) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (model, version, work) in versions {
            for w in work {
                let (m, v, g) = (escape(model), escape(version), escape(&w.gpu_uuid));
                let _ = writeln!(out, "{name}{{gpu_uuid=\"{g}\",model=\"{m}\",version=\"{v}\"}} {}", value(w));
            }
        }
    }
    out
}

/// A label value in the text format: backslash, quote and newline escaped.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Triton's failure reasons, in the order the statistics extension sums them.
pub const FAILURE_REASONS: [&str; 4] = ["REJECTED", "CANCELED", "BACKEND", "OTHER"];

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
            compute_input_duration_us: counter(
                &r,
                "nv_inference_compute_input_duration_us",
                "Cumulative compute input duration in microseconds (does not include cached requests)",
                MV,
            ),
            compute_output_duration_us: counter(
                &r,
                "nv_inference_compute_output_duration_us",
                "Cumulative inference compute output duration in microseconds (does not include cached requests)",
                MV,
            ),
            latency: Latency {
                request: histogram(&r, "trt_serve_request_latency_us", "Inference request latency in microseconds, end to end"),
                queue: histogram(&r, "trt_serve_queue_latency_us", "Time waiting for a batch in microseconds"),
                compute_input: histogram(&r, "trt_serve_compute_input_latency_us", "Input preparation (tokenizing) in microseconds"),
                compute_infer: histogram(&r, "trt_serve_compute_infer_latency_us", "Backend execution in microseconds"),
                compute_output: histogram(&r, "trt_serve_compute_output_latency_us", "Output building in microseconds"),
            },
            registry: r,
        }
    }

    /// A request to `model` `version` through `route` begins (pending until it ends).
    pub fn start<'a>(&'a self, model: &str, version: &str, route: &'a str) -> InFlight<'a> {
        self.pending_requests.with_label_values(&[model, version]).inc();
        InFlight { metrics: self, labels: [model.to_string(), version.to_string()], route, started: Instant::now(), finished: false }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut out).expect("text encoding into a Vec cannot fail");
        let mut text = String::from_utf8(out).expect("the text format is UTF-8");
        text.push_str(&crate::observability::gpu_metrics::render());
        text
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

    #[test]
    fn per_gpu_instance_metrics_carry_gpu_uuid_and_add_up_instances_on_one_gpu() {
        assert_eq!(instance_text(&[("m".into(), "1".into(), Vec::new())]), "", "no GPU: no per-GPU series");
        let w = |uuid: &str, executions| GpuWork {
            gpu_uuid: uuid.into(),
            executions,
            inferences: 3 * executions,
            failures: 1,
            compute_infer_us: 250,
            pending_batches: 2,
        };
        let text = instance_text(&[("m\"x".into(), "1".into(), vec![w("GPU-a", 4), w("GPU-b", 5)])]);
        assert!(text.contains("# TYPE trt_serve_instance_exec_count counter\n"), "{text}");
        assert!(text.contains("# TYPE trt_serve_instance_pending_batch_count gauge\n"), "{text}");
        assert!(text.contains("trt_serve_instance_exec_count{gpu_uuid=\"GPU-a\",model=\"m\\\"x\",version=\"1\"} 4\n"), "{text}");
        assert!(text.contains("trt_serve_instance_inference_count{gpu_uuid=\"GPU-b\",model=\"m\\\"x\",version=\"1\"} 15\n"), "{text}");
        assert_eq!(text.matches("# HELP ").count(), 5, "each family once: {text}");
        // The whole exposition still parses as one registry's text: every sample line has a value.
        assert!(text.lines().filter(|l| !l.starts_with('#')).all(|l| l.rsplit(' ').next().unwrap().parse::<u64>().is_ok()), "{text}");
    }

    /// The value of the sample line `name{labels...}` in `text`.
    fn sample(text: &str, prefix: &str) -> f64 {
        let line = text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix} in {text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn histogram_buckets_add_up_to_the_counts_and_failures_carry_reasons() {
        let m = Metrics::new();
        let phases = |ms: u64| Phases {
            rows: 2,
            executions: 1,
            queue: Duration::from_micros(ms * 300),
            compute_input: Duration::from_micros(40),
            compute_infer: Duration::from_millis(ms),
            compute_output: Duration::from_micros(7),
        };
        for ms in [1, 3, 30, 300] {
            m.start("m", "1", "v2_infer").finish(Ok(phases(ms)));
        }
        m.start("m", "1", "v2_infer").finish(Err(&ServeError::Unavailable("overloaded".into())));
        m.start("m", "1", "v2_infer").finish(Err(&ServeError::Internal("backend".into())));
        drop(m.start("m", "1", "v2_infer")); // the client went away
        let text = m.render();
        for phase in ["request", "queue", "compute_input", "compute_infer", "compute_output"] {
            let name = format!("trt_serve_{phase}_latency_us");
            let count = sample(&text, &format!("{name}_count{{"));
            assert_eq!(count, 4.0, "{name}: one observation per successful request");
            let buckets: Vec<(f64, f64)> = text
                .lines()
                .filter(|l| l.starts_with(&format!("{name}_bucket{{")))
                .map(|l| {
                    let le = l.split("le=\"").nth(1).unwrap().split('"').next().unwrap();
                    (if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap() }, l.rsplit(' ').next().unwrap().parse().unwrap())
                })
                .collect();
            assert_eq!(buckets.len(), BUCKETS_US.len() + 1, "{name}: every bucket and +Inf");
            assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{name}: buckets are cumulative: {buckets:?}");
            assert_eq!(buckets.last().unwrap().1, count, "{name}: +Inf holds every observation");
        }
        // compute_infer: 1 ms, 3 ms, 30 ms, 300 ms fall at the 1e3, 5e3, 5e4, 5e5 bounds.
        let infer_le =
            |le: &str| sample(&text, &format!("trt_serve_compute_infer_latency_us_bucket{{model=\"m\",version=\"1\",le=\"{le}\"}}"));
        assert_eq!([infer_le("1000"), infer_le("5000"), infer_le("50000"), infer_le("500000")], [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(sample(&text, "nv_inference_request_success{"), 4.0);
        assert_eq!(sample(&text, "nv_inference_compute_infer_duration_us{"), 334_000.0);
        assert_eq!(sample(&text, "nv_inference_compute_output_duration_us{"), 28.0);
        for reason in ["REJECTED", "BACKEND", "CANCELED"] {
            assert_eq!(sample(&text, &format!("nv_inference_request_failure{{model=\"m\",reason=\"{reason}\"")), 1.0, "{reason}");
        }
        assert_eq!(sample(&text, "nv_inference_pending_request_count{"), 0.0, "every ended request left the gauge");
    }
}
