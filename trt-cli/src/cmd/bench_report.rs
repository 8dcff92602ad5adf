//! What every `trt bench` run shares, whichever backend it measured: the
//! timed loop, the percentiles, the `--json` document, the text report and
//! the `--compare` gate.
//!
//! | piece | what |
//! |---|---|
//! | [`measure`] | warm-up, then timed iterations; each one's wall time and the backend's own sample |
//! | [`Summary::of`] | nearest-rank p50/p90/p99, mean, min, max (ms) |
//! | [`Report`] | the `--json` document: a stable serde struct, read back by `--compare` |
//! | [`compare`] | this run's p50 and throughput against a baseline report, with a tolerance |
//!
//! A regression past `--max-regression` exits with [`REGRESSION_EXIT_CODE`]
//! (3), distinct from errors (1) and usage errors (2), so a CI gate can tell
//! "slower" from "broken".

use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{naming, CliError, Result};

/// The exit code of a `--compare` run slower than the baseline allows.
pub const REGRESSION_EXIT_CODE: u8 = 3;

/// Nearest-rank statistics of one quantity, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

/// The `q` quantile (nearest rank) of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

impl Summary {
    /// The statistics of `values` (all zero when there are none).
    pub fn of(values: impl Iterator<Item = f64>) -> Summary {
        let mut v: Vec<f64> = values.collect();
        if v.is_empty() {
            return Summary { p50: 0.0, p90: 0.0, p99: 0.0, mean: 0.0, min: 0.0, max: 0.0 };
        }
        v.sort_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        Summary { p50: quantile(&v, 0.5), p90: quantile(&v, 0.9), p99: quantile(&v, 0.99), mean, min: v[0], max: v[v.len() - 1] }
    }

    /// `p50 ... p90 ... p99 ... mean ...`, aligned.
    pub fn line(&self, label: &str) -> String {
        format!("  {label:<16} p50 {:8.3}  p90 {:8.3}  p99 {:8.3}  mean {:8.3}\n", self.p50, self.p90, self.p99, self.mean)
    }
}

/// The timed iterations of one run.
#[derive(Debug)]
pub struct Timed<S> {
    /// What each timed iteration's step returned.
    pub samples: Vec<S>,
    /// Each timed iteration's wall-clock time, ms.
    pub wall_ms: Vec<f64>,
    /// The timed iterations' wall-clock time together.
    pub wall: Duration,
}

impl<S> Timed<S> {
    /// Rows per second over the timed iterations, `batch` rows each.
    pub fn throughput(&self, batch: i64) -> f64 {
        (self.wall_ms.len() as f64 * batch as f64) / self.wall.as_secs_f64()
    }

    /// Mean wall-clock time of one timed iteration, ms.
    pub fn ms_per_iteration(&self) -> f64 {
        self.wall.as_secs_f64() * 1e3 / self.wall_ms.len().max(1) as f64
    }
}

/// Runs `step` `warmup` times untimed, then `iterations` times timed.
pub fn measure<S>(warmup: u32, iterations: u32, mut step: impl FnMut() -> Result<S>) -> Result<Timed<S>> {
    for _ in 0..warmup {
        step()?;
    }
    let mut timed =
        Timed { samples: Vec::with_capacity(iterations as usize), wall_ms: Vec::with_capacity(iterations as usize), wall: Duration::ZERO };
    for _ in 0..iterations {
        let started = Instant::now();
        let sample = step()?;
        let took = started.elapsed();
        timed.wall += took;
        timed.wall_ms.push(took.as_secs_f64() * 1e3);
        timed.samples.push(sample);
    }
    Ok(timed)
}

/// Whether a tensor was fed or produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Io {
    Input,
    Output,
}

/// One tensor as the run fed or produced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorShape {
    pub name: String,
    pub io: Io,
    pub dtype: String,
    pub shape: Vec<i64>,
}

/// The `--json` document of a run: what `--compare` reads back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// `tensorrt` or `onnxruntime`.
    pub backend: String,
    /// `cpu` or `cuda:N`.
    pub device: String,
    /// The GPU's name, or ONNX Runtime's execution provider.
    pub device_name: String,
    /// The model file.
    pub model: String,
    /// Inputs, then outputs.
    pub shapes: Vec<TensorShape>,
    /// Rows per iteration.
    pub batch: i64,
    pub iterations: u32,
    pub warmup: u32,
    /// CUDA graphs were replayed.
    pub cuda_graphs: bool,
    /// Host-device copies are inside the timed latency.
    pub transfers: bool,
    /// Latency of one iteration (ms).
    pub latency_ms: Summary,
    /// Rows per second over the timed iterations' wall-clock time.
    pub throughput_per_s: f64,
    pub wall_ms_per_iteration: f64,
    pub notes: Vec<String>,
    /// What only one backend measures (TensorRT: the engine / copy split, per-layer times).
    #[serde(flatten)]
    pub detail: serde_json::Map<String, serde_json::Value>,
}

impl Report {
    /// The shared part of the text report: a heading, the tensors and the latency line.
    pub fn heading(&self) -> String {
        let mut s = format!(
            "bench {} on {} ({}, {}): {} iterations after {} warm-up, CUDA graphs {}, transfers {}\n",
            self.model,
            self.backend,
            self.device,
            self.device_name,
            self.iterations,
            self.warmup,
            if self.cuda_graphs { "on" } else { "off" },
            if self.transfers { "timed" } else { "excluded" }
        );
        for t in &self.shapes {
            s.push_str(&format!("  {:<24} {:<5} {}\n", t.name, t.dtype, crate::output::shape(&t.shape)));
        }
        s.push_str(&self.latency_ms.line("latency (ms)"));
        s
    }

