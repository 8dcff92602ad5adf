//! What a caller submits: texts or ready token rows, a priority, a deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{Selection, TokenRow};

/// The rows of a request, before the scheduler accepts it.
#[derive(Debug, Clone)]
pub(crate) enum Input {
    /// Texts for the scheduler's pipeline to tokenize (at submit, on the caller's thread).
    Texts(Vec<String>),
    /// Rows tokenized by the caller.
    Rows(Vec<TokenRow>),
}

/// One request: one or more texts (or token rows) whose outputs come back
/// together, in order. Its rows may be computed in different batches.
///
/// ```
/// use std::time::Duration;
/// use trt_nlp::batching::Request;
/// let r = Request::texts(["first text", "second text"]).priority(0).timeout(Duration::from_millis(50));
/// assert_eq!(r.rows(), 2);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct Request {
    pub(crate) input: Input,
    pub(crate) priority: Option<usize>,
    pub(crate) deadline: Option<Deadline>,
    pub(crate) selection: Option<Arc<Selection>>,
}

/// When a request stops being worth computing.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Deadline {
    At(Instant),
    After(Duration),
}

impl Request {
    /// One text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(Input::Texts(vec![text.into()]))
    }

    /// Several texts; their results come back in this order.
    pub fn texts<S: Into<String>>(texts: impl IntoIterator<Item = S>) -> Self {
        Self::new(Input::Texts(texts.into_iter().map(Into::into).collect()))
    }

    /// Rows tokenized by the caller (see [`TokenizerPipeline::tokenize`](crate::TokenizerPipeline::tokenize)
    /// and [`TokenRow::new`]).
    pub fn token_rows(rows: Vec<TokenRow>) -> Self {
        Self::new(Input::Rows(rows))
    }

    fn new(input: Input) -> Self {
        Request { input, priority: None, deadline: None, selection: None }
    }

    /// Priority level, 0 first (default: the scheduler's `default_priority`).
    pub fn priority(mut self, level: usize) -> Self {
        self.priority = Some(level);
        self
    }

    /// Fail with [`RequestError::DeadlineExceeded`](super::RequestError::DeadlineExceeded)
    /// if not in a batch `timeout` after submit.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.deadline = Some(Deadline::After(timeout));
        self
    }

    /// Like [`timeout`](Self::timeout), at an instant.
    pub fn deadline(mut self, at: Instant) -> Self {
        self.deadline = Some(Deadline::At(at));
        self
    }

    /// The outputs each row comes back with, computed by the worker that ran
    /// it while the batch is still in the backend's buffers: raw outputs cut
    /// to the row, pooled ones as one `[dim]` row (see [`Selection`]).
    /// Default: every model output, raw.
    pub fn select(mut self, selection: Arc<Selection>) -> Self {
        self.selection = Some(selection);
        self
    }

    /// Rows (texts) in the request.
    pub fn rows(&self) -> usize {
        match &self.input {
            Input::Texts(t) => t.len(),
            Input::Rows(r) => r.len(),
        }
    }
}

impl Deadline {
    /// The instant, or `None` for a timeout too large to represent (no deadline in practice).
    pub(crate) fn instant(self, submitted: Instant) -> Option<Instant> {
        match self {
            Deadline::At(at) => Some(at),
            Deadline::After(d) => submitted.checked_add(d),
        }
    }
}
