//! [`CudaGraph`]: work captured once and replayed with one launch.
//!
//! Capture happens on a **private stream** that no buffer was allocated on and
//! no other code can reach, so nothing unrelated (another thread's copies, a
//! buffer freed on its allocation stream) can slip into the graph. The graph
//! records raw addresses; to keep them valid and ordered, it remembers which
//! buffers it uses and [`CudaGraph::launch`] must be given all of them, borrowed
//! mutably: the launch waits for their earlier uses and records itself as their
//! latest use, exactly like a copy does. A dropped buffer cannot be passed, so a
//! graph whose buffers are gone can no longer be launched.

use super::{cuda_err, Device, DeviceBuffer, Element, PinnedBuffer, RawStream, Stream};
use crate::{Error, Result};
use cudarc::driver::{result, sys, CudaStream, DriverError, SyncOnDrop};
use std::sync::Arc;

mod sealed {
    use super::super::Stream;
    use cudarc::driver::SyncOnDrop;

    /// The crate-private half of [`GraphResource`](super::GraphResource).
    pub trait Sealed {
        /// Process-wide unique id of the allocation.
        fn resource_id(&self) -> u64;
        /// Makes `stream` wait for the previous use; the guard records the next one.
        fn track<'a>(&'a mut self, stream: &'a Stream) -> SyncOnDrop<'a>;
    }
}

/// A buffer that captured graph work may use: [`DeviceBuffer`] or [`PinnedBuffer`].
///
/// Sealed. Pass buffers to [`CudaGraph::launch`] as `&mut dyn GraphResource`.
pub trait GraphResource: sealed::Sealed + Send {
    /// A short description for error messages, e.g. `DeviceBuffer<f32>[1024]`.
    fn describe(&self) -> String;
    /// The device the buffer belongs to.
    fn device(&self) -> &Device;
}

impl<T: Element> sealed::Sealed for DeviceBuffer<T> {
    fn resource_id(&self) -> u64 {
        self.id()
    }
    fn track<'a>(&'a mut self, stream: &'a Stream) -> SyncOnDrop<'a> {
        DeviceBuffer::track(self, stream)
    }
}
impl<T: Element> GraphResource for DeviceBuffer<T> {
    fn describe(&self) -> String {
        format!("DeviceBuffer<{}>[{}] at {:#x}", T::DTYPE, self.len(), self.address())
    }
    fn device(&self) -> &Device {
        DeviceBuffer::device(self)
    }
}

impl<T: Element> sealed::Sealed for PinnedBuffer<T> {
    fn resource_id(&self) -> u64 {
        self.id()
    }
    fn track<'a>(&'a mut self, stream: &'a Stream) -> SyncOnDrop<'a> {
        PinnedBuffer::track(self, stream)
    }
}
impl<T: Element> GraphResource for PinnedBuffer<T> {
    fn describe(&self) -> String {
        format!("PinnedBuffer<{}>[{}]", T::DTYPE, self.len())
    }
    fn device(&self) -> &Device {
        PinnedBuffer::device(self)
    }
}

/// How stream capture treats "unsafe" CUDA calls (ones that could synchronize
/// with the capture implicitly, e.g. `cuMemAlloc` or a legacy-stream sync)
/// made while it runs (`CUstreamCaptureMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CaptureMode {
    /// Such calls fail on any thread that has not opted out.
    Global,
    /// Such calls fail on the capturing thread only (the default: other threads
    /// of the program keep working).
    #[default]
    ThreadLocal,
    /// No call is refused; the caller guarantees none interferes.
    Relaxed,
}

impl From<CaptureMode> for sys::CUstreamCaptureMode {
    fn from(m: CaptureMode) -> Self {
        match m {
            CaptureMode::Global => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
            CaptureMode::ThreadLocal => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            CaptureMode::Relaxed => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
        }
    }
}