    /// The throughput line that closes the text report.
    pub fn throughput_line(&self) -> String {
        format!(
            "  throughput       {:.1} samples/s (batch {}; {:.3} ms wall per iteration)\n",
            self.throughput_per_s, self.batch, self.wall_ms_per_iteration
        )
    }

    /// The `--json` document, pretty-printed.
    pub fn to_json(&self) -> String {
        format!("{}\n", serde_json::to_string_pretty(self).expect("a report serializes"))
    }

    /// A report written by `--json`, read from `path` (errors name it).
    pub fn read(path: &Path) -> Result<Report> {
        let text = std::fs::read_to_string(path).map_err(|e| naming(path, e))?;
        serde_json::from_str(&text).map_err(|e| naming(path, format!("not a trt bench --json report: {e}")))
    }
}

/// This run against `baseline`: Ok with a one-line verdict, or the regression
/// error (exit code [`REGRESSION_EXIT_CODE`]) when the p50 latency rose, or the
/// throughput fell, by more than `max_regression` percent. Runs of different
/// input shapes are not compared (an error, exit 1).
pub fn compare(run: &Report, baseline: &Report, baseline_path: &Path, max_regression: f64) -> Result<String> {
    let inputs = |r: &Report| -> Vec<(String, Vec<i64>)> {
        r.shapes.iter().filter(|t| t.io == Io::Input).map(|t| (t.name.clone(), t.shape.clone())).collect()
    };
    let (ours, theirs) = (inputs(run), inputs(baseline));
    if ours != theirs {
        return Err(naming(
            baseline_path,
            format!(
                "the baseline was measured on other shapes ({}), this run on {}; compare runs of the same shapes",
                shapes(&theirs),
                shapes(&ours)
            ),
        ));
    }
    let change = |now: f64, then: f64| if then > 0.0 { (now / then - 1.0) * 100.0 } else { 0.0 };
    let p50 = change(run.latency_ms.p50, baseline.latency_ms.p50);
    let throughput = change(run.throughput_per_s, baseline.throughput_per_s);
    let verdict = format!(
        "p50 {:.3} ms vs {:.3} ms ({p50:+.1}%), throughput {:.1}/s vs {:.1}/s ({throughput:+.1}%), baseline {} ({}, {})",
        run.latency_ms.p50,
        baseline.latency_ms.p50,
        run.throughput_per_s,
        baseline.throughput_per_s,
        baseline_path.display(),
        baseline.backend,
        baseline.device
    );
    let mut past = Vec::new();
    if p50 > max_regression {
        past.push("p50 latency");
    }
    if -throughput > max_regression {
        past.push("throughput");
    }
    if past.is_empty() {
        return Ok(format!("compare: within {max_regression}%: {verdict}"));
    }
    Err(CliError::with_code(format!("regression past {max_regression}% in {}: {verdict}", past.join(" and ")), REGRESSION_EXIT_CODE))
}

fn shapes(list: &[(String, Vec<i64>)]) -> String {
    list.iter().map(|(n, s)| format!("{n} {}", crate::output::dims(s))).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&[3.0], 0.9), 3.0);
        let s = Summary::of([4.0, 1.0, 3.0, 2.0].into_iter());
        assert_eq!((s.p50, s.p90, s.min, s.max, s.mean), (2.0, 4.0, 1.0, 4.0, 2.5));
    }

    fn report(p50: f64, throughput: f64) -> Report {
        Report {
            backend: "onnxruntime".into(),
            device: "cpu".into(),
            device_name: "CPUExecutionProvider".into(),
            model: "m.onnx".into(),
            shapes: vec![TensorShape { name: "input_ids".into(), io: Io::Input, dtype: "i64".into(), shape: vec![1, 16] }],
            batch: 1,
            iterations: 3,
            warmup: 0,
            cuda_graphs: false,
            transfers: true,
            latency_ms: Summary { p50, p90: p50, p99: p50, mean: p50, min: p50, max: p50 },
            throughput_per_s: throughput,
            wall_ms_per_iteration: p50,
            notes: vec![],
            detail: Default::default(),
        }
    }

    #[test]
    fn compare_flags_latency_and_throughput_past_the_tolerance() {
        let base = report(10.0, 100.0);
        let path = Path::new("base.json");
        assert!(compare(&report(10.9, 95.0), &base, path, 10.0).is_ok());
        let slow = compare(&report(11.5, 100.0), &base, path, 10.0).unwrap_err();
        assert_eq!(slow.code(), REGRESSION_EXIT_CODE);
        assert!(slow.to_string().contains("p50 latency"), "{slow}");
        let fewer = compare(&report(10.0, 80.0), &base, path, 10.0).unwrap_err();
        assert!(fewer.to_string().contains("throughput") && !fewer.to_string().contains("p50 latency"), "{fewer}");
        // Faster is never a regression.
        assert!(compare(&report(1.0, 1000.0), &base, path, 0.0).is_ok());
        let mut other = report(10.0, 100.0);
        other.shapes[0].shape = vec![8, 16];
        let e = compare(&other, &base, path, 10.0).unwrap_err();
        assert_eq!(e.code(), 1);
        assert!(e.to_string().contains("base.json") && e.to_string().contains("8x16"), "{e}");
    }

    #[test]
    fn reports_round_trip_through_json() {
        let mut r = report(2.0, 500.0);
        r.detail.insert("compute_ms".into(), serde_json::json!({"p50": 1.0}));
        let back: Report = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(back.latency_ms, r.latency_ms);
        assert_eq!(back.shapes, r.shapes);
        assert_eq!(back.detail["compute_ms"]["p50"], 1.0);
    }
}
