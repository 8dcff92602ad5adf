//! Backend test doubles for the batching scheduler (included with `#[path]`
//! by tests/nlp_batching.rs and the batching benches; not a test target).
//!
//! These are test doubles, not backends: they run no model. Each one
//! implements `trt_nlp::Backend` with outputs that are a pure function of
//! each row's own tokens, so a correct scheduler gives every row the same
//! outputs whatever batch it lands in:
//! - `hidden` `[batch, seq, 2]`: `(input_id, attention_mask)` at every position;
//! - `logits` `[batch, 2]`: `(sum of the row's real ids, its real length)`.
#![allow(dead_code)] // each includer uses part of this

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use ndarray::{Array2, Array3};
use trt_nlp::backend::{Capabilities, Fill, Read};
use trt_nlp::ElementType;
use trt_nlp::{Backend, EncodedBatch, Error, InputRole, InputSpec, ModelLayout, OutputSpec, OutputView, Outputs, Result, TokenRow};

/// A row whose second id is this makes the scripted double fail its batch.
pub const FAIL_TAG: u32 = 999;
/// A row whose second id is this makes the scripted double panic.
pub const PANIC_TAG: u32 = 998;

/// The double's layout: i32 `input_ids` and `attention_mask`, outputs `hidden` and `logits`.
pub fn double_layout(min_batch: usize, max_batch: usize, max_seq: usize) -> ModelLayout {
    let spec = |role: InputRole| InputSpec::new(role.default_name(), role, ElementType::I32).unwrap();
    ModelLayout::new(
        vec![spec(InputRole::InputIds), spec(InputRole::AttentionMask)],
        vec![OutputSpec::new("hidden", ElementType::F32, 3), OutputSpec::new("logits", ElementType::F32, 2)],
        min_batch..=max_batch,
        1..=max_seq,
    )
    .unwrap()
}

/// What the doubles compute for one row, alone: `(hidden [len, 2], logits [2])`.
pub fn expected_outputs(row: &TokenRow) -> (Vec<[f32; 2]>, [f32; 2]) {
    let hidden = row.ids().iter().map(|&id| [id as f32, 1.0]).collect();
    let sum: f32 = row.ids().iter().map(|&id| id as f32).sum();
    (hidden, [sum, row.len() as f32])
}

/// Host buffers for one batch, and the doubles' arithmetic on them.
struct Staging {
    ids: Vec<i32>,
    mask: Vec<i32>,
}

/// Fills a batch into `staging`, computes the doubles' outputs, hands them to `read`.
/// `inspect` sees `(rows, seq_len, ids)` before the outputs are made and may fail the batch.
fn compute(
    layout: &ModelLayout,
    staging: &mut Staging,
    fill: &mut Fill<'_>,
    read: &mut Read<'_>,
    inspect: impl FnOnce(usize, usize, &[i32]) -> Result<()>,
) -> Result<()> {
    let batch_layout = {
        let mut batch =
            EncodedBatch::new().with(layout.inputs[0].clone(), &mut staging.ids)?.with(layout.inputs[1].clone(), &mut staging.mask)?;
        fill(&mut batch)?
    };
    let (b, s) = (batch_layout.batch, batch_layout.seq_len);
    if b < layout.min_batch || b > layout.max_batch || s > layout.max_seq {
        return Err(Error::BatchOutOfRange {
            batch: b,
            seq_len: s,
            batch_range: layout.min_batch..=layout.max_batch,
            seq_range: layout.min_seq..=layout.max_seq,
        });
    }
    inspect(b, s, &staging.ids[..b * s])?;
    let mut hidden = Array3::<f32>::zeros((b, s, 2));
    let mut logits = Array2::<f32>::zeros((b, 2));
    for r in 0..b {
        for t in 0..s {
            let (id, m) = (staging.ids[r * s + t], staging.mask[r * s + t]);
            hidden[[r, t, 0]] = id as f32;
            hidden[[r, t, 1]] = m as f32;
            if m == 1 {
                logits[[r, 0]] += id as f32;
                logits[[r, 1]] += 1.0;
            }
        }
    }
    let mut outputs = Outputs::new();
    outputs.push("hidden", OutputView::F32(hidden.view().into_dyn()));
    outputs.push("logits", OutputView::F32(logits.view().into_dyn()));
    read(&batch_layout, &outputs)
}

