//! Execution contexts: shapes, bindings, enqueue on a CUDA stream.
//!
//! A context is used by one thread at a time (TensorRT: "an execution context
//! must not be used concurrently"): `enqueue` takes `&mut self`; contexts are
//! `Send`, not `Sync`. Buffers bound for an enqueue stay borrowed (through the
//! returned [`Enqueued`]) until the stream work has completed.

use std::collections::HashMap;
use std::pin::Pin;

use trt_sys::ffi;

use crate::call::{call, call_bool};
use crate::cuda::{DeviceBuffer, DevicePtrGuard, Element, Stream};
use crate::engine::{Engine, IoMode};
use crate::{DataType, Error, Result};

/// TensorRT requires I/O addresses aligned to 256 bytes.
pub const IO_ALIGNMENT: usize = 256;

/// An execution context of an [`Engine`].
pub struct ExecutionContext {
    raw: cxx::UniquePtr<ffi::IExecutionContext>,
    engine: Engine,
    profile: usize,
}

// SAFETY: a context may move between threads; `&mut self` on every mutating
// call keeps it to one thread at a time, as TensorRT requires.
unsafe impl Send for ExecutionContext {}

impl std::fmt::Debug for ExecutionContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutionContext").field("profile", &self.profile).finish()
    }
}

/// Device buffers bound to tensor names for one enqueue.
pub struct Bindings<'a> {
    stream: &'a Stream,
    entries: Vec<Bound<'a>>,
}

struct Bound<'a> {
    name: String,
    dtype: DataType,
    bytes: usize,
    address: u64,
    _guard: DevicePtrGuard<'a>,
}

impl<'a> Bindings<'a> {
    /// Bindings for work on `stream`.
    pub fn new(stream: &'a Stream) -> Self {
        Bindings { stream, entries: Vec::new() }
    }

    /// Bind `buffer` to tensor `name` (input or output). Its dtype, size and
    /// alignment are checked at enqueue.
    pub fn bind<T: Element>(mut self, name: &str, buffer: &'a mut DeviceBuffer<T>) -> Result<Self> {
        let bytes = buffer.size_in_bytes();
        let guard = buffer.device_ptr(self.stream)?;
        self.entries.push(Bound { name: name.to_owned(), dtype: T::DTYPE, bytes, address: guard.address(), _guard: guard });
        Ok(self)
    }
}

/// Work enqueued on a stream. The bound buffers stay borrowed until it is
/// waited for (or dropped, which waits too).
#[must_use = "dropping waits for the stream; call wait() to see errors"]
pub struct Enqueued<'a> {
    bindings: Option<Bindings<'a>>,
}

impl Enqueued<'_> {
    /// Block until the enqueued work has finished.
    pub fn wait(mut self) -> Result<()> {
        let b = self.bindings.take().expect("bindings present until waited");
        b.stream.synchronize()
    }
}

impl Drop for Enqueued<'_> {
    fn drop(&mut self) {
        if let Some(b) = self.bindings.take() {
            // Errors cannot be returned from drop; they surface on the stream's next use.
            if let Err(e) = b.stream.synchronize() {
                log::error!(target: "trt", "stream synchronize after enqueue failed: {e}");
            }
        }
    }
}

fn fmt_range(r: &crate::ShapeRange) -> String {
    let parts: Vec<String> =
        r.min.iter().zip(&r.max).map(|(a, b)| if a == b { a.to_string() } else { format!("{a}..={b}") }).collect();
    format!("[{}]", parts.join(", "))
}

