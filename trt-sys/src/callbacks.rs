//! The Rust side of the shim's callbacks. C++ subclasses (logger, error
//! recorder, progress monitor, output allocator, profiler) forward to these; every entry
//! point catches panics, because unwinding into C++ is undefined behaviour.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, Ordering};

/// Signature of the process-wide hooks that receive log messages and recorded errors.
pub type Hook = fn(i32, &str);

static LOG_HOOK: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
static ERROR_HOOK: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());

/// Install the function that receives every TensorRT log message (severity as
/// `ILogger::Severity`: 0 internal error ... 4 verbose). Without a hook, messages are dropped.
pub fn set_log_hook(hook: Hook) {
    LOG_HOOK.store(hook as *mut (), Ordering::Release);
}

/// Install the function that receives every error reported to the shim's `IErrorRecorder`.
pub fn set_error_hook(hook: Hook) {
    ERROR_HOOK.store(hook as *mut (), Ordering::Release);
}

fn call_hook(slot: &AtomicPtr<()>, a: i32, b: &str) {
    let ptr = slot.load(Ordering::Acquire);
    if ptr.is_null() {
        return;
    }
    // SAFETY: only `set_*_hook` store into the slot, always a valid `Hook`.
    let hook: Hook = unsafe { std::mem::transmute::<*mut (), Hook>(ptr) };
    // A panicking hook must not unwind into TensorRT; the message is lost.
    let _ = catch_unwind(|| hook(a, b));
}

pub(crate) fn forward_log(severity: i32, message: &str) {
    call_hook(&LOG_HOOK, severity, message);
}

pub(crate) fn forward_error(code: i32, description: &str) {
    call_hook(&ERROR_HOOK, code, description);
}

/// Receives TensorRT's build progress (`IProgressMonitor`).
pub trait ProgressCallbacks: Send {
    /// A phase of the build starts, with `steps` steps, nested in `parent` (empty for none).
    fn phase_start(&mut self, phase: &str, parent: &str, steps: i32);
    /// A step of a phase completed. Return `false` to cancel the build.
    fn step_complete(&mut self, phase: &str, step: i32) -> bool;
    /// A phase finished.
    fn phase_finish(&mut self, phase: &str);
}

/// A boxed [`ProgressCallbacks`] handed to the shim. After a panic in a callback
/// the build is cancelled and the panic message kept for the caller.
pub struct ProgressSink {
    inner: Box<dyn ProgressCallbacks>,
    panic: PanicSlot,
}

/// Where a callback's panic message is kept for the caller to report.
pub type PanicSlot = std::sync::Arc<std::sync::Mutex<Option<String>>>;

impl ProgressSink {
    /// Wrap callbacks for the shim; a panic's message lands in `panic`.
    pub fn new(inner: Box<dyn ProgressCallbacks>, panic: PanicSlot) -> Box<Self> {
        Box::new(ProgressSink { inner, panic })
    }

    fn guard<R>(&mut self, fallback: R, f: impl FnOnce(&mut dyn ProgressCallbacks) -> R) -> R {
        let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return fallback;
        }
        match catch_unwind(AssertUnwindSafe(|| f(self.inner.as_mut()))) {
            Ok(r) => r,
            Err(payload) => {
                *slot = Some(panic_message(payload.as_ref()));
                fallback
            }
        }
    }

    pub(crate) fn phase_start(&mut self, phase: &str, parent: &str, steps: i32) {
        self.guard((), |cb| cb.phase_start(phase, parent, steps))
    }

    pub(crate) fn step_complete(&mut self, phase: &str, step: i32) -> bool {
        // After a panic, `false` cancels the build.
        self.guard(false, |cb| cb.step_complete(phase, step))
    }

    pub(crate) fn phase_finish(&mut self, phase: &str) {
        self.guard((), |cb| cb.phase_finish(phase))
    }
}

/// Allocates device memory for outputs whose size is known only during execution
/// (`IOutputAllocator::reallocateOutputAsync`).
///
/// # Safety
/// TensorRT writes the output to the address `reallocate` returns: it must be
/// device memory of at least `size` bytes, aligned to `alignment`, that stays
/// allocated (and unused by anything else) until the enqueue's work completes.
/// `current` (the previous allocation, 0 for none) may still be in use by work
/// already enqueued: free or reuse it only in the order of `stream` (e.g.
/// `cuMemFreeAsync` on `stream`), never at once. The allocator itself is kept
/// alive until the context's last work has completed, also when replaced.
pub unsafe trait OutputCallbacks: Send {
    /// Return a device address of at least `request.size` bytes aligned to
    /// `request.alignment` for output `name`, or 0 when allocation failed.
    /// `request.current` is the output's current memory (0 at first), still
    /// possibly in use by work queued on `request.stream` (the enqueue's raw
    /// `cudaStream_t`).
    fn reallocate(&mut self, name: &str, request: Reallocation) -> usize;
    /// The final shape of output `name`.
    fn notify_shape(&mut self, name: &str, dims: &[i64]);
}

