//! Execution contexts: shapes, bindings, enqueue on a CUDA stream.
//!
//! A context is used by one thread at a time (TensorRT: "an execution context
//! must not be used concurrently"): `enqueue` takes `&mut self`; contexts are
//! `Send`, not `Sync`. Its GPU work is ordered too: every enqueue (or graph
//! launch) records an event, the next one on any stream waits for it, and
//! dropping the context waits for it, so a context's working memory is never
//! used by two launches at once or freed under one. Buffers bound for an
//! enqueue record their own use right after it (so even a forgotten
//! [`Enqueued`] cannot let them be freed early) and stay borrowed until the
//! [`Enqueued`] is waited for or dropped.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use trt_sys::callbacks::{OutputCallbacks, OutputSink};
use trt_sys::ffi;

use crate::call::{call, call_bool, call_owned};
use crate::cuda::{CudaGraph, Device, DeviceBuffer, DevicePtrGuard, Element, Event, GraphResource, Stream};
use crate::engine::{Engine, IoMode};
use crate::{DataType, Error, Result};

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

mod sealed {
    pub trait Sealed {}
}

impl<T: Element> sealed::Sealed for DeviceBuffer<T> {}

/// A device buffer that can be bound to an engine tensor in a captured graph.
/// Sealed: the graph trusts its address and size, so only this crate's
/// buffers implement it.
pub trait IoBuffer: sealed::Sealed {
    /// Element type.
    fn io_dtype(&self) -> DataType;
    /// Size in bytes.
    fn io_bytes(&self) -> usize;
    /// Device address.
    fn io_address(&self) -> u64;
    /// The buffer as a graph resource (for launch-time tracking).
    fn as_resource(&self) -> &dyn GraphResource;
}

impl<T: Element> IoBuffer for DeviceBuffer<T> {
    fn io_dtype(&self) -> DataType {
        T::DTYPE
    }
    fn io_bytes(&self) -> usize {
        self.size_in_bytes()
    }
    fn io_address(&self) -> u64 {
        self.address()
    }
    fn as_resource(&self) -> &dyn GraphResource {
        self
    }
}

/// Name, type, size and address of one bound buffer: what the checks need.
struct Entry {
    name: String,
    dtype: DataType,
    bytes: usize,
    address: u64,
}

/// TensorRT requires I/O addresses aligned to 256 bytes.
pub const IO_ALIGNMENT: usize = 256;

/// An execution context of an [`Engine`].
pub struct ExecutionContext {
    raw: cxx::UniquePtr<ffi::IExecutionContext>,
    engine: Engine,
    profile: usize,
    shared_memory: Option<SharedDeviceMemory>,
    // Kept alive while TensorRT may call them; dropped after the context (field order).
    allocators: HashMap<String, cxx::UniquePtr<ffi::OutputAllocator>>,
    // Recorded after each enqueue or graph launch: orders the next one and the drop.
    last_work: Option<Event>,
    id: u64,
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
    entry: Entry,
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
        let entry = Entry { name: name.to_owned(), dtype: T::DTYPE, bytes, address: guard.address() };
        self.entries.push(Bound { entry, _guard: guard });
        Ok(self)
    }
}

/// Work enqueued on a stream. The bound buffers stay borrowed until it is
/// waited for (or dropped, which waits too).
#[must_use = "dropping waits for the stream; call wait() to see errors"]
pub struct Enqueued<'a> {
    stream: Option<&'a Stream>,
    _buffers: std::marker::PhantomData<&'a mut ()>,
}

impl Enqueued<'_> {
    /// Block until the enqueued work has finished.
    pub fn wait(mut self) -> Result<()> {
        self.stream.take().expect("stream present until waited").synchronize()
    }
}

impl Drop for Enqueued<'_> {
    fn drop(&mut self) {
        if let Some(stream) = self.stream.take() {
            // Errors cannot be returned from drop; they surface on the stream's next use.
            if let Err(e) = stream.synchronize() {
                log::error!(target: "trt", "stream synchronize after enqueue failed: {e}");
            }
        }
    }
}

/// One enqueue of a context captured as a CUDA graph. The graph uses the
/// context's working memory, so it can only be launched through that context
/// ([`ExecutionContext::launch_graph`]): launches are ordered like enqueues,
/// and once the context is gone the graph can no longer run.
pub struct ContextGraph {
    graph: CudaGraph,
    context_id: u64,
}

impl std::fmt::Debug for ContextGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextGraph").field("resources", &self.graph.resources()).finish()
    }
}

