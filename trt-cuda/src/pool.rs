//! [`Pool`]: a blocking checkout/return pool of any items, for serving from
//! many threads (e.g. one stream with its buffers per item). `checkout` blocks
//! until an item is free; the guard returns it on drop.
//!
//! A thread gets back the item it returned last when that one is free: a
//! worker thread keeps to one item. That matters where an item keeps state
//! per calling thread (ONNX Runtime keeps its CUDA graphs per session and
//! per thread, so a session that moves between threads captures its graphs
//! again on each).

use std::cell::RefCell;
use std::sync::{Condvar, Mutex};

/// How many pools a thread remembers its last item of.
const REMEMBERED: usize = 8;

thread_local! {
    /// (pool address, item index) of the items this thread returned last, newest first.
    static LAST: RefCell<[(usize, usize); REMEMBERED]> = const { RefCell::new([(0, 0); REMEMBERED]) };
}

fn last_of(pool: usize) -> Option<usize> {
    LAST.with(|l| l.borrow().iter().find(|(p, _)| *p == pool).map(|&(_, i)| i))
}

fn remember(pool: usize, index: usize) {
    LAST.with(|l| {
        let mut l = l.borrow_mut();
        let at = l.iter().position(|(p, _)| *p == pool).unwrap_or(REMEMBERED - 1);
        l.copy_within(0..at, 1);
        l[0] = (pool, index);
    });
}

/// A fixed set of items handed out one thread at a time. `Send + Sync` when `T: Send`.
pub struct Pool<T> {
    /// Free items with their index.
    free: Mutex<Vec<(usize, T)>>,
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
        Pool { free: Mutex::new(items.into_iter().enumerate().collect()), returned: Condvar::new(), size }
    }

    /// Number of items.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Take a free item (the one this thread returned last, if free),
    /// waiting for one if all are in use.
    pub fn checkout(&self) -> Checkout<'_, T> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(c) = self.take(&mut free) {
                return c;
            }
            free = self.returned.wait(free).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Take a free item if one is available now.
    pub fn try_checkout(&self) -> Option<Checkout<'_, T>> {
        self.take(&mut self.free.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn take(&self, free: &mut Vec<(usize, T)>) -> Option<Checkout<'_, T>> {
        let mine = last_of(self as *const Self as usize).and_then(|i| free.iter().position(|(j, _)| *j == i));
        let (index, item) = match mine {
            Some(at) => free.swap_remove(at),
            None => free.pop()?,
        };
        Some(Checkout { pool: self, index, item: Some(item) })
    }
}

/// A checked-out item; returned to the pool on drop.
#[derive(Debug)]
pub struct Checkout<'p, T> {
    pool: &'p Pool<T>,
    index: usize,
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
            remember(self.pool as *const Pool<T> as usize, self.index);
            self.pool.free.lock().unwrap_or_else(|e| e.into_inner()).push((self.index, item));
            self.pool.returned.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_gets_back_the_item_it_returned_last_when_it_is_free() {
        let pool = Pool::from_items(vec!['a', 'b', 'c']);
        let first = *pool.checkout();
        for _ in 0..10 {
            assert_eq!(*pool.checkout(), first, "the same thread keeps to its item");
        }
        // Another thread that never returned one takes any free item; when
        // this thread's item is busy it gets another and keeps to that one next.
        let other = std::thread::scope(|s| s.spawn(|| *pool.checkout()).join().unwrap());
        assert!(['a', 'b', 'c'].contains(&other));
        let held = pool.checkout();
        assert_eq!(*held, first);
        let second = *pool.checkout();
        assert_ne!(second, first);
        assert_eq!(*pool.checkout(), second, "the one returned last, while the first is busy");
        drop(held);
        assert_eq!(*pool.checkout(), first, "returned last now");
    }

    #[test]
    fn every_item_is_handed_out_and_returned_under_contention() {
        let pool = Pool::from_items((0..4).collect::<Vec<usize>>());
        let uses = Mutex::new([0usize; 4]);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..200 {
                        let c = pool.checkout();
                        uses.lock().unwrap()[*c] += 1;
                    }
                });
            }
        });
        assert_eq!(uses.lock().unwrap().iter().sum::<usize>(), 1600);
        let held: Vec<_> = (0..4).map(|_| pool.try_checkout().expect("all four are back")).collect();
        let mut items: Vec<usize> = held.iter().map(|c| **c).collect();
        items.sort();
        assert_eq!(items, [0, 1, 2, 3]);
        assert!(pool.try_checkout().is_none());
    }
}
