//! Execution contexts: shapes, bindings, enqueue on a CUDA stream.
//!
//! A context is used by one thread at a time (TensorRT: "an execution context
//! must not be used concurrently"): every mutating call takes `&mut self`;
//! contexts are `Send`, not `Sync`. Its GPU work is ordered too (one event at
//! its latest work, `trt/src/work.rs`): every enqueue, profile switch or graph launch
//! waits for the context's previous work and records itself, whether or not
//! TensorRT reported success (a failed `enqueueV3` may have enqueued part of
//! its work), and dropping the context waits for it.
//!
//! The context remembers what it told TensorRT: the active profile, every
//! input shape, every tensor address, the output shapes TensorRT inferred. A
//! call that would change nothing makes no TensorRT call, so a steady stream
//! of same-shaped batches through the same buffers costs one `enqueueV3` each
//! (see [`ContextCalls`]). Changes made through the raw handle
//! ([`AsRaw`](crate::AsRaw)) bypass that memory: do not mix the two.

use std::cell::Cell;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use trt_sys::callbacks::{OutputCallbacks, OutputSink};
use trt_sys::ffi;

use crate::binding::{check_names, check_tensor, AddressPlan, Bindings, Bound};
use crate::call::{call, call_bool, call_owned};
use crate::cuda::{Device, DeviceBuffer, Stream};
use crate::engine::{Engine, IoMode};
use crate::work::WorkOrder;
use crate::{Error, Result};

/// Device memory for the activations of several contexts that never run at the
/// same time (TensorRT's user-managed allocation). Every enqueue takes the lock
/// and orders its stream after the previous user's work, so sharing is safe
/// across streams too.
#[derive(Clone)]
pub struct SharedDeviceMemory {
    buffer: Arc<Mutex<DeviceBuffer<u8>>>,
}

impl std::fmt::Debug for SharedDeviceMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedDeviceMemory")
    }
}

impl SharedDeviceMemory {
    /// Enough memory for any context of `engine` (`getDeviceMemorySizeV2`).
    pub fn for_engine(engine: &Engine, stream: &Stream) -> Result<Self> {
        let bytes = engine.device_memory_size()?.max(1);
        Ok(SharedDeviceMemory { buffer: Arc::new(Mutex::new(DeviceBuffer::zeros(bytes, stream)?)) })
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.buffer.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Is it empty?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How TensorRT-RTX compiles shape-specialized kernels for a new input shape
/// (`DynamicShapesKernelSpecializationStrategy`).
#[cfg(trt_rtx)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelSpecialization {
    /// In the background; fallback kernels run until it is done (RTX's default).
    Lazy,
    /// Blocking, in the enqueue that first sees the shape.
    Eager,
    /// Never: fallback kernels only.
    Never,
}

/// Options for creating an [`ExecutionContext`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ContextOptions {
    #[cfg(trt_rtx)]
    specialization: Option<KernelSpecialization>,
    #[cfg(trt_rtx)]
    rtx_graphs: Option<bool>,
}

impl ContextOptions {
    /// The defaults: TensorRT's own.
    pub fn new() -> Self {
        Self::default()
    }

    /// How TensorRT-RTX's JIT specializes kernels for new shapes.
    #[cfg(trt_rtx)]
    pub fn kernel_specialization(mut self, s: KernelSpecialization) -> Self {
        self.specialization = Some(s);
        self
    }

    /// Let TensorRT-RTX capture and replay each enqueue as a CUDA graph itself
    /// (`CudaGraphStrategy::kWHOLE_GRAPH_CAPTURE`: captured after the JIT has
    /// compiled the shape's kernels). The alternative to
    /// [`ExecutionContext::capture_graph`] on RTX.
    #[cfg(trt_rtx)]
    pub fn rtx_cuda_graphs(mut self, on: bool) -> Self {
        self.rtx_graphs = Some(on);
        self
    }

