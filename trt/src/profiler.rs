//! Per-layer timing (`IProfiler`): a C++ profiler forwarding each layer's time
//! to boxed Rust callbacks, attached to an execution context
//! ([`ExecutionContext::set_profiler`](crate::ExecutionContext::set_profiler)), and
//! [`LayerTimes`], callbacks that keep every iteration's times and summarize
//! them per layer (median, mean, share of the total), as trtexec's
//! `--dumpProfile` does.
//!
//! A panic in the callbacks never unwinds into TensorRT: it is caught on the
//! Rust side, later reports are dropped, and the next call that reports
//! ([`report_to_profiler`](crate::ExecutionContext::report_to_profiler),
//! [`profiler_error`](crate::ExecutionContext::profiler_error))
//! returns [`Error::CallbackPanicked`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use trt_sys::callbacks::{PanicSlot, ProfilerSink};
use trt_sys::ffi;

pub use trt_sys::callbacks::ProfilerCallbacks;

use crate::call::call_owned;
use crate::{Error, Result};

/// A TensorRT profiler forwarding to Rust callbacks.
pub struct Profiler {
    raw: cxx::UniquePtr<ffi::Profiler>,
    panic: PanicSlot,
}

// SAFETY: the C++ profiler only holds the boxed callbacks (`ProfilerCallbacks: Send`)
// behind its own mutex; TensorRT calls it from the thread that drives its context.
unsafe impl Send for Profiler {}

impl std::fmt::Debug for Profiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profiler").field("panicked", &self.panicked()).finish()
    }
}

impl Profiler {
    /// A profiler calling `callbacks` for every reported layer.
    pub fn new(callbacks: Box<dyn ProfilerCallbacks>) -> Result<Self> {
        let panic = PanicSlot::default();
        let raw = call_owned("new Profiler", || ffi::new_profiler(ProfilerSink::new(callbacks, panic.clone())))?;
        Ok(Profiler { raw, panic })
    }

    fn panicked(&self) -> bool {
        self.panic.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// [`Error::CallbackPanicked`] with the message when a callback panicked
    /// (reports after the panic were dropped).
    pub fn check(&self) -> Result<()> {
        match self.panic.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(message) => Err(Error::CallbackPanicked(message.clone())),
            None => Ok(()),
        }
    }

    pub(crate) fn pin(&mut self) -> std::pin::Pin<&mut ffi::Profiler> {
        self.raw.as_mut().expect("non-null profiler")
    }

    pub(crate) fn raw_ptr(&self) -> *mut ffi::Profiler {
        self.raw.as_mut_ptr()
    }
}

/// Most iterations kept per layer; later ones are dropped (bounded memory).
pub const MAX_SAMPLES_PER_LAYER: usize = 100_000;
/// Most distinct layer names kept.
pub const MAX_LAYERS: usize = 100_000;

#[derive(Debug, Default)]
struct Recorded {
    order: Vec<String>,
    times: HashMap<String, Vec<f32>>,
    dropped: u64,
}

/// [`ProfilerCallbacks`] that keep every reported time; clones share the
/// record, so keep one to read the summary after handing another to a [`Profiler`].
#[derive(Debug, Clone, Default)]
pub struct LayerTimes {
    inner: Arc<Mutex<Recorded>>,
}

/// One layer's times over the reported iterations.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LayerTime {
    /// Layer name as the engine reports it.
    pub name: String,
    /// Iterations reported.
    pub count: usize,
    /// Sum over the iterations, in milliseconds.
    pub total_ms: f64,
    /// Mean per iteration, in milliseconds.
    pub mean_ms: f64,
    /// Median per iteration, in milliseconds.
    pub median_ms: f64,
    /// This layer's share of all layers' total time, in percent.
    pub percent: f64,
}

impl LayerTimes {
    /// An empty record.
    pub fn new() -> Self {
        LayerTimes::default()
    }

    /// Per-layer summary in the order layers were first reported (the engine's order).
    pub fn summary(&self) -> Vec<LayerTime> {
        let r = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let totals: Vec<f64> = r.order.iter().map(|n| r.times[n].iter().map(|&t| f64::from(t)).sum()).collect();
        let all: f64 = totals.iter().sum();
        r.order
            .iter()
            .zip(totals)
            .map(|(name, total)| {
                let times = &r.times[name];
                let count = times.len();
                LayerTime {
                    name: name.clone(),
                    count,
                    total_ms: total,
                    mean_ms: if count == 0 { 0.0 } else { total / count as f64 },
                    median_ms: median(times),
                    percent: if all > 0.0 { 100.0 * total / all } else { 0.0 },
                }
            })
            .collect()
    }

    /// Reports dropped because a bound ([`MAX_SAMPLES_PER_LAYER`], [`MAX_LAYERS`]) was reached.
    pub fn dropped(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).dropped
    }
}

impl ProfilerCallbacks for LayerTimes {
    fn report_layer_time(&mut self, layer: &str, ms: f32) {
        let mut r = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let known = r.times.contains_key(layer);
        if !known && r.order.len() >= MAX_LAYERS {
            r.dropped += 1;
            return;
        }
        if !known {
            r.order.push(layer.to_owned());
        }
        let times = r.times.entry(layer.to_owned()).or_default();
        if times.len() >= MAX_SAMPLES_PER_LAYER {
            r.dropped += 1;
            return;
        }
        times.push(ms);
    }
}

/// Median of `times` (mean of the middle two for an even count; 0 when empty).
fn median(times: &[f32]) -> f64 {
    if times.is_empty() {
        return 0.0;
    }
    let mut sorted: Vec<f64> = times.iter().map(|&t| f64::from(t)).collect();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_keeps_the_engine_order_and_computes_median_and_share() {
        let mut t = LayerTimes::new();
        let reader = t.clone();
        for (layer, ms) in [("b", 3.0), ("a", 1.0), ("b", 1.0), ("a", 1.0), ("b", 2.0), ("a", 4.0)] {
            t.report_layer_time(layer, ms);
        }
        let s = reader.summary();
        assert_eq!(s.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!((s[0].count, s[0].median_ms, s[0].total_ms, s[0].mean_ms), (3, 2.0, 6.0, 2.0));
        assert_eq!((s[1].median_ms, s[1].total_ms), (1.0, 6.0));
        assert_eq!(s[0].percent, 50.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }
}
