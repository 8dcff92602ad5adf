//! A pool of execution contexts for serving from many threads.
//!
//! Each pooled context has its own stream and optimization profile (context i
//! uses profile i mod the engine's profile count). `checkout` blocks until one
//! is free; the guard returns it on drop.

use std::sync::{Condvar, Mutex};

use crate::context::ExecutionContext;
use crate::cuda::{Device, Stream};
use crate::engine::Engine;
use crate::Result;

/// A context with its stream.
#[derive(Debug)]
pub struct PooledContext {
    /// The context.
    pub context: ExecutionContext,
    /// The stream it enqueues on.
    pub stream: Stream,
}

/// N execution contexts of one engine. `Send + Sync`.
pub struct ContextPool {
    free: Mutex<Vec<PooledContext>>,
    returned: Condvar,
    size: usize,
}

impl std::fmt::Debug for ContextPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextPool").field("size", &self.size).finish()
    }
}

impl ContextPool {
    /// `size` contexts of `engine` on `device`.
    pub fn new(engine: &Engine, device: &Device, size: usize) -> Result<Self> {
        let mut free = Vec::with_capacity(size);
        for i in 0..size {
            let stream = Stream::new(device)?;
            let mut context = ExecutionContext::new(engine)?;
            if engine.num_profiles() > 1 {
                context.set_profile(i % engine.num_profiles(), &stream)?;
            }
            free.push(PooledContext { context, stream });
        }
        Ok(Self::from_contexts(free))
    }

    /// A pool of ready-made contexts.
    pub fn from_contexts(contexts: Vec<PooledContext>) -> Self {
        let size = contexts.len();
        ContextPool { free: Mutex::new(contexts), returned: Condvar::new(), size }
    }

    /// Number of contexts.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Take a free context, waiting for one if all are in use.
    pub fn checkout(&self) -> Checkout<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(item) = free.pop() {
                return Checkout { pool: self, item: Some(item) };
            }
            free = self.returned.wait(free).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Take a free context if one is available now.
    pub fn try_checkout(&self) -> Option<Checkout<'_>> {
        let item = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop()?;
        Some(Checkout { pool: self, item: Some(item) })
    }
}

/// A checked-out context; returned to the pool on drop.
#[derive(Debug)]
pub struct Checkout<'p> {
    pool: &'p ContextPool,
    item: Option<PooledContext>,
}

impl std::ops::Deref for Checkout<'_> {
    type Target = PooledContext;
    fn deref(&self) -> &PooledContext {
        self.item.as_ref().expect("present until drop")
    }
}

impl std::ops::DerefMut for Checkout<'_> {
    fn deref_mut(&mut self) -> &mut PooledContext {
        self.item.as_mut().expect("present until drop")
    }
}

impl Drop for Checkout<'_> {
    fn drop(&mut self) {
        if let Some(item) = self.item.take() {
            self.pool.free.lock().unwrap_or_else(|e| e.into_inner()).push(item);
            self.pool.returned.notify_one();
        }
    }
}
