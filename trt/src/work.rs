//! The order of one execution context's GPU work, and what must outlive it.
//!
//! TensorRT requires that a context's work never overlaps (its activation
//! memory is reused by every enqueue), that a profile switch is ordered before
//! the next enqueue (`setOptimizationProfileAsync`), and that memory registered
//! with a context is not released before the work using it has completed
//! (`enqueueV3`, `IOutputAllocator`). [`WorkOrder`] keeps one event at the
//! context's latest work: every operation waits for it, then records itself.
//! Objects that work may still use (a replaced output allocator and the memory
//! it owns) are retired with the event of the work they must outlive and
//! dropped once it has completed, never at once.

use std::sync::Arc;

use crate::cuda::{Device, Event, Stream};
use crate::Result;

/// A retired object and the work it must outlive.
struct Retired {
    after: Arc<Event>,
    _item: Box<dyn Send>,
}

/// The latest GPU work of one context, and the objects waiting for it.
#[derive(Default)]
pub(crate) struct WorkOrder {
    last: Option<Arc<Event>>,
    retired: Vec<Retired>,
}

impl std::fmt::Debug for WorkOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkOrder").field("has_work", &self.last.is_some()).field("retired", &self.retired.len()).finish()
    }
}

impl WorkOrder {
    /// Make `stream` wait for the latest work.
    pub(crate) fn order(&self, stream: &Stream) -> Result<()> {
        match &self.last {
            Some(event) => Ok(stream.wait(event)?),
            None => Ok(()),
        }
    }

    /// Remember `stream`'s current position as the latest work. An event that
    /// a retired object still waits on is left where it is (re-recording it
    /// would only make that object wait longer, possibly forever under steady
    /// load); a fresh one takes over.
    pub(crate) fn record(&mut self, stream: &Stream) -> Result<()> {
        let reusable = match &mut self.last {
            Some(e) => e.device() == stream.device() && Arc::get_mut(e).is_some(),
            None => false,
        };
        if !reusable {
            self.last = Some(Arc::new(Event::without_timing(stream.device())?));
        }
        self.last.as_ref().expect("set above").record(stream)?;
        self.collect()
    }

    /// Keep `item` alive until the work recorded so far has completed.
    pub(crate) fn retire(&mut self, item: Box<dyn Send>) -> Result<()> {
        match &self.last {
            Some(event) => self.retired.push(Retired { after: event.clone(), _item: item }),
            None => drop(item),
        }
        self.collect()
    }

    /// Drop the retired objects whose work has completed.
    pub(crate) fn collect(&mut self) -> Result<()> {
        let mut error = None;
        self.retired.retain(|r| match r.after.is_complete() {
            Ok(done) => !done,
            Err(e) => {
                error.get_or_insert(e);
                true // an error keeps the object: freeing under unknown GPU state is worse than holding it
            }
        });
        error.map_or(Ok(()), |e| Err(e.into()))
    }

    /// How many retired objects still wait.
    pub(crate) fn retired(&self) -> usize {
        self.retired.len()
    }

    /// The device of the latest work, if any.
    pub(crate) fn device(&self) -> Option<&Device> {
        self.last.as_deref().map(Event::device)
    }

    /// Block until the latest work has completed.
    pub(crate) fn wait(&self) -> Result<()> {
        Ok(self.last.as_deref().map_or(Ok(()), Event::synchronize)?)
    }
}

impl Drop for WorkOrder {
    fn drop(&mut self) {
        if let Err(e) = self.wait() {
            // Unknown GPU state: leak what work may still use rather than free it.
            tracing::error!(target: "trt", "waiting for an execution context's work failed ({e}); leaking {} retired object(s)", self.retired.len());
            std::mem::forget(std::mem::take(&mut self.retired));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::StreamGate;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    struct DropFlag(Arc<AtomicBool>);
    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    const SETTLE: Duration = Duration::from_millis(50);

    fn gpu() -> (Device, Stream, Stream) {
        let device = Device::new(0).expect("CUDA device 0");
        let (a, b) = (Stream::new(&device).unwrap(), Stream::new(&device).unwrap());
        (device, a, b)
    }

    #[test]
    #[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
    fn work_on_another_stream_waits_for_the_latest_work() {
        // What set_profile, enqueue and graph launches now do: order, then record.
        let (device, a, b) = gpu();
        let mut order = WorkOrder::default();
        let gate = StreamGate::close(&a, Duration::from_secs(10)).unwrap();
        order.record(&a).unwrap();
        order.order(&b).unwrap();
        order.record(&b).unwrap();
        let after = Event::without_timing(&device).unwrap();
        after.record(&b).unwrap();
        assert!(gate.holds_back(&after, SETTLE).unwrap(), "work on stream b ran before the work it was ordered after");
        gate.open();
        after.synchronize().unwrap();
        assert!(after.is_complete().unwrap());
    }

    #[test]
    #[ignore = "needs a CUDA GPU (run with --include-ignored on the GPU host)"]
    fn retired_objects_live_until_the_work_completes() {
        let (_device, a, _b) = gpu();
        let mut order = WorkOrder::default();
        let gate = StreamGate::close(&a, Duration::from_secs(10)).unwrap();
        order.record(&a).unwrap();
        let dropped = Arc::new(AtomicBool::new(false));
        order.retire(Box::new(DropFlag(dropped.clone()))).unwrap();
        // New work after the retirement must not extend its wait.
        order.record(&a).unwrap();
        std::thread::sleep(SETTLE);
        order.collect().unwrap();
        assert!(!dropped.load(Ordering::SeqCst), "dropped while the work it must outlive was still queued");
        assert_eq!(order.retired(), 1);
        gate.open();
        order.wait().unwrap();
        order.collect().unwrap();
        assert!(dropped.load(Ordering::SeqCst), "not dropped after the work completed");
        assert_eq!(order.retired(), 0);
    }

    #[test]
    fn without_work_a_retired_object_is_dropped_at_once() {
        // Pure bookkeeping: no event exists, so nothing can still use it.
        let mut order = WorkOrder::default();
        let dropped = Arc::new(AtomicBool::new(false));
        order.retire(Box::new(DropFlag(dropped.clone()))).unwrap();
        assert!(dropped.load(Ordering::SeqCst));
        assert_eq!(order.retired(), 0);
    }
}
