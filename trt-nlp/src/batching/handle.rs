//! A submitted request's shared state, and the caller's [`Handle`] on it.
//!
//! The scheduler's threads complete a request row by row; the handle waits
//! for the last row with a blocking [`Handle::wait`] or as a [`Future`] (a
//! stored [`Waker`], no async runtime needed: any executor polls it).
//! Dropping the handle before the result cancels the request: its rows that
//! are still queued are skipped, not computed.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use ndarray::ArrayD;

use super::error::RequestError;
use super::metrics::Metrics;
use crate::{OutputRows, Selection, TokenRow};

/// The outputs of one row (text) of a request.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RowResult {
    /// The request's selected outputs for this row ([`Request::select`](super::Request::select);
    /// by default every model output), by name, in selection order, as f32:
    /// the batch axis removed, for outputs of rank 3 or more whose second
    /// axis is the sequence (`[batch, seq, ...]`) that axis cut to
    /// [`length`](Self::length), so no padding position is left, and pooled
    /// outputs as one `[dim]` vector.
    pub outputs: Vec<(String, ArrayD<f32>)>,
    /// Real tokens of the row (its attention length: positions `0..length`
    /// are attended), for pooling.
    pub length: usize,
    /// Whether the text was cut to the pipeline's maximum length.
    pub truncated: bool,
    /// Rows in the batch that computed this row.
    pub batch_size: usize,
    /// From submit to the start of that batch.
    pub queue_time: Duration,
    /// The batch's time on the backend.
    pub compute_time: Duration,
}

impl RowResult {
    /// The output called `name`.
    pub fn output(&self, name: &str) -> Option<&ArrayD<f32>> {
        self.outputs.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }
}

/// The result of a request: one [`RowResult`] per text, in submit order.
#[derive(Debug, Clone)]
pub struct Response {
    rows: Vec<RowResult>,
}

impl Response {
    /// The rows, in submit order.
    pub fn rows(&self) -> &[RowResult] {
        &self.rows
    }

    /// The rows, owned.
    pub fn into_rows(self) -> Vec<RowResult> {
        self.rows
    }

    /// Every output, the rows stacked in submit order ([`OutputRows::stack`]:
    /// a `[rows, seq, ...]` output zero-padded to the request's longest row).
    pub fn stacked(&self) -> crate::Result<Vec<OutputRows>> {
        let Some(first) = self.rows.first() else { return Ok(Vec::new()) };
        first
            .outputs
            .iter()
            .enumerate()
            .map(|(i, (name, _))| {
                let rows = self.rows.iter().map(|r| match r.outputs.get(i) {
                    Some((n, a)) if n == name => Ok(a),
                    _ => Err(crate::Error::NoSuchOutput {
                        name: name.clone(),
                        available: r.outputs.iter().map(|(n, _)| n.clone()).collect(),
                    }),
                });
                OutputRows::stack(name, rows.collect::<crate::Result<Vec<_>>>()?)
            })
            .collect()
    }
}

/// What completion has reached.
#[derive(Debug)]
struct Progress {
    rows: Vec<Option<RowResult>>,
    remaining: usize,
    result: Option<Result<Response, RequestError>>,
    taken: bool,
    waker: Option<Waker>,
}

impl Progress {
    /// A result exists, or was taken.
    fn is_over(&self) -> bool {
        self.result.is_some() || self.taken
    }
}

/// A request once accepted: its rows, its policy, and its completion, shared
/// by the queue, the workers and the caller's handle.
#[derive(Debug)]
pub(crate) struct Pending {
    pub rows: Vec<TokenRow>,
    /// The outputs its rows come back with.
    pub selection: Arc<Selection>,
    pub priority: usize,
    pub submitted: Instant,
    pub deadline: Option<Instant>,
    /// Set once a result (or failure) exists: queued rows of a finished
    /// request are dropped, not computed.
    finished: AtomicBool,
    progress: Mutex<Progress>,
    done: Condvar,
    metrics: Arc<Metrics>,
}

