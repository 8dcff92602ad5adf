//! The scheduler: accepts requests from any thread, forms batches, runs them
//! on worker threads.
//!
//! Batches are cut by whoever changes what a cut depends on, under one lock:
//! `submit` (a row arrived), a worker (it became idle), and the batcher
//! thread (a delay window ended, a deadline passed). So at low load a
//! request goes straight from `submit` to an idle worker, one thread hop;
//! the batcher thread sleeps until the next timed event and is woken only
//! when an earlier one appears. It stays awake for deadlines while every
//! worker is busy, so a queued request fails on time even when the model is
//! busy (Triton's timeout fires only after the running execution,
//! triton#7512). A batch is cut only for an idle worker, so rows keep
//! waiting (and grouping) in the queue rather than in a backlog. On one
//! shared device (a GPU) a batch is cut at once when nothing runs on it:
//! `max_queue_delay` applies only while a batch is running. Where the
//! backend spreads its instances over several devices
//! ([`LeastLoaded`](crate::backend::LeastLoaded)), the queue and the cuts
//! stay one, for the model, and a batch is cut at once while any device
//! has nothing running. Where the
//! backend's instances run side by side (CPU sessions), a cut takes at most
//! its share of the queue per worker, so that one worker does not run
//! everything queued while the others' cores idle (closed-loop clients
//! otherwise fall into one convoy batch behind a single worker).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use super::config::BatchingConfig;
use super::error::SubmitError;
use super::formation::{decide, Decision};
use super::handle::{Handle, Pending};
use super::metrics::{Metrics, MetricsSnapshot};
use super::queue::{Item, Queue};
use super::request::{Input, Request};
use super::worker::run_batch;
use crate::{Backend, Error, Result, Selection, TextModel, TokenizerPipeline};

/// What the scheduler's threads share, under one lock.
struct State {
    queue: Queue,
    /// Per worker: the batch cut for it and not yet taken.
    mailbox: Vec<Option<Vec<Item>>>,
    /// Workers with no batch, the one idle most recently last: a cut goes to
    /// it, whose thread and core are still warm, and the others stay asleep.
    idle: Vec<usize>,
    /// Rows of a due batch that the share per worker left queued: due at the
    /// next idle worker, whenever that is.
    deferred: usize,
    /// No new request is accepted; the queue drains.
    closing: bool,
    /// The batcher has drained the queue and stopped.
    batcher_done: bool,
    /// When the batcher will wake by itself (`None`: only when woken).
    batcher_wakes_at: Option<Instant>,
}

impl State {
    /// Whether an event at `t` is earlier than the batcher's own wake-up.
    fn sooner_than_batcher(&self, t: Instant) -> bool {
        self.batcher_wakes_at.is_none_or(|w| t < w)
    }
}

struct Shared {
    backend: Arc<dyn Backend>,
    pipeline: Arc<TokenizerPipeline>,
    /// What a request that selects nothing gets: every model output, raw.
    raw: Arc<Selection>,
    config: BatchingConfig,
    /// Worker threads, and whether a cut takes only its share of the queue per worker.
    workers: usize,
    spread: bool,
    /// Whether a cut is due at once when a device has no batch running.
    cut_when_idle: bool,
    /// Devices the backend's instances are spread over ([`Backend::devices`], at most `workers`).
    devices: usize,
    metrics: Arc<Metrics>,
    state: Mutex<State>,
    /// Wakes the batcher: a request arrived, a worker became idle, shutdown.
    batcher_wake: Condvar,
    /// Per worker: a batch is in its mailbox, or the batcher stopped.
    worker_wake: Vec<Condvar>,
}

impl Shared {
    // Nothing that runs under the lock can panic half-way through an update
    // (backend code runs outside it), so a poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Dynamic batching over one model: many threads and tasks submit texts (or
/// token rows); batches are cut by size, delay, preferred sizes, token
/// budget and length; results come back per request through a [`Handle`].
///
/// ```
/// # fn demo(backend: std::sync::Arc<dyn trt_nlp::Backend>, pipeline: std::sync::Arc<trt_nlp::TokenizerPipeline>) -> Result<(), Box<dyn std::error::Error>> {
/// use trt_nlp::batching::{BatchingConfig, Request, Scheduler};
///
/// let scheduler = Scheduler::new(backend, pipeline, BatchingConfig::default())?;
/// let handle = scheduler.submit(Request::text("Batch me with others."))?;
/// let response = handle.wait()?; // or `handle.await` on any executor
/// let row = &response.rows()[0];
/// println!("{} tokens, outputs {:?}", row.length, row.outputs.iter().map(|(n, a)| (n, a.shape())).collect::<Vec<_>>());
/// scheduler.shutdown(); // finishes every accepted request first
/// # Ok(()) }
/// ```
pub struct Scheduler {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler").field("backend", &self.shared.backend.name()).field("config", &self.shared.config).finish()
    }
}

