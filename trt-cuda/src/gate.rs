//! [`StreamGate`]: hold a stream's later work back until the host opens the gate.

use super::{cuda_err, Stream};
use crate::Result;
use cudarc::driver::sys;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A point in a stream that later work on it cannot pass until
/// [`open`](StreamGate::open) is called (or `limit` has passed, or the gate is
/// dropped): a host function (`cuLaunchHostFunc`) that waits for a flag.
///
/// For making orderings observable: work ordered after the gate on another
/// stream must not complete while the gate is closed. The wait is bounded, so
/// a forgotten gate never hangs a process; the host function only sleeps and
/// never calls CUDA, as CUDA requires.
#[derive(Debug)]
pub struct StreamGate {
    open: Arc<AtomicBool>,
}

unsafe extern "C" fn wait_for_gate(data: *mut std::ffi::c_void) {
    // SAFETY: `data` is the `Box::into_raw` of `StreamGate::close`, consumed once here.
    let (open, limit) = *unsafe { Box::from_raw(data as *mut (Arc<AtomicBool>, Duration)) };
    let started = Instant::now();
    while !open.load(Ordering::Acquire) && started.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl StreamGate {
    /// Closes `stream` at its current position, for at most `limit`.
    pub fn close(stream: &Stream, limit: Duration) -> Result<StreamGate> {
        let open = Arc::new(AtomicBool::new(false));
        let data = Box::into_raw(Box::new((open.clone(), limit))) as *mut std::ffi::c_void;
        stream.bind()?;
        // SAFETY: a valid stream; the callback takes ownership of `data` and
        // makes no CUDA call.
        let r = unsafe { sys::cuLaunchHostFunc(stream.as_raw(), Some(wait_for_gate), data) };
        if let Err(e) = r.result() {
            // SAFETY: not enqueued, so still ours.
            drop(unsafe { Box::from_raw(data as *mut (Arc<AtomicBool>, Duration)) });
            return Err(cuda_err("cuLaunchHostFunc")(e));
        }
        Ok(StreamGate { open })
    }

    /// Whether `event` (recorded after work ordered behind this gate) is
    /// still pending after `settle`: what a test of an ordering asserts
    /// while the gate is closed.
    pub fn holds_back(&self, event: &super::Event, settle: Duration) -> Result<bool> {
        std::thread::sleep(settle);
        Ok(!event.is_complete()?)
    }

    /// Lets the stream go on.
    pub fn open(&self) {
        self.open.store(true, Ordering::Release);
    }
}

impl Drop for StreamGate {
    fn drop(&mut self) {
        self.open();
    }
}
