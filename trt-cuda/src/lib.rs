//! trt-cuda: CUDA devices, streams, events, typed device and pinned buffers and
//! graphs, on [cudarc], for tensor libraries (TensorRT through `trt`, which
//! re-exports this crate as `trt::cuda`; ONNX Runtime's IO binding).
//!
//! It needs no TensorRT and no CUDA toolkit to build: cudarc loads the driver
//! (`libcuda`) at run time.
//!
//! TensorRT runs its work on a CUDA stream that the caller provides
//! (`IExecutionContext::enqueueV3(cudaStream_t)`) and reads and writes tensors at
//! raw device addresses. This crate gives those handles safe owners, built on
//! [cudarc]'s driver API (`CudaContext` -> `CudaStream` -> `CudaSlice`).
//!
//! | type | owns | made by |
//! |---|---|---|
//! | [`Device`] | a retained primary context of one GPU | [`Device::new`] |
//! | [`Stream`] | a non-blocking stream of that context | [`Stream::new`] |
//! | [`Event`] | a CUDA event (synchronization, timing) | [`Event::new`] |
//! | [`DeviceBuffer<T>`] | a typed device allocation (`cuMemAllocAsync`) | [`DeviceBuffer::zeros`] |
//! | [`PinnedBuffer<T>`] | typed page-locked host memory (`cuMemHostAlloc`) | [`PinnedBuffer::zeros`] |
//! | [`StagedBuffer<T>`] | pinned and device memory of one tensor, copied on one stream without event tracking | [`StagedBuffer::zeros`] |
//! | [`CudaGraph`] | a captured, instantiated CUDA graph | [`CudaGraph::capture`] |
//! | [`Pool`] | a fixed set of items (streams with their buffers, ...) checked out one thread at a time | [`Pool::from_items`] |
//! | [`StreamGate`] | a host-opened hold on a stream (observing orderings) | [`StreamGate::close`] |
//!
//! # Without a driver
//!
//! cudarc loads `libcuda` lazily and **panics** when it is missing. Every entry
//! point of this module ([`Device::new`], [`device_count`], [`driver_version`])
//! first checks that the library can be loaded and returns
//! [`Error::CudaUnavailable`] instead; every other
//! type can only be made from a [`Device`], so no call here reaches cudarc
//! without a driver. [`driver_available`] answers the question up front.
//!
//! # Ownership
//!
//! Children hold an `Arc` of their parent, as in cudarc: a buffer holds the
//! stream it was allocated on, a stream holds its context. Dropping a
//! [`Device`] or a [`Stream`] while buffers still exist is therefore fine; the
//! context is released after the last object that needs it. A device buffer is
//! freed on the stream it was allocated on (`cuMemFreeAsync`), after every
//! stream that used it has finished with it. Drops never panic: a driver error
//! during a drop is stored in the context (cudarc's `record_err`) and returned
//! by the next call on that device.
//!
//! # Synchronization rules
//!
//! * **Every operation that enqueues GPU work touching a buffer borrows that
//!   buffer mutably** (`&mut DeviceBuffer`, `&mut PinnedBuffer`), whether the
//!   GPU reads or writes it. Each such use makes the stream wait for the
//!   buffer's previous use (on any stream) and then records the new use in the
//!   buffer's event (cudarc's `DevicePtrMut` / `SyncOnDrop`). Uses of one buffer
//!   are thus ordered into a chain across streams; dropping the buffer waits for
//!   the end of that chain.
//! * **Host views of pinned memory wait first**: [`PinnedBuffer::as_slice`],
//!   [`PinnedBuffer::as_mut_slice`] and the ndarray views block until the last
//!   GPU operation that used the buffer has completed (cudarc's
//!   `PinnedHostSlice` event), so the host never sees memory that a copy is
//!   still reading or writing.
//! * **Copies to and from ordinary slices (`&[T]`, `&mut [T]`) block** until the
//!   copy has completed: the borrow of a plain slice ends when the call returns,
//!   so the copy must be done by then. Use [`PinnedBuffer`] for asynchronous
//!   transfers.
//! * **Raw addresses** for TensorRT come from [`DeviceBuffer::device_ptr`],
//!   which returns a guard: enqueue the work that uses the address on the given
//!   stream while the guard lives; dropping the guard records that use.
//! * **One stream, no tracking**: a [`StagedBuffer`]'s two halves are used
//!   only on its own stream, so its copies are ordered by that stream alone
//!   (no events); its host views wait for its last copy by a stream
//!   synchronize, skipped where one since has covered it, spinning or
//!   sleeping as the stream's [`HostWait`] says.
//! * **Graphs** ([`CudaGraph`]) are captured on a private stream and must be
//!   given every buffer they use at each launch, so the same rules apply to
//!   replays.
//!
//! # Example
//!
//! ```no_run
//! # fn main() -> trt_cuda::Result<()> {
//! use trt_cuda::{Device, DeviceBuffer, PinnedBuffer, Stream};
//!
//! let device = Device::new(0)?;
//! let stream = Stream::new(&device)?;
//! let mut host = PinnedBuffer::<f32>::from_slice(&device, &[1.0, 2.0, 3.0, 4.0])?;
//! let mut gpu = DeviceBuffer::<f32>::zeros(4, &stream)?;
//! gpu.copy_from_pinned(&mut host, &stream)?; // asynchronous
//! host.as_mut_slice()?.fill(0.0); // waits for the upload first
//! gpu.copy_to_pinned(&mut host, &stream)?; // asynchronous
//! assert_eq!(host.as_slice()?, &[1.0, 2.0, 3.0, 4.0]); // waits for the download
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod buffer;
mod device;
mod dtype;
mod element;
mod error;
mod gate;
mod graph;
mod pinned;
mod pool;
mod staged;
mod stream;

