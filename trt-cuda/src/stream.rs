//! [`Stream`] and [`Event`].

use super::{cuda_err, Device, RawEvent, RawStream};
use crate::{Error, Result};
use cudarc::driver::{sys, CudaEvent, CudaStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// An owned, non-blocking CUDA stream (`CU_STREAM_NON_BLOCKING`, never the legacy
/// default stream) of one [`Device`].
///
/// Work enqueued on a stream runs in order; work on different streams may
/// overlap. The stream is destroyed when this value and every buffer allocated
/// on it are dropped (buffers hold an `Arc` of their stream and free their
/// memory on it).
///
/// `Send + Sync`: the driver API is thread-safe and a stream may receive work
/// from several threads (CUDA orders it in the order the calls happen).
#[derive(Debug)]
pub struct Stream {
    inner: Arc<CudaStream>,
    device: Device,
    syncs: Arc<SyncCount>,
    /// [`HostWait::Block`]'s event (recorded, then waited on); `None`: spin.
    blocking: Option<Arc<CudaEvent>>,
}

/// How a host thread waits in [`Stream::synchronize`] (and so in a
/// [`StagedBuffer`](super::StagedBuffer)'s host views).
///
/// The trade: spinning wakes the thread as soon as the work is done but keeps
/// a core busy for the whole wait; blocking frees the core for other threads
/// and wakes later. One caller waiting on a GPU it has to itself wants
/// [`Spin`](Self::Spin); a server whose batch workers share the cores with
/// its tokenizers and connections wants [`Block`](Self::Block) once it is
/// loaded (measured on an H200 with 16 cores: docs/measurements).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HostWait {
    /// `cuStreamSynchronize`, which under the context's default scheduling
    /// (`CU_CTX_SCHED_AUTO`, fewer active contexts than cores) spins: what
    /// CUDA and ONNX Runtime's own `synchronize` do.
    #[default]
    Spin,
    /// Records a `CU_EVENT_BLOCKING_SYNC` event on the stream and waits on
    /// it: the thread sleeps until the driver wakes it (one more driver call
    /// per wait). What the tracked buffers' host views do.
    Block,
}

/// Copies enqueued without event tracking ([`StagedBuffer`](super::StagedBuffer)),
/// counted, and how far a host wait on the stream is known to have reached.
#[derive(Debug, Default)]
struct SyncCount {
    /// Tickets handed out, one per untracked copy, after it was enqueued.
    enqueued: AtomicU64,
    /// Every ticket up to this one was enqueued before a completed synchronize.
    completed: AtomicU64,
}

impl Stream {
    /// Creates a new non-blocking stream on `device`.
    pub fn new(device: &Device) -> Result<Stream> {
        Self::with_host_wait(device, HostWait::Spin)
    }

    /// Creates a new non-blocking stream on `device` whose host waits are `wait`.
    pub fn with_host_wait(device: &Device, wait: HostWait) -> Result<Stream> {
        let inner = device.ctx().new_stream().map_err(cuda_err("cuStreamCreate"))?;
        let blocking = match wait {
            HostWait::Spin => None,
            HostWait::Block => {
                Some(Arc::new(device.ctx().new_event(Some(sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC)).map_err(cuda_err("cuEventCreate"))?))
            }
        };
        Ok(Stream { inner, device: device.clone(), syncs: Arc::default(), blocking })
    }

    /// How this stream's host waits block.
    pub fn host_wait(&self) -> HostWait {
        if self.blocking.is_some() {
            HostWait::Block
        } else {
            HostWait::Spin
        }
    }

    /// The device this stream belongs to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Blocks until all work enqueued on this stream so far has completed,
    /// spinning or sleeping as the stream's [`HostWait`] says.
    pub fn synchronize(&self) -> Result<()> {
        // Read before the wait: copies ticketed after it may still be running.
        let enqueued = self.syncs.enqueued.load(Ordering::Acquire);
        match &self.blocking {
            None => self.inner.synchronize().map_err(cuda_err("cuStreamSynchronize"))?,
            // Two threads recording at once is defined (the later record
            // wins), and the later one covers the earlier one's work too.
            Some(event) => {
                event.record(&self.inner).map_err(cuda_err("cuEventRecord"))?;
                event.synchronize().map_err(cuda_err("cuEventSynchronize"))?;
            }
        }
        self.syncs.completed.fetch_max(enqueued, Ordering::AcqRel);
        Ok(())
    }

