//! [`ContextGraph`]: one enqueue captured as a CUDA graph, with the execution
//! context it replays on.
//!
//! TensorRT: a captured graph is specific to the input shapes and the state of
//! the context it was captured with; changing that context (a profile, a shape,
//! a tensor address, an output allocator) makes a replay undefined. So the
//! graph owns its context and offers nothing that changes it: the state it
//! was captured with is the state it replays with, by construction. (The other
//! design, recording that state and refusing a launch after a change, cannot
//! see device-side state TensorRT writes during other enqueues, and would
//! leave the capturing context unusable for other shapes.)

use trt_sys::ffi;

use crate::binding::{check_names, Bindings};
use crate::context::{ContextOptions, ExecutionContext};
use crate::cuda::{CudaGraph, GraphResource, Stream};
use crate::engine::IoMode;
use crate::{Error, Result};

/// One enqueue captured as a CUDA graph, with its own execution context. Made
/// by [`ExecutionContext::capture_graph`]; replayed by [`ContextGraph::launch`].
pub struct ContextGraph {
    // Destroyed first: CUDA frees an executable graph after its in-flight
    // launches; then the context waits for its last work before it goes.
    graph: CudaGraph,
    context: ExecutionContext,
    parent: u64,
}

impl std::fmt::Debug for ContextGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextGraph").field("resources", &self.graph.resources()).finish()
    }
}

impl ContextGraph {
    pub(crate) fn new(graph: CudaGraph, context: ExecutionContext, parent: u64) -> Self {
        ContextGraph { graph, context, parent }
    }

    /// The id of the context that captured it.
    pub(crate) fn parent(&self) -> u64 {
        self.parent
    }

    /// Replay on `stream`, passing every buffer the capture bound (see
    /// [`CudaGraph::launch`]). Ordered like an enqueue of its context: after
    /// its previous launch, recorded as its latest work.
    pub fn launch(&mut self, stream: &Stream, resources: &mut [&mut dyn GraphResource]) -> Result<()> {
        self.context.check_device(stream.device())?;
        let work = self.context.work();
        work.order(stream)?;
        let launched = self.graph.launch(stream, resources);
        let recorded = work.record(stream);
        launched?;
        recorded
    }

    /// The graph's context, read-only: its profile, shapes and engine are
    /// those of the capture.
    pub fn context(&self) -> &ExecutionContext {
        &self.context
    }

    /// Descriptions of the buffers the graph uses.
    pub fn resources(&self) -> Vec<String> {
        self.graph.resources()
    }
}

/// Capture and replay: here rather than in `context`, so that the context
/// module needs nothing of graphs.
impl ExecutionContext {
    /// Capture one enqueue with this context's profile and input shapes and
    /// these buffers into a CUDA graph. The graph gets an execution context of
    /// its own (made here, with the same profile and shapes): nothing done to
    /// this context afterwards can change what the graph replays, and this
    /// context stays free for other shapes. That costs one more context's
    /// activation memory for as long as the graph lives.
    ///
    /// The buffers are borrowed mutably and checked like an enqueue's (same
    /// device, each tensor bound once, dtype, size, alignment) before the
    /// warm-up enqueue, which runs on the bindings' stream after the buffers'
    /// earlier uses, as TensorRT requires before capture. On TensorRT-RTX the
    /// graph's context compiles its kernels in that warm-up
    /// ([`crate::KernelSpecialization::Eager`]), so the graph never freezes fallback
    /// kernels. Refused with [`Error::NotCapturable`] before any GPU work: a
    /// shared-memory context, a context with output allocators (the address
    /// an allocator returns during capture would be baked into the graph
    /// untracked), an engine TensorRT says cannot be captured on this stream.
    /// Other capture failures are returned too ([`crate::cuda::is_capture_error`]),
    /// so callers can fall back to [`enqueue`](Self::enqueue).
    pub fn capture_graph(&mut self, bindings: Bindings<'_>) -> Result<ContextGraph> {
        if self.shared_memory.is_some() {
            return Err(Error::NotCapturable("the context uses shared device memory".into()));
        }
        if !self.allocators.is_empty() {
            let names: Vec<&str> = self.allocators.iter().map(|(i, _)| self.engine.io_tensors()[*i].name.as_str()).collect();
            return Err(Error::NotCapturable(format!(
                "output(s) {} have an output allocator, whose addresses a graph would freeze untracked",
                names.join(", ")
            )));
        }
        let stream = bindings.stream;
        self.check_device(stream.device())?;
        self.check_shapes()?;
        check_names(self.engine.io_tensors(), &bindings.entries)?;

        let mut own = Self::create(&self.engine, ffi::ExecutionContextAllocationStrategy::kSTATIC, &ContextOptions::for_capture(), None)?;
        if self.profile != 0 {
            own.set_profile(self.profile, stream)?;
        }
        for (t, s) in self.engine.io_tensors().iter().zip(&self.tensors) {
            if t.mode == IoMode::Input && !t.is_shape_tensor && t.is_dynamic() {
                own.set_input_shape(&t.name, &s.shape)?;
            }
        }
        own.set_addresses(&bindings.entries)?;
        if own.stream_capturable(stream)? == Some(false) {
            return Err(Error::NotCapturable("TensorRT reports enqueueV3 of this engine is not capturable (isStreamCapturable)".into()));
        }
        // Warm-up: TensorRT's lazy initialisation (and RTX's JIT) outside the capture.
        own.enqueue_raw(stream)?;
        let Bindings { stream, entries } = bindings;
        let uses: Vec<_> = entries.iter().map(|b| (b.entry.id, b.entry.dtype, b.entry.len, b.entry.address)).collect();
        drop(entries);
        stream.synchronize()?;
        let device = stream.device();
        let graph = CudaGraph::capture(device, |g| {
            for &(id, dtype, len, address) in &uses {
                g.uses_bound(id, || format!("DeviceBuffer<{dtype}>[{len}] at {address:#x}"));
            }
            // SAFETY: the capture stream is only used for this enqueue, inside the capture.
            let raw = unsafe { g.raw_stream() } as usize;
            own.enqueue_captured(raw)
        })?;
        Ok(ContextGraph::new(graph, own, self.id))
    }

    /// Replay `graph` (captured by this context's [`capture_graph`](Self::capture_graph))
    /// on `stream`: the same as [`ContextGraph::launch`].
    pub fn launch_graph(
        &mut self,
        graph: &mut ContextGraph,
        stream: &Stream,
        resources: &mut [&mut dyn crate::cuda::GraphResource],
    ) -> Result<()> {
        if graph.parent() != self.id {
            return Err(Error::InvalidArgument("the graph was captured by another execution context".into()));
        }
        graph.launch(stream, resources)
    }
}
