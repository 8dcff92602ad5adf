//! Activation ranges from calibration data: a histogram of |x| per tensor
//! and three ways to turn it into the clipping value `amax`
//! (scale = amax / 127, symmetric).
//!
//! The histogram follows pytorch-quantization's `HistogramCalibrator`: the
//! first batch fixes the bin width (2048 bins over [0, max]); a later batch
//! with a larger maximum appends bins of the same width. Unlike it, the
//! number of bins is capped ([`MAX_BINS`]): past the cap, neighbouring bins
//! are merged (width doubles), so memory and the entropy search stay bounded.
//!
//! - [`Calibrator::MinMax`]: the largest |x| seen (NVIDIA's advice for NLP).
//! - [`Calibrator::Entropy`]: TensorRT's IInt8EntropyCalibrator2 algorithm as
//!   pytorch-quantization writes it: for each candidate threshold bin `i`
//!   (from 128 up), fold the histogram's first `i` bins into 128 levels, and
//!   keep the `i` whose expanded distribution has the least KL divergence
//!   from the reference (the tail folded into bin `i-1`); the last minimum wins.
//! - [`Calibrator::Percentile`]: the bin edge where the cumulative share of
//!   |x| first reaches the percentile.
//!
//! `scripts/calibration_reference.py` is an independent numpy version of all
//! three; tests/onnx_calibrate.rs compares them on known distributions.

/// Bins of the first batch (TensorRT's and pytorch-quantization's 2048).
pub const NUM_BINS: usize = 2048;
/// At most this many bins: past it, pairs of bins are merged.
pub const MAX_BINS: usize = 4 * NUM_BINS;
/// Levels of a signed 8-bit quantizer on |x|.
const LEVELS: usize = 128;

/// How an activation's range is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Calibrator {
    /// The largest |x| seen.
    MinMax,
    /// The KL-divergence-minimising threshold (TensorRT's entropy calibrator).
    Entropy,
    /// The given percentile of |x| (e.g. 99.99).
    Percentile(f64),
}

impl std::str::FromStr for Calibrator {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "minmax" | "max" => Ok(Calibrator::MinMax),
            "entropy" => Ok(Calibrator::Entropy),
            _ => match s.strip_prefix("percentile") {
                Some("") => Ok(Calibrator::Percentile(99.99)),
                Some(p) => p
                    .trim_start_matches([':', '='])
                    .parse::<f64>()
                    .ok()
                    .filter(|p| *p > 0.0 && *p <= 100.0)
                    .map(Calibrator::Percentile)
                    .ok_or_else(|| format!("'{s}': percentile must be in (0, 100], e.g. percentile:99.99")),
                None => Err(format!("unknown calibrator '{s}'; use minmax, entropy or percentile[:P]")),
            },
        }
    }
}

/// A histogram of |x| over [0, bins.len() * width].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// Counts per bin.
    pub counts: Vec<f64>,
    /// Bin width (0 until a non-zero value was seen).
    pub width: f64,
    /// The largest |x| seen.
    pub max: f64,
    /// Zeros seen before the width was known (they belong to bin 0).
    pending_zeros: f64,
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram::default()
    }

    /// Adds a batch of values (their absolute values are counted). NaN and
    /// infinities are ignored: they carry no range information.
    pub fn add(&mut self, values: &[f32]) {
        let mut batch_max = 0f64;
        let mut finite = 0usize;
        for v in values {
            if v.is_finite() {
                batch_max = batch_max.max(v.abs() as f64);
                finite += 1;
            }
        }
        if finite == 0 {
            return;
        }
        if self.width == 0.0 {
            if batch_max == 0.0 {
                self.pending_zeros += finite as f64;
                return;
            }
            self.width = batch_max / NUM_BINS as f64;
            self.counts = vec![0.0; NUM_BINS];
            self.counts[0] += self.pending_zeros;
        } else if batch_max > self.top() {
            let needed = (batch_max / self.width).ceil() as usize;
            self.counts.resize(needed.max(self.counts.len()), 0.0);
        }
        while self.counts.len() > MAX_BINS {
            self.merge_pairs();
        }
        self.max = self.max.max(batch_max);
        let (n, top) = (self.counts.len(), self.top());
        for v in values.iter().filter(|v| v.is_finite()) {
            let a = v.abs() as f64;
            // Like torch.histc: the top edge belongs to the last bin.
            let b = if a >= top { n - 1 } else { ((a / self.width) as usize).min(n - 1) };
            self.counts[b] += 1.0;
        }
    }

    fn merge_pairs(&mut self) {
        let merged: Vec<f64> = self.counts.chunks(2).map(|c| c.iter().sum()).collect();
        self.counts = merged;
        self.width *= 2.0;
    }

    /// The upper edge of the last bin.
    pub fn top(&self) -> f64 {
        self.counts.len() as f64 * self.width
    }

    /// Whether any non-zero value was seen.
    pub fn is_empty(&self) -> bool {
        self.width == 0.0
    }

    /// Bin edge `i` (0 ..= bins).
    fn edge(&self, i: usize) -> f64 {
        i as f64 * self.width
    }

    /// The clipping value the calibrator picks; 0 for an all-zero tensor.
    pub fn amax(&self, calibrator: Calibrator) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        match calibrator {
            Calibrator::MinMax => self.max,
            Calibrator::Entropy => self.edge(entropy_threshold_bin(&self.counts)),
            Calibrator::Percentile(p) => self.edge(percentile_bin(&self.counts, p)),
        }
    }
}

