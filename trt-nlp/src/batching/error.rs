//! Why a request was refused at submit, and why an accepted one failed.
//!
//! Two types, because they happen at different moments: a [`SubmitError`]
//! comes back from `submit` at once (nothing was queued), a [`RequestError`]
//! from the handle later. A server maps each variant to one status code
//! (`Overloaded` to 503/UNAVAILABLE, `DeadlineExceeded` to 504/DEADLINE_EXCEEDED,
//! input errors to 400/INVALID_ARGUMENT).

use std::sync::Arc;
use std::time::Duration;

/// A request the scheduler did not accept; nothing of it was queued.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubmitError {
    /// The queue is full: `queued` rows wait and this request's `rows` would
    /// go past `capacity`. Retry later or elsewhere.
    #[error("overloaded: {queued} rows are queued, {rows} more would exceed the queue's capacity of {capacity}")]
    Overloaded {
        /// Rows waiting now.
        queued: usize,
        /// Rows of the refused request.
        rows: usize,
        /// The scheduler's `max_queue_size`.
        capacity: usize,
    },

    /// The scheduler is shutting down and accepts nothing new.
    #[error("the scheduler is shutting down")]
    ShuttingDown,

    /// The request holds no text and no row.
    #[error("the request holds no text")]
    Empty,

    /// The request alone has more rows than the queue can ever hold.
    #[error("the request has {rows} rows; the queue holds at most {capacity}")]
    TooManyRows {
        /// Rows of the request.
        rows: usize,
        /// The scheduler's `max_queue_size`.
        capacity: usize,
    },

    /// The request names a priority level the scheduler does not have.
    #[error("priority {priority} is not one of the scheduler's {levels} levels (0 is served first)")]
    InvalidPriority {
        /// The level asked for.
        priority: usize,
        /// Levels configured.
        levels: usize,
    },

    /// One row alone costs more padded tokens than a batch may hold.
    #[error("row #{index} costs {tokens} padded tokens, more than max_batch_tokens {budget}")]
    OverBudget {
        /// The row's index in the request.
        index: usize,
        /// Its padded cost.
        tokens: usize,
        /// The scheduler's `max_batch_tokens`.
        budget: usize,
    },

    /// The request's deadline had already passed when it was submitted.
    #[error("the request's deadline passed before it was submitted")]
    DeadlineExceeded,

    /// A text could not be tokenized, or a ready row cannot be packed (too
    /// long, an id outside the vocabulary, ...).
    #[error("invalid input: {0}")]
    Invalid(#[source] crate::Error),
}

/// Why an accepted request produced no result. `Clone`, so that one backend
/// error fails every request of its batch.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The request's deadline passed while it waited in the queue (checked
    /// while the model is busy too); it was not computed.
    #[error("deadline exceeded after {waited:?} in the queue")]
    DeadlineExceeded {
        /// How long it had waited.
        waited: Duration,
    },

    /// The backend failed on the batch that held this request.
    #[error("the backend failed on this request's batch: {0}")]
    Backend(Arc<crate::Error>),

    /// The backend panicked on the batch that held this request (the worker
    /// caught it and goes on).
    #[error("the backend panicked on this request's batch: {0}")]
    BackendPanicked(Arc<str>),

    /// The request was cancelled (its handle was dropped or [`cancel`](super::Handle::cancel)led).
    #[error("the request was cancelled")]
    Cancelled,

    /// This handle's result was already returned (a future polled after it completed).
    #[error("the result was already taken from this handle")]
    ResultTaken,
}