/// What TensorRT passes to `reallocateOutputAsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reallocation {
    /// The output's current allocation (0 when none); may still be in use by earlier work on `stream`.
    pub current: usize,
    /// Bytes needed.
    pub size: u64,
    /// Required alignment in bytes.
    pub alignment: u64,
    /// The raw `cudaStream_t` of the enqueue: free `current` in its order.
    pub stream: usize,
}

/// A boxed [`OutputCallbacks`] handed to the shim. A panic makes allocation fail
/// (address 0), which TensorRT reports as an enqueue error.
pub struct OutputSink {
    inner: Box<dyn OutputCallbacks>,
}

impl OutputSink {
    /// Wrap callbacks for the shim.
    pub fn new(inner: Box<dyn OutputCallbacks>) -> Box<Self> {
        Box::new(OutputSink { inner })
    }

    pub(crate) fn reallocate(&mut self, name: &str, current: usize, size: u64, alignment: u64, stream: usize) -> usize {
        let request = Reallocation { current, size, alignment, stream };
        catch_unwind(AssertUnwindSafe(|| self.inner.reallocate(name, request))).unwrap_or(0)
    }

    pub(crate) fn notify_shape(&mut self, name: &str, dims: &[i64]) {
        let _ = catch_unwind(AssertUnwindSafe(|| self.inner.notify_shape(name, dims)));
    }
}

/// Receives the time of each layer of an execution (`IProfiler::reportLayerTime`).
pub trait ProfilerCallbacks: Send {
    /// Layer `layer` took `ms` milliseconds in the execution being reported.
    fn report_layer_time(&mut self, layer: &str, ms: f32);
}

/// A boxed [`ProfilerCallbacks`] handed to the shim. After a panic in the
/// callback its message lands in the panic slot and later reports are dropped
/// (the caller turns the message into an error).
pub struct ProfilerSink {
    inner: Box<dyn ProfilerCallbacks>,
    panic: PanicSlot,
}

impl ProfilerSink {
    /// Wrap callbacks for the shim; a panic's message lands in `panic`.
    pub fn new(inner: Box<dyn ProfilerCallbacks>, panic: PanicSlot) -> Box<Self> {
        Box::new(ProfilerSink { inner, panic })
    }

    pub(crate) fn report_layer_time(&mut self, layer: &str, ms: f32) {
        let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return;
        }
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| self.inner.report_layer_time(layer, ms))) {
            *slot = Some(panic_message(payload.as_ref()));
        }
    }
}

/// Feeds INT8 calibration batches (TensorRT 10.x implicit quantization).
///
/// # Safety
/// TensorRT reads each input from the address `input_address` returns: it must
/// be device memory holding a whole batch of that input, valid until the next
/// `next_batch` call.
pub unsafe trait CalibratorCallbacks: Send {
    /// Samples per batch.
    fn batch_size(&self) -> i32;
    /// Prepare the next batch in device memory; `false` when the data is exhausted.
    fn next_batch(&mut self) -> bool;
    /// Device address of input `name` in the current batch (0 if unknown).
    fn input_address(&mut self, name: &str) -> usize;
    /// A calibration cache from an earlier run, to skip calibration.
    fn read_cache(&mut self) -> Option<Vec<u8>>;
    /// Store the calibration cache TensorRT produced.
    fn write_cache(&mut self, data: &[u8]);
}

/// A boxed [`CalibratorCallbacks`] handed to the shim. A panic ends calibration
/// (TensorRT then fails the build) and its message lands in the panic slot.
pub struct CalibratorSink {
    inner: Box<dyn CalibratorCallbacks>,
    cache: Vec<u8>,
    panic: PanicSlot,
}

impl CalibratorSink {
    /// Wrap callbacks for the shim; the cache is read once, up front.
    pub fn new(mut inner: Box<dyn CalibratorCallbacks>, panic: PanicSlot) -> Box<Self> {
        let cache = catch_unwind(AssertUnwindSafe(|| inner.read_cache())).ok().flatten().unwrap_or_default();
        Box::new(CalibratorSink { inner, cache, panic })
    }

    fn guard<R>(&mut self, fallback: R, f: impl FnOnce(&mut dyn CalibratorCallbacks) -> R) -> R {
        match catch_unwind(AssertUnwindSafe(|| f(self.inner.as_mut()))) {
            Ok(r) => r,
            Err(payload) => {
                *self.panic.lock().unwrap_or_else(|e| e.into_inner()) = Some(panic_message(payload.as_ref()));
                fallback
            }
        }
    }

    pub(crate) fn batch_size(&self) -> i32 {
        catch_unwind(AssertUnwindSafe(|| self.inner.batch_size())).unwrap_or_else(|payload| {
            *self.panic.lock().unwrap_or_else(|e| e.into_inner()) = Some(panic_message(payload.as_ref()));
            0
        })
    }

    pub(crate) fn next_batch(&mut self) -> bool {
        self.guard(false, |c| c.next_batch())
    }

    pub(crate) fn input_address(&mut self, name: &str) -> usize {
        self.guard(0, |c| c.input_address(name))
    }

    pub(crate) fn cache(&self) -> &[u8] {
        &self.cache
    }

    pub(crate) fn write_cache(&mut self, data: &[u8]) {
        self.guard((), |c| c.write_cache(data))
    }
}

/// Text of a panic payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
