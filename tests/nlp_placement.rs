//! One model on several device instances behind `trt_nlp::backend::LeastLoaded`,
//! under the batching scheduler, against scripted backend test doubles
//! (`ScriptedBackendDouble` in tests/batching_doubles.rs; they run no model
//! and stand for the backends of different GPUs): the least-loaded choice per
//! instance, round-robin among equals, a failing member failing only its own
//! batches, and one queue cutting batches for every device. Runs on the CPU;
//! needs `scripts/setup` for the MiniLM tokenizer. Every wait is bounded.

#[path = "batching_doubles.rs"]
mod doubles;
#[path = "nlp_support.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use doubles::{double_layout, ScriptedBackendDouble};
use trt_nlp::backend::{DeviceInstance, DeviceInstanceStats, LeastLoaded};
use trt_nlp::batching::{BatchingConfig, Handle, Request, RequestError, Response, Scheduler};
use trt_nlp::{Backend, TokenRow, TokenizerPipeline};

const MAX_SEQ: usize = 64;
const LONG: Duration = Duration::from_secs(10);

fn pipeline() -> Arc<TokenizerPipeline> {
    Arc::new(TokenizerPipeline::builder(MAX_SEQ).threads(1).from_file(support::tokenizer_json()).unwrap())
}

/// A row tagged `tag` (its second id): `[CLS] tag 1000 [SEP]`.
fn row(tag: u32) -> TokenRow {
    TokenRow::new(vec![101, tag, 1000, 102], None).unwrap()
}

/// Closed doubles with these instance counts, each named as a GPU.
fn members(instances: &[usize]) -> Vec<Arc<ScriptedBackendDouble>> {
    instances.iter().map(|&n| Arc::new(ScriptedBackendDouble::new(double_layout(1, 32, MAX_SEQ), n))).collect()
}

fn placed(doubles: &[Arc<ScriptedBackendDouble>]) -> Arc<LeastLoaded> {
    let members = doubles
        .iter()
        .enumerate()
        .map(|(i, d)| DeviceInstance { backend: d.clone() as Arc<dyn Backend>, gpu_uuid: Some(format!("GPU-test-double-{i}")) })
        .collect();
    Arc::new(LeastLoaded::new(members).unwrap())
}

fn scheduler(backend: &Arc<LeastLoaded>, delay: Duration) -> Scheduler {
    let mut config = BatchingConfig::default();
    config.max_batch_size = 8;
    config.max_queue_delay = delay;
    Scheduler::new(backend.clone(), pipeline(), config).unwrap()
}

fn submit(s: &Scheduler, tags: &[u32]) -> Handle {
    s.submit(Request::token_rows(tags.iter().map(|&t| row(t)).collect())).unwrap()
}

fn finish(mut h: Handle) -> Result<Response, RequestError> {
    h.wait_timeout(LONG).expect("the request did not finish in 10 s")
}

fn tags(double: &ScriptedBackendDouble) -> Vec<Vec<u32>> {
    double.ran().into_iter().map(|b| b.tags).collect()
}

fn stats(backend: &LeastLoaded) -> Vec<DeviceInstanceStats> {
    backend.device_instances()
}

#[test]
fn a_batch_goes_to_the_member_with_the_fewest_batches_in_flight_per_instance() {
    // Member 0 has two instances (contexts), member 1 one.
    let doubles = members(&[2, 1]);
    let backend = placed(&doubles);
    let caps = backend.capabilities();
    assert_eq!((caps.instances, caps.devices), (3, 2));
    let s = scheduler(&backend, Duration::ZERO);
    let h1 = submit(&s, &[1]);
    doubles[0].wait_started(1); // all idle: the first in turn
    let h2 = submit(&s, &[2]);
    doubles[1].wait_started(1); // member 0 at 1/2, member 1 at 0/1
    let h3 = submit(&s, &[3]);
    doubles[0].wait_started(2); // member 0 at 1/2, member 1 at 1/1
    assert_eq!(stats(&backend).iter().map(|m| m.in_flight).collect::<Vec<_>>(), [2, 1]);
    doubles.iter().for_each(|d| d.open());
    for h in [h1, h2, h3] {
        finish(h).unwrap();
    }
    let mut on_0 = tags(&doubles[0]);
    on_0.sort();
    assert_eq!((on_0, tags(&doubles[1])), (vec![vec![1], vec![3]], vec![vec![2]]));
    let st = stats(&backend);
    assert_eq!(st.iter().map(|m| (m.batches, m.rows, m.failures, m.in_flight)).collect::<Vec<_>>(), [(2, 2, 0, 0), (1, 1, 0, 0)]);
    assert_eq!(st[1].gpu_uuid.as_deref(), Some("GPU-test-double-1"));
}