/// A failure of a test double, as a backend of the caller's own reports one.
fn double_failure(what: &str) -> Error {
    Error::Runtime { backend: "test double".into(), source: what.into() }
}

/// A pool of staging buffers, one per instance.
struct Instances {
    free: Mutex<Vec<Staging>>,
    returned: Condvar,
}

impl Instances {
    fn new(n: usize, layout: &ModelLayout) -> Self {
        let len = layout.max_batch * layout.max_seq;
        Instances {
            free: Mutex::new((0..n).map(|_| Staging { ids: vec![0; len], mask: vec![0; len] }).collect()),
            returned: Condvar::new(),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Staging) -> R) -> R {
        let staging = {
            let mut free = self.free.lock().unwrap();
            loop {
                if let Some(s) = free.pop() {
                    break s;
                }
                free = self.returned.wait(free).unwrap();
            }
        };
        // Give the buffers back even if `f` panics (the scripted double's panic test).
        struct Return<'a>(&'a Instances, Option<Staging>);
        impl Drop for Return<'_> {
            fn drop(&mut self) {
                if let Some(s) = self.1.take() {
                    self.0.free.lock().unwrap_or_else(|e| e.into_inner()).push(s);
                    self.0.returned.notify_one();
                }
            }
        }
        let mut guard = Return(self, Some(staging));
        let staging = guard.1.as_mut().expect("just put there");
        f(staging)
    }
}

/// One batch the scripted double ran: each row's second id (its tag) and the padded length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RanBatch {
    pub tags: Vec<u32>,
    pub seq_len: usize,
}

/// Scheduling-logic test double: records every batch, can be held closed
/// (a gate of permits) so that a test fills the queue while "the model is
/// busy", and fails or panics on scripted rows, or fails every batch while
/// [`fail_every_batch`](Self::fail_every_batch) says so (a broken device).
pub struct ScriptedBackendDouble {
    layout: ModelLayout,
    instances: usize,
    parallel: bool,
    broken: AtomicBool,
    staging: Instances,
    permits: Mutex<usize>,
    gate: Condvar,
    started: Mutex<usize>,
    started_cv: Condvar,
    ran: Mutex<Vec<RanBatch>>,
}

impl std::fmt::Debug for ScriptedBackendDouble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScriptedBackendDouble")
    }
}

impl ScriptedBackendDouble {
    /// Closed: no batch runs until [`allow`](Self::allow) or [`open`](Self::open).
    pub fn new(layout: ModelLayout, instances: usize) -> Self {
        let staging = Instances::new(instances, &layout);
        ScriptedBackendDouble {
            layout,
            instances,
            parallel: false,
            broken: AtomicBool::new(false),
            staging,
            permits: Mutex::new(0),
            gate: Condvar::new(),
            started: Mutex::new(0),
            started_cv: Condvar::new(),
            ran: Mutex::new(Vec::new()),
        }
    }

    /// Says its instances run side by side (`Capabilities::parallel_instances`), as CPU sessions do.
    pub fn parallel_instances(mut self, parallel: bool) -> Self {
        self.parallel = parallel;
        self
    }

    /// From now on, every batch that passes the gate fails (`true`) or runs (`false`).
    pub fn fail_every_batch(&self, broken: bool) {
        self.broken.store(broken, Ordering::SeqCst);
    }

    /// Lets `n` more batches run.
    pub fn allow(&self, n: usize) {
        let mut p = self.permits.lock().unwrap();
        *p = p.saturating_add(n);
        self.gate.notify_all();
    }

    /// Lets every batch run from now on.
    pub fn open(&self) {
        self.allow(usize::MAX);
    }

    /// Waits (at most 10 s) until `n` batches have entered `run`; panics (fails the test) otherwise.
    pub fn wait_started(&self, n: usize) {
        let end = Instant::now() + Duration::from_secs(10);
        let mut s = self.started.lock().unwrap();
        while *s < n {
            let left = end.checked_duration_since(Instant::now()).expect("test double: batches did not start in 10 s");
            s = self.started_cv.wait_timeout(s, left).unwrap().0;
        }
    }