    /// The shim's encoding: (specialization, rtx_graphs), -1 for the default.
    fn encoded(&self) -> (i32, i32) {
        #[cfg(trt_rtx)]
        {
            let s = match self.specialization {
                None => -1,
                Some(KernelSpecialization::Lazy) => 0,
                Some(KernelSpecialization::Eager) => 1,
                Some(KernelSpecialization::Never) => 2,
            };
            (s, self.rtx_graphs.map_or(-1, i32::from))
        }
        #[cfg(not(trt_rtx))]
        {
            (-1, -1)
        }
    }

    /// The options of a context made for a graph capture: on RTX, kernels are
    /// compiled in the warm-up enqueue (so the graph never freezes fallback
    /// kernels) and RTX's own graphs are off (the capture is ours).
    pub(crate) fn for_capture() -> Self {
        #[cfg(trt_rtx)]
        {
            ContextOptions { specialization: Some(KernelSpecialization::Eager), rtx_graphs: Some(false) }
        }
        #[cfg(not(trt_rtx))]
        {
            ContextOptions::default()
        }
    }
}

/// How many TensorRT calls a context has made, by kind: the hot path's cost,
/// checkable (a batch of the same shapes through the same buffers should add
/// one `enqueue` and nothing else).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContextCalls {
    /// `setInputShape`.
    pub set_input_shape: u64,
    /// `setTensorAddress`.
    pub set_tensor_address: u64,
    /// `getTensorShape`.
    pub tensor_shape: u64,
    /// `inferShapes`.
    pub infer_shapes: u64,
    /// `setOptimizationProfileAsync`.
    pub set_profile: u64,
    /// `setDeviceMemoryV2` (shared-memory contexts).
    pub set_device_memory: u64,
    /// `enqueueV3` (including the warm-up and the captured one of a graph).
    pub enqueue: u64,
}

impl ContextCalls {
    /// All calls.
    pub fn total(&self) -> u64 {
        self.set_input_shape
            + self.set_tensor_address
            + self.tensor_shape
            + self.infer_shapes
            + self.set_profile
            + self.set_device_memory
            + self.enqueue
    }
}

/// What the context last told TensorRT about one I/O tensor.
#[derive(Debug, Clone, Default)]
pub(crate) struct TensorState {
    /// Inputs: the shape set (or the engine's static one); outputs: the shape
    /// TensorRT inferred for the current inputs.
    pub(crate) shape: Vec<i64>,
    /// `shape` is current (outputs go stale when an input shape changes).
    known: bool,
    /// The address last set with `setTensorAddress` (0: null; `None`: not
    /// known, e.g. after a profile switch, so the next enqueue sets it).
    address: Option<u64>,
}

/// An execution context of an [`Engine`].
pub struct ExecutionContext {
    // Destroyed first (field order), after `Drop::drop` waited for its work.
    raw: cxx::UniquePtr<ffi::IExecutionContext>,
    pub(crate) engine: Engine,
    pub(crate) profile: usize,
    pub(crate) shared_memory: Option<SharedDeviceMemory>,
    // Kept alive while TensorRT may call them: dropped after the context
    // (field order); a replaced one is retired into `work`.
    pub(crate) allocators: Vec<(usize, cxx::UniquePtr<ffi::OutputAllocator>)>,
    // Likewise: TensorRT calls it during enqueue and reportToProfiler (crate::profiler).
    profiler: Option<crate::profiler::Profiler>,
    pub(crate) tensors: Vec<TensorState>,
    /// `inferShapes` succeeded for the current input shapes.
    shapes_checked: bool,
    work: WorkOrder,
    calls: Cell<ContextCalls>,
    pub(crate) id: u64,
}

// SAFETY: a context may move between threads; `&mut self` on every mutating
// call keeps it to one thread at a time, as TensorRT requires. (`Cell` keeps
// it `!Sync`.)
unsafe impl Send for ExecutionContext {}

impl std::fmt::Debug for ExecutionContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutionContext").field("profile", &self.profile).field("work", &self.work).finish()
    }
}

/// Work enqueued on a stream. The bound buffers stay borrowed until it is
/// waited for, dropped (which waits too) or [released](Enqueued::release).
#[must_use = "dropping waits for the stream; call wait() to see errors, or release() to go on without waiting"]
pub struct Enqueued<'a> {
    stream: Option<&'a Stream>,
    _buffers: std::marker::PhantomData<&'a mut ()>,
}

