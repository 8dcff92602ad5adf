//! IO binding at device addresses: a CUDA session reads its inputs from and
//! writes its outputs to device memory the caller owns, so a batch costs one
//! upload, the model and one download, with no copy or allocation inside
//! ONNX Runtime for the tensors themselves.
//!
//! The caller keeps the memory (this crate allocates none): it binds each
//! input and output by address, element type and shape, and runs the
//! session with [`Session::run_bound`](super::Session::run_bound). A binding
//! whose address, type and shape are unchanged since the last call is left
//! as it is; one that changes to a (name, address, type, shape) seen before
//! reuses the ONNX Runtime value made then (at most [`VALUE_CACHE`] kept), so
//! once every shape has been seen no value is made at all:
//! [`IoBinding::values_made`] stops growing after warm-up, and the bound
//! tensors ([`IoBinding::bound`]) keep their addresses (what the tests check).
//!
//! The values are bound through ONNX Runtime's C API (`BindInput`,
//! `BindOutput`, `RunWithBinding`) rather than `ort`'s `IoBinding` methods:
//! those copy an input that shares the session's device, and read the
//! outputs back as new values after every run, both of which allocate.

use std::ffi::CString;

use half::{bf16, f16};
use ort::memory::{AllocationDevice, AllocatorType, MemoryInfo, MemoryType};
use ort::session::RunOptions;
use ort::value::{Shape, TensorRefMut};
use ort::AsPointer;

use super::cuda::PinnedArena;
use super::ElementType;
use crate::{Error, Result};

/// One tensor bound at a device address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundTensor {
    /// The model's input or output name.
    pub name: String,
    /// Whether it is an output.
    pub output: bool,
    /// Its element type.
    pub element: ElementType,
    /// The device address.
    pub address: u64,
    /// Its shape.
    pub shape: Vec<usize>,
}