    /// How many batches have entered `run` so far.
    pub fn started(&self) -> usize {
        *self.started.lock().unwrap()
    }

    /// The batches run so far, in the order they ran.
    pub fn ran(&self) -> Vec<RanBatch> {
        self.ran.lock().unwrap().clone()
    }
}

impl Backend for ScriptedBackendDouble {
    fn name(&self) -> &str {
        "scripted-test-double"
    }

    fn layout(&self) -> &ModelLayout {
        &self.layout
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::new(self.instances).with_parallel_instances(self.parallel)
    }

    fn health(&self) -> Result<()> {
        Ok(())
    }

    fn run(&self, fill: &mut Fill<'_>, read: &mut Read<'_>) -> Result<()> {
        {
            *self.started.lock().unwrap() += 1;
            self.started_cv.notify_all();
            let end = Instant::now() + Duration::from_secs(30);
            let mut p = self.permits.lock().unwrap();
            while *p == 0 {
                let Some(left) = end.checked_duration_since(Instant::now()) else {
                    return Err(double_failure("the gate stayed closed for 30 s"));
                };
                p = self.gate.wait_timeout(p, left).unwrap().0;
            }
            *p -= 1;
        }
        self.staging.with(|staging| {
            compute(&self.layout, staging, fill, read, |b, s, ids| {
                let tags: Vec<u32> = (0..b).map(|r| ids.get(r * s + 1).copied().unwrap_or(0) as u32).collect();
                self.ran.lock().unwrap().push(RanBatch { tags: tags.clone(), seq_len: s });
                if tags.contains(&FAIL_TAG) {
                    return Err(double_failure("scripted failure"));
                }
                if self.broken.load(Ordering::SeqCst) {
                    return Err(double_failure("this instance fails every batch"));
                }
                if tags.contains(&PANIC_TAG) {
                    panic!("test double: scripted panic");
                }
                Ok(())
            })
        })
    }
}

/// A GPU-like simulated backend, a test double: one simulated device runs
/// one batch at a time and takes `launch + per_token * batch * seq_len`
/// (slept, not computed), whatever the number of callers. `instances`
/// staging slots let the next batch be packed while one "executes".
pub struct SimulatedGpuDouble {
    layout: ModelLayout,
    instances: usize,
    staging: Instances,
    device: Mutex<()>,
    pub launch: Duration,
    pub per_token: Duration,
}

impl std::fmt::Debug for SimulatedGpuDouble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SimulatedGpuDouble(launch {:?}, per token {:?})", self.launch, self.per_token)
    }
}

impl SimulatedGpuDouble {
    pub fn new(layout: ModelLayout, instances: usize, launch: Duration, per_token: Duration) -> Self {
        let staging = Instances::new(instances, &layout);
        SimulatedGpuDouble { layout, instances, staging, device: Mutex::new(()), launch, per_token }
    }

    /// The simulated service time of a `[batch, seq_len]` batch.
    pub fn service_time(&self, batch: usize, seq_len: usize) -> Duration {
        self.launch + self.per_token * (batch * seq_len) as u32
    }
}

impl Backend for SimulatedGpuDouble {
    fn name(&self) -> &str {
        "simulated-gpu-test-double"
    }

    fn layout(&self) -> &ModelLayout {
        &self.layout
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::new(self.instances)
    }

    fn health(&self) -> Result<()> {
        Ok(())
    }

    fn run(&self, fill: &mut Fill<'_>, read: &mut Read<'_>) -> Result<()> {
        self.staging.with(|staging| {
            compute(&self.layout, staging, fill, read, |b, s, _| {
                let _device = self.device.lock().unwrap();
                sleep_until(Instant::now() + self.service_time(b, s));
                Ok(())
            })
        })
    }
}

/// Sleeps to `end`, finishing with a short spin so that service times are
/// not inflated by the timer's slack.
fn sleep_until(end: Instant) {
    const SPIN: Duration = Duration::from_micros(80);
    loop {
        let now = Instant::now();
        let Some(left) = end.checked_duration_since(now) else { return };
        if left > SPIN {
            std::thread::sleep(left - SPIN);
        } else {
            std::hint::spin_loop();
        }
    }
}
