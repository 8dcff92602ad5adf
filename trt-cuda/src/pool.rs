//! [`Pool`]: a blocking checkout/return pool of any items, for serving from
//! many threads (e.g. one stream with its buffers per item). `checkout` blocks
//! until an item is free; the guard returns it on drop.

use std::sync::{Condvar, Mutex};

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