/// An ONNX Runtime value over caller-owned device memory (kept alive while bound).
enum Held {
    I32(TensorRefMut<'static, i32>),
    I64(TensorRefMut<'static, i64>),
    F32(TensorRefMut<'static, f32>),
    F16(TensorRefMut<'static, f16>),
    BF16(TensorRefMut<'static, bf16>),
}

impl Held {
    fn ptr(&self) -> *const ort::sys::OrtValue {
        match self {
            Held::I32(t) => t.ptr(),
            Held::I64(t) => t.ptr(),
            Held::F32(t) => t.ptr(),
            Held::F16(t) => t.ptr(),
            Held::BF16(t) => t.ptr(),
        }
    }
}

/// Most ONNX Runtime values kept for reuse per binding (a shape bucket set of
/// a few dozen shapes times five tensors fits; past it the cache starts over).
pub const VALUE_CACHE: usize = 1024;

/// Inputs and outputs of one CUDA session bound at device addresses. Made by
/// [`Session::io_binding`](super::Session::io_binding).
pub struct IoBinding {
    raw: ort::session::IoBinding,
    memory: MemoryInfo<'static>,
    /// What is bound now, by name (index into `cache`).
    current: Vec<usize>,
    cache: Vec<(BoundTensor, Held, CString)>,
    rebinds: u64,
    made: u64,
    /// Run options per CUDA graph id (`None`: no graph), made once.
    runs: Vec<(Option<u32>, RunOptions)>,
    /// The session runs on ONNX Runtime's own stream: each run synchronises it.
    own_stream: bool,
    /// Dropped after `raw`, which keeps the ONNX Runtime session alive.
    _pinned: Option<std::sync::Arc<PinnedArena>>,
}

impl std::fmt::Debug for IoBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IoBinding")
            .field("bound", &self.bound().collect::<Vec<_>>())
            .field("rebinds", &self.rebinds)
            .field("values_made", &self.made)
            .finish()
    }
}

// SAFETY: the binding holds ONNX Runtime values over device memory and an
// OrtIoBinding; neither is tied to the thread that made it, and every use
// takes `&mut self`.
unsafe impl Send for IoBinding {}

impl IoBinding {
    pub(super) fn new(
        raw: ort::session::IoBinding,
        device: u32,
        own_stream: bool,
        pinned: Option<std::sync::Arc<PinnedArena>>,
    ) -> Result<Self> {
        let memory = MemoryInfo::new(AllocationDevice::CUDA, device as i32, AllocatorType::Device, MemoryType::Default)
            .map_err(|e| Error::ort("describing CUDA memory", e))?;
        Ok(IoBinding {
            raw,
            memory,
            current: Vec::new(),
            cache: Vec::new(),
            rebinds: 0,
            made: 0,
            runs: Vec::new(),
            own_stream,
            _pinned: pinned,
        })
    }

    /// Binds input `name` to `shape` elements of `element` at device address `address`.
    ///
    /// # Safety
    /// `address` must point at device memory of the session's device holding
    /// at least `shape`'s element count of `element`, valid and not used for
    /// anything else until it is bound again or the binding is dropped; runs
    /// must be ordered after the writes that fill it (the same stream).
    pub unsafe fn bind_input(&mut self, name: &str, element: ElementType, address: u64, shape: &[usize]) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.bind(name, false, element, address, shape) }
    }

    /// Binds output `name` to device memory, as [`bind_input`](Self::bind_input).
    ///
    /// # Safety
    /// As for [`bind_input`](Self::bind_input); ONNX Runtime writes the
    /// output there during each run.
    pub unsafe fn bind_output(&mut self, name: &str, element: ElementType, address: u64, shape: &[usize]) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.bind(name, true, element, address, shape) }
    }

    unsafe fn bind(&mut self, name: &str, output: bool, element: ElementType, address: u64, shape: &[usize]) -> Result<()> {
        let same = |b: &BoundTensor| b.name == name && b.output == output;
        let equal = |b: &BoundTensor| same(b) && b.element == element && b.address == address && b.shape == shape;
        let now = self.current.iter().position(|&i| same(&self.cache[i].0));
        if now.is_some_and(|k| equal(&self.cache[self.current[k]].0)) {
            return Ok(());
        }
        let index = match self.cache.iter().position(|(b, _, _)| equal(b)) {
            Some(i) => i,
            None => {
                if self.cache.len() >= VALUE_CACHE {
                    // Start over, keeping what is bound now (its values must stay alive).
                    let mut old: Vec<Option<(BoundTensor, Held, CString)>> =
                        std::mem::take(&mut self.cache).into_iter().map(Some).collect();
                    for k in 0..self.current.len() {
                        let i = std::mem::replace(&mut self.current[k], k);
                        self.cache.push(old[i].take().expect("each cached value is bound under one name"));
                    }
                }
                // SAFETY: forwarded to the caller.
                let value = unsafe { self.make(name, output, element, address, shape)? };
                self.cache.push(value);
                self.made += 1;
                self.cache.len() - 1
            }
        };
        let (_, held, cname) = &self.cache[index];
        let api = ort::api();
        let bind = if output { api.BindOutput } else { api.BindInput };
        // SAFETY: the binding, the name and the value are valid; ONNX Runtime
        // keeps a reference to the value, which the cache holds while it is bound.
        status(unsafe { bind(self.raw.ptr_mut(), cname.as_ptr(), held.ptr()) }, name)?;
        match now {
            Some(k) => self.current[k] = index,
            None => self.current.push(index),
        }
        self.rebinds += 1;
        Ok(())
    }

    unsafe fn make(
        &self,
        name: &str,
        output: bool,
        element: ElementType,
        address: u64,
        shape: &[usize],
    ) -> Result<(BoundTensor, Held, CString)> {
        let err = |e: ort::Error| Error::Tensor { tensor: name.to_owned(), problem: format!("binding at {address:#x}: {e}") };
        let dims = Shape::new(shape.iter().map(|&d| d as i64));
        let data = address as usize as *mut ort::sys::c_void;
        let info = self.memory.clone();
        // SAFETY: the caller promised `address` holds the tensor on this device.
        let held = unsafe {
            match element {
                ElementType::I32 => Held::I32(TensorRefMut::from_raw(info, data, dims).map_err(err)?),
                ElementType::I64 => Held::I64(TensorRefMut::from_raw(info, data, dims).map_err(err)?),
                ElementType::F32 => Held::F32(TensorRefMut::from_raw(info, data, dims).map_err(err)?),
                ElementType::F16 => Held::F16(TensorRefMut::from_raw(info, data, dims).map_err(err)?),
                ElementType::BF16 => Held::BF16(TensorRefMut::from_raw(info, data, dims).map_err(err)?),
                other => return Err(Error::Tensor { tensor: name.to_owned(), problem: format!("{other} tensors cannot be bound") }),
            }
        };
        let cname = CString::new(name).map_err(|_| Error::Tensor { tensor: name.to_owned(), problem: "a NUL in the name".into() })?;
        Ok((BoundTensor { name: name.to_owned(), output, element, address, shape: shape.to_vec() }, held, cname))
    }

    /// What is bound now, inputs and outputs.
    pub fn bound(&self) -> impl Iterator<Item = &BoundTensor> {
        self.current.iter().map(|&i| &self.cache[i].0)
    }

    /// How many times a tensor was (re)bound since the binding was made
    /// (each a `BindInput`/`BindOutput` call, no allocation where the value was cached).
    pub fn rebinds(&self) -> u64 {
        self.rebinds
    }

    /// How many ONNX Runtime values were made (one per distinct name,
    /// address and shape, while the cache holds them).
    pub fn values_made(&self) -> u64 {
        self.made
    }

    /// The run options for `graph` (made on first use): the CUDA graph id
    /// and, on the caller's stream, no synchronisation at the end of the run
    /// (the caller's download is ordered after it on that stream).
    pub(super) fn run_options(&mut self, graph: Option<u32>) -> Result<&RunOptions> {
        if let Some(i) = self.runs.iter().position(|(g, _)| *g == graph) {
            return Ok(&self.runs[i].1);
        }
        let e = |err: ort::Error| Error::ort("setting run options", err);
        let mut options = RunOptions::new().map_err(e)?;
        if !self.own_stream {
            options.set("disable_synchronize_execution_providers", "1").map_err(e)?;
        }
        options.set("gpu_graph_id", graph.map_or_else(|| "-1".to_owned(), |g| g.to_string())).map_err(e)?;
        self.runs.push((graph, options));
        Ok(&self.runs.last().expect("pushed above").1)
    }

    pub(super) fn raw(&self) -> &ort::session::IoBinding {
        &self.raw
    }
}

/// An ONNX Runtime status pointer as a result (releasing the status).
pub(super) fn status(s: ort::sys::OrtStatusPtr, what: &str) -> Result<()> {
    if s.0.is_null() {
        return Ok(());
    }
    let api = ort::api();
    // SAFETY: a non-null status from the API; its message is a NUL-terminated
    // string owned by the status, copied before the status is released.
    let message = unsafe {
        let m = (api.GetErrorMessage)(s.0);
        let text = if m.is_null() { String::from("(no message)") } else { std::ffi::CStr::from_ptr(m).to_string_lossy().into_owned() };
        (api.ReleaseStatus)(s.0);
        text
    };
    Err(Error::ort(what, message))
}
