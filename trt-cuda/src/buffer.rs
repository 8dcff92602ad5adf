//! [`DeviceBuffer<T>`]: typed device memory.

use super::element::{as_storage, check_elements};
use super::{checked_bytes, cuda_err, next_buffer_id, Device, Element, PinnedBuffer, Stream};
use crate::{ElementType, Error, Result};
use cudarc::driver::{result, sys, CudaSlice, DevicePtr, DevicePtrMut, HostSlice, SyncOnDrop};
use std::marker::PhantomData;

/// A typed device allocation of `len` elements of `T` (cudarc's `CudaSlice`).
///
/// Allocated with `cuMemAllocAsync` on the stream given to the constructor and
/// freed there (`cuMemFreeAsync`) when dropped, after every stream that used it
/// is done with it. The buffer keeps that stream and its context alive.
///
/// The address is fixed for the buffer's life and at least 256-byte aligned
/// ([`DEVICE_ALIGNMENT`](super::DEVICE_ALIGNMENT)), as TensorRT requires.
///
/// Every method that enqueues GPU work using the buffer takes `&mut self`, also
/// when the GPU only reads it: each use waits for the previous one and is
/// recorded in the buffer's event, so uses form one chain across streams (see
/// the [module docs](super)).
///
/// `Send + Sync`: device memory may be used from any thread of the process;
/// `&self` only reads the length and address, and all GPU uses need `&mut self`.
#[derive(Debug)]
pub struct DeviceBuffer<T: Element> {
    slice: CudaSlice<T::Storage>,
    len: usize,
    address: sys::CUdeviceptr,
    device: Device,
    id: u64,
    _t: PhantomData<T>,
}

/// A device address borrowed for work enqueued on one stream; see [`DeviceBuffer::device_ptr`].
///
/// Dropping the guard records, in the buffer's event, all work enqueued on the
/// stream so far; later uses of the buffer (on any stream) wait for it, and so
/// does freeing the buffer.
#[must_use = "enqueue the work that uses the address while the guard is alive"]
#[derive(Debug)]
pub struct DevicePtrGuard<'a> {
    address: sys::CUdeviceptr,
    _record: SyncOnDrop<'a>,
}

impl DevicePtrGuard<'_> {
    /// The device address (a `CUdeviceptr`).
    pub fn address(&self) -> u64 {
        self.address
    }

    /// The device address as a pointer, e.g. for `IExecutionContext::setTensorAddress`.
    pub fn as_mut_ptr(&self) -> *mut std::ffi::c_void {
        self.address as usize as *mut std::ffi::c_void
    }
}

impl<T: Element> DeviceBuffer<T> {
    /// Allocates `len` elements on `stream`'s device, set to zero (asynchronously, on `stream`).
    ///
    /// A zero-length buffer is allowed (it still owns a small allocation, so its
    /// address is valid and aligned).
    pub fn zeros(len: usize, stream: &Stream) -> Result<Self> {
        checked_bytes::<T>(len, "DeviceBuffer")?;
        stream.bind()?;
        let cu = stream.cudarc_stream();
        let slice = cu.alloc_zeros::<T::Storage>(len.max(1)).map_err(cuda_err("cuMemAllocAsync / cuMemsetD8Async"))?;
        let address = {
            // Reading the address through cudarc's guard only makes the
            // allocation stream wait for (and record) its own work.
            let (address, _record) = slice.device_ptr(cu);
            address
        };
        let buffer = DeviceBuffer { slice, len, address, device: stream.device().clone(), id: next_buffer_id(), _t: PhantomData };
        buffer.device.check_deferred_error()?;
        Ok(buffer)
    }