impl ExecutionContext {
    /// A context that allocates its own device memory, on profile 0.
    pub fn new(engine: &Engine) -> Result<Self> {
        let raw = engine.create_context_raw(ffi::ExecutionContextAllocationStrategy::kSTATIC)?;
        Ok(ExecutionContext { raw, engine: engine.clone(), profile: 0 })
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    fn pin(&mut self) -> Pin<&mut ffi::IExecutionContext> {
        self.raw.as_mut().expect("non-null context")
    }

    /// The active optimization profile.
    pub fn profile(&self) -> usize {
        self.profile
    }

    /// Switch to optimization profile `index` (ordered on `stream`).
    pub fn set_profile(&mut self, index: usize, stream: &Stream) -> Result<()> {
        if index >= self.engine.num_profiles() {
            return Err(Error::InvalidArgument(format!(
                "profile {index} does not exist (the engine has {})",
                self.engine.num_profiles()
            )));
        }
        let s = stream.as_raw() as usize;
        call_bool("setOptimizationProfileAsync", || ffi::context_set_profile(self.pin(), index as i32, s))?;
        self.profile = index;
        Ok(())
    }

    /// Set an input's shape, checked against the active profile first.
    pub fn set_input_shape(&mut self, name: &str, shape: &[i64]) -> Result<()> {
        let t = self.engine.io_tensor(name)?;
        if t.mode != IoMode::Input {
            return Err(Error::InvalidArgument(format!("'{name}' is an output, not an input")));
        }
        if let Some(range) = t.profiles.get(self.profile) {
            let fits = shape.len() == range.min.len()
                && shape.iter().zip(range.min.iter().zip(&range.max)).all(|(d, (lo, hi))| lo <= d && d <= hi);
            if !fits {
                return Err(Error::ShapeMismatch {
                    tensor: name.to_owned(),
                    expected: format!("{} (profile {})", fmt_range(range), self.profile),
                    got: format!("{shape:?}"),
                });
            }
        }
        call_bool("setInputShape", || ffi::context_set_input_shape(self.pin(), name, shape))
    }

    /// A tensor's current shape (outputs are inferred from the input shapes;
    /// -1 remains for data-dependent dimensions).
    pub fn tensor_shape(&self, name: &str) -> Result<Vec<i64>> {
        self.engine.io_tensor(name)?;
        Ok(call("getTensorShape", || ffi::context_tensor_shape(self.raw.as_ref().expect("context"), name))?.0)
    }

    /// Enqueue inference on the bindings' stream. Checks first that every I/O
    /// tensor is bound once, with the engine's dtype, enough bytes for its
    /// current shape, and 256-byte alignment.
    pub fn enqueue<'a>(&mut self, bindings: Bindings<'a>) -> Result<Enqueued<'a>> {
        let (all, _) = call("allInputDimensionsSpecified", || ffi::context_all_shapes_specified(self.raw.as_ref().expect("context")))?;
        if !all {
            let missing: Vec<String> = self.engine.inputs().filter(|t| t.is_dynamic()).map(|t| t.name.clone()).collect();
            return Err(Error::InvalidArgument(format!("input shapes not set (dynamic inputs: {})", missing.join(", "))));
        }
        let mut by_name: HashMap<&str, &Bound<'a>> = HashMap::new();
        for b in &bindings.entries {
            self.engine.io_tensor(&b.name)?;
            if by_name.insert(b.name.as_str(), b).is_some() {
                return Err(Error::InvalidArgument(format!("tensor '{}' is bound twice", b.name)));
            }
        }
        let engine = self.engine.clone();
        for t in engine.io_tensors() {
            let b = by_name.get(t.name.as_str()).ok_or_else(|| Error::InvalidArgument(format!("no buffer bound for tensor '{}'", t.name)))?;
            if b.dtype != t.dtype {
                return Err(Error::DTypeMismatch { tensor: t.name.clone(), expected: t.dtype, got: b.dtype });
            }
            let shape = self.tensor_shape(&t.name)?;
            if shape.iter().any(|&d| d < 0) {
                return Err(Error::InvalidArgument(format!(
                    "output '{}' has a data-dependent shape {shape:?}; bind it through an output allocator",
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
            if b.address as usize % IO_ALIGNMENT != 0 {
                return Err(Error::Misaligned { tensor: t.name.clone(), address: b.address, required: IO_ALIGNMENT });
            }
            let address = b.address as usize;
            // SAFETY: the address is a live device allocation of sufficient size,
            // borrowed by `bindings` until the work completes.
            call_bool("setTensorAddress", || unsafe { ffi::context_set_tensor_address(self.pin(), &t.name, address) })?;
        }
        let stream = bindings.stream.as_raw() as usize;
        // SAFETY: every I/O address is set and valid; the stream belongs to the context's device.
        call_bool("enqueueV3", || unsafe { ffi::context_enqueue(self.pin(), stream) })?;
        Ok(Enqueued { bindings: Some(bindings) })
    }
}