/// Is `err` a failed stream capture (an operation CUDA cannot capture, or a
/// capture that was invalidated)? Callers can then run the work without a graph.
///
/// True for [`Error::Cuda`] with a `CUDA_ERROR_STREAM_CAPTURE_*` code or
/// `CUDA_ERROR_CAPTURED_EVENT`, and for [`Error::NotCapturable`].
pub fn is_capture_error(err: &Error) -> bool {
    use sys::CUresult::*;
    matches!(err, Error::NotCapturable(_))
        || matches!(
            err,
            Error::Cuda {
                source: DriverError(
                    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
                        | CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                        | CUDA_ERROR_STREAM_CAPTURE_MERGE
                        | CUDA_ERROR_STREAM_CAPTURE_UNMATCHED
                        | CUDA_ERROR_STREAM_CAPTURE_UNJOINED
                        | CUDA_ERROR_STREAM_CAPTURE_ISOLATION
                        | CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
                        | CUDA_ERROR_CAPTURED_EVENT
                        | CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD
                ),
                ..
            }
        )
}

#[derive(Debug, Clone)]
struct Use {
    id: u64,
    description: String,
}

/// Records work into a graph during [`CudaGraph::capture`]. Nothing runs yet:
/// the buffers are only borrowed to read their addresses.
#[derive(Debug)]
pub struct GraphCapture<'c> {
    stream: &'c Arc<CudaStream>,
    device: &'c Device,
    uses: Vec<Use>,
}

