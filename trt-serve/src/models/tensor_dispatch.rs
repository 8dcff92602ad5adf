//! Admission and execution for one tensor-model version: a bounded queue
//! and one worker thread per backend instance.
//!
//! | config | a batch is |
//! |---|---|
//! | `dynamic_batching { ... }` and `max_batch_size > 0` | queued requests whose inputs agree on every dimension after the batch axis (but those the config declares paddable), stacked along it, up to `max_batch_size` rows |
//! | otherwise | one request |
//!
//! Batches are cut as Triton's dynamic batcher cuts them, simplified: the
//! oldest request decides the shape of the batch; requests of the same
//! shape join it in arrival order while they fit; it is cut when it reaches
//! `max_batch_size` or a preferred batch size, or when the oldest request
//! has waited `max_queue_delay_microseconds`. Requests of another shape
//! (ragged sequence lengths) wait for a batch of their own, so no tensor is
//! padded and every row's outputs are those it would get alone, unless the
//! config declares those dimensions paddable (`pad.<input>` parameters,
//! module `tensor_padding`): then they share a batch, padded to its
//! longest, and outputs the config maps (`unpad.<output>`) come back at
//! each request's own length.
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
use crate::error::{ServeError, ServeResult};
use crate::models::dispatch::{max_queue, Policy};
use crate::models::tensor_model::TensorModel;
use crate::models::tensor_padding::BatchKey;
use crate::transport::limits::Limits;

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
    /// Each input's dimensions after the batch axis (paddable ones left out): requests batch together when equal.
    key: BatchKey,
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
        let max_queue = max_queue(config, limits);
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
        let key = self.shared.model.padding().key(&inputs);
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
    let padding = shared.model.padding();
    let mut padded = false;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> ServeResult<Vec<Tensor>> {
        let mut stacked = Vec::new();
        let inputs: &[Tensor] = if merged {
            for (k, name) in shared.model.input_names().enumerate() {
                let parts: Vec<&Tensor> = batch.iter().map(|j| &j.inputs[k]).collect();
                let (t, grew) = padding.stack(k, name, &parts).map_err(|e| backend_error(label, e))?;
                padded |= grew;
                stacked.push(t);
            }
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
        let mine: ServeResult<Vec<Tensor>> = names
            .iter()
            .zip(&outputs)
            .enumerate()
            .map(|(o, (n, t))| {
                let rows = t.rows(n, offset, j.rows)?;
                if padded {
                    padding.cut(o, n, rows, &j.inputs)
                } else {
                    Ok(rows)
                }
            })
            .map(|r| r.map_err(|e| backend_error(label, e)))
            .collect();
        offset += j.rows;
        let _ = j.reply.send(mine.map(|outputs| TensorRan { outputs, queue: start - j.enqueued, compute }));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex as StdMutex;

    use trt_nlp::tensor::{TensorBackend, TensorData, TensorSpec};
    use trt_nlp::ElementType;

    use super::*;

    /// A test double of a tensor executor: `y = 2 * x`, after `delay`,
    /// recording each batch's shape; fails a batch whose first value is negative.
    #[derive(Debug)]
    struct Doubling {
        specs: (Vec<TensorSpec>, Vec<TensorSpec>),
        delay: Duration,
        batches: StdMutex<Vec<Vec<usize>>>,
    }

    impl TensorBackend for Doubling {
        fn name(&self) -> &str {
            "doubling test double"
        }
        fn inputs(&self) -> &[TensorSpec] {
            &self.specs.0
        }
        fn outputs(&self) -> &[TensorSpec] {
            &self.specs.1
        }
        fn instances(&self) -> usize {
            1
        }
        fn run(&self, inputs: &[(&str, &Tensor)], _: &[&str]) -> trt_nlp::Result<Vec<Tensor>> {
            std::thread::sleep(self.delay);
            let x = inputs[0].1;
            self.batches.lock().unwrap().push(x.shape().to_vec());
            let TensorData::F32(v) = x.data() else { unreachable!("declared F32") };
            if v.first().is_some_and(|&f| f < 0.0) {
                return Err(trt_nlp::Error::Runtime { backend: "test double".into(), source: "negative input".into() });
            }
            Ok(vec![Tensor::new("y", x.shape().to_vec(), TensorData::F32(v.iter().map(|f| f * 2.0).collect()))?])
        }
    }

    fn dispatcher(batching: &str, delay: Duration) -> (TensorDispatcher, Arc<Doubling>) {
        let spec = |n: &str| TensorSpec { name: n.into(), element: ElementType::F32, shape: vec![-1, -1] };
        let backend = Arc::new(Doubling { specs: (vec![spec("x")], vec![spec("y")]), delay, batches: StdMutex::new(Vec::new()) });
        let config = ModelConfig::parse(&format!("platform: \"onnxruntime_onnx\"\nmax_batch_size: 8\n{batching}"), "m").unwrap();
        let (model, completed) = TensorModel::new(&config, backend.clone()).unwrap();
        let d = TensorDispatcher::new(Arc::new(model), &completed, &Limits::default(), "model 'm' version 1".into()).unwrap();
        (d, backend)
    }

    fn x(rows: usize, width: usize, start: f32) -> Tensor {
        Tensor::new("x", vec![rows, width], TensorData::F32((0..rows * width).map(|i| start + i as f32).collect())).unwrap()
    }

    /// Sends every `(rows, width, start)` job at once and checks each gets `2 * x` at its own shape.
    async fn run_all_and_check(d: &Arc<TensorDispatcher>, jobs: &[(usize, usize, f32)]) {
        let handles: Vec<_> = jobs
            .iter()
            .map(|&(rows, width, start)| {
                let d = d.clone();
                tokio::spawn(async move { d.run(rows, vec![x(rows, width, start)], None).await })
            })
            .collect();
        for (h, &(rows, width, start)) in handles.into_iter().zip(jobs) {
            let ran = tokio::time::timeout(Duration::from_secs(10), h).await.unwrap().unwrap().unwrap();
            let want: Vec<f32> = (0..rows * width).map(|i| 2.0 * (start + i as f32)).collect();
            assert_eq!(ran.outputs, vec![Tensor::new("y", vec![rows, width], TensorData::F32(want)).unwrap()]);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn equal_shapes_share_batches_ragged_ones_do_not_and_each_gets_its_rows() {
        let (d, backend) = dispatcher("dynamic_batching { max_queue_delay_microseconds: 50000 }", Duration::from_millis(5));
        let d = Arc::new(d);
        // Six requests of width 3 (one of two rows), three of width 5: at most 8 rows a batch.
        let jobs: Vec<(usize, usize, f32)> = vec![
            (1, 3, 0.0),
            (2, 3, 10.0),
            (1, 5, 20.0),
            (1, 3, 30.0),
            (1, 5, 40.0),
            (1, 3, 50.0),
            (1, 3, 60.0),
            (1, 5, 70.0),
            (1, 3, 80.0),
        ];
        run_all_and_check(&d, &jobs).await;
        let batches = backend.batches.lock().unwrap().clone();
        assert_eq!(batches.iter().map(|s| s[0]).sum::<usize>(), 10, "every row ran once: {batches:?}");
        assert!(batches.len() < jobs.len(), "requests were batched: {batches:?}");
        assert!(batches.iter().all(|s| s[0] <= 8), "no batch over max_batch_size: {batches:?}");
        assert!(batches.iter().any(|s| s[1] == 3) && batches.iter().any(|s| s[1] == 5), "{batches:?}");
        assert_eq!(d.executions(), batches.len() as u64);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn declared_paddable_ragged_requests_share_batches_and_get_their_own_lengths_back() {
        let pad = "parameters { key: \"pad.x\" value { string_value: \"0\" } }\nparameters { key: \"unpad.y\" value { string_value: \"0=x:0\" } }";
        let (d, backend) =
            dispatcher(&format!("dynamic_batching {{ max_queue_delay_microseconds: 50000 }}\n{pad}"), Duration::from_millis(5));
        let d = Arc::new(d);
        let jobs: Vec<(usize, usize, f32)> = vec![(1, 3, 1.0), (2, 5, 10.0), (1, 1, 30.0), (1, 4, 40.0), (1, 3, 50.0)];
        run_all_and_check(&d, &jobs).await;
        let batches = backend.batches.lock().unwrap().clone();
        assert_eq!(batches.iter().map(|s| s[0]).sum::<usize>(), 6, "every row ran once: {batches:?}");
        assert!(batches.len() < jobs.len(), "ragged requests were batched: {batches:?}");
        assert!(batches.iter().any(|s| s[0] > 2 && s[1] == 5), "a batch padded to the longest: {batches:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn without_dynamic_batching_each_request_runs_alone() {
        let (d, backend) = dispatcher("", Duration::ZERO);
        for i in 0..3 {
            let ran = d.run(2, vec![x(2, 4, i as f32)], None).await.unwrap();
            assert_eq!(ran.outputs[0].shape(), [2, 4]);
        }
        assert_eq!(*backend.batches.lock().unwrap(), vec![vec![2, 4]; 3]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn the_queue_is_bounded_timeouts_apply_and_a_failed_batch_fails_its_requests_only() {
        let (d, _) = dispatcher(
            "dynamic_batching { default_queue_policy { max_queue_size: 2 allow_timeout_override: true } }",
            Duration::from_millis(300),
        );
        let d = Arc::new(d);
        // One running, two queued (of another shape, so they wait): the next is refused at once.
        let running = tokio::spawn({
            let d = d.clone();
            async move { d.run(1, vec![x(1, 2, 0.0)], None).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let queued: Vec<_> = (0..2)
            .map(|i| {
                let d = d.clone();
                tokio::spawn(async move { d.run(1, vec![x(1, 3 + i, 0.0)], None).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let e = d.run(1, vec![x(1, 9, 0.0)], None).await.unwrap_err();
        assert!(matches!(&e, ServeError::Unavailable(m) if m.contains("overloaded")), "{e}");
        for h in queued {
            h.await.unwrap().unwrap();
        }
        running.await.unwrap().unwrap();
        // A 1 ms queue timeout behind a running batch: 503, and the batch it waited behind still answers.
        let busy = tokio::spawn({
            let d = d.clone();
            async move { d.run(1, vec![x(1, 2, 0.0)], None).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let e = d.run(1, vec![x(1, 2, 1.0)], Some(1000)).await.unwrap_err();
        assert!(matches!(&e, ServeError::Unavailable(m) if m.contains("timed out in the queue")), "{e}");
        busy.await.unwrap().unwrap();
        let e = d.run(1, vec![x(1, 2, -1.0)], None).await.unwrap_err();
        assert!(matches!(&e, ServeError::Internal(m) if m.contains("negative input")), "{e}");
        assert!(d.run(1, vec![x(1, 2, 1.0)], None).await.is_ok(), "the next batch runs");
        assert_eq!(d.queued(), 0);
    }
}