impl Scheduler {
    /// A scheduler over `backend`, whose batches `pipeline` packs (and whose
    /// texts it tokenizes at submit). Fails if `config` does not fit the
    /// model's layout or the pipeline (see [`BatchingConfig`]).
    /// A setting the model cannot meet is a typed error naming it:
    ///
    /// ```
    /// use trt_nlp::batching::{BatchingConfig, Request, Scheduler};
    /// use trt_nlp::{Error, TextModel};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // A small random-weight model (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
    /// let model = TextModel::builder(path).cpu().max_batch(8).build()?;
    /// let mut config = BatchingConfig::default();
    /// config.max_batch_size = 64; // more than the model's 8
    /// let e = Scheduler::new(model.backend().clone(), model.pipeline().clone(), config).unwrap_err();
    /// assert!(matches!(e, Error::InvalidOption { option: "batching.max_batch_size", .. }), "{e}");
    ///
    /// let mut config = BatchingConfig::default();
    /// config.max_batch_size = 8;
    /// let scheduler = Scheduler::new(model.backend().clone(), model.pipeline().clone(), config)?;
    /// let response = scheduler.submit(Request::texts(["a", "b", "c"]))?.wait()?;
    /// assert_eq!(response.rows().len(), 3); // raw outputs, one row per text
    /// scheduler.shutdown();
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(backend: Arc<dyn Backend>, pipeline: Arc<TokenizerPipeline>, config: BatchingConfig) -> Result<Self> {
        config.check(backend.layout(), &pipeline)?;
        let caps = backend.capabilities();
        let workers = config.workers.unwrap_or(caps.instances).max(1);
        let spread = config.spread_across_workers.unwrap_or(caps.parallel_instances);
        let cut_when_idle = config.cut_when_idle.unwrap_or(!caps.parallel_instances);
        let shared = Arc::new(Shared {
            raw: Arc::new(Selection::raw(backend.layout())),
            workers,
            spread,
            cut_when_idle,
            devices: caps.devices.clamp(1, workers),
            metrics: Arc::new(Metrics::new(config.max_batch_size)),
            state: Mutex::new(State {
                queue: Queue::new(config.priority_levels),
                mailbox: (0..workers).map(|_| None).collect(),
                idle: (0..workers).rev().collect(),
                deferred: 0,
                closing: false,
                batcher_done: false,
                batcher_wakes_at: None,
            }),
            backend,
            pipeline,
            config,
            batcher_wake: Condvar::new(),
            worker_wake: (0..workers).map(|_| Condvar::new()).collect(),
        });
        let scheduler = Scheduler { shared, threads: Mutex::new(Vec::new()) };
        let spawn = |name: String, body: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new().name(name.clone()).spawn(body).map_err(|source| Error::ThreadSpawn { thread: name, source })
        };
        let mut threads = Vec::with_capacity(workers + 1);
        let s = Arc::clone(&scheduler.shared);
        threads.push(spawn("trt-nlp-batcher".into(), Box::new(move || batcher(&s)))?);
        for i in 0..workers {
            let s = Arc::clone(&scheduler.shared);
            threads.push(spawn(format!("trt-nlp-worker-{i}"), Box::new(move || worker(&s, i)))?);
        }
        *scheduler.threads.lock().unwrap_or_else(PoisonError::into_inner) = threads;
        Ok(scheduler)
    }

    /// A scheduler over `model`'s backend and tokenizer pipeline (see
    /// [`new`](Self::new)). Rows come back raw unless a request selects
    /// outputs: [`TextModel::embedding`] gives the model's pooled sentence
    /// embedding, [`TextModel::logits`] its logits.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use trt_nlp::batching::{BatchingConfig, Request, Scheduler};
    /// use trt_nlp::TextModel;
    ///
    /// # // A small random-weight embedding model made by sentence-transformers (tests/data/hf/).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
    /// let model = TextModel::open(path)?;
    /// let scheduler = Scheduler::for_model(&model, BatchingConfig::default())?;
    /// let embedding = Arc::new(model.embedding()?);
    /// let handle = scheduler.submit(Request::text("Batch me with others.").select(embedding))?;
    /// let response = handle.wait()?;
    /// assert_eq!(response.rows()[0].output("embedding").map(|e| e.ndim()), Some(1)); // one [dim] vector
    /// scheduler.shutdown();
    /// # Ok(())
    /// # }
    /// ```
    pub fn for_model(model: &TextModel, config: BatchingConfig) -> Result<Self> {
        Self::new(model.backend().clone(), model.pipeline().clone(), config)
    }

    /// Accepts a request or refuses it at once. Texts are tokenized here, on
    /// the calling thread (or the pipeline's pool for large requests), so
    /// each row's length is known for the token budget and grouping.
    pub fn submit(&self, request: Request) -> std::result::Result<Handle, SubmitError> {
        let m = &self.shared.metrics;
        m.requests.fetch_add(1, Relaxed);
        self.admit(request).inspect_err(|e| {
            let counter = match e {
                SubmitError::Overloaded { .. } => &m.overloaded,
                SubmitError::DeadlineExceeded => &m.deadline,
                _ => &m.rejected,
            };
            counter.fetch_add(1, Relaxed);
        })
    }

    fn admit(&self, request: Request) -> std::result::Result<Handle, SubmitError> {
        let s = &*self.shared;
        let config = &s.config;
        let n = request.rows();
        if n == 0 {
            return Err(SubmitError::Empty);
        }
        let priority = request.priority.unwrap_or(config.default_priority);
        if priority >= config.priority_levels {
            return Err(SubmitError::InvalidPriority { priority, levels: config.priority_levels });
        }
        if n > config.max_queue_size {
            return Err(SubmitError::TooManyRows { rows: n, capacity: config.max_queue_size });
        }
        if s.lock().closing {
            return Err(SubmitError::ShuttingDown); // before the tokenizing work
        }
        let rows = match request.input {
            Input::Texts(texts) => s.pipeline.tokenize(&texts).map_err(SubmitError::Invalid)?,
            Input::Rows(rows) => {
                for (index, row) in rows.iter().enumerate() {
                    s.pipeline.check_row(row).map_err(|e| {
                        SubmitError::Invalid(match e {
                            Error::TooLong { tokens, max_len, .. } => Error::TooLong { index, tokens, max_len },
                            e => e,
                        })
                    })?;
                }
                rows
            }
        };
        if let Some(budget) = config.max_batch_tokens {
            for (index, row) in rows.iter().enumerate() {
                let tokens = s.pipeline.padded_len(row.len());
                if tokens > budget {
                    return Err(SubmitError::OverBudget { index, tokens, budget });
                }
            }
        }
        let selection = match request.selection {
            Some(selection) => {
                selection.check(s.backend.layout()).map_err(SubmitError::Invalid)?;
                selection
            }
            None => Arc::clone(&s.raw),
        };
        let now = Instant::now();
        let deadline = request.deadline.or(config.default_timeout.map(super::request::Deadline::After)).and_then(|d| d.instant(now));
        if deadline.is_some_and(|d| d <= now) {
            return Err(SubmitError::DeadlineExceeded);
        }
        let pending = Arc::new(Pending::new(rows, selection, priority, now, deadline, Arc::clone(&s.metrics)));
        {
            let mut st = s.lock();
            if st.closing {
                return Err(SubmitError::ShuttingDown);
            }
            if st.queue.len() + n > config.max_queue_size {
                st.queue.prune(now); // cancelled and expired rows give their room back
                if st.queue.len() + n > config.max_queue_size {
                    return Err(SubmitError::Overloaded { queued: st.queue.len(), rows: n, capacity: config.max_queue_size });
                }
            }
            st.queue.push(&pending);
            s.metrics.queued_rows.store(st.queue.len() as u64, Relaxed);
            let wait = cut_batches(s, &mut st, now);
            let timer = [wait, deadline].into_iter().flatten().min();
            if timer.is_some_and(|t| st.sooner_than_batcher(t)) {
                s.batcher_wake.notify_one();
            }
        }
        Ok(Handle::new(pending))
    }

    /// The counters now.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.shared.metrics.snapshot()
    }

    /// The settings.
    pub fn config(&self) -> &BatchingConfig {
        &self.shared.config
    }

    /// The backend the batches run on.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.shared.backend
    }

    /// The pipeline that tokenizes and packs.
    pub fn pipeline(&self) -> &Arc<TokenizerPipeline> {
        &self.shared.pipeline
    }

    /// Stops accepting requests ([`SubmitError::ShuttingDown`]), computes
    /// every accepted one, then stops the threads and returns. Requests that
    /// pass their deadline or are cancelled while draining fail as usual.
    /// Idempotent; also run on drop.
    pub fn shutdown(&self) {
        self.shared.lock().closing = true;
        self.shared.batcher_wake.notify_all();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for t in threads {
            // A thread cannot panic outside the backend call, which is caught.
            let _ = t.join();
        }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Cuts batches for idle workers while the policy says cut; returns when
/// the next cut is due if nothing arrives (`None`: no worker is idle or
/// nothing is queued; the next completion or arrival calls this again).
fn cut_batches(s: &Shared, st: &mut State, now: Instant) -> Option<Instant> {
    let padded_len = |longest: usize| s.pipeline.padded_len(longest);
    // Fixed for this round of cuts, so the rows queued now split evenly.
    let share = if s.spread { st.queue.len().div_ceil(s.workers) } else { usize::MAX };
    while let Some(&w) = st.idle.last() {
        // Fewer batches running than devices: a device has nothing running (the
        // backend sends a batch to an idle one first), so a wait would leave it idle.
        let device_idle = s.cut_when_idle && s.workers - st.idle.len() < s.devices;
        match decide(&st.queue, &s.config, &padded_len, now, st.closing || st.deferred > 0, device_idle, share) {
            Decision::Idle => {
                st.deferred = 0;
                return None;
            }
            Decision::Wait(t) => return Some(t),
            Decision::Cut { picks, deferred } => {
                st.deferred = deferred;
                let items = st.queue.take(&picks);
                st.idle.pop();
                st.mailbox[w] = Some(items);
                s.worker_wake[w].notify_one();
            }
        }
    }
    s.metrics.queued_rows.store(st.queue.len() as u64, Relaxed);
    None
}

/// The batcher thread: fails expired rows, cuts what is due, and sleeps
/// until the next delay window ends or deadline passes (or it is woken for
/// an earlier one, or for shutdown).
fn batcher(s: &Shared) {
    let mut st = s.lock();
    loop {
        let now = Instant::now();
        let next_deadline = st.queue.prune(now);
        s.metrics.queued_rows.store(st.queue.len() as u64, Relaxed);
        if st.closing && st.queue.is_empty() {
            break;
        }
        let wait = cut_batches(s, &mut st, now);
        st.batcher_wakes_at = [wait, next_deadline].into_iter().flatten().min();
        st = match st.batcher_wakes_at {
            None => s.batcher_wake.wait(st).unwrap_or_else(PoisonError::into_inner),
            Some(t) => s.batcher_wake.wait_timeout(st, t.saturating_duration_since(now)).unwrap_or_else(PoisonError::into_inner).0,
        };
    }
    st.batcher_done = true;
    drop(st);
    s.worker_wake.iter().for_each(Condvar::notify_one);
}

/// Worker `w`'s thread: runs the batches cut for it until the batcher has
/// stopped and none is left. It reports itself idle as soon as the backend
/// returns, before handing out the rows, so that a caller who submits again
/// at once finds this warm worker free rather than waking a cold one.
fn worker(s: &Shared, w: usize) {
    loop {
        let items = {
            let mut st = s.lock();
            loop {
                if let Some(items) = st.mailbox[w].take() {
                    break items;
                }
                if st.batcher_done {
                    return;
                }
                st = s.worker_wake[w].wait(st).unwrap_or_else(PoisonError::into_inner);
            }
        };
        run_batch(&*s.backend, &s.pipeline, &s.metrics, items, &mut || {
            let mut st = s.lock();
            st.idle.push(w);
            let wait = cut_batches(s, &mut st, Instant::now());
            // While draining, the batcher must see the queue empty to stop.
            if st.closing || wait.is_some_and(|t| st.sooner_than_batcher(t)) {
                s.batcher_wake.notify_one();
            }
        });
    }
}
