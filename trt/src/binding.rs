//! Buffers bound to tensor names for one enqueue, and the checks that decide
//! whether TensorRT may be given their addresses.
//!
//! The checks are plain functions of the engine's description ([`IoTensor`],
//! the active profile's [`IoFormat`]), the context's current shapes and the
//! bound entries: no TensorRT call, so they are tested without an engine.

use crate::cuda::{DeviceBuffer, DevicePtrGuard, Element, Stream};
use crate::engine::{IoFormat, IoMode, IoTensor};
use crate::{DataType, Error, Result};

/// TensorRT requires I/O addresses aligned to 256 bytes.
pub const IO_ALIGNMENT: usize = 256;

/// Name, type, size and address of one bound buffer: what the checks need.
#[derive(Debug, Clone)]
pub(crate) struct Entry<'a> {
    pub(crate) name: &'a str,
    pub(crate) dtype: DataType,
    pub(crate) bytes: usize,
    pub(crate) address: u64,
    /// The buffer's identity, for graph launches (see `CudaGraph::launch`).
    pub(crate) id: u64,
    pub(crate) len: usize,
}

/// Device buffers bound to tensor names for one enqueue (or one graph capture).
///
/// Each buffer is borrowed mutably (the engine may write any bound tensor), so
/// one buffer cannot be bound twice; binding makes the stream wait for the
/// buffer's earlier uses, and the enqueue records its use.
pub struct Bindings<'a> {
    pub(crate) stream: &'a Stream,
    pub(crate) entries: Vec<Bound<'a>>,
}

pub(crate) struct Bound<'a> {
    pub(crate) entry: Entry<'a>,
    _guard: DevicePtrGuard<'a>,
}

impl<'a> AsRef<Entry<'a>> for Bound<'a> {
    fn as_ref(&self) -> &Entry<'a> {
        &self.entry
    }
}

impl<'a> AsRef<Entry<'a>> for Entry<'a> {
    fn as_ref(&self) -> &Entry<'a> {
        self
    }
}

impl<'a> Bindings<'a> {
    /// Bindings for work on `stream`.
    pub fn new(stream: &'a Stream) -> Self {
        Bindings { stream, entries: Vec::new() }
    }

    /// Bindings for work on `stream` with room for `n` buffers (one allocation).
    pub fn with_capacity(stream: &'a Stream, n: usize) -> Self {
        Bindings { stream, entries: Vec::with_capacity(n) }
    }

    /// Bind `buffer` to tensor `name` (input or output). The buffer must be on
    /// the stream's device; its dtype, size and alignment are checked at enqueue.
    pub fn bind<T: Element>(mut self, name: &'a str, buffer: &'a mut DeviceBuffer<T>) -> Result<Self> {
        let (bytes, id, len) = (buffer.size_in_bytes(), buffer.id(), buffer.len());
        // Refuses a buffer of another device.
        let guard = buffer.device_ptr(self.stream)?;
        let entry = Entry { name, dtype: T::DTYPE.into(), bytes, address: guard.address(), id, len };
        self.entries.push(Bound { entry, _guard: guard });
        Ok(self)
    }

    /// The stream the work runs on.
    pub fn stream(&self) -> &'a Stream {
        self.stream
    }
}

/// Every entry names an engine tensor, and no tensor is bound twice.
pub(crate) fn check_names<'e, E: AsRef<Entry<'e>>>(io: &[IoTensor], entries: &[E]) -> Result<()> {
    for (i, e) in entries.iter().map(AsRef::as_ref).enumerate() {
        if !io.iter().any(|t| t.name == e.name) {
            return Err(Error::UnknownTensor { name: e.name.to_owned(), context: "engine I/O" });
        }
        if entries[..i].iter().any(|o| o.as_ref().name == e.name) {
            return Err(Error::InvalidArgument(format!("tensor '{}' is bound twice", e.name)));
        }
    }
    Ok(())
}

/// What to tell TensorRT about one tensor's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddressPlan {
    /// Set this address.
    Set(u64),
    /// No buffer; the output allocator provides the memory (any earlier
    /// address must be cleared, or TensorRT would write to it).
    Allocator,
}

