//! Calling into the shim: every call runs inside a log capture, C++ exceptions
//! (caught by cxx) become [`Error::Cpp`], and a failure result (null pointer,
//! `false`) becomes [`Error::TensorRt`] carrying what TensorRT reported during
//! that very call.

use std::ptr::NonNull;

use crate::logger::capture;
use crate::{Error, Result, TrtMessage};

/// Run one shim call; returns its value and the errors TensorRT reported meanwhile.
pub(crate) fn call<T>(operation: &'static str, f: impl FnOnce() -> std::result::Result<T, cxx::Exception>) -> Result<(T, Vec<TrtMessage>)> {
    let (r, messages) = capture(f);
    match r {
        Ok(v) => Ok((v, messages)),
        Err(e) => Err(Error::Cpp { operation, what: e.what().to_owned() }),
    }
}

/// A call returning a pointer: null means failure.
pub(crate) fn call_ptr<T>(operation: &'static str, f: impl FnOnce() -> std::result::Result<*mut T, cxx::Exception>) -> Result<NonNull<T>> {
    let (p, messages) = call(operation, f)?;
    NonNull::new(p).ok_or(Error::TensorRt { operation, messages })
}

/// A call returning an owned object: null means failure.
pub(crate) fn call_owned<T: cxx::memory::UniquePtrTarget>(
    operation: &'static str,
    f: impl FnOnce() -> std::result::Result<cxx::UniquePtr<T>, cxx::Exception>,
) -> Result<cxx::UniquePtr<T>> {
    let (p, messages) = call(operation, f)?;
    if p.is_null() {
        Err(Error::TensorRt { operation, messages })
    } else {
        Ok(p)
    }
}

/// A call returning `false` on failure.
pub(crate) fn call_bool(operation: &'static str, f: impl FnOnce() -> std::result::Result<bool, cxx::Exception>) -> Result<()> {
    let (ok, messages) = call(operation, f)?;
    if ok {
        Ok(())
    } else {
        Err(Error::TensorRt { operation, messages })
    }
}