impl Pending {
    pub(crate) fn new(
        rows: Vec<TokenRow>,
        selection: Arc<Selection>,
        priority: usize,
        submitted: Instant,
        deadline: Option<Instant>,
        metrics: Arc<Metrics>,
    ) -> Self {
        let n = rows.len();
        Pending {
            rows,
            selection,
            priority,
            submitted,
            deadline,
            finished: AtomicBool::new(false),
            progress: Mutex::new(Progress { rows: (0..n).map(|_| None).collect(), remaining: n, result: None, taken: false, waker: None }),
            done: Condvar::new(),
            metrics,
        }
    }

    /// Whether the request already has its result or failure.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    // A panic while holding the lock cannot leave `Progress` half-updated in
    // a way that matters (every field is set in one step), so a poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Row `index` is computed; the last row completes the request.
    pub(crate) fn complete_row(&self, index: usize, row: RowResult) {
        let mut p = self.lock();
        if p.is_over() {
            return; // failed or cancelled meanwhile: the row is dropped
        }
        let Some(slot) = p.rows.get_mut(index) else { return };
        if slot.replace(row).is_none() {
            p.remaining -= 1;
        }
        if p.remaining == 0 {
            let rows = p.rows.drain(..).flatten().collect();
            self.finish(&mut p, Ok(Response { rows }));
        }
    }

    /// Fails the request (first failure wins; a completed request stays completed).
    pub(crate) fn fail(&self, error: RequestError) {
        let mut p = self.lock();
        if !p.is_over() {
            self.finish(&mut p, Err(error));
        }
    }

    fn finish(&self, p: &mut Progress, result: Result<Response, RequestError>) {
        use std::sync::atomic::Ordering::Relaxed;
        let counter = match &result {
            Ok(_) => &self.metrics.succeeded,
            Err(RequestError::DeadlineExceeded { .. }) => &self.metrics.deadline,
            Err(RequestError::Cancelled) => &self.metrics.cancelled,
            Err(_) => &self.metrics.backend,
        };
        counter.fetch_add(1, Relaxed);
        p.result = Some(result);
        self.finished.store(true, Ordering::Release);
        self.done.notify_all();
        if let Some(w) = p.waker.take() {
            w.wake();
        }
    }

    fn take(p: &mut Progress) -> Option<Result<Response, RequestError>> {
        if p.taken {
            return Some(Err(RequestError::ResultTaken));
        }
        let r = p.result.take()?;
        p.taken = true;
        Some(r)
    }
}

/// The caller's side of a submitted request: wait for it (blocking, with a
/// timeout, or as a `Future` on any executor), or drop it to cancel.
#[derive(Debug)]
#[must_use = "dropping a handle cancels its request"]
pub struct Handle {
    pending: Arc<Pending>,
}

impl Handle {
    pub(crate) fn new(pending: Arc<Pending>) -> Self {
        Handle { pending }
    }

    /// Blocks until the request completes or fails.
    pub fn wait(self) -> Result<Response, RequestError> {
        let mut p = self.pending.lock();
        loop {
            if let Some(r) = Pending::take(&mut p) {
                return r;
            }
            p = self.pending.done.wait(p).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Blocks for at most `timeout`; `None` if the request is still running
    /// then (the handle stays valid; wait again or drop it to cancel).
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Result<Response, RequestError>> {
        let end = Instant::now().checked_add(timeout);
        let mut p = self.pending.lock();
        loop {
            if let Some(r) = Pending::take(&mut p) {
                return Some(r);
            }
            let left = match end {
                Some(end) => end.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())?,
                None => Duration::from_secs(3600),
            };
            p = self.pending.done.wait_timeout(p, left).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    /// Whether the result (or failure) is there.
    pub fn is_finished(&self) -> bool {
        self.pending.is_finished()
    }

    /// Cancels the request unless it has finished: its queued rows are
    /// skipped and the handle gives [`RequestError::Cancelled`].
    pub fn cancel(&self) {
        self.pending.fail(RequestError::Cancelled);
    }
}

impl Future for Handle {
    type Output = Result<Response, RequestError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut p = self.pending.lock();
        if let Some(r) = Pending::take(&mut p) {
            return Poll::Ready(r);
        }
        match &p.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => p.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // No-op once finished; otherwise the queue and the workers skip its rows.
        self.pending.fail(RequestError::Cancelled);
    }
}
