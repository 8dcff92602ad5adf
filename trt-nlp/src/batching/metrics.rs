//! What a server exports about its scheduler: counters and histograms,
//! updated with atomics on the hot path and read as one [`MetricsSnapshot`].
//!
//! Histograms have fixed bucket bounds (Prometheus style) so that memory is
//! constant whatever the traffic; quantiles are read off the buckets.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds of the time buckets, in microseconds (the last bucket is unbounded).
const TIME_BOUNDS_US: [u64; 20] = [
    10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000,
    10_000_000, 60_000_000,
];

/// A time histogram over fixed buckets.
#[derive(Debug)]
pub(crate) struct TimeHistogram {
    buckets: [AtomicU64; TIME_BOUNDS_US.len() + 1],
    sum_us: AtomicU64,
}

impl TimeHistogram {
    fn new() -> Self {
        TimeHistogram { buckets: std::array::from_fn(|_| AtomicU64::new(0)), sum_us: AtomicU64::new(0) }
    }

    pub(crate) fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let i = TIME_BOUNDS_US.iter().position(|&b| us <= b).unwrap_or(TIME_BOUNDS_US.len());
        self.buckets[i].fetch_add(1, Relaxed);
        self.sum_us.fetch_add(us, Relaxed);
    }

    fn snapshot(&self) -> Histogram {
        Histogram {
            bounds_us: TIME_BOUNDS_US.to_vec(),
            counts: self.buckets.iter().map(|b| b.load(Relaxed)).collect(),
            sum_us: self.sum_us.load(Relaxed),
        }
    }
}

/// A histogram of durations: `counts[i]` observations were at most
/// `bounds_us[i]` microseconds (and above the bound before); the last count
/// is for everything above the last bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    /// Upper bounds of the buckets, microseconds.
    pub bounds_us: Vec<u64>,
    /// Observations per bucket (one more than `bounds_us`).
    pub counts: Vec<u64>,
    /// Sum of all observations, microseconds.
    pub sum_us: u64,
}

impl Histogram {
    /// Observations.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The mean, if anything was observed.
    pub fn mean(&self) -> Option<Duration> {
        let n = self.count();
        (n > 0).then(|| Duration::from_micros(self.sum_us / n))
    }

    /// Upper bound of the bucket that holds quantile `q` (0..=1): an estimate
    /// at bucket resolution; `None` when empty or for the unbounded bucket.
    pub fn quantile_bound(&self, q: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return self.bounds_us.get(i).map(|&us| Duration::from_micros(us));
            }
        }
        None
    }
}

/// Failed requests, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failures {
    /// Refused at submit because the queue was full.
    pub overloaded: u64,
    /// Deadline passed (at submit or while queued).
    pub deadline: u64,
    /// Cancelled by the caller (handle dropped before the result).
    pub cancelled: u64,
    /// Failed with their batch (backend error or panic).
    pub backend: u64,
    /// Refused at submit for bad input (empty, too long, bad priority, over budget, shutting down).
    pub rejected: u64,
}

/// A consistent-enough copy of the counters (each read atomically, not all at one instant).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// Requests submitted (accepted or not).
    pub requests: u64,
    /// Requests that completed with a result.
    pub succeeded: u64,
    /// Requests that did not, by reason.
    pub failures: Failures,
    /// Rows computed (Triton's inference count).
    pub inferences: u64,
    /// Batches run on the backend (Triton's execution count).
    pub executions: u64,
    /// `batch_sizes[n]`: batches of `n` rows run (index 0 unused).
    pub batch_sizes: Vec<u64>,
    /// Real tokens in the batches run.
    pub real_tokens: u64,
    /// Padded tokens in the batches run (`rows * seq_len`).
    pub padded_tokens: u64,
    /// Submit to start of the row's batch, per computed row.
    pub queue_time: Histogram,
    /// Backend time per batch (packing, execution, reading outputs).
    pub compute_time: Histogram,
    /// Rows waiting now.
    pub queued_rows: u64,
}

impl MetricsSnapshot {
    /// Real tokens / padded tokens of the batches run (1.0 = no padding); `None` before any batch.
    pub fn padding_efficiency(&self) -> Option<f64> {
        (self.padded_tokens > 0).then(|| self.real_tokens as f64 / self.padded_tokens as f64)
    }

    /// Rows per batch on average (inferences / executions); `None` before any batch.
    pub fn mean_batch_size(&self) -> Option<f64> {
        (self.executions > 0).then(|| self.inferences as f64 / self.executions as f64)
    }
}

/// The live counters, shared by the scheduler's threads and the handles.
#[derive(Debug)]
pub(crate) struct Metrics {
    pub requests: AtomicU64,
    pub succeeded: AtomicU64,
    pub overloaded: AtomicU64,
    pub deadline: AtomicU64,
    pub cancelled: AtomicU64,
    pub backend: AtomicU64,
    pub rejected: AtomicU64,
    pub inferences: AtomicU64,
    pub executions: AtomicU64,
    batch_sizes: Vec<AtomicU64>,
    pub real_tokens: AtomicU64,
    pub padded_tokens: AtomicU64,
    pub queue_time: TimeHistogram,
    pub compute_time: TimeHistogram,
    pub queued_rows: AtomicU64,
}

impl Metrics {
    pub(crate) fn new(max_batch: usize) -> Self {
        let z = || AtomicU64::new(0);
        Metrics {
            requests: z(),
            succeeded: z(),
            overloaded: z(),
            deadline: z(),
            cancelled: z(),
            backend: z(),
            rejected: z(),
            inferences: z(),
            executions: z(),
            batch_sizes: (0..=max_batch).map(|_| z()).collect(),
            real_tokens: z(),
            padded_tokens: z(),
            queue_time: TimeHistogram::new(),
            compute_time: TimeHistogram::new(),
            queued_rows: z(),
        }
    }

    /// One batch of `rows` rows (the scheduler's rows, without any padding to
    /// the model's minimum batch) and its token counts.
    pub(crate) fn record_batch(&self, rows: usize, real: usize, padded: usize, compute: Duration) {
        self.executions.fetch_add(1, Relaxed);
        self.inferences.fetch_add(rows as u64, Relaxed);
        if let Some(b) = self.batch_sizes.get(rows) {
            b.fetch_add(1, Relaxed);
        }
        self.real_tokens.fetch_add(real as u64, Relaxed);
        self.padded_tokens.fetch_add(padded as u64, Relaxed);
        self.compute_time.record(compute);
    }

    pub(crate) fn snapshot(&self) -> MetricsSnapshot {
        let l = |a: &AtomicU64| a.load(Relaxed);
        MetricsSnapshot {
            requests: l(&self.requests),
            succeeded: l(&self.succeeded),
            failures: Failures {
                overloaded: l(&self.overloaded),
                deadline: l(&self.deadline),
                cancelled: l(&self.cancelled),
                backend: l(&self.backend),
                rejected: l(&self.rejected),
            },
            inferences: l(&self.inferences),
            executions: l(&self.executions),
            batch_sizes: self.batch_sizes.iter().map(l).collect(),
            real_tokens: l(&self.real_tokens),
            padded_tokens: l(&self.padded_tokens),
            queue_time: self.queue_time.snapshot(),
            compute_time: self.compute_time.snapshot(),
            queued_rows: l(&self.queued_rows),
        }
    }
}