impl Enqueued<'_> {
    /// Block until the enqueued work has finished.
    pub fn wait(mut self) -> Result<()> {
        Ok(self.stream.take().expect("stream present until waited").synchronize()?)
    }

    /// Give the buffers back without waiting. Sound because each bound buffer
    /// recorded this enqueue as its latest use: any later use of it (a copy,
    /// another enqueue, a host view of what is copied from it, its drop)
    /// waits for this work on the GPU first.
    pub fn release(mut self) {
        self.stream = None;
    }
}

impl Drop for Enqueued<'_> {
    fn drop(&mut self) {
        if let Some(stream) = self.stream.take() {
            // Errors cannot be returned from drop; they surface on the stream's next use.
            if let Err(e) = stream.synchronize() {
                tracing::error!(target: "trt", "stream synchronize after enqueue failed: {e}");
            }
        }
    }
}

/// Identities of execution contexts, so a graph is only launched through its own.
static NEXT_CONTEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn fmt_range(r: &crate::ShapeRange) -> String {
    let parts: Vec<String> = r.min.iter().zip(&r.max).map(|(a, b)| if a == b { a.to_string() } else { format!("{a}..={b}") }).collect();
    format!("[{}]", parts.join(", "))
}

impl ExecutionContext {
    /// A context that allocates its own device memory, on profile 0.
    pub fn new(engine: &Engine) -> Result<Self> {
        Self::with_options(engine, &ContextOptions::default())
    }

    /// A context with `options` that allocates its own device memory, on profile 0.
    pub fn with_options(engine: &Engine, options: &ContextOptions) -> Result<Self> {
        Self::create(engine, ffi::ExecutionContextAllocationStrategy::kSTATIC, options, None)
    }

    /// A context whose activation memory is `memory`, shared with other contexts
    /// (each enqueue orders itself after the previous user of the memory).
    pub fn with_shared_memory(engine: &Engine, memory: &SharedDeviceMemory) -> Result<Self> {
        let needed = engine.device_memory_size()?;
        if memory.len() < needed {
            return Err(Error::InvalidArgument(format!(
                "shared device memory of {} bytes is smaller than the engine needs ({needed})",
                memory.len()
            )));
        }
        let strategy = ffi::ExecutionContextAllocationStrategy::kUSER_MANAGED;
        Self::create(engine, strategy, &ContextOptions::default(), Some(memory.clone()))
    }

    pub(crate) fn create(
        engine: &Engine,
        strategy: ffi::ExecutionContextAllocationStrategy,
        options: &ContextOptions,
        shared_memory: Option<SharedDeviceMemory>,
    ) -> Result<Self> {
        let (specialization, rtx_graphs) = options.encoded();
        // Binds the engine's device first: TensorRT allocates there.
        let raw = engine.create_context_raw(strategy, specialization, rtx_graphs)?;
        let tensors = engine
            .io_tensors()
            .iter()
            .map(|t| {
                let static_input = t.mode == IoMode::Input && !t.is_dynamic();
                TensorState { shape: if static_input { t.shape.clone() } else { Vec::new() }, known: static_input, address: None }
            })
            .collect();
        Ok(ExecutionContext {
            raw,
            engine: engine.clone(),
            profile: 0,
            shared_memory,
            allocators: Vec::new(),
            profiler: None,
            tensors,
            shapes_checked: false,
            work: WorkOrder::default(),
            calls: Cell::new(ContextCalls::default()),
            id: NEXT_CONTEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        })
    }

    fn count(&self, f: impl FnOnce(&mut ContextCalls)) {
        let mut c = self.calls.get();
        f(&mut c);
        self.calls.set(c);
    }

    /// The TensorRT calls this context has made so far.
    pub fn calls(&self) -> ContextCalls {
        self.calls.get()
    }