/// Identities of execution contexts, so a graph is only launched by its own.
static NEXT_CONTEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_context_id() -> u64 {
    NEXT_CONTEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
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
        Ok(ExecutionContext {
            raw,
            engine: engine.clone(),
            profile: 0,
            shared_memory: None,
            allocators: HashMap::new(),
            last_work: None,
            id: next_context_id(),
        })
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
        let raw = engine.create_context_raw(ffi::ExecutionContextAllocationStrategy::kUSER_MANAGED)?;
        Ok(ExecutionContext {
            raw,
            engine: engine.clone(),
            profile: 0,
            shared_memory: Some(memory.clone()),
            allocators: HashMap::new(),
            last_work: None,
            id: next_context_id(),
        })
    }

    /// Let `callbacks` allocate output `name` during execution (outputs whose
    /// shape depends on the data). Such an output needs no binding.
    pub fn set_output_allocator(&mut self, name: &str, callbacks: Box<dyn OutputCallbacks>) -> Result<()> {
        let t = self.engine.io_tensor(name)?;
        if t.mode != IoMode::Output {
            return Err(Error::InvalidArgument(format!("'{name}' is not an output")));
        }
        let mut allocator = call_owned("new OutputAllocator", || ffi::new_output_allocator(OutputSink::new(callbacks)))?;
        let pinned = allocator.as_mut().expect("non-null allocator");
        call_bool("setOutputAllocator", || ffi::context_set_output_allocator(self.pin(), name, pinned))?;
        self.allocators.insert(name.to_owned(), allocator);
        Ok(())
    }

    pub(crate) fn raw_ptr(&self) -> *mut ffi::IExecutionContext {
        self.raw.as_mut_ptr()
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
            if !range.contains(shape) {
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

    /// Check the bound buffers against the engine and the current shapes, and
    /// give TensorRT their addresses: every I/O tensor bound once (outputs with
    /// an allocator may be left out), the engine's dtype, enough bytes, 256-byte alignment.
    fn set_addresses(&mut self, entries: &[&Entry]) -> Result<()> {
        let (all, _) = call("allInputDimensionsSpecified", || ffi::context_all_shapes_specified(self.raw.as_ref().expect("context")))?;
        if !all {
            let missing: Vec<String> = self.engine.inputs().filter(|t| t.is_dynamic()).map(|t| t.name.clone()).collect();
            return Err(Error::InvalidArgument(format!("input shapes not set (dynamic inputs: {})", missing.join(", "))));
        }
        let mut by_name: HashMap<&str, &Entry> = HashMap::new();
        for b in entries {
            self.engine.io_tensor(&b.name)?;
            if by_name.insert(b.name.as_str(), b).is_some() {
                return Err(Error::InvalidArgument(format!("tensor '{}' is bound twice", b.name)));
            }
        }
        let engine = self.engine.clone();
        for t in engine.io_tensors() {
            let Some(b) = by_name.get(t.name.as_str()) else {
                if self.allocators.contains_key(&t.name) {
                    continue;
                }
                return Err(Error::InvalidArgument(format!("no buffer bound for tensor '{}'", t.name)));
            };
            if b.dtype != t.dtype {
                return Err(Error::DTypeMismatch { tensor: t.name.clone(), expected: t.dtype, got: b.dtype });
            }
            // Sizes below assume linear device tensors; vectorized formats pad
            // and host tensors (shape I/O) need host memory.
            if !t.linear || t.on_host {
                return Err(Error::InvalidArgument(format!(
                    "tensor '{}' is {} ({}); only linear device tensors can be bound",
                    t.name,
                    t.format,
                    if t.on_host { "on the host" } else { "vectorized" }
                )));
            }
            let shape = self.tensor_shape(&t.name)?;
            if crate::profile::is_dynamic(&shape) {
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
            if !(b.address as usize).is_multiple_of(IO_ALIGNMENT) {
                return Err(Error::Misaligned { tensor: t.name.clone(), address: b.address, required: IO_ALIGNMENT });
            }
            let address = b.address as usize;
            // SAFETY: a live device allocation of sufficient size; the caller keeps
            // it borrowed until the work using it has completed.
            call_bool("setTensorAddress", || unsafe { ffi::context_set_tensor_address(self.pin(), &t.name, address) })?;
        }
        Ok(())
    }

    /// enqueueV3 on `stream`, after pointing a shared-memory context at its
    /// memory (ordered after the memory's previous user).
    fn enqueue_raw(&mut self, stream: &Stream) -> Result<()> {
        self.check_device(stream.device())?;
        // TensorRT launches on the thread's current context: the stream's.
        stream.device().bind()?;
        self.order_after_last_work(stream)?;
        self.enqueue_unordered(stream)?;
        self.record_work(stream)
    }

    /// Work for an engine deserialized onto one GPU must stay on that GPU.
    fn check_device(&self, device: &Device) -> Result<()> {
        match self.engine.device() {
            Some(d) if d != device => Err(Error::InvalidArgument(format!(
                "the engine lives on GPU {}, the stream on GPU {}",
                d.ordinal(),
                device.ordinal()
            ))),
            _ => Ok(()),
        }
    }

    /// Make `stream` wait for this context's previous GPU work.
    fn order_after_last_work(&self, stream: &Stream) -> Result<()> {
        match &self.last_work {
            Some(event) => stream.wait(event),
            None => Ok(()),
        }
    }

    /// Remember `stream`'s current position as this context's latest work.
    fn record_work(&mut self, stream: &Stream) -> Result<()> {
        if self.last_work.is_none() {
            self.last_work = Some(Event::without_timing(stream.device())?);
        }
        self.last_work.as_ref().expect("just set").record(stream)
    }

    fn enqueue_unordered(&mut self, stream: &Stream) -> Result<()> {
        let raw_stream = stream.as_raw() as usize;
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
        // SAFETY: the memory is at least getDeviceMemorySizeV2 bytes (checked at creation).
        call("setDeviceMemoryV2", || unsafe { ffi::context_set_device_memory(self.pin(), address, size) })?;
        // SAFETY: as above.
        call_bool("enqueueV3", || unsafe { ffi::context_enqueue(self.pin(), raw_stream) })
    }

    /// Enqueue inference on the bindings' stream, after checking the bindings
    /// (see [`Bindings`]). The returned [`Enqueued`] keeps the buffers borrowed
    /// until the work has completed.
    pub fn enqueue<'a>(&mut self, bindings: Bindings<'a>) -> Result<Enqueued<'a>> {
        let entries: Vec<&Entry> = bindings.entries.iter().map(|b| &b.entry).collect();
        self.set_addresses(&entries)?;
        self.enqueue_raw(bindings.stream)?;
        // Dropping the guards now records each buffer's use after the enqueue,
        // so the buffers cannot be freed before the work, whatever happens to
        // the returned value.
        let Bindings { stream, entries } = bindings;
        drop(entries);
        Ok(Enqueued { stream: Some(stream), _buffers: std::marker::PhantomData })
    }

    /// Capture one enqueue, for the current shapes and these buffers, into a
    /// CUDA graph (replay it with [`CudaGraph::launch`], passing the same
    /// buffers). One ordinary enqueue runs first, as TensorRT requires before
    /// capture. Errors here (e.g. an engine whose kernels cannot be captured)
    /// are returned, so callers can fall back to [`enqueue`](Self::enqueue).
    pub fn capture_graph(&mut self, device: &Device, io: &[(&str, &dyn IoBuffer)]) -> Result<ContextGraph> {
        if self.shared_memory.is_some() {
            return Err(Error::InvalidArgument("graph capture of a shared-memory context is not supported".into()));
        }
        self.check_device(device)?;
        let entries: Vec<Entry> = io
            .iter()
            .map(|(name, b)| Entry { name: (*name).to_owned(), dtype: b.io_dtype(), bytes: b.io_bytes(), address: b.io_address() })
            .collect();
        self.set_addresses(&entries.iter().collect::<Vec<_>>())?;
        // Warm-up: finishes TensorRT's lazy initialisation outside the capture.
        device.synchronize()?;
        let warm = Stream::new(device)?;
        self.enqueue_raw(&warm)?;
        warm.synchronize()?;
        let graph = CudaGraph::capture(device, |g| {
            for (_, b) in io {
                g.uses(b.as_resource())?;
            }
            // SAFETY: the capture stream is only used for this enqueue, inside the capture.
            let raw = unsafe { g.raw_stream() } as usize;
            // SAFETY: addresses set above; the graph tracks every buffer it uses.
            call_bool("enqueueV3 (capture)", || unsafe { ffi::context_enqueue(self.pin(), raw) })
        })?;
        Ok(ContextGraph { graph, context_id: self.id })
    }

    /// Replay a graph this context captured, on `stream`, passing every buffer
    /// the capture used (see [`CudaGraph::launch`]). Ordered like an enqueue.
    pub fn launch_graph(&mut self, graph: &mut ContextGraph, stream: &Stream, resources: &mut [&mut dyn GraphResource]) -> Result<()> {
        if graph.context_id != self.id {
            return Err(Error::InvalidArgument("the graph was captured by another execution context".into()));
        }
        self.check_device(stream.device())?;
        self.order_after_last_work(stream)?;
        graph.graph.launch(stream, resources)?;
        self.record_work(stream)
    }
}

impl Drop for ExecutionContext {
    fn drop(&mut self) {
        // TensorRT must not destroy a context while its work runs.
        if let Some(event) = &self.last_work {
            if let Err(e) = event.synchronize() {
                log::error!(target: "trt", "waiting for an execution context's work failed: {e}");
            }
        }
    }
}
