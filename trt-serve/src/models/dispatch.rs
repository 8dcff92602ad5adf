//! How one model version's requests reach its backend.
//!
//! | config | path | batches |
//! |---|---|---|
//! | `dynamic_batching { ... }` | trt-nlp's [`Scheduler`]: texts tokenized at submit, batches cut across requests by size, delay, preferred sizes and length | rows of many requests |
//! | none | each request on its own, as Triton's default scheduler does | one request's rows |
//!
//! Both bound what waits (over the bound the answer is 503 at once, never an
//! unbounded queue) and apply the schedule-policy extension's `timeout`
//! (microseconds in the queue) and, with dynamic batching, `priority`
//! (Triton's levels: 1 is the highest, 0 the config's default level).
//! Backends block, so execution never runs on the async runtime's threads:
//! the direct path has one long-lived thread per backend instance (as the
//! scheduler has its workers), so a session always runs on the same thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use trt_nlp::batching::{BatchingConfig, MetricsSnapshot, Request, RequestError, Scheduler, SubmitError};
use trt_nlp::{OutputRows, Selection, TokenRow};

use crate::config::{DynamicBatching, ModelConfig, TimeoutAction};
use crate::error::{ServeError, ServeResult};
use crate::models::text_model::ConfiguredModel;
use crate::transport::limits::Limits;

/// What a request got back, and where its time went.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    /// Every selected output, the request's rows only, in selection order.
    pub tensors: Vec<OutputRows>,
    /// Waiting for a batch to start.
    pub queue: Duration,
    /// Tokenizing.
    pub tokenize: Duration,
    /// The backend's time on the batch(es).
    pub compute: Duration,
    /// Batches run for it on the direct path (the scheduler counts its own).
    pub executions: u64,
}

/// What a request carries: texts, or rows the caller tokenized.
#[derive(Debug, Clone)]
pub enum Inputs {
    /// Texts, tokenized by the model's pipeline.
    Texts(Vec<String>),
    /// Rows tokenized by the caller (text pairs, token ids, texts cut from the left).
    Rows(Vec<TokenRow>),
}

impl Inputs {
    /// Rows (texts) it holds.
    pub fn len(&self) -> usize {
        match self {
            Inputs::Texts(t) => t.len(),
            Inputs::Rows(r) => r.len(),
        }
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The queue policy of Triton's schedule-policy extension, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    default_timeout: Option<Duration>,
    allow_timeout_override: bool,
    enforce_timeouts: bool,
}

impl Policy {
    pub(crate) fn of(db: Option<&DynamicBatching>) -> Self {
        let q = db.map(|d| d.default_queue_policy.clone()).unwrap_or_default();
        Policy {
            default_timeout: q.default_timeout,
            // With no default timeout there is nothing to override: a request's own applies.
            allow_timeout_override: q.allow_timeout_override || q.default_timeout.is_none(),
            enforce_timeouts: q.timeout_action == TimeoutAction::Reject,
        }
    }

    /// The queue timeout of a request whose `timeout` parameter is `timeout_us`.
    pub(crate) fn timeout(&self, timeout_us: Option<u64>) -> Option<Duration> {
        match timeout_us {
            Some(us) if self.allow_timeout_override && us > 0 => Some(Duration::from_micros(us)),
            _ => self.default_timeout,
        }
        .filter(|_| self.enforce_timeouts)
    }
}

/// Requests that may wait for a version of `config`: the queue policy's
/// `max_queue_size` where set (0: unset), never more than the server's `--max-queue`.
pub(crate) fn max_queue(config: &ModelConfig, limits: &Limits) -> usize {
    match config.dynamic_batching.as_ref().map(|d| d.default_queue_policy.max_queue_size) {
        Some(n) if n > 0 => n.min(limits.max_queue),
        _ => limits.max_queue,
    }
}

/// A job for a direct-path thread.
type Job = Box<dyn FnOnce() + Send>;

/// The direct path's threads, one per backend instance, fed through one
/// channel; they end when the channel closes (the dispatcher drops).
struct Runners {
    jobs: std::sync::mpsc::Sender<Job>,
}

impl Runners {
    fn new(count: usize, label: &str) -> ServeResult<Self> {
        let (jobs, rx) = std::sync::mpsc::channel::<Job>();
        let rx = Arc::new(std::sync::Mutex::new(rx));
        for i in 0..count {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("trt-serve-run-{i}"))
                .spawn(move || loop {
                    // The lock is held only while taking a job, never while running one.
                    let job = match rx.lock() {
                        Ok(r) => r.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                })
                .map_err(|e| ServeError::Internal(format!("{label}: cannot start a worker thread: {e}")))?;
        }
        Ok(Runners { jobs })
    }

