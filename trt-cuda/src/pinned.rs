//! [`PinnedBuffer<T>`]: typed page-locked host memory.

use super::element::{as_storage, check_elements, check_elements_mut};
use super::{checked_bytes, cuda_err, next_buffer_id, Device, Element, Stream};
use crate::{ElementType, Error, Result};
use cudarc::driver::{sys, HostSlice, PinnedHostSlice, SyncOnDrop};
use ndarray::{ArrayViewD, ArrayViewMutD, IxDyn};
use std::marker::PhantomData;

/// Page-locked ("pinned") host memory holding `len` elements of `T`, zeroed at
/// allocation: the source and destination of asynchronous copies
/// ([`DeviceBuffer::copy_from_pinned`](super::DeviceBuffer::copy_from_pinned),
/// [`DeviceBuffer::copy_to_pinned`](super::DeviceBuffer::copy_to_pinned), graphs).
///
/// The buffer tracks the last GPU operation that used it (cudarc's
/// `PinnedHostSlice` keeps one event: each copy makes its stream wait for that
/// event, then re-records it). Every host view — [`as_slice`](Self::as_slice),
/// [`as_mut_slice`](Self::as_mut_slice), [`as_array`](Self::as_array),
/// [`as_array_mut`](Self::as_array_mut) — first blocks on that event, so the
/// host never reads memory a copy is still writing nor writes memory a copy is
/// still reading. GPU operations take `&mut self`, so no host view can be alive
/// while one is enqueued. Dropping the buffer also waits for the event.
///
/// `Send + Sync`: page-locked memory is ordinary host memory to Rust; `&self`
/// only gives read-only views after the wait above.
#[derive(Debug)]
pub struct PinnedBuffer<T: Element> {
    slice: PinnedHostSlice<T::Storage>,
    len: usize,
    host_address: usize,
    write_combined: bool,
    device: Device,
    id: u64,
    _t: PhantomData<T>,
}

/// Element count of `shape` (1 for a scalar), `None` on overflow.
fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

impl<T: Element> PinnedBuffer<T> {
    /// Allocates `len` zeroed elements of ordinary (cached) pinned memory:
    /// fast for the host to read and write, the right choice for outputs.
    pub fn zeros(device: &Device, len: usize) -> Result<Self> {
        Self::alloc(device, len, false)
    }

    /// Allocates `len` zeroed elements of write-combined pinned memory
    /// (`CU_MEMHOSTALLOC_WRITECOMBINED`): may upload faster, but host **reads**
    /// are very slow. Use it only for buffers the host writes and the GPU reads.
    pub fn zeros_write_combined(device: &Device, len: usize) -> Result<Self> {
        Self::alloc(device, len, true)
    }

    /// Allocates a pinned copy of `data`.
    pub fn from_slice(device: &Device, data: &[T]) -> Result<Self> {
        let mut buffer = Self::zeros(device, data.len())?;
        buffer.as_mut_slice()?.copy_from_slice(data);
        Ok(buffer)
    }

    fn alloc(device: &Device, len: usize, write_combined: bool) -> Result<Self> {
        // cudarc asserts (panics) on a null pointer, which a zero-byte request
        // may return: always allocate at least one element.
        let alloc_len = len.max(1);
        checked_bytes::<T>(alloc_len, "PinnedBuffer")?;
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | if write_combined { sys::CU_MEMHOSTALLOC_WRITECOMBINED } else { 0 };
        // SAFETY: the memory is uninitialized until the `write_bytes` below;
        // nothing reads it before.
        let mut slice =
            unsafe { device.ctx().alloc_pinned_with_flags::<T::Storage>(alloc_len, flags) }.map_err(cuda_err("cuMemHostAlloc"))?;
        let ptr = slice.as_mut_ptr().map_err(cuda_err("cuEventSynchronize"))?;
        // SAFETY: `ptr` points to `alloc_len` elements just allocated and not
        // yet shared; zero is a valid value of every storage type.
        unsafe { std::ptr::write_bytes(ptr, 0, alloc_len) };
        Ok(PinnedBuffer {
            slice,
            len,
            host_address: ptr as usize,
            write_combined,
            device: device.clone(),
            id: next_buffer_id(),
            _t: PhantomData,
        })
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

    /// Whether this is write-combined memory (see [`PinnedBuffer::zeros_write_combined`]).
    pub fn is_write_combined(&self) -> bool {
        self.write_combined
    }

    /// The device (context) this memory was allocated through.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Blocks until the last GPU operation that used this buffer has completed.
    pub fn synchronize(&self) -> Result<()> {
        self.slice.as_ptr().map(|_| ()).map_err(cuda_err("cuEventSynchronize"))
    }

    /// The elements, after waiting for the last GPU operation that used the buffer.
    ///
    /// For `bool`, fails with [`Error::InvalidArgument`] if a byte is neither 0
    /// nor 1 (see [`Element`]).
    pub fn as_slice(&self) -> Result<&[T]> {
        let all = self.slice.as_slice().map_err(cuda_err("cuEventSynchronize"))?;
        check_elements::<T>(&all[..self.len])
    }

    /// The elements, mutable, after waiting for the last GPU operation that used the buffer.
    ///
    /// For `bool`, fails like [`PinnedBuffer::as_slice`] on bytes other than 0 and 1.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        let len = self.len;
        let all = self.slice.as_mut_slice().map_err(cuda_err("cuEventSynchronize"))?;
        check_elements_mut::<T>(&mut all[..len])
    }