/// Check one engine tensor against its bound entry (if any), for the active
/// profile's `format`, its current `shape` and whether it has an output allocator.
pub(crate) fn check_tensor(
    t: &IoTensor,
    format: &IoFormat,
    shape: &[i64],
    has_allocator: bool,
    entry: Option<&Entry<'_>>,
) -> Result<AddressPlan> {
    let Some(b) = entry else {
        if has_allocator {
            return Ok(AddressPlan::Allocator);
        }
        return Err(Error::InvalidArgument(format!("no buffer bound for tensor '{}'", t.name)));
    };
    if b.dtype != t.dtype {
        return Err(Error::DTypeMismatch { tensor: t.name.clone(), expected: t.dtype, got: b.dtype });
    }
    // Sizes below assume linear device tensors; vectorized formats pad and
    // host tensors (shape I/O) need host memory.
    if !format.linear || t.on_host {
        return Err(Error::InvalidArgument(format!(
            "tensor '{}' is {} ({}); only linear device tensors can be bound",
            t.name,
            format.description,
            if t.on_host { "on the host" } else { "vectorized in the active profile" }
        )));
    }
    if !(b.address as usize).is_multiple_of(IO_ALIGNMENT) {
        return Err(Error::Misaligned { tensor: t.name.clone(), address: b.address, required: IO_ALIGNMENT });
    }
    // With an allocator a preallocated buffer may be too small (or the shape
    // data-dependent): TensorRT asks the allocator for more (header: "calling
    // both setTensorAddress and setOutputAllocator() for the same output is allowed").
    if t.mode == IoMode::Output && has_allocator {
        return Ok(AddressPlan::Set(b.address));
    }
    if crate::shape::is_dynamic(shape) {
        return Err(Error::InvalidArgument(format!(
            "output '{}' has a data-dependent shape {shape:?}; give it an output allocator",
            t.name
        )));
    }
    let needed = t.dtype.bytes_for(shape.iter().product::<i64>() as usize);
    if b.bytes < needed {
        return Err(Error::ShapeMismatch {
            tensor: t.name.clone(),
            expected: format!("{shape:?} ({needed} bytes)"),
            got: format!("a buffer of {} bytes", b.bytes),
        });
    }
    Ok(AddressPlan::Set(b.address))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ShapeRange;

    fn tensor(name: &str, mode: IoMode, shape: &[i64]) -> IoTensor {
        IoTensor {
            name: name.into(),
            mode,
            dtype: DataType::Float,
            shape: shape.to_vec(),
            format: "Row major linear FP32".into(),
            linear: true,
            vectorized_dim: -1,
            components_per_element: 1,
            is_shape_tensor: false,
            on_host: false,
            profiles: if mode == IoMode::Input { vec![ShapeRange::new(&[1, 4], &[2, 4], &[8, 4])] } else { vec![] },
        }
    }

    fn linear() -> IoFormat {
        IoFormat { description: "Row major linear FP32".into(), linear: true, vectorized_dim: -1, components_per_element: 1 }
    }

    fn entry(name: &str, bytes: usize) -> Entry<'_> {
        Entry { name, dtype: DataType::Float, bytes, address: 0x1000_0000, id: 1, len: bytes / 4 }
    }

    #[test]
    fn a_tensor_vectorized_in_the_active_profile_is_refused() {
        // IoTensor's own fields describe profile 0 (linear); profile 1 is
        // vectorized. The check must use the active profile's format: main's
        // check read `t.linear` (profile 0) and accepted this binding.
        let t = tensor("x", IoMode::Input, &[-1, 4]);
        let profile1 = IoFormat {
            description: "Channel major FP32 format (kCHW32)".into(),
            linear: false,
            vectorized_dim: 1,
            components_per_element: 32,
        };
        let e = entry("x", 4096);
        let err = check_tensor(&t, &profile1, &[2, 4], false, Some(&e)).unwrap_err();
        assert!(err.to_string().contains("vectorized in the active profile"), "{err}");
        assert_eq!(check_tensor(&t, &linear(), &[2, 4], false, Some(&e)).unwrap(), AddressPlan::Set(0x1000_0000));
    }

    #[test]
    fn an_output_may_be_preallocated_and_have_an_allocator() {
        let t = tensor("y", IoMode::Output, &[-1, -1]);
        let small = entry("y", 256);
        // Data-dependent shape, too-small buffer: fine with an allocator (TensorRT reallocates) ...
        assert_eq!(check_tensor(&t, &linear(), &[-1, -1], true, Some(&small)).unwrap(), AddressPlan::Set(0x1000_0000));
        // ... and no buffer at all is fine too ...
        assert_eq!(check_tensor(&t, &linear(), &[-1, -1], true, None).unwrap(), AddressPlan::Allocator);
        // ... but without an allocator both are errors.
        assert!(check_tensor(&t, &linear(), &[-1, -1], false, Some(&small)).is_err());
        assert!(check_tensor(&t, &linear(), &[-1, -1], false, None).is_err());
    }

    #[test]
    fn names_are_checked_before_any_address_is_set() {
        let io = [tensor("x", IoMode::Input, &[-1, 4]), tensor("y", IoMode::Output, &[-1, 4])];
        let err = check_names(&io, &[entry("x", 64), entry("x", 64)]).unwrap_err();
        assert!(err.to_string().contains("bound twice"), "{err}");
        let err = check_names(&io, &[entry("z", 64)]).unwrap_err();
        assert!(matches!(err, Error::UnknownTensor { .. }), "{err}");
        check_names(&io, &[entry("x", 64), entry("y", 64)]).unwrap();
    }

    #[test]
    fn sizes_dtypes_and_alignment_are_checked() {
        let t = tensor("x", IoMode::Input, &[-1, 4]);
        let mut e = entry("x", 8 * 4 * 4 - 4);
        assert!(matches!(check_tensor(&t, &linear(), &[8, 4], false, Some(&e)), Err(Error::ShapeMismatch { .. })));
        e.bytes = 8 * 4 * 4;
        e.address += 4;
        assert!(matches!(check_tensor(&t, &linear(), &[8, 4], false, Some(&e)), Err(Error::Misaligned { .. })));
        e.address -= 4;
        e.dtype = DataType::Half;
        assert!(matches!(check_tensor(&t, &linear(), &[8, 4], false, Some(&e)), Err(Error::DTypeMismatch { .. })));
    }
}
