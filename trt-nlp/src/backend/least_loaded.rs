//! One model placed on several devices (or several instance sets of one
//! device) behind one [`Backend`]: each batch goes to the least-loaded
//! device instance.
//!
//! | piece | what it is |
//! |---|---|
//! | [`DeviceInstance`] | one backend opened on one device (its contexts or sessions), with the device's `gpu_uuid` |
//! | [`LeastLoaded`] | the [`Backend`] over them: picks a member per batch, counts each member's work |
//! | [`DeviceInstanceStats`] | one member's counters, for per-GPU metrics |
//!
//! The choice, made when a batch starts: the member with the fewest batches
//! in flight per instance (`in_flight / instances`, so a member of four
//! contexts takes four batches before one of one context takes a second);
//! among equals, the next in round-robin order after the last one chosen,
//! so an idle model spreads its batches over every device. A member whose
//! last batch failed is chosen only when every other member is full: a
//! broken GPU fails fast and would otherwise, being the least loaded, draw
//! the batches; its next success puts it back in the rotation. A failure
//! (error or panic) is the batch's own: it never touches another member,
//! and the batcher fails only that batch's requests.
//!
//! The batcher above forms each batch once, for the model: it sees the sum
//! of the members' instances and, through [`Backend::devices`], how many of
//! them run independently, so that on a shared device it cuts at once while
//! any member has nothing running.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::{Backend, Capabilities, Fill, Read};
use crate::{Error, ModelLayout, Result};

/// One backend opened on one device, as a member of a [`LeastLoaded`].
#[derive(Debug, Clone)]
pub struct DeviceInstance {
    /// The backend (its [`instances`](super::Capabilities::instances) are this member's share).
    pub backend: Arc<dyn Backend>,
    /// The device's UUID (`GPU-...`, Triton's `gpu_uuid` label) where the
    /// backend runs on a GPU whose UUID is known; `None` otherwise.
    pub gpu_uuid: Option<String>,
}

impl DeviceInstance {
    /// `backend`, which runs on CUDA device `ordinal`, labelled with that
    /// GPU's UUID where the driver gives it (no label where it cannot).
    pub fn on_gpu(backend: Arc<dyn Backend>, ordinal: usize) -> Self {
        let gpu_uuid = trt_cuda::Device::new(ordinal).and_then(|d| d.uuid()).ok();
        DeviceInstance { backend, gpu_uuid }
    }
}

/// One member's work so far, and now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceInstanceStats {
    /// The member's place in the [`LeastLoaded`], from 0.
    pub index: usize,
    /// The device's UUID, where known.
    pub gpu_uuid: Option<String>,
    /// Batches it can run at once.
    pub instances: usize,
    /// Batches running on it now.
    pub in_flight: usize,
    /// Batches it finished, successfully or not.
    pub batches: u64,
    /// Rows (batch entries, padding rows included) of its successful batches.
    pub rows: u64,
    /// Batches that failed on it (an error or a panic).
    pub failures: u64,
    /// Time its batches spent in the backend, successful or not.
    pub busy: Duration,
}

/// Per member, under one lock: what the choice reads and what metrics report.
#[derive(Debug, Default, Clone)]
struct Load {
    in_flight: usize,
    last_failed: bool,
    batches: u64,
    rows: u64,
    failures: u64,
    busy: Duration,
}

/// Several [`DeviceInstance`]s of one model behind one [`Backend`]: each
/// batch runs on the least-loaded member (see the module doc).
///
/// ```no_run
/// # fn demo(gpu0: std::sync::Arc<dyn trt_nlp::Backend>, gpu1: std::sync::Arc<dyn trt_nlp::Backend>) -> trt_nlp::Result<()> {
/// use trt_nlp::backend::{DeviceInstance, LeastLoaded};
/// let model = LeastLoaded::new(vec![
///     DeviceInstance { backend: gpu0, gpu_uuid: Some("GPU-0a...".into()) },
///     DeviceInstance { backend: gpu1, gpu_uuid: Some("GPU-1b...".into()) },
/// ])?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LeastLoaded {
    members: Vec<DeviceInstance>,
    instances: Vec<usize>,
    layout: ModelLayout,
    name: String,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    loads: Vec<Load>,
    /// The member after the last one chosen: where ties start.
    cursor: usize,
}

impl LeastLoaded {
    /// The members, which must run the same model: equal layouts (the
    /// batcher packs a batch before it knows the member) and the same
    /// executor. Fails on an empty list or a member that differs.
    pub fn new(members: Vec<DeviceInstance>) -> Result<Self> {
        let Some(first) = members.first() else {
            return Err(Error::InvalidOption { option: "placement", value: "[]".into(), expected: "at least one device instance".into() });
        };
        let layout = first.backend.layout().clone();
        let name = first.backend.name().to_string();
        for (i, m) in members.iter().enumerate().skip(1) {
            if m.backend.layout() != &layout {
                return Err(Error::InvalidOption {
                    option: "placement",
                    value: format!("device instance {i} with layout {:?}", m.backend.layout()),
                    expected: format!("instance 0's layout {layout:?}: one model per placement"),
                });
            }
            if m.backend.name() != name {
                return Err(Error::InvalidOption {
                    option: "placement",
                    value: format!("device instance {i} on {}", m.backend.name()),
                    expected: format!("instance 0's executor, {name}"),
                });
            }
        }
        let instances = members.iter().map(|m| m.backend.capabilities().instances.max(1)).collect();
        let loads = vec![Load::default(); members.len()];
        Ok(LeastLoaded { members, instances, layout, name, state: Mutex::new(State { loads, cursor: 0 }) })
    }