    /// The raw bytes, after waiting like [`PinnedBuffer::as_slice`]; never fails the `bool` check.
    pub fn as_bytes(&self) -> Result<&[u8]> {
        let all = self.slice.as_slice().map_err(cuda_err("cuEventSynchronize"))?;
        Ok(bytemuck::cast_slice(&all[..self.len]))
    }

    /// A copy of the elements in a `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        Ok(self.as_slice()?.to_vec())
    }

    /// Overwrites the first `src.len()` elements with `src` (after waiting like
    /// [`PinnedBuffer::as_mut_slice`]).
    pub fn copy_from_slice(&mut self, src: &[T]) -> Result<()> {
        self.check_fits(src.len(), "copy_from_slice")?;
        let all = self.slice.as_mut_slice().map_err(cuda_err("cuEventSynchronize"))?;
        all[..src.len()].copy_from_slice(as_storage(src));
        Ok(())
    }

    /// The elements as an n-dimensional view of `shape` (row-major), after
    /// waiting like [`PinnedBuffer::as_slice`].
    ///
    /// Fails with [`Error::ShapeMismatch`] unless `shape` has exactly
    /// [`len`](Self::len) elements.
    pub fn as_array(&self, shape: &[usize]) -> Result<ArrayViewD<'_, T>> {
        self.check_shape(shape)?;
        let data = self.as_slice()?;
        ArrayViewD::from_shape(IxDyn(shape), data).map_err(|e| self.shape_error(shape, e))
    }

    /// The elements as a mutable n-dimensional view of `shape`; see [`PinnedBuffer::as_array`].
    pub fn as_array_mut(&mut self, shape: &[usize]) -> Result<ArrayViewMutD<'_, T>> {
        self.check_shape(shape)?;
        let what = self.describe();
        let len = self.len;
        let data = self.as_mut_slice()?;
        ArrayViewMutD::from_shape(IxDyn(shape), data).map_err(|e| Error::ShapeMismatch {
            tensor: what,
            expected: format!("{len} elements"),
            got: format!("{shape:?}: {e}"),
        })
    }

    fn check_shape(&self, shape: &[usize]) -> Result<()> {
        match element_count(shape) {
            Some(n) if n == self.len => Ok(()),
            n => Err(Error::ShapeMismatch {
                tensor: self.describe(),
                expected: format!("a shape with {} elements", self.len),
                got: match n {
                    Some(n) => format!("{shape:?} ({n} elements)"),
                    None => format!("{shape:?} (element count overflows)"),
                },
            }),
        }
    }

    fn shape_error(&self, shape: &[usize], e: ndarray::ShapeError) -> Error {
        Error::ShapeMismatch { tensor: self.describe(), expected: format!("{} elements", self.len), got: format!("{shape:?}: {e}") }
    }

    fn describe(&self) -> String {
        format!("PinnedBuffer<{}>[{}]", T::DTYPE, self.len)
    }

    pub(crate) fn check_fits(&self, count: usize, op: &str) -> Result<()> {
        if count <= self.len {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!("{op}: {count} elements requested but the pinned buffer holds {}", self.len)))
        }
    }

    pub(crate) fn cudarc_mut(&mut self) -> &mut PinnedHostSlice<T::Storage> {
        &mut self.slice
    }

    /// The host address, for graph capture (which records it without touching the memory).
    pub(crate) fn host_address(&self) -> usize {
        self.host_address
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Use record for graph launches: `stream` waits for the previous use, and
    /// the returned guard records the new one.
    pub(crate) fn track<'a>(&'a mut self, stream: &'a Stream) -> SyncOnDrop<'a> {
        // SAFETY: the slice is discarded; only the ordering guard is kept, and
        // the graph launch it records touches the memory on `stream` only.
        unsafe { self.slice.stream_synced_mut_slice(stream.cu()) }.1
    }
}