    /// Let `callbacks` allocate output `name` during execution (outputs whose
    /// shape depends on the data). Such an output needs no binding, and may
    /// still be given a preallocated buffer (TensorRT reallocates only when it
    /// is too small). An allocator it replaces is kept alive until the
    /// context's work so far has completed.
    pub fn set_output_allocator(&mut self, name: &str, callbacks: Box<dyn OutputCallbacks>) -> Result<()> {
        let index = self.engine.io_index(name)?;
        if self.engine.io_tensors()[index].mode != IoMode::Output {
            return Err(Error::InvalidArgument(format!("'{name}' is not an output")));
        }
        let mut allocator = call_owned("new OutputAllocator", || ffi::new_output_allocator(OutputSink::new(callbacks)))?;
        let pinned = allocator.as_mut().expect("non-null allocator");
        call_bool("setOutputAllocator", || ffi::context_set_output_allocator(self.pin(), name, pinned))?;
        let old = match self.allocators.iter_mut().find(|(i, _)| *i == index) {
            Some((_, slot)) => Some(std::mem::replace(slot, allocator)),
            None => {
                self.allocators.push((index, allocator));
                None
            }
        };
        if let Some(old) = old {
            self.work.retire(Box::new(RetiredAllocator(old)))?;
        }
        Ok(())
    }

    /// Output allocators replaced but still waiting for the work that may use them.
    pub fn retired_allocators(&self) -> usize {
        self.work.retired()
    }