    /// Allocates a buffer holding a copy of `src`. Blocks until the copy has completed.
    pub fn from_slice(src: &[T], stream: &Stream) -> Result<Self> {
        let mut buffer = Self::zeros(src.len(), stream)?;
        buffer.copy_from_host(src, stream)?;
        Ok(buffer)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size of the elements in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The element type of the elements.
    pub fn dtype(&self) -> ElementType {
        T::DTYPE
    }

    /// The device this buffer lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The device address, for inspection only (alignment checks, logging,
    /// identity). It enqueues nothing and orders nothing: to hand the address to
    /// GPU work use [`DeviceBuffer::device_ptr`].
    pub fn address(&self) -> u64 {
        self.address
    }

    /// Whether the address is a multiple of `alignment` bytes (a power of two,
    /// e.g. [`DEVICE_ALIGNMENT`](super::DEVICE_ALIGNMENT)).
    pub fn is_aligned(&self, alignment: usize) -> bool {
        alignment.is_power_of_two() && self.address.is_multiple_of(alignment as u64)
    }

    /// Borrows the address for work that the caller enqueues on `stream`
    /// itself, e.g. a TensorRT `enqueueV3`.
    ///
    /// `stream` first waits for every earlier use of the buffer. Enqueue the
    /// work while the guard is alive; dropping it records the use. The work may
    /// read and write the elements, and must leave valid values of `T`
    /// (0 or 1 for `bool`, see [`Element`]; the host views check).
    pub fn device_ptr<'a>(&'a mut self, stream: &'a Stream) -> Result<DevicePtrGuard<'a>> {
        stream.same_device(&self.device, "DeviceBuffer::device_ptr")?;
        stream.bind()?;
        let (address, record) = self.slice.device_ptr_mut(stream.cu());
        Ok(DevicePtrGuard { address, _record: record })
    }

    /// Copies `src` into the first `src.len()` elements. **Blocks** until the
    /// copy has completed (`src` is an ordinary borrow); use
    /// [`DeviceBuffer::copy_from_pinned`] for an asynchronous upload.
    pub fn copy_from_host(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        self.check_fits(src.len(), "copy_from_host", "source slice")?;
        if src.is_empty() {
            return Ok(());
        }
        {
            let guard = self.device_ptr(stream)?;
            // SAFETY: the destination holds at least `src.len()` elements and
            // stays allocated (the guard borrows it); `src` stays borrowed until
            // the stream synchronization below has seen the copy complete.
            unsafe { result::memcpy_htod_async(guard.address, as_storage(src), stream.as_raw()) }.map_err(cuda_err("cuMemcpyHtoDAsync"))?;
        }
        stream.synchronize()?;
        self.device.check_deferred_error()
    }

    /// Copies the first `dst.len()` elements into `dst`. **Blocks** until the
    /// copy has completed; use [`DeviceBuffer::copy_to_pinned`] for an
    /// asynchronous download.
    ///
    /// For `bool` the bytes are copied to a temporary buffer and checked before
    /// `dst` is written (see [`Element`]).
    pub fn copy_to_host(&mut self, dst: &mut [T], stream: &Stream) -> Result<()> {
        self.check_fits(dst.len(), "copy_to_host", "destination slice")?;
        let n = dst.len();
        match T::storage_mut(dst) {
            Some(storage) => self.download_blocking(storage, stream),
            None => {
                let mut staging = vec![T::Storage::default(); n];
                self.download_blocking(&mut staging, stream)?;
                dst.copy_from_slice(check_elements::<T>(&staging)?);
                Ok(())
            }
        }
    }

    /// Copies the whole buffer into a new `Vec`. **Blocks** until done.
    pub fn to_vec(&mut self, stream: &Stream) -> Result<Vec<T>> {
        let mut out = vec![T::default(); self.len];
        self.copy_to_host(&mut out, stream)?;
        Ok(out)
    }

    fn download_blocking(&mut self, dst: &mut [T::Storage], stream: &Stream) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        {
            let guard = self.device_ptr(stream)?;
            // SAFETY: the source holds at least `dst.len()` elements; `dst` is
            // exclusively borrowed until the synchronization below has seen the
            // copy complete.
            unsafe { result::memcpy_dtoh_async(dst, guard.address, stream.as_raw()) }.map_err(cuda_err("cuMemcpyDtoHAsync"))?;
        }
        stream.synchronize()?;
        self.device.check_deferred_error()
    }

    /// Enqueues on `stream` a copy of all of `src` into the first `src.len()`
    /// elements. Asynchronous: host views of `src` wait for it.
    pub fn copy_from_pinned(&mut self, src: &mut PinnedBuffer<T>, stream: &Stream) -> Result<()> {
        self.copy_from_pinned_n(src, src.len(), stream)
    }

