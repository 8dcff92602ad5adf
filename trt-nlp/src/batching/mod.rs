//! Dynamic batching in process: many callers, one model, batches formed by
//! size, delay, preferred sizes, token budget and length, with deadlines,
//! priorities, cancellation and backpressure.
//!
//! | module | what it holds |
//! |---|---|
//! | [`config`](BatchingConfig) | the settings and their checks against the model |
//! | [`request`](Request) | what a caller submits: texts or token rows, priority, deadline |
//! | [`handle`](Handle) | a request's completion: blocking wait, `Future`, cancel on drop; [`Response`], [`RowResult`] |
//! | `queue` | one FIFO per priority level, bounded in rows; drops cancelled rows, fails expired ones |
//! | `formation` | where batches are cut: which rows, and now or later |
//! | `worker` | one batch on the backend; outputs cut per row; failures kept to the batch |
//! | [`scheduler`](Scheduler) | the batcher thread, the workers, submit and shutdown; [`Scheduler::for_model`] over a [`TextModel`](crate::TextModel) |
//! | [`metrics`](MetricsSnapshot) | counters and histograms a server exports |
//! | [`error`](SubmitError) | [`SubmitError`] (refused now), [`RequestError`] (failed later) |
//!
//! Texts are tokenized at submit, on the caller's thread, into owned
//! [`TokenRow`](crate::TokenRow)s ([`TokenizerPipeline::tokenize`](crate::TokenizerPipeline::tokenize)),
//! so the scheduler knows every row's length when it groups and budgets; a
//! worker packs the chosen rows into the backend's buffers
//! ([`TokenizerPipeline::pack`](crate::TokenizerPipeline::pack)).
//!
//! What the scheduler promises:
//! - a request is refused at once, typed, when it cannot be queued
//!   ([`SubmitError::Overloaded`] past `max_queue_size` rows): memory is bounded;
//! - a queued request fails at its deadline, also while every worker is busy;
//!   once its batch starts it is computed and returned even if the deadline passes meanwhile;
//! - level 0 is served before level 1, FIFO within a level (by length within
//!   the delay window with [`Grouping::ByLength`]); the oldest row of the first
//!   level is in every batch, so nothing starves within a level;
//! - a dropped handle's rows are skipped, not computed;
//! - [`Scheduler::shutdown`] refuses new requests, computes every accepted
//!   one, then returns;
//! - a backend error or panic fails the requests of its batch only, each with the error;
//! - a row's outputs do not depend on the batch it ran in beyond float
//!   rounding, as long as the model masks padding (BERT does).

mod config;
mod error;
mod formation;
mod handle;
mod metrics;
mod queue;
mod request;
mod scheduler;
mod worker;

pub use config::{BatchingConfig, Grouping};
pub use error::{RequestError, SubmitError};
pub use handle::{Handle, Response, RowResult};
pub use metrics::{Failures, Histogram, MetricsSnapshot};
pub use request::Request;
pub use scheduler::Scheduler;