    pub(crate) fn raw_ptr(&self) -> *mut ffi::IExecutionContext {
        self.raw.as_mut_ptr()
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn pin(&mut self) -> Pin<&mut ffi::IExecutionContext> {
        self.raw.as_mut().expect("non-null context")
    }

    pub(crate) fn get_raw(&self) -> &ffi::IExecutionContext {
        self.raw.as_ref().expect("non-null context")
    }

    /// The active optimization profile.
    pub fn profile(&self) -> usize {
        self.profile
    }

    /// Switch to optimization profile `index`, on `stream`: ordered after the
    /// context's earlier work and recorded as its latest, so the next enqueue
    /// (on any stream) waits for TensorRT's profile copies. Input shapes must
    /// be set again afterwards.
    pub fn set_profile(&mut self, index: usize, stream: &Stream) -> Result<()> {
        if index >= self.engine.num_profiles() {
            return Err(Error::InvalidArgument(format!("profile {index} does not exist (the engine has {})", self.engine.num_profiles())));
        }
        self.check_device(stream.device())?;
        stream.device().bind()?;
        self.work.order(stream)?;
        let s = stream.as_raw() as usize;
        self.count(|c| c.set_profile += 1);
        let switched = call_bool("setOptimizationProfileAsync", || ffi::context_set_profile(self.pin(), index as i32, s));
        // Whatever TensorRT enqueued before reporting is now the latest work.
        let recorded = self.work.record(stream);
        switched?;
        recorded?;
        self.profile = index;
        for (t, s) in self.engine.io_tensors().iter().zip(&mut self.tensors) {
            if t.mode == IoMode::Output || t.is_dynamic() {
                s.known = false;
            }
            s.address = None;
        }
        self.shapes_checked = false;
        Ok(())
    }

    /// Set an input's shape, checked against the active profile first. Setting
    /// the shape it already has makes no TensorRT call.
    pub fn set_input_shape(&mut self, name: &str, shape: &[i64]) -> Result<()> {
        let index = self.engine.io_index(name)?;
        let t = &self.engine.io_tensors()[index];
        if t.mode != IoMode::Input {
            return Err(Error::InvalidArgument(format!("'{name}' is an output, not an input")));
        }
        let state = &self.tensors[index];
        if state.known && state.shape == shape {
            return Ok(());
        }
        if let Some(range) = t.profiles.get(self.profile) {
            if !range.contains(shape) {
                return Err(Error::ShapeMismatch {
                    tensor: name.to_owned(),
                    expected: format!("{} (profile {})", fmt_range(range), self.profile),
                    got: format!("{shape:?}"),
                });
            }
        }
        self.count(|c| c.set_input_shape += 1);
        let set = call_bool("setInputShape", || ffi::context_set_input_shape(self.pin(), name, shape));
        let state = &mut self.tensors[index];
        state.known = set.is_ok();
        state.shape.clear();
        state.shape.extend_from_slice(shape);
        for (t, s) in self.engine.io_tensors().iter().zip(&mut self.tensors) {
            if t.mode == IoMode::Output {
                s.known = false;
            }
        }
        self.shapes_checked = false;
        set
    }

    /// A tensor's current shape (outputs are inferred from the input shapes;
    /// -1 remains for data-dependent dimensions). Answered from what the
    /// context remembers when it can (see [`current_shape`](Self::current_shape)).
    pub fn tensor_shape(&self, name: &str) -> Result<Vec<i64>> {
        let index = self.engine.io_index(name)?;
        let state = &self.tensors[index];
        if state.known {
            return Ok(state.shape.clone());
        }
        self.count(|c| c.tensor_shape += 1);
        Ok(call("getTensorShape", || ffi::context_tensor_shape(self.raw.as_ref().expect("context"), name))?.0)
    }

    /// A tensor's current shape, read from TensorRT at most once per change of
    /// the input shapes.
    pub fn current_shape(&mut self, name: &str) -> Result<&[i64]> {
        let index = self.engine.io_index(name)?;
        self.shape_at(index)
    }

    fn shape_at(&mut self, index: usize) -> Result<&[i64]> {
        if !self.tensors[index].known {
            let engine = self.engine.clone();
            let name = &engine.io_tensors()[index].name;
            self.count(|c| c.tensor_shape += 1);
            let (shape, _) = call("getTensorShape", || ffi::context_tensor_shape(self.raw.as_ref().expect("context"), name))?;
            let state = &mut self.tensors[index];
            state.shape = shape;
            // Inputs count as known only once set (or static).
            state.known = engine.io_tensors()[index].mode == IoMode::Output;
        }
        Ok(&self.tensors[index].shape)
    }

    /// Every input shape is set: a Rust-side check that names the dynamic
    /// inputs never set, then TensorRT's `inferShapes` (once per change).
    pub(crate) fn check_shapes(&mut self) -> Result<()> {
        if self.shapes_checked {
            return Ok(());
        }
        let unset: Vec<String> = self
            .engine
            .io_tensors()
            .iter()
            .zip(&self.tensors)
            .filter(|(t, s)| t.mode == IoMode::Input && !t.is_shape_tensor && !s.known)
            .map(|(t, _)| t.name.clone())
            .collect();
        if !unset.is_empty() {
            return Err(Error::MissingInputShapes { inputs: unset });
        }
        self.count(|c| c.infer_shapes += 1);
        let (inferred, messages) = call("inferShapes", || ffi::context_infer_shapes(self.pin()))?;
        match inferred.status {
            0 => {
                self.shapes_checked = true;
                Ok(())
            }
            n if n > 0 => Err(Error::MissingInputShapes { inputs: inferred.missing }),
            _ => Err(Error::TensorRt { operation: "inferShapes", messages }),
        }
    }

    /// Check the bound buffers against the engine, the active profile's
    /// formats and the current shapes, and give TensorRT the addresses that
    /// changed: every I/O tensor bound once (outputs with an allocator may be
    /// left out), the engine's dtype, enough bytes, 256-byte alignment.
    pub(crate) fn set_addresses(&mut self, bound: &[Bound<'_>]) -> Result<()> {
        self.check_shapes()?;
        check_names(self.engine.io_tensors(), bound)?;
        let engine = &self.engine;
        for (index, t) in engine.io_tensors().iter().enumerate() {
            let entry = bound.iter().map(|b| &b.entry).find(|e| e.name == t.name);
            let has_allocator = self.allocators.iter().any(|(i, _)| *i == index);
            if !self.tensors[index].known {
                self.count(|c| c.tensor_shape += 1);
                let (shape, _) = call("getTensorShape", || ffi::context_tensor_shape(self.raw.as_ref().expect("context"), &t.name))?;
                self.tensors[index].shape = shape;
                self.tensors[index].known = true;
            }
            let format = &engine.formats()[index][self.profile];
            let plan = check_tensor(t, format, &self.tensors[index].shape, has_allocator, entry)?;
            let address = match plan {
                AddressPlan::Set(a) => a,
                AddressPlan::Allocator => 0,
            };
            if self.tensors[index].address == Some(address) {
                continue;
            }
            let mut calls = self.calls.get();
            calls.set_tensor_address += 1;
            self.calls.set(calls);
            let raw = self.raw.as_mut().expect("non-null context");
            // SAFETY: a live device allocation of sufficient size (checked
            // above), kept borrowed until the work using it has completed; or
            // null for an output its allocator provides.
            call_bool("setTensorAddress", || unsafe { ffi::context_set_tensor_address(raw, &t.name, address as usize) })?;
            self.tensors[index].address = Some(address);
        }
        Ok(())
    }

    /// enqueueV3 on `stream`, after pointing a shared-memory context at its
    /// memory (ordered after the memory's previous user), ordered after the
    /// context's previous work and recorded as its latest, also on failure.
    pub(crate) fn enqueue_raw(&mut self, stream: &Stream) -> Result<()> {
        self.check_device(stream.device())?;
        // TensorRT launches on the thread's current context: the stream's.
        stream.device().bind()?;
        self.work.order(stream)?;
        let enqueued = self.enqueue_unordered(stream);
        let recorded = self.work.record(stream);
        enqueued?;
        recorded
    }

    /// Work for an engine deserialized onto one GPU must stay on that GPU.
    pub(crate) fn check_device(&self, device: &Device) -> Result<()> {
        match self.engine.device() {
            Some(d) if d != device => {
                Err(Error::InvalidArgument(format!("the engine lives on GPU {}, the stream on GPU {}", d.ordinal(), device.ordinal())))
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn work(&mut self) -> &mut WorkOrder {
        &mut self.work
    }

    fn enqueue_unordered(&mut self, stream: &Stream) -> Result<()> {
        let raw_stream = stream.as_raw() as usize;
        self.count(|c| c.enqueue += 1);
        let Some(memory) = self.shared_memory.clone() else {
            // SAFETY: every I/O address is set and valid.
            return call_bool("enqueueV3", || unsafe { ffi::context_enqueue(self.pin(), raw_stream) });
        };
        let mut buffer = memory.buffer.lock().unwrap_or_else(|e| e.into_inner());
        let size = buffer.len() as i64;
        // The guard makes `stream` wait for the memory's previous use and, when
        // dropped after the enqueue, records this one.
        let guard = buffer.device_ptr(stream)?;
        let address = guard.address() as usize;
        self.count(|c| c.set_device_memory += 1);
        // SAFETY: the memory is at least getDeviceMemorySizeV2 bytes (checked at creation).
        call("setDeviceMemoryV2", || unsafe { ffi::context_set_device_memory(self.pin(), address, size) })?;
        // SAFETY: as above.
        call_bool("enqueueV3", || unsafe { ffi::context_enqueue(self.pin(), raw_stream) })
    }

    /// The captured enqueue of a graph: on the capturing stream, unordered
    /// (nothing runs during capture).
    pub(crate) fn enqueue_captured(&mut self, raw_stream: usize) -> Result<()> {
        self.count(|c| c.enqueue += 1);
        // SAFETY: the addresses were set and checked by the warm-up; the
        // capture tracks every bound buffer.
        call_bool("enqueueV3 (capture)", || unsafe { ffi::context_enqueue(self.pin(), raw_stream) })
    }

    /// TensorRT's `isStreamCapturable` for `stream`: `None` where the headers
    /// lack the query (all but TensorRT-RTX).
    pub(crate) fn stream_capturable(&self, stream: &Stream) -> Result<Option<bool>> {
        let s = stream.as_raw() as usize;
        let (r, _) = call("isStreamCapturable", || ffi::context_is_stream_capturable(self.raw.as_ref().expect("context"), s))?;
        Ok(match r {
            1 => Some(true),
            0 => Some(false),
            _ => None,
        })
    }

    /// Enqueue inference on the bindings' stream, after checking the bindings
    /// (see [`Bindings`]). The returned [`Enqueued`] keeps the buffers borrowed
    /// until the work has completed (or is released).
    pub fn enqueue<'a>(&mut self, bindings: Bindings<'a>) -> Result<Enqueued<'a>> {
        self.set_addresses(&bindings.entries)?;
        self.enqueue_raw(bindings.stream)?;
        // Dropping the guards now records each buffer's use after the enqueue,
        // so the buffers cannot be freed before the work, whatever happens to
        // the returned value.
        let Bindings { stream, entries } = bindings;
        drop(entries);
        Ok(Enqueued { stream: Some(stream), _buffers: std::marker::PhantomData })
    }
}

/// Per-layer timing: the context's side of `IProfiler` ([`crate::profiler`]).
impl ExecutionContext {
    /// Report each layer's time to `profiler` (`setProfiler`). With the
    /// default (`enqueue_emits_profile` on), every enqueue reports; off, call
    /// [`report_to_profiler`](Self::report_to_profiler) after the stream
    /// completed. A profiler it replaces is returned.
    pub fn set_profiler(&mut self, mut profiler: crate::profiler::Profiler) -> Result<Option<crate::profiler::Profiler>> {
        let pinned = profiler.pin();
        call("setProfiler", || ffi::context_set_profiler(self.pin(), pinned))?;
        Ok(self.profiler.replace(profiler))
    }

    /// Detach the profiler (`setProfiler(nullptr)`) and hand it back.
    pub fn clear_profiler(&mut self) -> Result<Option<crate::profiler::Profiler>> {
        call("setProfiler", || ffi::context_clear_profiler(self.pin()))?;
        Ok(self.profiler.take())
    }

    /// Whether each enqueue reports to the profiler (`setEnqueueEmitsProfile`;
    /// on by default). Off, an enqueue is not slowed by reporting and
    /// [`report_to_profiler`](Self::report_to_profiler) reports the last one.
    pub fn set_enqueue_emits_profile(&mut self, on: bool) -> Result<()> {
        call("setEnqueueEmitsProfile", || ffi::context_set_enqueue_emits_profile(self.pin(), on))?;
        Ok(())
    }

    /// Report the last execution's layer times (`reportToProfiler`); the
    /// stream it ran on must have completed. Errors when no profiler is set,
    /// when TensorRT refuses, or when the callbacks panicked.
    pub fn report_to_profiler(&mut self) -> Result<()> {
        if self.profiler.is_none() {
            return Err(Error::InvalidArgument("report_to_profiler needs a profiler (set_profiler)".into()));
        }
        let (ok, messages) = call("reportToProfiler", || ffi::context_report_to_profiler(self.get_raw()))?;
        self.profiler_error()?;
        if !ok {
            return Err(Error::TensorRt { operation: "reportToProfiler", messages });
        }
        Ok(())
    }

    /// [`Error::CallbackPanicked`] when the attached profiler's callbacks panicked.
    pub fn profiler_error(&mut self) -> Result<()> {
        self.profiler.as_ref().map_or(Ok(()), crate::profiler::Profiler::check)
    }
}

/// A replaced output allocator waiting for the work that may still use it.
struct RetiredAllocator(#[allow(dead_code)] cxx::UniquePtr<ffi::OutputAllocator>);
// SAFETY: the allocator is only dropped here, after TensorRT stopped using it;
// its Rust callbacks are `Send` (OutputCallbacks: Send).
unsafe impl Send for RetiredAllocator {}

impl Drop for ExecutionContext {
    fn drop(&mut self) {
        // TensorRT must not destroy a context while its work runs.
        if let Err(e) = self.work.wait() {
            tracing::error!(target: "trt", "waiting for an execution context's work failed ({e}); leaking the context");
            std::mem::forget(std::mem::replace(&mut self.raw, cxx::UniquePtr::null()));
            std::mem::forget(std::mem::take(&mut self.allocators));
            std::mem::forget(self.profiler.take());
            return;
        }
        // TensorRT frees the context's memory on the thread's current device.
        let device = self.engine.device().or(self.work.device()).cloned();
        if let Some(device) = device {
            if let Err(e) = device.bind() {
                tracing::error!(target: "trt", "binding GPU {} to destroy a context failed: {e}", device.ordinal());
            }
        }
    }
}
