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

use crate::context::ExecutionContext;
use crate::cuda::{CudaGraph, GraphResource, Stream};
use crate::Result;

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