impl GraphCapture<'_> {
    /// The device the graph is captured on.
    pub fn device(&self) -> &Device {
        self.device
    }

    /// Declares that captured work uses `resource` (needed only for work
    /// enqueued through [`GraphCapture::raw_stream`]; the copy methods declare
    /// their buffers themselves).
    pub fn uses(&mut self, resource: &dyn GraphResource) -> Result<()> {
        if resource.device() != self.device {
            return Err(Error::InvalidArgument(format!(
                "graph capture on CUDA device {} cannot use {} of device {}",
                self.device.ordinal(),
                resource.describe(),
                resource.device().ordinal()
            )));
        }
        let id = sealed::Sealed::resource_id(resource);
        if !self.uses.iter().any(|u| u.id == id) {
            self.uses.push(Use { id, description: resource.describe() });
        }
        Ok(())
    }

    /// Declares a use of a buffer by its identity ([`DeviceBuffer::id`]) and a
    /// description, for a library that binds buffers itself (already checked
    /// to be on this device) and enqueues on [`raw_stream`](Self::raw_stream).
    pub fn uses_bound(&mut self, id: u64, description: impl FnOnce() -> String) {
        if !self.uses.iter().any(|u| u.id == id) {
            self.uses.push(Use { id, description: description() });
        }
    }

    /// Captures a copy of all of `src` into the start of `dst`.
    pub fn copy_pinned_to_device<T: Element>(&mut self, src: &PinnedBuffer<T>, dst: &DeviceBuffer<T>) -> Result<()> {
        if !self.prepare_copy(src, dst, src.len(), dst.len(), "copy_pinned_to_device")? {
            return Ok(());
        }
        // SAFETY: capture records the copy without running it; addresses and
        // sizes are those of live allocations, and every launch requires both
        // buffers to be passed (alive, exclusively borrowed, ordered).
        let r = unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                dst.address(),
                src.host_address() as *const std::ffi::c_void,
                src.size_in_bytes(),
                self.stream.cu_stream(),
            )
        };
        r.result().map_err(cuda_err("cuMemcpyHtoDAsync (captured)"))
    }

    /// What every captured copy does first: check sizes, register both
    /// buffers, bind the context. `false` when there is nothing to copy.
    fn prepare_copy(&mut self, src: &dyn GraphResource, dst: &dyn GraphResource, src_len: usize, dst_len: usize, op: &str) -> Result<bool> {
        fits(src_len, dst_len, op)?;
        self.uses(src)?;
        self.uses(dst)?;
        if src_len == 0 {
            return Ok(false);
        }
        self.device.bind()?;
        Ok(true)
    }

    /// Captures a copy of all of `src` into the start of `dst`.
    pub fn copy_device_to_pinned<T: Element>(&mut self, src: &DeviceBuffer<T>, dst: &PinnedBuffer<T>) -> Result<()> {
        if !self.prepare_copy(src, dst, src.len(), dst.len(), "copy_device_to_pinned")? {
            return Ok(());
        }
        // SAFETY: as in `copy_pinned_to_device`; the host memory is written only
        // when the graph is launched, which borrows `dst` mutably and records
        // the launch in its event, which host views wait for.
        let r = unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                dst.host_address() as *mut std::ffi::c_void,
                src.address(),
                src.size_in_bytes(),
                self.stream.cu_stream(),
            )
        };
        r.result().map_err(cuda_err("cuMemcpyDtoHAsync (captured)"))
    }

    /// Captures a copy of all of `src` into the start of `dst`.
    pub fn copy_device_to_device<T: Element>(&mut self, src: &DeviceBuffer<T>, dst: &DeviceBuffer<T>) -> Result<()> {
        if !self.prepare_copy(src, dst, src.len(), dst.len(), "copy_device_to_device")? {
            return Ok(());
        }
        // SAFETY: as in `copy_pinned_to_device`.
        let r = unsafe { result::memcpy_dtod_async(dst.address(), src.address(), src.size_in_bytes(), self.stream.cu_stream()) };
        r.map_err(cuda_err("cuMemcpyDtoDAsync (captured)"))
    }

    /// Captures setting every element of `dst` to zero.
    pub fn fill_zeros<T: Element>(&mut self, dst: &DeviceBuffer<T>) -> Result<()> {
        self.uses(dst)?;
        if dst.is_empty() {
            return Ok(());
        }
        self.device.bind()?;
        // SAFETY: as in `copy_pinned_to_device`; zero is valid for every element type.
        let r = unsafe { result::memset_d8_async(dst.address(), 0, dst.size_in_bytes(), self.stream.cu_stream()) };
        r.map_err(cuda_err("cuMemsetD8Async (captured)"))
    }

    /// The capturing stream, for work this module does not wrap (e.g. TensorRT's
    /// `enqueueV3`).
    ///
    /// # Safety
    ///
    /// Only enqueue work on it (no synchronization, no allocation, no
    /// destruction), and only work whose memory is either owned by the work
    /// itself or belongs to buffers declared with [`GraphCapture::uses`]; the
    /// work must leave valid values of each buffer's element type.
    pub unsafe fn raw_stream(&self) -> RawStream {
        self.stream.cu_stream()
    }
}

fn fits(src: usize, dst: usize, op: &str) -> Result<()> {
    if src <= dst {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!("GraphCapture::{op}: source has {src} elements but the destination holds {dst}")))
    }
}

/// Ends a capture that is still running when dropped (an error or a panic in
/// the capture closure), so the private stream is never left capturing.
struct ActiveCapture<'a> {
    stream: &'a CudaStream,
    device: &'a Device,
    ended: bool,
}

impl ActiveCapture<'_> {
    /// Ends the capture and returns the raw graph.
    fn end(&mut self) -> std::result::Result<sys::CUgraph, DriverError> {
        self.ended = true;
        // SAFETY: the stream is valid and capturing (begun by `capture_with_mode`).
        unsafe { result::stream::end_capture(self.stream.cu_stream()) }
    }
}

impl Drop for ActiveCapture<'_> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let ctx = self.device.ctx();
        match self.end() {
            // SAFETY: the graph was just returned by the capture and is owned here.
            Ok(g) if !g.is_null() => ctx.record_err(unsafe { result::graph::destroy(g) }),
            Ok(_) => {}
            Err(e) => ctx.record_err(Err::<(), _>(e)),
        }
    }
}