    /// A ticket for work the caller has just enqueued on this stream: once
    /// [`wait_for`](Self::wait_for) of it returns, that work has completed.
    /// Take it after enqueueing, never before.
    pub(crate) fn ticket(&self) -> u64 {
        self.syncs.enqueued.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Blocks until the work of `ticket` has completed: at once where a
    /// synchronize since covered it, else by synchronizing the stream.
    pub(crate) fn wait_for(&self, ticket: u64) -> Result<()> {
        if ticket > self.syncs.completed.load(Ordering::Acquire) {
            self.synchronize()?;
        }
        Ok(())
    }

    /// Another handle of this stream (the same `CUstream` and counts).
    pub(crate) fn share(&self) -> Stream {
        Stream { inner: self.inner.clone(), device: self.device.clone(), syncs: self.syncs.clone(), blocking: self.blocking.clone() }
    }

    /// Makes all future work on this stream wait until `event`'s recorded work completes.
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.same_device(&event.device, "Stream::wait")?;
        self.inner.wait(&event.inner).map_err(cuda_err("cuStreamWaitEvent"))
    }

    /// The raw `CUstream`, which is also the runtime API's `cudaStream_t`
    /// (TensorRT's `enqueueV3` takes it).
    ///
    /// The handle stays valid while `self` lives. Do not destroy it. Work
    /// enqueued through it is not tracked by any buffer: use
    /// [`DeviceBuffer::device_ptr`](super::DeviceBuffer::device_ptr) for the
    /// addresses that work uses.
    pub fn as_raw(&self) -> RawStream {
        self.inner.cu_stream()
    }

    /// Escape hatch: the cudarc stream.
    pub fn cudarc_stream(&self) -> &Arc<CudaStream> {
        &self.inner
    }

    pub(crate) fn cu(&self) -> &CudaStream {
        &self.inner
    }

    /// Makes the stream's context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<()> {
        self.device.bind()
    }

    /// `InvalidArgument` unless `other` is this stream's device.
    pub(crate) fn same_device(&self, other: &Device, what: &str) -> Result<()> {
        if *other == self.device {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "{what}: the stream is on CUDA device {} but the other object is on device {}",
                self.device.ordinal(),
                other.ordinal()
            )))
        }
    }
}

/// A CUDA event: a point in a stream's work to wait for or to time.
///
/// `Send + Sync`: CUDA events are driver objects that any thread may record,
/// query or wait on; recording from two threads at once is defined (the later
/// record wins).
#[derive(Debug)]
pub struct Event {
    inner: CudaEvent,
    device: Device,
}

impl Event {
    /// Creates an event that can measure time ([`Event::elapsed_ms`]).
    ///
    /// [`Event::synchronize`] on it blocks the calling thread (it sleeps instead
    /// of spinning: `CU_EVENT_BLOCKING_SYNC`).
    pub fn new(device: &Device) -> Result<Event> {
        Self::with_flags(device, sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC)
    }

    /// Creates an event for synchronization only (cheaper to record; no timing).
    pub fn without_timing(device: &Device) -> Result<Event> {
        Self::with_flags(device, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
    }

    fn with_flags(device: &Device, flags: sys::CUevent_flags) -> Result<Event> {
        let inner = device.ctx().new_event(Some(flags)).map_err(cuda_err("cuEventCreate"))?;
        Ok(Event { inner, device: device.clone() })
    }

    /// Records the work enqueued on `stream` so far into this event.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        stream.same_device(&self.device, "Event::record")?;
        self.inner.record(stream.cu()).map_err(cuda_err("cuEventRecord"))
    }

    /// Blocks until the recorded work has completed (immediately if never recorded).
    pub fn synchronize(&self) -> Result<()> {
        self.inner.synchronize().map_err(cuda_err("cuEventSynchronize"))
    }

    /// Has the recorded work completed? Does not block.
    pub fn is_complete(&self) -> Result<bool> {
        self.inner.try_is_complete().map_err(cuda_err("cuEventQuery"))
    }

    /// Milliseconds between this event (the start) and `end`, after waiting for both.
    ///
    /// Both events must have been created with [`Event::new`] and recorded.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        if self.device != end.device {
            return Err(Error::InvalidArgument("Event::elapsed_ms: the two events belong to different devices".to_owned()));
        }
        self.inner.elapsed_ms(&end.inner).map_err(cuda_err("cuEventElapsedTime"))
    }

    /// The device this event belongs to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The raw `CUevent` (the runtime API's `cudaEvent_t`). Do not destroy it.
    pub fn as_raw(&self) -> RawEvent {
        self.inner.cu_event()
    }
}
