//! Admission and execution for one tensor-model version: a bounded queue
//! and one worker thread per backend instance.
//!
//! | config | a batch is |
//! |---|---|
//! | `dynamic_batching { ... }` and `max_batch_size > 0` | queued requests whose inputs agree on every dimension after the batch axis, stacked along it, up to `max_batch_size` rows |
//! | otherwise | one request |
//!
//! Batches are cut as Triton's dynamic batcher cuts them, simplified: the
//! oldest request decides the shape of the batch; requests of the same
//! shape join it in arrival order while they fit; it is cut when it reaches
//! `max_batch_size` or a preferred batch size, or when the oldest request
//! has waited `max_queue_delay_microseconds`. Requests of another shape
//! (ragged sequence lengths) wait for a batch of their own, so no tensor is
//! padded and every row's outputs are those it would get alone.
//!
//! One worker forms a batch at a time (the others wait to form the next), so
//! a request is never split between two half-full batches. The queue holds
//! at most `max_queue_size` requests (the server's `--max-queue` by
//! default): past it the answer is 503 at once. The schedule-policy `timeout`
//! fails a request that has not started by then (503); once its batch has
//! started it is computed and returned. A request whose client went away is
//! skipped. Priorities are not applied: one FIFO.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use trt_nlp::tensor::Tensor;

use crate::config::ModelConfig;
use crate::dispatch::Policy;
use crate::error::{ServeError, ServeResult};
use crate::limits::Limits;
use crate::tensor_model::TensorModel;

/// What a request got back, and where its time went.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorRan {
    /// Every declared output, the request's rows only, in config order.
    pub outputs: Vec<Tensor>,
    /// Waiting for its batch to start.
    pub queue: Duration,
    /// The backend's time on its batch.
    pub compute: Duration,
}

struct Job {
    rows: usize,
    /// Each input's dimensions after the batch axis: requests batch together when equal.
    key: Vec<Vec<usize>>,
    inputs: Vec<Tensor>,
    enqueued: Instant,
    deadline: Option<Instant>,
    started: Arc<AtomicBool>,
    reply: oneshot::Sender<ServeResult<TensorRan>>,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
}

/// How batches are cut.
#[derive(Debug, Clone)]
struct Cut {
    /// Whether requests are stacked (dynamic batching on a batched model).
    merge: bool,
    max_rows: usize,
    delay: Duration,
    preferred: Vec<usize>,
}

struct Shared {
    queue: Mutex<Queue>,
    arrived: Condvar,
    /// Held by the one worker forming a batch.
    forming: Mutex<()>,
    executions: AtomicU64,
    model: Arc<TensorModel>,
    cut: Cut,
    label: String,
}

/// Admission and execution for one tensor-model version.
pub struct TensorDispatcher {
    shared: Arc<Shared>,
    policy: Policy,
    max_queue: usize,
}

impl std::fmt::Debug for TensorDispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorDispatcher").field("label", &self.shared.label).field("cut", &self.shared.cut).finish_non_exhaustive()
    }
}

impl Drop for TensorDispatcher {
    /// Closes the queue: the workers finish what was accepted, then end.
    fn drop(&mut self) {
        self.shared.queue.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        self.shared.arrived.notify_all();
    }
}