    /// Runs `f` on a runner thread; a free one exists (the caller holds a slot).
    async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> ServeResult<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
        });
        self.jobs.send(job).map_err(|_| ServeError::Unavailable("the model's worker threads have stopped".into()))?;
        match rx.await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(_)) => Err(ServeError::Internal("the backend panicked on this request".into())),
            Err(_) => Err(ServeError::Internal("the worker thread ended before answering".into())),
        }
    }
}

enum Path {
    /// One request, one batch; `slots` are the backend's instances, `runners` their threads.
    Direct { slots: Arc<Semaphore>, runners: Runners, max_pending: usize },
    /// trt-nlp's dynamic batcher; `levels` is Triton's `priority_levels`.
    Batched { scheduler: Scheduler, levels: usize, default_level: usize },
}

/// Admission and execution for one model version.
pub struct Dispatcher {
    model: Arc<ConfiguredModel>,
    label: String,
    pending: Arc<AtomicUsize>,
    policy: Policy,
    path: Path,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = match self.path {
            Path::Direct { .. } => "direct",
            Path::Batched { .. } => "dynamic batching",
        };
        f.debug_struct("Dispatcher").field("label", &self.label).field("path", &path).finish_non_exhaustive()
    }
}

/// Decrements the pending count however the request ends.
struct PendingGuard(Arc<AtomicUsize>);

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn submit_error(label: &str, e: SubmitError) -> ServeError {
    match e {
        SubmitError::Overloaded { .. } => ServeError::Unavailable(format!("{label} is overloaded: {e}")),
        SubmitError::ShuttingDown => ServeError::Unavailable(format!("{label} is shutting down")),
        SubmitError::DeadlineExceeded => ServeError::Unavailable(format!("{label}: request timed out before it was queued")),
        SubmitError::TooManyRows { .. } => ServeError::TooLarge(format!("{label}: {e}")),
        other => ServeError::invalid(format!("{label}: {other}")),
    }
}

fn request_error(label: &str, e: RequestError) -> ServeError {
    match e {
        RequestError::DeadlineExceeded { .. } => ServeError::Unavailable(format!("{label}: request timed out in the queue ({e})")),
        RequestError::Cancelled => ServeError::Unavailable(format!("{label}: request cancelled")),
        other => ServeError::Internal(format!("{label}: {other}")),
    }
}

impl Dispatcher {
    /// A dispatcher for `model`, configured from `config` and `limits`;
    /// `label` names the version in messages (`model 'm' version 1`).
    pub fn new(model: Arc<ConfiguredModel>, config: &ModelConfig, limits: &Limits, label: String) -> ServeResult<Self> {
        let db = config.dynamic_batching.as_ref();
        let max_queue = max_queue(config, limits);
        let path = match db {
            None => Path::Direct {
                slots: Arc::new(Semaphore::new(model.instances())),
                runners: Runners::new(model.instances(), &label)?,
                max_pending: max_queue + model.instances(),
            },
            Some(db) => {
                let levels = db.priority_levels.max(1) as usize;
                let default_level = (db.default_priority_level.max(1) as usize).min(levels);
                let policy = Policy::of(Some(db));
                let mut bc = BatchingConfig::default();
                bc.max_batch_size = config.max_batch_size.min(model.max_batch());
                bc.max_queue_delay = db.max_queue_delay;
                bc.preferred_batch_sizes = db.preferred_batch_size.clone();
                // Triton bounds requests; the scheduler bounds rows: a request has at most max_batch_size rows.
                bc.max_queue_size = max_queue.saturating_mul(bc.max_batch_size).max(bc.max_batch_size);
                bc.priority_levels = levels;
                bc.default_priority = default_level - 1;
                bc.default_timeout = policy.default_timeout.filter(|_| policy.enforce_timeouts);
                // One worker per instance the backend placed (on KIND_GPU, counts are per GPU).
                bc.workers = Some(model.instances().max(1));
                let scheduler =
                    Scheduler::for_model(model.model(), bc).map_err(|e| ServeError::invalid(format!("dynamic_batching: {e}")))?;
                Path::Batched { scheduler, levels, default_level }
            }
        };
        Ok(Dispatcher { model, label, pending: Arc::new(AtomicUsize::new(0)), policy: Policy::of(db), path })
    }

    /// The model it runs.
    pub fn model(&self) -> &Arc<ConfiguredModel> {
        &self.model
    }

    /// Requests waiting or running.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// The scheduler's counters, with dynamic batching.
    pub fn batching_metrics(&self) -> Option<MetricsSnapshot> {
        match &self.path {
            Path::Batched { scheduler, .. } => Some(scheduler.metrics()),
            Path::Direct { .. } => None,
        }
    }