    /// The members, in placement order.
    pub fn members(&self) -> &[DeviceInstance] {
        &self.members
    }

    // Nothing under the lock panics half-way through an update, so a poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Chooses the member for the next batch and counts it in flight there.
    fn choose(&self) -> usize {
        let mut st = self.lock();
        let n = self.members.len();
        // `a` is less loaded than `b`: a.in_flight / a.instances < b.in_flight / b.instances.
        let less = |a: usize, b: usize, loads: &[Load]| loads[a].in_flight * self.instances[b] < loads[b].in_flight * self.instances[a];
        let pick = |eligible: &dyn Fn(usize) -> bool, loads: &[Load], cursor: usize| {
            // Scanning from the cursor and keeping the first of equals breaks ties round-robin.
            let mut best: Option<usize> = None;
            for k in 0..n {
                let i = (cursor + k) % n;
                if eligible(i) && best.is_none_or(|b| less(i, b, loads)) {
                    best = Some(i);
                }
            }
            best
        };
        let has_room = |i: usize| st.loads[i].in_flight < self.instances[i];
        let healthy = pick(&|i| has_room(i) && !st.loads[i].last_failed, &st.loads, st.cursor);
        let chosen = healthy.or_else(|| pick(&|_| true, &st.loads, st.cursor)).unwrap_or(0);
        st.loads[chosen].in_flight += 1;
        st.cursor = (chosen + 1) % n;
        chosen
    }

    /// Records the end of a batch on member `i`: `rows` for a success, `None` for a failure.
    fn done(&self, i: usize, rows: Option<usize>, busy: Duration) {
        let mut st = self.lock();
        let load = &mut st.loads[i];
        load.in_flight = load.in_flight.saturating_sub(1);
        load.batches += 1;
        load.busy += busy;
        match rows {
            Some(rows) => {
                load.rows += rows as u64;
                load.last_failed = false;
            }
            None => {
                load.failures += 1;
                load.last_failed = true;
            }
        }
    }
}

impl Backend for LeastLoaded {
    fn name(&self) -> &str {
        &self.name
    }

    fn layout(&self) -> &ModelLayout {
        &self.layout
    }

    fn capabilities(&self) -> Capabilities {
        let first = self.members[0].backend.capabilities();
        Capabilities { instances: self.instances.iter().sum(), devices: self.members.len(), ..first }
    }

    /// Usable while any member is: one GPU's failure leaves the model served by the others.
    fn health(&self) -> Result<()> {
        let mut first_error = None;
        for (i, m) in self.members.iter().enumerate() {
            match m.backend.health() {
                Ok(()) => return Ok(()),
                Err(e) => {
                    first_error.get_or_insert(Error::Runtime {
                        backend: format!("every device instance is unusable; instance {i}"),
                        source: Box::new(e),
                    });
                }
            }
        }
        Err(first_error.unwrap_or_else(|| Error::Internal("a placement with no device instance".into())))
    }

    fn run(&self, fill: &mut Fill<'_>, read: &mut Read<'_>) -> Result<()> {
        self.run_on_least_loaded(None, fill, read)
    }

    fn run_reading(&self, wanted: &[bool], fill: &mut Fill<'_>, read: &mut Read<'_>) -> Result<()> {
        self.run_on_least_loaded(Some(wanted), fill, read)
    }
    fn device_instances(&self) -> Vec<DeviceInstanceStats> {
        let st = self.lock();
        self.members
            .iter()
            .zip(&st.loads)
            .enumerate()
            .map(|(index, (m, l))| DeviceInstanceStats {
                index,
                gpu_uuid: m.gpu_uuid.clone(),
                instances: self.instances[index],
                in_flight: l.in_flight,
                batches: l.batches,
                rows: l.rows,
                failures: l.failures,
                busy: l.busy,
            })
            .collect()
    }
}

impl LeastLoaded {
    /// One batch on the member with the fewest batches in flight per instance, counted.
    fn run_on_least_loaded(&self, wanted: Option<&[bool]>, fill: &mut Fill<'_>, read: &mut Read<'_>) -> Result<()> {
        let i = self.choose();
        let started = Instant::now();
        let mut rows = 0;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut read = |layout: &crate::BatchLayout, outputs: &super::Outputs<'_>| {
                rows = layout.batch;
                read(layout, outputs)
            };
            match wanted {
                Some(w) => self.members[i].backend.run_reading(w, fill, &mut read),
                None => self.members[i].backend.run(fill, &mut read),
            }
        }));
        let busy = started.elapsed();
        match outcome {
            Ok(Ok(())) => {
                self.done(i, Some(rows), busy);
                Ok(())
            }
            Ok(Err(e)) => {
                self.done(i, None, busy);
                Err(e)
            }
            Err(panic) => {
                // Counted, then passed on: the batcher turns it into its batch's failure.
                self.done(i, None, busy);
                resume_unwind(panic)
            }
        }
    }
}
