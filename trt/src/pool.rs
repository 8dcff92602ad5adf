//! [`ContextPool`]: a pool of execution contexts for serving from many
//! threads, each with its own stream, its own optimization profile (context i
//! uses profile i mod the engine's profile count) and optional per-context
//! state `S` (e.g. staging buffers sized for the profile), made once when the
//! pool is built. The pool itself is [`trt_cuda::Pool`] (`trt::Pool`).

use crate::context::ExecutionContext;
use crate::cuda::{Checkout, Device, Pool, Stream};
use crate::engine::Engine;
use crate::Result;

/// A context with its stream and state.
#[derive(Debug)]
pub struct PooledContext<S = ()> {
    /// The context.
    pub context: ExecutionContext,
    /// The stream it enqueues on.
    pub stream: Stream,
    /// Per-context state.
    pub state: S,
}

/// N execution contexts of one engine, with their streams and state.
/// `Send + Sync` when `S: Send`.
#[derive(Debug)]
pub struct ContextPool<S = ()> {
    pool: Pool<PooledContext<S>>,
}

impl ContextPool<()> {
    /// `size` contexts of `engine` on `device`.
    pub fn new(engine: &Engine, device: &Device, size: usize) -> Result<Self> {
        Self::with_state(engine, device, size, |_, _| Ok(()))
    }
}

impl<S> ContextPool<S> {
    /// `size` contexts of `engine` on `device`, each with state made by `make`
    /// (given the context, after its profile is set, and its stream).
    pub fn with_state(
        engine: &Engine,
        device: &Device,
        size: usize,
        mut make: impl FnMut(&mut ExecutionContext, &Stream) -> Result<S>,
    ) -> Result<Self> {
        if size == 0 {
            return Err(crate::Error::InvalidArgument("a context pool needs at least one context".into()));
        }
        let mut free = Vec::with_capacity(size);
        for i in 0..size {
            let stream = Stream::new(device)?;
            let mut context = ExecutionContext::new(engine)?;
            if engine.num_profiles() > 1 {
                context.set_profile(i % engine.num_profiles(), &stream)?;
            }
            let state = make(&mut context, &stream)?;
            free.push(PooledContext { context, stream, state });
        }
        Ok(ContextPool { pool: Pool::from_items(free) })
    }

    /// Number of contexts.
    pub fn size(&self) -> usize {
        self.pool.size()
    }

    /// Take a free context, waiting for one if all are in use.
    pub fn checkout(&self) -> Checkout<'_, PooledContext<S>> {
        self.pool.checkout()
    }

    /// Take a free context if one is available now.
    pub fn try_checkout(&self) -> Option<Checkout<'_, PooledContext<S>>> {
        self.pool.try_checkout()
    }
}
