//! Keeping CUDA-graph captures alone on their device.
//!
//! ONNX Runtime captures a CUDA graph with `cudaStreamCaptureModeGlobal`:
//! while one session captures, a CUDA call that could synchronize (an
//! allocation, a synchronous copy, a synchronize), made by any thread of the
//! process for any stream, invalidates the capture, and the failed capture
//! leaves the session's graph state unusable (measured: two sessions on one
//! GPU capturing under load took the server down). So every run on a device
//! holds that device's [`gate`] shared, and a run that may capture holds it
//! alone.
//!
//! ONNX Runtime keeps graphs per calling thread and captures a graph id on
//! the third run of that id on a thread (two regular runs first, for the
//! arena's allocations), so a run may capture while its (thread, graph id)
//! has been seen fewer than three times: [`Captures::may_capture`].

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::thread::ThreadId;

/// Runs of a graph id on one thread before ONNX Runtime has captured it.
const RUNS_UNTIL_CAPTURED: u8 = 3;

/// The gate of CUDA device `index`, shared by every session on it in this process.
pub(crate) fn gate(index: u32) -> Arc<RwLock<()>> {
    static GATES: LazyLock<Mutex<HashMap<u32, Arc<RwLock<()>>>>> = LazyLock::new(Default::default);
    let mut gates = GATES.lock().unwrap_or_else(|p| p.into_inner());
    gates.entry(index).or_default().clone()
}

/// One session's completed runs per (thread, graph id), up to capture.
#[derive(Debug, Default)]
pub(crate) struct Captures {
    runs: HashMap<(ThreadId, u32), u8>,
}

impl Captures {
    /// Whether running `graph` on this thread may capture it.
    pub(crate) fn may_capture(&self, graph: u32) -> bool {
        self.runs.get(&(std::thread::current().id(), graph)).is_none_or(|&n| n < RUNS_UNTIL_CAPTURED)
    }

    /// Counts a successful run of `graph` on this thread (a failed one does not count).
    pub(crate) fn ran(&mut self, graph: u32) {
        let n = self.runs.entry((std::thread::current().id(), graph)).or_insert(0);
        *n = n.saturating_add(1).min(RUNS_UNTIL_CAPTURED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_graph_may_capture_until_its_third_run_on_a_thread() {
        let mut c = Captures::default();
        for _ in 0..RUNS_UNTIL_CAPTURED {
            assert!(c.may_capture(7));
            c.ran(7);
        }
        assert!(!c.may_capture(7));
        assert!(c.may_capture(8), "another graph id");
        let on_other_thread = std::thread::scope(|s| s.spawn(|| c.may_capture(7)).join().unwrap());
        assert!(on_other_thread, "ONNX Runtime keeps graphs per thread");
    }

    #[test]
    fn each_device_has_one_gate() {
        assert!(Arc::ptr_eq(&gate(0), &gate(0)));
        assert!(!Arc::ptr_eq(&gate(0), &gate(1)));
    }
}
