//! [`Element`]: the Rust types a buffer may hold, each tied to an [`ElementType`].
//!
//! # `bool`
//!
//! A boolean tensor element (TensorRT's `kBOOL`, ONNX's `bool`) is one byte
//! that must be 0 or 1, and a Rust `bool` with any other byte is undefined behaviour. Device memory is written by code Rust
//! cannot see (TensorRT engines, kernels), so a `bool` buffer is stored on the
//! GPU and in pinned memory as bytes (`u8`), and every path that turns those
//! bytes into `bool`s **checks them first**:
//!
//! * [`PinnedBuffer::as_slice`](super::PinnedBuffer::as_slice) and the other
//!   host views check the bytes (`bytemuck::checked`) and return
//!   [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the first
//!   bad element instead of a view;
//! * [`DeviceBuffer::copy_to_host`](super::DeviceBuffer::copy_to_host) into a
//!   `&mut [bool]` copies into a byte buffer, checks it, and only then writes
//!   the caller's slice, so the caller's `bool`s never hold another byte.
//!
//! For every other element type any bit pattern is valid and the check
//! compiles to nothing. `PinnedBuffer::as_bytes` reads the raw bytes whatever
//! they are.

use crate::ElementType;
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

mod sealed {
    pub trait Sealed {}
}

/// A tensor element type: `f32`, `half::f16`, `half::bf16`, `i32`, `i64`, `i8`,
/// `u8` or `bool`.
///
/// Sealed: the buffers rely on the exact layouts of these types.
pub trait Element:
    sealed::Sealed
    + Copy
    + Default
    + PartialEq
    + std::fmt::Debug
    + Send
    + Sync
    + Unpin
    + 'static
    + bytemuck::NoUninit
    + bytemuck::CheckedBitPattern
{
    /// The element type of this element.
    const DTYPE: ElementType;

    /// The type the bytes are stored as on the device and in pinned memory: the
    /// element itself, `u16` for the 16-bit floats (cudarc's `f16` feature is
    /// off) and `u8` for `bool`. Same size and alignment as `Self`.
    #[doc(hidden)]
    type Storage: DeviceRepr + ValidAsZeroBits + bytemuck::Pod + Default + std::fmt::Debug + Send + Sync + Unpin + 'static;

    /// `values` as storage, when every bit pattern is a valid `Self` (all but `bool`).
    #[doc(hidden)]
    fn storage_mut(values: &mut [Self]) -> Option<&mut [Self::Storage]>;
}

macro_rules! element {
    ($t:ty, $storage:ty, $dtype:expr, any_bits) => {
        element!(@impl $t, $storage, $dtype, |v| Some(bytemuck::cast_slice_mut(v)));
    };
    ($t:ty, $storage:ty, $dtype:expr, checked) => {
        element!(@impl $t, $storage, $dtype, |_v| None);
    };
    (@impl $t:ty, $storage:ty, $dtype:expr, $storage_mut:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: ElementType = $dtype;
            type Storage = $storage;
            #[inline]
            fn storage_mut(values: &mut [Self]) -> Option<&mut [Self::Storage]> {
                let f: fn(&mut [Self]) -> Option<&mut [Self::Storage]> = $storage_mut;
                f(values)
            }
        }
        const _: () = {
            assert!(std::mem::size_of::<$t>() == std::mem::size_of::<$storage>());
            assert!(std::mem::align_of::<$t>() == std::mem::align_of::<$storage>());
            assert!(std::mem::size_of::<$t>() * 8 == $dtype.bits());
        };
    };
}

element!(f32, f32, ElementType::F32, any_bits);
element!(half::f16, u16, ElementType::F16, any_bits);
element!(half::bf16, u16, ElementType::BF16, any_bits);
element!(i32, i32, ElementType::I32, any_bits);
element!(i64, i64, ElementType::I64, any_bits);
element!(i8, i8, ElementType::I8, any_bits);
element!(u8, u8, ElementType::U8, any_bits);
element!(bool, u8, ElementType::Bool, checked);

/// Host elements as storage, for uploads (every element is a valid storage value).
pub(crate) fn as_storage<T: Element>(values: &[T]) -> &[T::Storage] {
    bytemuck::cast_slice(values)
}

/// Storage as elements, after checking every value is a valid `T`.
pub(crate) fn check_elements<T: Element>(storage: &[T::Storage]) -> crate::Result<&[T]> {
    bytemuck::checked::try_cast_slice(storage).map_err(|_| invalid::<T>(storage))
}

/// Mutable storage as elements, after checking every value is a valid `T`.
pub(crate) fn check_elements_mut<T: Element>(storage: &mut [T::Storage]) -> crate::Result<&mut [T]> {
    if bytemuck::checked::try_cast_slice::<_, T>(storage).is_err() {
        return Err(invalid::<T>(storage));
    }
    bytemuck::checked::try_cast_slice_mut(storage).map_err(|_| invalid::<T>(&[]))
}

fn invalid<T: Element>(storage: &[T::Storage]) -> crate::Error {
    let bad = storage.iter().enumerate().find(|(_, s)| bytemuck::checked::try_cast::<T::Storage, T>(**s).is_err());
    let what = match bad {
        Some((i, s)) => format!("element {i} holds {s:?}"),
        None => "an element holds an invalid value".to_owned(),
    };
    crate::Error::InvalidArgument(format!(
        "{what}, which is not a valid {} ({} values must be 0 or 1); \
         the GPU code that wrote this buffer broke the type's contract",
        std::any::type_name::<T>(),
        T::DTYPE
    ))
}