pub use buffer::{DeviceBuffer, DevicePtrGuard};
pub use device::{device_count, driver_available, driver_version, Device};
pub use dtype::ElementType;
pub use element::Element;
pub use error::{Error, Result};
pub use gate::StreamGate;
pub use graph::{is_capture_error, CaptureMode, CudaGraph, GraphCapture, GraphResource};
pub use pinned::PinnedBuffer;
pub use pool::{Checkout, Pool};
pub use staged::StagedBuffer;
pub use stream::{Event, HostWait, Stream};

/// The raw CUDA stream handle (`CUstream`, the same handle as the runtime's `cudaStream_t`).
pub type RawStream = cudarc::driver::sys::CUstream;

/// The raw CUDA event handle (`CUevent`, the same handle as the runtime's `cudaEvent_t`).
pub type RawEvent = cudarc::driver::sys::CUevent;

/// Alignment, in bytes, that TensorRT expects of tensor addresses and that
/// every [`DeviceBuffer`] has (`cuMemAlloc` returns at least 256-byte aligned memory).
pub const DEVICE_ALIGNMENT: usize = 256;

use cudarc::driver::DriverError;
use std::sync::atomic::{AtomicU64, Ordering};

/// Turns a driver error into [`Error::Cuda`] naming the operation.
pub(crate) fn cuda_err(operation: &'static str) -> impl FnOnce(DriverError) -> Error {
    move |source| Error::Cuda { operation, source }
}

/// A process-wide unique id for a buffer (never reused, unlike addresses).
pub(crate) fn next_buffer_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Bytes for `len` elements of `T`, or an error when that overflows or exceeds `isize::MAX`.
pub(crate) fn checked_bytes<T>(len: usize, what: &str) -> crate::Result<usize> {
    len.checked_mul(std::mem::size_of::<T>()).filter(|&b| b <= isize::MAX as usize).ok_or_else(|| {
        Error::InvalidArgument(format!("{what} of {len} elements of {} bytes overflows the address space", std::mem::size_of::<T>()))
    })
}
