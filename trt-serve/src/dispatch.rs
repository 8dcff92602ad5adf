//! How one model version's requests reach its backend: admission (a bounded
//! number of requests pending; over it the answer is 503 at once), the queue
//! timeout of Triton's schedule-policy extension, and execution off the async
//! runtime (backends block).
//!
//! Each request runs as one batch of its own rows; the backend's instances
//! (`instance_group` count) bound how many run at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::config::{ModelConfig, TimeoutAction};
use crate::error::{ServeError, ServeResult};
use crate::limits::Limits;
use crate::text_model::{RowsTensor, TextModel};

/// What a request got back, and where its time went.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    /// Every exposed output, the request's rows only.
    pub tensors: Vec<RowsTensor>,
    /// Waiting for a free instance.
    pub queue: Duration,
    /// Tokenizing.
    pub tokenize: Duration,
    /// The backend's run.
    pub compute: Duration,
    /// Rows in the batch that ran it (its own and, when batched, others').
    pub batch_rows: usize,
}

/// The queue policy a version applies.
#[derive(Debug, Clone)]
struct Policy {
    max_pending: usize,
    default_timeout: Option<Duration>,
    allow_timeout_override: bool,
    enforce_timeouts: bool,
}

/// Admission and execution for one model version.
#[derive(Debug)]
pub struct Dispatcher {
    model: Arc<TextModel>,
    label: String,
    slots: Arc<Semaphore>,
    pending: Arc<AtomicUsize>,
    policy: Policy,
}

/// Decrements the pending count however the request ends.
struct PendingGuard(Arc<AtomicUsize>);

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Dispatcher {
    /// A dispatcher for `model`, configured from `config` and `limits`;
    /// `label` names the version in messages (`model 'm' version 1`).
    pub fn new(model: Arc<TextModel>, config: &ModelConfig, limits: &Limits, label: String) -> Self {
        let instances = model.instances();
        let queue = config.dynamic_batching.as_ref().map(|d| d.default_queue_policy.clone()).unwrap_or_default();
        let max_queue = if queue.max_queue_size > 0 { queue.max_queue_size.min(limits.max_queue) } else { limits.max_queue };
        Dispatcher {
            model,
            label,
            slots: Arc::new(Semaphore::new(instances)),
            pending: Arc::new(AtomicUsize::new(0)),
            policy: Policy {
                max_pending: max_queue + instances,
                default_timeout: queue.default_timeout,
                allow_timeout_override: queue.allow_timeout_override || queue.default_timeout.is_none(),
                enforce_timeouts: queue.timeout_action == TimeoutAction::Reject,
            },
        }
    }

    /// The model it runs.
    pub fn model(&self) -> &Arc<TextModel> {
        &self.model
    }

    /// Requests waiting or running.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// Runs `texts` as one request; `timeout_us` is the request's `timeout`
    /// parameter (microseconds in the queue before it is rejected).
    pub async fn run(&self, texts: Vec<String>, _priority: u64, timeout_us: Option<u64>) -> ServeResult<Ran> {
        let max_batch = self.model.max_batch();
        if texts.len() > max_batch {
            return Err(ServeError::invalid(format!(
                "{}: {} texts in one request, more than max_batch_size {max_batch}",
                self.label,
                texts.len()
            )));
        }
        let before = self.pending.fetch_add(1, Ordering::AcqRel);
        let _guard = PendingGuard(self.pending.clone());
        if before >= self.policy.max_pending {
            return Err(ServeError::Unavailable(format!(
                "{} is overloaded: {before} requests pending, the limit is {}",
                self.label, self.policy.max_pending
            )));
        }
        let timeout = match timeout_us {
            Some(us) if self.policy.allow_timeout_override => Some(Duration::from_micros(us)),
            _ => self.policy.default_timeout,
        }
        .filter(|_| self.policy.enforce_timeouts);
        let queued = Instant::now();
        let acquire = self.slots.clone().acquire_owned();
        let permit = match timeout {
            Some(t) => tokio::time::timeout(t, acquire)
                .await
                .map_err(|_| ServeError::Unavailable(format!("{}: request timed out in the queue after {t:?}", self.label)))?,
            None => acquire.await,
        }
        .map_err(|_| ServeError::Unavailable(format!("{} is shutting down", self.label)))?;
        let queue = queued.elapsed();
        let model = self.model.clone();
        let rows = texts.len();
        let out = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            model.run(&texts)
        })
        .await
        .map_err(|e| ServeError::Internal(format!("the batch's worker failed: {e}")))??;
        Ok(Ran { tensors: out.tensors, queue, tokenize: out.tokenize, compute: out.compute, batch_rows: rows })
    }
}
