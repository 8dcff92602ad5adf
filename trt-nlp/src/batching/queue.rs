//! The waiting rows: one FIFO per priority level, bounded in rows.
//!
//! Owned by the scheduler's lock; only the batcher thread takes rows out.
//! Rows of finished requests (cancelled, or failed with another batch) are
//! dropped when met, and rows past their request's deadline fail it, so the
//! bound counts only rows that may still be computed.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use super::error::RequestError;
use super::handle::Pending;

/// One row of an accepted request, waiting for a batch.
#[derive(Debug)]
pub(crate) struct Item {
    pub request: Arc<Pending>,
    /// Index of the row in its request.
    pub row: usize,
    /// The row's tokens (what it costs, and what it is grouped by).
    pub len: usize,
}

/// Queued rows by priority level (index 0 first), each level in arrival order.
#[derive(Debug)]
pub(crate) struct Queue {
    levels: Vec<VecDeque<Item>>,
    rows: usize,
}

impl Queue {
    pub(crate) fn new(levels: usize) -> Self {
        Queue { levels: (0..levels).map(|_| VecDeque::new()).collect(), rows: 0 }
    }

    /// Rows waiting.
    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The levels, first served first.
    pub(crate) fn levels(&self) -> &[VecDeque<Item>] {
        &self.levels
    }

    /// Queues every row of `request` at its level (the caller checked the
    /// level and the capacity).
    pub(crate) fn push(&mut self, request: &Arc<Pending>) {
        let level = &mut self.levels[request.priority];
        for (row, r) in request.rows.iter().enumerate() {
            level.push_back(Item { request: Arc::clone(request), row, len: r.len() });
        }
        self.rows += request.rows.len();
    }

    /// Drops the rows of finished requests and fails those past their
    /// deadline; returns the earliest deadline still queued.
    pub(crate) fn prune(&mut self, now: Instant) -> Option<Instant> {
        let mut earliest: Option<Instant> = None;
        for level in &mut self.levels {
            level.retain(|item| {
                let r = &item.request;
                if r.is_finished() {
                    return false;
                }
                match r.deadline {
                    Some(d) if d <= now => {
                        r.fail(RequestError::DeadlineExceeded { waited: now.saturating_duration_since(r.submitted) });
                        false
                    }
                    Some(d) => {
                        earliest = Some(earliest.map_or(d, |e| e.min(d)));
                        true
                    }
                    None => true,
                }
            });
        }
        self.rows = self.levels.iter().map(VecDeque::len).sum();
        earliest
    }

    /// Removes the rows at `picks` (level, index in level) and returns them in `picks` order.
    pub(crate) fn take(&mut self, picks: &[(usize, usize)]) -> Vec<Item> {
        // Remove from the back of each level so that earlier indices stay valid.
        let mut order: Vec<usize> = (0..picks.len()).collect();
        order.sort_unstable_by(|&a, &b| picks[b].cmp(&picks[a]));
        let mut taken: Vec<Option<Item>> = (0..picks.len()).map(|_| None).collect();
        for i in order {
            let (level, index) = picks[i];
            taken[i] = self.levels.get_mut(level).and_then(|l| l.remove(index));
        }
        let items: Vec<Item> = taken.into_iter().flatten().collect();
        self.rows -= items.len();
        items
    }
}