impl TensorDispatcher {
    /// A dispatcher for `model` configured by `config` and `limits`; `label`
    /// names the version in messages (`model 'm' version 1`).
    pub fn new(model: Arc<TensorModel>, config: &ModelConfig, limits: &Limits, label: String) -> ServeResult<Self> {
        let db = config.dynamic_batching.as_ref();
        let max_queue = match db.map(|d| d.default_queue_policy.max_queue_size) {
            Some(n) if n > 0 => n.min(limits.max_queue),
            _ => limits.max_queue,
        };
        let cut = Cut {
            merge: db.is_some() && model.max_batch() > 0,
            max_rows: model.max_batch().max(1),
            delay: db.map(|d| d.max_queue_delay).unwrap_or_default(),
            preferred: db.map(|d| d.preferred_batch_size.clone()).unwrap_or_default(),
        };
        let workers = model.instances().max(1);
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            arrived: Condvar::new(),
            forming: Mutex::new(()),
            executions: AtomicU64::new(0),
            model,
            cut,
            label,
        });
        for i in 0..workers {
            let s = shared.clone();
            std::thread::Builder::new()
                .name(format!("trt-serve-tensor-{i}"))
                .spawn(move || work(&s))
                .map_err(|e| ServeError::Internal(format!("{}: cannot start a worker thread: {e}", shared.label)))?;
        }
        Ok(TensorDispatcher { shared, policy: Policy::of(db), max_queue })
    }

    /// The model it runs.
    pub fn model(&self) -> &Arc<TensorModel> {
        &self.shared.model
    }

    /// Batches run so far.
    pub fn executions(&self) -> u64 {
        self.shared.executions.load(Ordering::Relaxed)
    }

    /// Requests waiting for a batch.
    pub fn queued(&self) -> usize {
        self.shared.queue.lock().unwrap_or_else(|e| e.into_inner()).jobs.len()
    }

    /// Runs one request's tensors (config input order, `rows` along the
    /// batch axis) with the schedule-policy `timeout` in microseconds.
    pub async fn run(&self, rows: usize, inputs: Vec<Tensor>, timeout_us: Option<u64>) -> ServeResult<TensorRan> {
        let label = &self.shared.label;
        let timeout = self.policy.timeout(timeout_us);
        let enqueued = Instant::now();
        let started = Arc::new(AtomicBool::new(false));
        let (reply, answer) = oneshot::channel();
        let key = inputs.iter().map(|t| t.shape().get(1..).unwrap_or_default().to_vec()).collect();
        let job = Job { rows, key, inputs, enqueued, deadline: timeout.map(|t| enqueued + t), started: started.clone(), reply };
        {
            let mut q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            if q.closed {
                return Err(ServeError::Unavailable(format!("{label} is shutting down")));
            }
            if q.jobs.len() >= self.max_queue {
                return Err(ServeError::Unavailable(format!(
                    "{label} is overloaded: {} requests queued, the limit is {}",
                    q.jobs.len(),
                    self.max_queue
                )));
            }
            q.jobs.push_back(job);
        }
        self.shared.arrived.notify_all();
        let ended = || ServeError::Internal(format!("{label}: the worker ended before answering"));
        let mut answer = answer;
        if let Some(t) = timeout {
            match tokio::time::timeout(t, &mut answer).await {
                Ok(r) => return r.map_err(|_| ended())?,
                // Dropping `answer` makes the worker skip it; one that started already is awaited.
                Err(_) if !started.load(Ordering::Acquire) => {
                    return Err(ServeError::Unavailable(format!("{label}: request timed out in the queue after {t:?}")))
                }
                Err(_) => {}
            }
        }
        answer.await.map_err(|_| ended())?
    }
}

/// A worker: forms a batch (one worker at a time), runs it, answers its requests.
fn work(shared: &Shared) {
    loop {
        let batch = {
            let _one_forms = shared.forming.lock().unwrap_or_else(|e| e.into_inner());
            match form(shared) {
                Some(b) => b,
                None => return,
            }
        };
        run_batch(shared, batch);
    }
}

/// Drops jobs whose client went away and fails those past their deadline;
/// returns the nearest deadline left.
fn sweep(q: &mut Queue, now: Instant, label: &str) -> Option<Instant> {
    let mut nearest: Option<Instant> = None;
    let mut kept = VecDeque::with_capacity(q.jobs.len());
    for job in q.jobs.drain(..) {
        if job.reply.is_closed() {
            continue;
        }
        match job.deadline {
            Some(d) if d <= now => {
                let waited = now - job.enqueued;
                let _ = job.reply.send(Err(ServeError::Unavailable(format!("{label}: request timed out in the queue after {waited:?}"))));
            }
            Some(d) => {
                nearest = Some(nearest.map_or(d, |n| n.min(d)));
                kept.push_back(job);
            }
            None => kept.push_back(job),
        }
    }
    q.jobs = kept;
    nearest
}