/// A captured and instantiated CUDA graph (`CUgraph` + `CUgraphExec`).
///
/// Made by [`CudaGraph::capture`]; replayed by [`CudaGraph::launch`] on any
/// stream of the same device. Dropping it while a launch runs is allowed: CUDA
/// frees an executable graph after its in-flight launches complete.
///
/// `Send` but not `Sync`: "graph objects are not internally synchronized and
/// must not be accessed concurrently from multiple threads" (CUDA driver API,
/// *Graph object thread safety*); moving one to another thread is fine, and
/// every method that touches the graph takes `&mut self`.
#[derive(Debug)]
pub struct CudaGraph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    device: Device,
    uses: Vec<Use>,
}

// SAFETY: see the type's docs: exclusive access is all CUDA requires, and the
// handles are not tied to the creating thread.
unsafe impl Send for CudaGraph {}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        let ctx = self.device.ctx();
        ctx.record_err(ctx.bind_to_thread());
        // SAFETY: both handles were created by `capture_with_mode`, are owned
        // here and destroyed once.
        unsafe {
            ctx.record_err(result::graph::exec_destroy(self.exec));
            ctx.record_err(result::graph::destroy(self.graph));
        }
    }
}

impl CudaGraph {
    /// Captures the work that `record` issues through its [`GraphCapture`] into
    /// a graph and instantiates it, with [`CaptureMode::ThreadLocal`].
    ///
    /// Nothing runs during capture. If `record` fails, or CUDA cannot capture
    /// or instantiate the work, the error is returned and no graph is left
    /// behind; [`is_capture_error`] tells capture failures apart, so callers can
    /// fall back to running the work directly.
    ///
    /// ```no_run
    /// # fn main() -> trt_cuda::Result<()> {
    /// use trt_cuda::{CudaGraph, Device, DeviceBuffer, PinnedBuffer, Stream};
    /// let device = Device::new(0)?;
    /// let stream = Stream::new(&device)?;
    /// let mut input = PinnedBuffer::<f32>::zeros(&device, 256)?;
    /// let mut gpu = DeviceBuffer::<f32>::zeros(256, &stream)?;
    /// let mut output = PinnedBuffer::<f32>::zeros(&device, 256)?;
    /// let mut graph = CudaGraph::capture(&device, |g| {
    ///     g.copy_pinned_to_device(&input, &gpu)?;
    ///     g.copy_device_to_pinned(&gpu, &output)
    /// })?;
    /// input.as_mut_slice()?.fill(1.5);
    /// graph.launch(&stream, &mut [&mut input, &mut gpu, &mut output])?;
    /// assert!(output.as_slice()?.iter().all(|&x| x == 1.5));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// The closure's error type is the caller's (any type a [`Error`] converts
    /// into), so work recorded by another library (e.g. a TensorRT enqueue on
    /// [`GraphCapture::raw_stream`]) returns that library's errors.
    pub fn capture<F, E>(device: &Device, record: F) -> std::result::Result<CudaGraph, E>
    where
        F: FnOnce(&mut GraphCapture<'_>) -> std::result::Result<(), E>,
        E: From<Error>,
    {
        Self::capture_with_mode(device, CaptureMode::default(), record)
    }

    /// [`CudaGraph::capture`] with an explicit [`CaptureMode`].
    pub fn capture_with_mode<F, E>(device: &Device, mode: CaptureMode, record: F) -> std::result::Result<CudaGraph, E>
    where
        F: FnOnce(&mut GraphCapture<'_>) -> std::result::Result<(), E>,
        E: From<Error>,
    {
        device.bind()?;
        let stream = device.ctx().new_stream().map_err(cuda_err("cuStreamCreate"))?;
        stream.begin_capture(mode.into()).map_err(cuda_err("cuStreamBeginCapture"))?;
        let mut active = ActiveCapture { stream: &stream, device, ended: false };
        let mut capture = GraphCapture { stream: &stream, device, uses: Vec::new() };
        let recorded = record(&mut capture);
        let uses = capture.uses;
        device.bind()?;
        let ended = active.end();
        let graph = match (recorded, ended) {
            (Err(e), ended) => {
                if let Ok(g) = ended {
                    if !g.is_null() {
                        // SAFETY: the graph was just returned by the capture and is owned here.
                        device.ctx().record_err(unsafe { result::graph::destroy(g) });
                    }
                }
                return Err(e);
            }
            (Ok(()), Err(e)) => return Err(cuda_err("cuStreamEndCapture")(e).into()),
            (Ok(()), Ok(g)) if g.is_null() => {
                return Err(cuda_err("cuStreamEndCapture")(DriverError(sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)).into())
            }
            (Ok(()), Ok(g)) => g,
        };
        // SAFETY: `graph` is a valid graph owned here.
        let exec = match unsafe { result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0)) } {
            Ok(exec) => exec,
            Err(e) => {
                // SAFETY: as above; destroyed once.
                device.ctx().record_err(unsafe { result::graph::destroy(graph) });
                return Err(cuda_err("cuGraphInstantiate")(e).into());
            }
        };
        Ok(CudaGraph { graph, exec, device: device.clone(), uses })
    }