/// The bin index whose lower edge... precisely: the `i` such that edge `i` is the
/// percentile's amax (pytorch-quantization: `edges[searchsorted(cdf, p / 100)]`).
pub fn percentile_bin(counts: &[f64], percentile: f64) -> usize {
    let total: f64 = counts.iter().sum();
    if total == 0.0 {
        return counts.len();
    }
    let target = percentile / 100.0;
    let mut cdf = 0.0;
    for (i, c) in counts.iter().enumerate() {
        cdf += c / total;
        if cdf >= target {
            return i;
        }
    }
    counts.len()
}

/// The entropy calibrator's threshold, as a bin edge index (see the module docs).
// `i` is the candidate threshold itself, not only an index into the tables.
#[allow(clippy::needless_range_loop)]
pub fn entropy_threshold_bin(counts: &[f64]) -> usize {
    let n = counts.len();
    if n <= LEVELS {
        return n;
    }
    let mut bins = counts.to_vec();
    // The spike of exact zeros (padding, ReLU) would dominate: bin 0 copies bin 1.
    bins[0] = bins[1];
    let mut suffix = vec![0.0; n + 1];
    for (i, b) in bins.iter().enumerate().rev() {
        suffix[i] = suffix[i + 1] + b;
    }
    let mut best = (f64::INFINITY, LEVELS);
    let mut level_sum = [0.0f64; LEVELS];
    let mut level_nonzero = [0usize; LEVELS];
    let mut level_of = vec![0usize; n];
    for i in LEVELS..=n {
        // numpy.digitize(range(i), linspace(0, i, 129)) - 1 for each bin index.
        let step = i as f64 / LEVELS as f64;
        level_sum.fill(0.0);
        level_nonzero.fill(0);
        for (idx, level) in level_of.iter_mut().enumerate().take(i) {
            let mut l = ((idx as f64) / step) as usize;
            // Match the linspace edges exactly (k * step may round either way).
            while l + 1 < LEVELS && (l + 1) as f64 * step <= idx as f64 {
                l += 1;
            }
            while l > 0 && l as f64 * step > idx as f64 {
                l -= 1;
            }
            *level = l.min(LEVELS - 1);
            if bins[idx] != 0.0 {
                level_sum[*level] += bins[idx];
                level_nonzero[*level] += 1;
            }
        }
        // Reference: the first i bins, the tail folded into the last; candidate:
        // each level's mass spread evenly over its non-empty bins.
        let p_total: f64 = (0..i).map(|k| bins[k]).sum::<f64>() + suffix[i];
        let q_total: f64 = (0..i).filter(|&k| bins[k] != 0.0).map(|k| level_sum[level_of[k]] / level_nonzero[level_of[k]] as f64).sum();
        if p_total == 0.0 || q_total == 0.0 {
            continue;
        }
        let mut kl = 0.0;
        for k in 0..i {
            let p = if k == i - 1 { bins[k] + suffix[i] } else { bins[k] };
            if p == 0.0 {
                continue;
            }
            let q = if bins[k] != 0.0 { level_sum[level_of[k]] / level_nonzero[level_of[k]] as f64 } else { 0.0 };
            if q == 0.0 {
                kl = f64::INFINITY;
                break;
            }
            let (p, q) = (p / p_total, q / q_total);
            kl += p * (p / q).ln();
        }
        // `<=`: the last minimum wins, as in pytorch-quantization.
        if kl <= best.0 {
            best = (kl, i);
        }
    }
    best.1
}

/// Per-channel symmetric scales of a weight: max |w| along every axis but
/// `axis`, divided by 127 (a zero channel gets scale 1, its values are all 0).
pub fn weight_scales(w: &ndarray::ArrayD<f32>, axis: usize) -> Vec<f32> {
    let n = w.shape()[axis];
    (0..n)
        .map(|c| {
            let amax = w.index_axis(ndarray::Axis(axis), c).iter().fold(0f32, |m, v| m.max(v.abs()));
            if amax > 0.0 {
                amax / 127.0
            } else {
                1.0
            }
        })
        .collect()
}