#[test]
fn equal_loads_take_turns_round_robin() {
    let doubles = members(&[1, 1, 1]);
    doubles.iter().for_each(|d| d.open());
    let backend = placed(&doubles);
    let s = scheduler(&backend, Duration::ZERO);
    for tag in 1..=7 {
        finish(submit(&s, &[tag])).unwrap(); // one at a time: every member idle at each choice
    }
    assert_eq!(tags(&doubles[0]), [vec![1], vec![4], vec![7]]);
    assert_eq!(tags(&doubles[1]), [vec![2], vec![5]]);
    assert_eq!(tags(&doubles[2]), [vec![3], vec![6]]);
}

#[test]
fn a_failing_member_fails_only_its_batches_and_the_others_keep_serving() {
    let doubles = members(&[1, 1]);
    doubles[1].fail_every_batch(true);
    doubles[1].open();
    doubles[0].allow(4);
    let backend = placed(&doubles);
    let s = scheduler(&backend, Duration::ZERO);
    finish(submit(&s, &[1])).unwrap(); // member 0
    let failed = finish(submit(&s, &[2])).unwrap_err(); // member 1, broken
    assert!(matches!(failed, RequestError::Backend(_)), "{failed:?}");
    assert!(failed.to_string().contains("fails every batch"), "{failed}");
    // A member whose last batch failed is passed over while another has room.
    for tag in 3..=5 {
        finish(submit(&s, &[tag])).unwrap();
    }
    assert_eq!(tags(&doubles[0]), [vec![1], vec![3], vec![4], vec![5]]);
    assert_eq!(tags(&doubles[1]), [vec![2]]);
    // Member 0 busy (its gate closed): member 1 is tried again and, repaired, serves.
    doubles[1].fail_every_batch(false);
    let busy = submit(&s, &[6]);
    doubles[0].wait_started(5);
    let retried = finish(submit(&s, &[7])).unwrap();
    assert_eq!(retried.rows()[0].batch_size, 1);
    assert_eq!(tags(&doubles[1]), [vec![2], vec![7]]);
    doubles[0].open();
    finish(busy).unwrap();
    let st = stats(&backend);
    assert_eq!(st.iter().map(|m| (m.batches, m.failures)).collect::<Vec<_>>(), [(5, 0), (2, 1)]);
    let m = s.metrics();
    assert_eq!((m.succeeded, m.failures.backend), (6, 1), "{m:?}");
}

#[test]
fn one_queue_cuts_the_batches_for_every_device_and_cuts_at_once_while_one_is_idle() {
    let doubles = members(&[1, 1]);
    let backend = placed(&doubles);
    // A long delay: only an idle device makes a batch be cut before it ends.
    let s = scheduler(&backend, Duration::from_secs(30));
    let h1 = submit(&s, &[1]);
    doubles[0].wait_started(1);
    let h2 = submit(&s, &[2]); // member 1 idle: cut at once, not after 30 s
    doubles[1].wait_started(1);
    // Both busy: these wait in the model's one queue.
    let queued: Vec<Handle> = (3..=5).map(|t| submit(&s, &[t])).collect();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(doubles.iter().map(|d| d.started()).sum::<usize>(), 2, "nothing is cut while every device is busy");
    doubles[0].allow(2); // member 0 finishes 1, is idle, and takes the queue as one batch
    finish(h1).unwrap();
    let responses: Vec<Response> = queued.into_iter().map(|h| finish(h).unwrap()).collect();
    assert!(responses.iter().all(|r| r.rows()[0].batch_size == 3), "one batch of the three");
    assert_eq!(tags(&doubles[0]), [vec![1], vec![3, 4, 5]]);
    doubles[1].open();
    finish(h2).unwrap();
    assert_eq!(tags(&doubles[1]), [vec![2]]);
    assert_eq!(s.metrics().executions, 3);
}

#[test]
fn members_must_run_the_same_model() {
    let a = Arc::new(ScriptedBackendDouble::new(double_layout(1, 32, MAX_SEQ), 1)) as Arc<dyn Backend>;
    let b = Arc::new(ScriptedBackendDouble::new(double_layout(1, 16, MAX_SEQ), 1)) as Arc<dyn Backend>;
    let e =
        LeastLoaded::new(vec![DeviceInstance { backend: a, gpu_uuid: None }, DeviceInstance { backend: b, gpu_uuid: None }]).unwrap_err();
    assert!(
        matches!(&e, trt_nlp::Error::InvalidOption { option: "placement", value, .. } if value.starts_with("device instance 1 with layout")),
        "{e}"
    );
    let e = LeastLoaded::new(Vec::new()).unwrap_err();
    assert!(
        matches!(&e, trt_nlp::Error::InvalidOption { option: "placement", expected, .. } if expected.contains("at least one device instance")),
        "{e}"
    );
}