    /// Replays the graph on `stream`.
    ///
    /// `resources` must contain every buffer the graph uses (others are
    /// ignored); a missing one is an [`Error::InvalidArgument`] naming it.
    /// `stream` first waits for each buffer's earlier uses, and the launch is
    /// recorded as their latest use, so host views of pinned buffers wait for
    /// it. Asynchronous.
    pub fn launch(&mut self, stream: &Stream, resources: &mut [&mut dyn GraphResource]) -> Result<()> {
        stream.same_device(&self.device, "CudaGraph::launch")?;
        let missing: Vec<&str> =
            self.uses.iter().filter(|u| !resources.iter().any(|r| r.resource_id() == u.id)).map(|u| u.description.as_str()).collect();
        if !missing.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "CudaGraph::launch: the graph uses {} which {} not passed (every buffer the \
                 graph uses must be passed, and alive)",
                missing.join(", "),
                if missing.len() == 1 { "was" } else { "were" }
            )));
        }
        stream.bind()?;
        let uses = &self.uses;
        let mut guards = Vec::with_capacity(uses.len());
        for r in resources.iter_mut() {
            let id = r.resource_id();
            if uses.iter().any(|u| u.id == id) {
                guards.push(r.track(stream));
            }
        }
        // SAFETY: the executable graph is valid and owned; every buffer it
        // touches is alive and exclusively borrowed for this call, and the
        // guards record the launch in their events when dropped below.
        let launched = unsafe { result::graph::launch(self.exec, stream.as_raw()) };
        drop(guards);
        launched.map_err(cuda_err("cuGraphLaunch"))?;
        self.device.check_deferred_error()
    }

    /// Uploads the executable graph to the device ahead of the first launch
    /// (`cuGraphUpload`), so that launch does not pay for it.
    pub fn upload(&mut self, stream: &Stream) -> Result<()> {
        stream.same_device(&self.device, "CudaGraph::upload")?;
        stream.bind()?;
        // SAFETY: valid, owned executable graph and stream.
        unsafe { result::graph::upload(self.exec, stream.as_raw()) }.map_err(cuda_err("cuGraphUpload"))
    }

    /// Descriptions of the buffers the graph uses, in first-use order.
    pub fn resources(&self) -> Vec<String> {
        self.uses.iter().map(|u| u.description.clone()).collect()
    }

    /// The device the graph belongs to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The raw executable graph (`CUgraphExec`). Do not destroy it.
    pub fn as_raw(&mut self) -> sys::CUgraphExec {
        self.exec
    }
}