    /// Runs `texts` as one request with Triton's `priority` and `timeout`
    /// (microseconds) parameters, computing the outputs the config exposes.
    pub async fn run(&self, texts: Vec<String>, priority: u64, timeout_us: Option<u64>) -> ServeResult<Ran> {
        self.run_selected(Inputs::Texts(texts), self.model.outputs().clone(), priority, timeout_us).await
    }

    /// Runs rows tokenized by the caller (text pairs, token ids, texts cut
    /// from the left) through the same queue and batches as texts.
    pub async fn run_rows(&self, rows: Vec<TokenRow>, priority: u64, timeout_us: Option<u64>) -> ServeResult<Ran> {
        self.run_selected(Inputs::Rows(rows), self.model.outputs().clone(), priority, timeout_us).await
    }

    /// Runs `work` computing `selection` (made with
    /// [`trt_nlp::TextModel::select`] on this dispatcher's model) instead of
    /// the config's outputs: on the batched path each row comes back from
    /// the scheduler's workers already cut or pooled.
    pub async fn run_selected(&self, work: Inputs, selection: Arc<Selection>, priority: u64, timeout_us: Option<u64>) -> ServeResult<Ran> {
        let max_batch = self.model.max_batch();
        if work.len() > max_batch {
            return Err(ServeError::invalid(format!(
                "{}: {} texts in one request, more than max_batch_size {max_batch}",
                self.label,
                work.len()
            )));
        }
        self.pending.fetch_add(1, Ordering::AcqRel);
        let _guard = PendingGuard(self.pending.clone());
        let timeout = self.policy.timeout(timeout_us);
        match &self.path {
            Path::Direct { slots, runners, max_pending } => self.run_direct(slots, runners, *max_pending, work, selection, timeout).await,
            Path::Batched { scheduler, levels, default_level } => {
                // Triton: levels 1..=priority_levels, 1 first; 0 or out of range: the default.
                let level = match priority as usize {
                    p if (1..=*levels).contains(&p) => p,
                    _ => *default_level,
                };
                let request = match work {
                    Inputs::Texts(texts) => Request::texts(texts),
                    Inputs::Rows(rows) => Request::token_rows(rows),
                };
                let mut request = request.priority(level - 1).select(selection);
                if let Some(t) = timeout {
                    request = request.timeout(t);
                }
                // Tokenizing happens in submit, on this thread: short for the
                // few texts a request carries, and it keeps the row lengths
                // known to the batcher from the start.
                let t = Instant::now();
                let handle = scheduler.submit(request).map_err(|e| submit_error(&self.label, e))?;
                let tokenize = t.elapsed();
                let response = handle.await.map_err(|e| request_error(&self.label, e))?;
                let rows = response.rows();
                let queue = rows.iter().map(|r| r.queue_time).max().unwrap_or_default();
                let compute = rows.iter().map(|r| r.compute_time).max().unwrap_or_default();
                let tensors = response.stacked().map_err(|e| ServeError::Internal(format!("{}: {e}", self.label)))?;
                Ok(Ran { tensors, queue, tokenize, compute, executions: 0 })
            }
        }
    }

    async fn run_direct(
        &self,
        slots: &Arc<Semaphore>,
        runners: &Runners,
        max_pending: usize,
        work: Inputs,
        selection: Arc<Selection>,
        timeout: Option<Duration>,
    ) -> ServeResult<Ran> {
        let pending = self.pending();
        if pending > max_pending {
            return Err(ServeError::Unavailable(format!(
                "{} is overloaded: {} requests pending, the limit is {max_pending}",
                self.label,
                pending - 1
            )));
        }
        let queued = Instant::now();
        let acquire = slots.clone().acquire_owned();
        let permit = match timeout {
            Some(t) => tokio::time::timeout(t, acquire)
                .await
                .map_err(|_| ServeError::Unavailable(format!("{}: request timed out in the queue after {t:?}", self.label)))?,
            None => acquire.await,
        }
        .map_err(|_| ServeError::Unavailable(format!("{} is shutting down", self.label)))?;
        let queue = queued.elapsed();
        let model = self.model.model().clone();
        let out = runners
            .run(move || {
                let _permit = permit;
                match &work {
                    Inputs::Texts(texts) => model.run(texts, &selection),
                    Inputs::Rows(rows) => model.run_rows(rows, &selection),
                }
            })
            .await??;
        Ok(Ran { tensors: out.tensors, queue, tokenize: out.tokenize, compute: out.compute, executions: 1 })
    }
}