/// The next batch, waiting for one as long as the queue is open (`None`: closed and empty).
fn form(shared: &Shared) -> Option<Vec<Job>> {
    let cut = &shared.cut;
    let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = Instant::now();
        let nearest_deadline = sweep(&mut q, now, &shared.label);
        let Some(head) = q.jobs.front() else {
            if q.closed {
                return None;
            }
            q = shared.arrived.wait(q).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        if !cut.merge {
            return q.jobs.pop_front().map(|j| vec![j]);
        }
        let mut rows = 0;
        let mut picked = Vec::new();
        for (i, j) in q.jobs.iter().enumerate() {
            if j.key == head.key && rows + j.rows <= cut.max_rows {
                rows += j.rows;
                picked.push(i);
                if rows == cut.max_rows {
                    break;
                }
            }
        }
        let due = head.enqueued + cut.delay;
        if rows >= cut.max_rows || cut.preferred.contains(&rows) || now >= due || q.closed {
            let mut batch = Vec::with_capacity(picked.len());
            for &i in picked.iter().rev() {
                batch.push(q.jobs.remove(i).expect("picked from this queue"));
            }
            batch.reverse();
            return Some(batch);
        }
        let until = nearest_deadline.map_or(due, |d| d.min(due));
        q = shared.arrived.wait_timeout(q, until.saturating_duration_since(now)).unwrap_or_else(|e| e.into_inner()).0;
    }
}

fn backend_error(label: &str, e: trt_nlp::Error) -> ServeError {
    match e {
        trt_nlp::Error::Tensor { .. } => ServeError::invalid(format!("{label}: {e}")),
        other => ServeError::Internal(format!("{label}: {other}")),
    }
}

/// Stacks the batch's inputs, runs them, and cuts every output back into each request's rows.
fn run_batch(shared: &Shared, mut batch: Vec<Job>) {
    let label = &shared.label;
    let start = Instant::now();
    for j in &batch {
        j.started.store(true, Ordering::Release);
    }
    let merged = batch.len() > 1;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> ServeResult<Vec<Tensor>> {
        let stacked: Vec<Tensor>;
        let inputs: &[Tensor] = if merged {
            let names: Vec<&str> = shared.model.input_names().collect();
            stacked = (0..names.len())
                .map(|k| {
                    let parts: Vec<&Tensor> = batch.iter().map(|j| &j.inputs[k]).collect();
                    Tensor::concat(names[k], &parts).map_err(|e| backend_error(label, e))
                })
                .collect::<ServeResult<_>>()?;
            &stacked
        } else {
            &batch[0].inputs
        };
        shared.model.run(inputs).map_err(|e| backend_error(label, e))
    }))
    .unwrap_or_else(|_| Err(ServeError::Internal(format!("{label}: the backend panicked on this batch"))));
    let compute = start.elapsed();
    shared.executions.fetch_add(1, Ordering::Relaxed);
    let outputs = match result {
        Ok(o) => o,
        Err(e) => {
            for j in batch {
                let _ = j.reply.send(Err(e.clone()));
            }
            return;
        }
    };
    if !merged {
        let j = batch.pop().expect("a batch holds a request");
        let _ = j.reply.send(Ok(TensorRan { outputs, queue: start - j.enqueued, compute }));
        return;
    }
    let total: usize = batch.iter().map(|j| j.rows).sum();
    let names: Vec<&str> = shared.model.output_names().collect();
    if let Some((name, t)) = names.iter().zip(&outputs).find(|(_, t)| t.shape().first() != Some(&total)) {
        let e = ServeError::Internal(format!("{label}: output '{name}' has shape {:?} for a batch of {total} rows", t.shape()));
        for j in batch {
            let _ = j.reply.send(Err(e.clone()));
        }
        return;
    }
    let mut offset = 0;
    for j in batch {
        let mine: ServeResult<Vec<Tensor>> =
            names.iter().zip(&outputs).map(|(n, t)| t.rows(n, offset, j.rows).map_err(|e| backend_error(label, e))).collect();
        offset += j.rows;
        let _ = j.reply.send(mine.map(|outputs| TensorRan { outputs, queue: start - j.enqueued, compute }));
    }
}