    /// Like [`DeviceBuffer::copy_from_pinned`], for the first `count` elements only.
    pub fn copy_from_pinned_n(&mut self, src: &mut PinnedBuffer<T>, count: usize, stream: &Stream) -> Result<()> {
        self.check_fits(count, "copy_from_pinned", "element count")?;
        src.check_fits(count, "copy_from_pinned")?;
        stream.same_device(src.device(), "DeviceBuffer::copy_from_pinned")?;
        if count == 0 {
            return Ok(());
        }
        {
            let guard = self.device_ptr(stream)?;
            // SAFETY: the host slice is only handed to this copy on `stream`;
            // cudarc made `stream` wait for the pinned buffer's previous use and
            // records this one in its event when `_record_src` drops, and host
            // views wait for that event.
            let (host, _record_src) = unsafe { src.cudarc_mut().stream_synced_slice(stream.cu()) };
            // SAFETY: both sides hold at least `count` elements and stay
            // allocated until the recorded work completes.
            unsafe { result::memcpy_htod_async(guard.address, &host[..count], stream.as_raw()) }.map_err(cuda_err("cuMemcpyHtoDAsync"))?;
        }
        self.device.check_deferred_error()
    }

    /// Enqueues on `stream` a copy of the whole buffer into the first
    /// `self.len()` elements of `dst`. Asynchronous: host views of `dst` wait for it.
    pub fn copy_to_pinned(&mut self, dst: &mut PinnedBuffer<T>, stream: &Stream) -> Result<()> {
        self.copy_to_pinned_n(dst, self.len, stream)
    }

    /// Like [`DeviceBuffer::copy_to_pinned`], for the first `count` elements only.
    pub fn copy_to_pinned_n(&mut self, dst: &mut PinnedBuffer<T>, count: usize, stream: &Stream) -> Result<()> {
        self.check_fits(count, "copy_to_pinned", "element count")?;
        dst.check_fits(count, "copy_to_pinned")?;
        stream.same_device(dst.device(), "DeviceBuffer::copy_to_pinned")?;
        if count == 0 {
            return Ok(());
        }
        {
            let guard = self.device_ptr(stream)?;
            // SAFETY: as in `copy_from_pinned_n`; the host memory is written only
            // by this copy until the recorded event completes, and host views
            // wait for it.
            let (host, _record_dst) = unsafe { dst.cudarc_mut().stream_synced_mut_slice(stream.cu()) };
            // SAFETY: both sides hold at least `count` elements.
            unsafe { result::memcpy_dtoh_async(&mut host[..count], guard.address, stream.as_raw()) }
                .map_err(cuda_err("cuMemcpyDtoHAsync"))?;
        }
        self.device.check_deferred_error()
    }

    /// Enqueues on `stream` a copy of all of `src` into the first `src.len()` elements.
    pub fn copy_from_device(&mut self, src: &mut DeviceBuffer<T>, stream: &Stream) -> Result<()> {
        self.check_fits(src.len, "copy_from_device", "source buffer")?;
        stream.same_device(&src.device, "DeviceBuffer::copy_from_device")?;
        let bytes = src.size_in_bytes();
        if bytes == 0 {
            return Ok(());
        }
        {
            let from = src.device_ptr(stream)?;
            let to = self.device_ptr(stream)?;
            // SAFETY: both allocations hold at least `bytes` bytes and stay
            // alive until the recorded work completes.
            unsafe { result::memcpy_dtod_async(to.address, from.address, bytes, stream.as_raw()) }
                .map_err(cuda_err("cuMemcpyDtoDAsync"))?;
        }
        self.device.check_deferred_error()
    }

    /// Enqueues on `stream` setting every element to zero.
    pub fn fill_zeros(&mut self, stream: &Stream) -> Result<()> {
        let bytes = self.size_in_bytes();
        if bytes == 0 {
            return Ok(());
        }
        {
            let guard = self.device_ptr(stream)?;
            // SAFETY: the allocation holds `bytes` bytes; zero is valid for every `T`.
            unsafe { result::memset_d8_async(guard.address, 0, bytes, stream.as_raw()) }.map_err(cuda_err("cuMemsetD8Async"))?;
        }
        self.device.check_deferred_error()
    }

    /// Escape hatch: the cudarc slice, read-only (of the storage type; it holds
    /// one element for an empty buffer). Not mutable, so that the allocation
    /// cannot be swapped under the cached length and address.
    pub fn cudarc_slice(&self) -> &CudaSlice<T::Storage> {
        &self.slice
    }

    /// A process-wide unique id of this allocation (never reused, unlike addresses).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Enqueue-free use record for graph launches (the whole buffer, as a write).
    pub(crate) fn track<'a>(&'a mut self, stream: &'a Stream) -> SyncOnDrop<'a> {
        self.slice.device_ptr_mut(stream.cu()).1
    }

    fn check_fits(&self, count: usize, op: &str, what: &str) -> Result<()> {
        if count <= self.len {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!("DeviceBuffer::{op}: {what} has {count} elements but the device buffer holds {}", self.len)))
        }
    }
}
