//! Pools for serving from many threads: [`Pool`] is a blocking checkout/return
//! pool of any items; [`ContextPool`] is a pool of execution contexts, each with
//! its own stream, its own optimization profile (context i uses profile i mod
//! the engine's profile count) and optional per-context state `S` (e.g.
//! staging buffers sized for the profile), made once when the pool is built.
//! `checkout` blocks until an item is free; the guard returns it on drop.

use std::sync::{Condvar, Mutex};

use crate::context::ExecutionContext;
use crate::cuda::{Device, Stream};
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

/// A fixed set of items handed out one thread at a time. `Send + Sync` when `T: Send`.
pub struct Pool<T> {
    free: Mutex<Vec<T>>,
    returned: Condvar,
    size: usize,
}

impl<T> std::fmt::Debug for Pool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("size", &self.size).finish()
    }
}

/// N execution contexts of one engine, with their streams and state.
pub type ContextPool<S = ()> = Pool<PooledContext<S>>;

impl Pool<PooledContext<()>> {
    /// `size` contexts of `engine` on `device`.
    pub fn new(engine: &Engine, device: &Device, size: usize) -> Result<Self> {
        Self::with_state(engine, device, size, |_, _| Ok(()))
    }
}

impl<S> Pool<PooledContext<S>> {
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
        Ok(Pool::from_items(free))
    }
}

impl<T> Pool<T> {
    /// A pool of these items (at least one: `checkout` on an empty pool would wait forever).
    pub fn from_items(items: Vec<T>) -> Self {
        assert!(!items.is_empty(), "a pool needs at least one item");
        let size = items.len();
        Pool { free: Mutex::new(items), returned: Condvar::new(), size }
    }

    /// Number of items.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Take a free item, waiting for one if all are in use.
    pub fn checkout(&self) -> Checkout<'_, T> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(item) = free.pop() {
                return Checkout { pool: self, item: Some(item) };
            }
            free = self.returned.wait(free).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Take a free item if one is available now.
    pub fn try_checkout(&self) -> Option<Checkout<'_, T>> {
        let item = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop()?;
        Some(Checkout { pool: self, item: Some(item) })
    }
}

/// A checked-out item; returned to the pool on drop.
#[derive(Debug)]
pub struct Checkout<'p, T> {
    pool: &'p Pool<T>,
    item: Option<T>,
}

impl<T> std::ops::Deref for Checkout<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.item.as_ref().expect("present until drop")
    }
}

impl<T> std::ops::DerefMut for Checkout<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.item.as_mut().expect("present until drop")
    }
}

impl<T> Drop for Checkout<'_, T> {
    fn drop(&mut self) {
        if let Some(item) = self.item.take() {
            self.pool.free.lock().unwrap_or_else(|e| e.into_inner()).push(item);
            self.pool.returned.notify_one();
        }
    }
}
