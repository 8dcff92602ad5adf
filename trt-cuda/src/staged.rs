//! [`StagedBuffer<T>`]: pinned host memory and device memory of one length,
//! used on one stream.

use super::element::{check_elements, check_elements_mut};
use super::{cuda_err, DeviceBuffer, Element, PinnedBuffer, Stream};
use crate::{Error, Result};
use cudarc::driver::result;

/// A tensor's staging: `len` elements of pinned host memory and `len` of
/// device memory, owned together and used only on the stream given at
/// creation, e.g. one inference session's inputs and outputs.
///
/// [`upload`](Self::upload) and [`download`](Self::download) enqueue one
/// copy each on that stream and nothing else. [`DeviceBuffer`] and
/// [`PinnedBuffer`] make every use wait for the buffer's previous use on any
/// stream and record it (an event wait and an event record per buffer per
/// use, each a driver call); here no other stream can reach either half, so
/// stream order alone orders the copies, the work between them and the
/// free. For a batch of three inputs and two outputs that is five copies
/// and one host wait instead of some forty driver calls.
///
/// The host half is read and written only after the last copy that used it
/// has completed: [`host`](Self::host) and [`host_mut`](Self::host_mut) wait
/// for it (no call at all where a wait on the stream since has covered it),
/// and the copies take `&mut self`, so no host view is alive while one is
/// enqueued. Dropping the buffer waits for its last copy too.
///
/// The device half is reached only by address ([`device_address`](Self::device_address)),
/// for work the caller enqueues **on the same stream**: an IO binding, an
/// engine's tensor address. Work on another stream is not ordered with the
/// copies; this type does not hand out the [`DeviceBuffer`] for that reason.
#[derive(Debug)]
pub struct StagedBuffer<T: Element> {
    host: PinnedBuffer<T>,
    device: DeviceBuffer<T>,
    stream: Stream,
    /// The stream's ticket for this buffer's last copy (0: none).
    last: u64,
}

impl<T: Element> StagedBuffer<T> {
    /// `len` zeroed elements of cached pinned memory and of device memory
    /// (allocated on `stream`, and freed there when dropped).
    pub fn zeros(len: usize, stream: &Stream) -> Result<Self> {
        let host = PinnedBuffer::zeros(stream.device(), len)?;
        let device = DeviceBuffer::zeros(len, stream)?;
        Ok(StagedBuffer { host, device, stream: stream.share(), last: 0 })
    }

    /// Number of elements of each half.
    pub fn len(&self) -> usize {
        self.host.len()
    }

    /// Whether the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.host.is_empty()
    }

    /// The device half's address (fixed for the buffer's life, aligned as
    /// [`DeviceBuffer`]'s), for work enqueued on this buffer's stream.
    pub fn device_address(&self) -> u64 {
        self.device.address()
    }

    /// The stream the copies are enqueued on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The host elements, after the last copy has completed.
    ///
    /// For `bool`, fails with [`Error::InvalidArgument`] if a byte is neither
    /// 0 nor 1 (see [`Element`]).
    pub fn host(&self) -> Result<&[T]> {
        self.stream.wait_for(self.last)?;
        // SAFETY: `len` initialised elements of page-locked memory owned by
        // `self.host`; no copy is in flight (the wait above), and none can be
        // enqueued while this shared borrow of `self` lives.
        let storage = unsafe { std::slice::from_raw_parts(self.host.host_address() as *const T::Storage, self.len()) };
        check_elements::<T>(storage)
    }

    /// The host elements, mutable, after the last copy has completed.
    ///
    /// For `bool`, fails like [`host`](Self::host) on bytes other than 0 and 1.
    pub fn host_mut(&mut self) -> Result<&mut [T]> {
        self.stream.wait_for(self.last)?;
        // SAFETY: as in `host`, and the borrow is exclusive.
        let storage = unsafe { std::slice::from_raw_parts_mut(self.host.host_address() as *mut T::Storage, self.len()) };
        check_elements_mut::<T>(storage)
    }

    /// Enqueues the copy of the first `count` host elements to the device.
    pub fn upload(&mut self, count: usize) -> Result<()> {
        self.check(count, "upload")?;
        if count == 0 {
            return Ok(());
        }
        self.stream.bind()?;
        // SAFETY: both halves hold at least `count` elements and live until
        // the copy has completed (the drop and the host views wait for its
        // ticket); the host memory is page-locked, so the copy is asynchronous.
        unsafe {
            let src = std::slice::from_raw_parts(self.host.host_address() as *const T::Storage, count);
            result::memcpy_htod_async(self.device.address(), src, self.stream.as_raw())
        }
        .map_err(cuda_err("cuMemcpyHtoDAsync"))?;
        self.last = self.stream.ticket();
        Ok(())
    }

    /// Enqueues the copy of the first `count` device elements to the host
    /// ([`host`](Self::host) waits for it). The work that writes them must
    /// have been enqueued on this buffer's stream before.
    pub fn download(&mut self, count: usize) -> Result<()> {
        self.check(count, "download")?;
        if count == 0 {
            return Ok(());
        }
        self.stream.bind()?;
        // SAFETY: as in `upload`; no host view is alive (`&mut self`).
        unsafe {
            let dst = std::slice::from_raw_parts_mut(self.host.host_address() as *mut T::Storage, count);
            result::memcpy_dtoh_async(dst, self.device.address(), self.stream.as_raw())
        }
        .map_err(cuda_err("cuMemcpyDtoHAsync"))?;
        self.last = self.stream.ticket();
        Ok(())
    }

    fn check(&self, count: usize, op: &str) -> Result<()> {
        if count <= self.len() {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!("StagedBuffer::{op}: {count} elements requested but the buffer holds {}", self.len())))
        }
    }
}

impl<T: Element> Drop for StagedBuffer<T> {
    fn drop(&mut self) {
        // The pinned half is freed at once after this: no copy may still use
        // it. (The device half is freed on the stream, after the copies.) A
        // failed wait is a sticky context error, reported by the next call.
        let _ = self.stream.wait_for(self.last);
    }
}
