//! The batching scheduler's logic, against a deterministic backend test
//! double (`ScriptedBackendDouble` in tests/batching_doubles.rs; it runs no
//! model): ordering, priorities, preferred sizes, delays, token budget,
//! length grouping, the padding floor, spreading over parallel workers,
//! deadlines while the model is busy, overload,
//! cancellation, shutdown draining, error isolation, metrics, many threads
//! and many async tasks. Runs on the CPU; needs `scripts/setup` for the
//! MiniLM tokenizer. Every wait is bounded (seconds), so a scheduler bug
//! fails a test rather than hanging it.

#[path = "block_on.rs"]
mod block_on;
#[path = "batching_doubles.rs"]
mod doubles;
#[path = "nlp_support.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use doubles::{double_layout, expected_outputs, ScriptedBackendDouble, FAIL_TAG, PANIC_TAG};
use trt_nlp::batching::{BatchingConfig, Grouping, Handle, Request, RequestError, Response, Scheduler, SubmitError};
use trt_nlp::{Padding, TokenRow, TokenizerPipeline};

const MAX_SEQ: usize = 128;
const LONG: Duration = Duration::from_secs(10);

/// The MiniLM pipeline (loaded once per padding policy: loading takes most of a test's time).
fn pipeline(padding: Padding) -> Arc<TokenizerPipeline> {
    static LOADED: std::sync::Mutex<Vec<(Padding, Arc<TokenizerPipeline>)>> = std::sync::Mutex::new(Vec::new());
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = loaded.iter().find(|(p, _)| *p == padding) {
        return Arc::clone(p);
    }
    let p = Arc::new(TokenizerPipeline::builder(MAX_SEQ).padding(padding).threads(1).from_file(support::tokenizer_json()).unwrap());
    loaded.push((padding, Arc::clone(&p)));
    p
}

/// A row of `len` tokens tagged `tag` (its second id): `[CLS] tag 1000 1001 ... [SEP]`.
fn row(tag: u32, len: usize) -> TokenRow {
    assert!(len >= 3);
    let mut ids = vec![101, tag];
    ids.extend((0..len - 3).map(|i| 1000 + i as u32));
    ids.push(102);
    TokenRow::new(ids, None).unwrap()
}

/// A scheduler over a closed scripted double (one instance unless said otherwise).
fn setup(config: BatchingConfig) -> (Arc<ScriptedBackendDouble>, Scheduler) {
    setup_with(config, double_layout(1, 64, MAX_SEQ), 1, Padding::Longest)
}

fn setup_with(
    config: BatchingConfig,
    layout: trt_nlp::ModelLayout,
    instances: usize,
    padding: Padding,
) -> (Arc<ScriptedBackendDouble>, Scheduler) {
    let double = Arc::new(ScriptedBackendDouble::new(layout, instances));
    let scheduler = Scheduler::new(double.clone(), pipeline(padding), config).unwrap();
    (double, scheduler)
}

fn config(max_batch: usize, delay: Duration) -> BatchingConfig {
    let mut c = BatchingConfig::default();
    c.max_batch_size = max_batch;
    c.max_queue_delay = delay;
    c
}

/// Submits one tagged row.
fn submit(s: &Scheduler, tag: u32, len: usize) -> Handle {
    s.submit(Request::token_rows(vec![row(tag, len)])).unwrap()
}

/// Waits for a handle, at most `LONG`.
fn finish(mut h: Handle) -> Result<Response, RequestError> {
    h.wait_timeout(LONG).expect("the request did not finish in 10 s")
}

/// Checks a row's outputs against what the double computes for that row alone.
fn assert_row_matches(response: &Response, index: usize, expected: &TokenRow) {
    let r = &response.rows()[index];
    let (hidden, logits) = expected_outputs(expected);
    assert_eq!(r.length, expected.len());
    let h = r.output("hidden").unwrap();
    assert_eq!(h.shape(), [expected.len(), 2], "hidden is cut to the row's length");
    for (t, want) in hidden.iter().enumerate() {
        assert_eq!([h[[t, 0]], h[[t, 1]]], *want, "hidden at position {t}");
    }
    let l = r.output("logits").unwrap();
    assert_eq!(l.shape(), [2]);
    assert_eq!([l[[0]], l[[1]]], logits);
}

/// Starts a first batch (tag 1) and waits until the double holds it, so that
/// what is submitted next waits in the queue "while the model is busy".
fn occupy(double: &ScriptedBackendDouble, s: &Scheduler) -> Handle {
    let h = submit(s, 1, 4);
    double.wait_started(1);
    h
}

fn tags(double: &ScriptedBackendDouble) -> Vec<Vec<u32>> {
    double.ran().into_iter().map(|b| b.tags).collect()
}

#[test]
fn texts_come_back_per_request_equal_to_their_unbatched_outputs() {
    let (double, s) = setup(config(8, Duration::from_millis(20)));
    double.open();
    let texts = ["A short one.", "A somewhat longer sentence, with punctuation!", "Mid-sized text here."];
    let alone = s.pipeline().tokenize(&texts).unwrap();
    let single: Vec<Handle> = texts.iter().map(|t| s.submit(Request::text(*t)).unwrap()).collect();
    let together = s.submit(Request::texts(texts)).unwrap();
    for (i, h) in single.into_iter().enumerate() {
        assert_row_matches(&finish(h).unwrap(), 0, &alone[i]);
    }
    let together = finish(together).unwrap();
    assert_eq!(together.rows().len(), 3);
    for (i, expected) in alone.iter().enumerate() {
        assert_row_matches(&together, i, expected);
    }
    let m = s.metrics();
    assert_eq!((m.requests, m.succeeded, m.inferences), (4, 4, 6));
    assert_eq!(m.batch_sizes.iter().enumerate().map(|(n, c)| n as u64 * c).sum::<u64>(), 6);
}

#[test]
fn priority_levels_first_then_fifo_within_a_level() {
    let (double, s) = setup(config(1, Duration::ZERO));
    let blocker = occupy(&double, &s);
    let plan = [(10, 2), (11, 1), (12, 0), (13, 2), (14, 0), (15, 1)];
    let handles: Vec<Handle> = plan.iter().map(|&(tag, p)| s.submit(Request::token_rows(vec![row(tag, 5)]).priority(p)).unwrap()).collect();
    double.open();
    finish(blocker).unwrap();
    for h in handles {
        finish(h).unwrap();
    }
    assert_eq!(tags(&double), [vec![1], vec![12], vec![14], vec![11], vec![15], vec![10], vec![13]]);
    let bad = s.submit(Request::token_rows(vec![row(20, 5)]).priority(3));
    assert!(matches!(bad, Err(SubmitError::InvalidPriority { priority: 3, levels: 3 })), "{bad:?}");
}

#[test]
fn max_batch_size_splits_a_backlog_and_a_request_across_batches() {
    let (double, s) = setup(config(4, Duration::ZERO));
    let blocker = occupy(&double, &s);
    let rows: Vec<TokenRow> = (0..10).map(|i| row(20 + i, 5 + i as usize % 3)).collect();
    let h = s.submit(Request::token_rows(rows.clone())).unwrap();
    double.open();
    finish(blocker).unwrap();
    let r = finish(h).unwrap();
    for (i, expected) in rows.iter().enumerate() {
        assert_row_matches(&r, i, expected);
    }
    let sizes: Vec<usize> = tags(&double).iter().map(Vec::len).collect();
    assert_eq!(sizes, [1, 4, 4, 2]);
}

#[test]
fn a_preferred_size_is_cut_at_once_and_a_smaller_batch_waits_for_the_delay() {
    let mut c = config(8, Duration::from_secs(30));
    c.preferred_batch_sizes = vec![2, 4];
    c.cut_when_idle = Some(false); // the delay even while the device idles
    let (double, s) = setup(c);
    double.open();
    let t0 = Instant::now();
    let a = submit(&s, 10, 5);
    let b = submit(&s, 11, 5);
    finish(a).unwrap();
    finish(b).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(30), "a preferred size did not wait for the 30 s delay");
    assert_eq!(tags(&double), [vec![10, 11]]);
    // One row forms no preferred size: it waits (the delay is 30 s) ...
    let mut lone = submit(&s, 12, 5);
    assert!(lone.wait_timeout(Duration::from_millis(300)).is_none(), "one row was cut before the delay");
    // ... until shutdown drains it.
    s.shutdown();
    finish(lone).unwrap();
    assert_eq!(tags(&double).last().unwrap(), &vec![12]);
}

#[test]
fn rows_arriving_within_the_delay_share_a_batch() {
    let mut c = config(8, Duration::from_millis(300));
    c.cut_when_idle = Some(false);
    let (double, s) = setup(c);
    double.open();
    let handles: Vec<Handle> = (0..3).map(|i| submit(&s, 10 + i, 6)).collect();
    for h in handles {
        let r = finish(h).unwrap();
        assert_eq!(r.rows()[0].batch_size, 3);
    }
    assert_eq!(tags(&double), [vec![10, 11, 12]]);
}

/// On one shared device (the double's default, as a GPU) a row is cut at
/// once while nothing runs, whatever the delay; while a batch runs, rows
/// wait the delay for company (an idle second worker does not take them),
/// and once the device is idle again they go at once, together.
#[test]
fn an_idle_device_cuts_at_once_and_the_delay_applies_only_while_a_batch_runs() {
    let c = config(8, Duration::from_secs(30));
    let (double, s) = setup_with(c.clone(), double_layout(1, 64, MAX_SEQ), 2, Padding::Longest);
    double.open();
    let t0 = Instant::now();
    finish(submit(&s, 10, 5)).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5), "a lone row on an idle device waited {:?}", t0.elapsed());
    assert_eq!(s.metrics().executions, 1);
    drop(s);

    let (double, s) = setup_with(c.clone(), double_layout(1, 64, MAX_SEQ), 2, Padding::Longest);
    let blocker = occupy(&double, &s);
    let mut a = submit(&s, 20, 5);
    let b = submit(&s, 21, 5);
    // The second worker is idle, but the device is busy: the rows wait for the delay (30 s) ...
    assert!(a.wait_timeout(Duration::from_millis(300)).is_none(), "a row was cut while a batch ran, before the delay");
    assert_eq!(double.started(), 1, "only the blocker started");
    // ... until the running batch ends: the device is idle, so both go at once, in one batch.
    let t1 = Instant::now();
    double.open();
    finish(blocker).unwrap();
    finish(a).unwrap();
    finish(b).unwrap();
    assert!(t1.elapsed() < Duration::from_secs(5), "rows waited {:?} after the device went idle", t1.elapsed());
    assert_eq!(tags(&double), [vec![1], vec![20, 21]]);
    drop(s);

    // Side-by-side instances (CPU sessions) keep the delay as configured unless asked.
    let double = Arc::new(ScriptedBackendDouble::new(double_layout(1, 64, MAX_SEQ), 2).parallel_instances(true));
    let s = Scheduler::new(double.clone(), pipeline(Padding::Longest), c).unwrap();
    double.open();
    let mut lone = submit(&s, 30, 5);
    assert!(lone.wait_timeout(Duration::from_millis(300)).is_none(), "parallel instances: a lone row was cut before the delay");
    s.shutdown();
    finish(lone).unwrap();
}

#[test]
fn the_token_budget_bounds_padded_tokens_per_batch() {
    let mut c = config(16, Duration::ZERO);
    c.max_batch_tokens = Some(3 * 16);
    c.grouping = Grouping::Fifo;
    let (double, s) = setup(c);
    let blocker = occupy(&double, &s);
    let handles: Vec<Handle> = (0..5).map(|i| submit(&s, 10 + i, 16)).collect();
    // A row that costs more than the budget alone is refused at submit.
    let over = s.submit(Request::token_rows(vec![row(30, 49)]));
    assert!(matches!(over, Err(SubmitError::OverBudget { index: 0, tokens: 49, budget: 48 })), "{over:?}");
    double.open();
    finish(blocker).unwrap();
    for h in handles {
        finish(h).unwrap();
    }
    let ran = double.ran();
    assert_eq!(ran.iter().map(|b| b.tags.len()).collect::<Vec<_>>(), [1, 3, 2]);
    assert!(ran.iter().all(|b| b.tags.len() * b.seq_len <= 48));
    assert_eq!(s.metrics().failures.rejected, 1);
}

/// Queues rows of mixed lengths behind a busy model and returns the batches run and the padding efficiency.
fn run_mixed_lengths(grouping: Grouping) -> (Vec<Vec<u32>>, f64) {
    let mut c = config(4, Duration::ZERO);
    c.grouping = grouping;
    let (double, s) = setup(c);
    let blocker = occupy(&double, &s);
    let lens = [4, 100, 5, 98, 6, 99, 7, 97];
    let handles: Vec<Handle> = lens.iter().enumerate().map(|(i, &len)| submit(&s, 10 + i as u32, len)).collect();
    double.open();
    finish(blocker).unwrap();
    for h in handles {
        finish(h).unwrap();
    }
    (tags(&double), s.metrics().padding_efficiency().unwrap())
}

#[test]
fn length_aware_grouping_batches_similar_lengths_and_pads_less_than_fifo() {
    let (fifo, fifo_eff) = run_mixed_lengths(Grouping::Fifo);
    assert_eq!(fifo, [vec![1], vec![10, 11, 12, 13], vec![14, 15, 16, 17]]);
    let (grouped, grouped_eff) = run_mixed_lengths(Grouping::ByLength);
    // The oldest row (10, 4 tokens) goes first with the other short ones; then the long ones.
    let sorted = |mut v: Vec<u32>| {
        v.sort();
        v
    };
    assert_eq!(grouped[0], [1]);
    assert_eq!(sorted(grouped[1].clone()), [10, 12, 14, 16]);
    assert_eq!(sorted(grouped[2].clone()), [11, 13, 15, 17]);
    assert!(grouped_eff > 0.95 && fifo_eff < 0.6, "padding efficiency: grouped {grouped_eff:.3}, fifo {fifo_eff:.3}");
}

#[test]
fn lower_levels_join_a_grouped_batch_only_without_extra_padding() {
    let mut c = config(4, Duration::ZERO);
    c.grouping = Grouping::ByLength;
    let (double, s) = setup(c);
    let blocker = occupy(&double, &s);
    let hi = s.submit(Request::token_rows(vec![row(10, 20)]).priority(0)).unwrap();
    let short = s.submit(Request::token_rows(vec![row(11, 10)]).priority(2)).unwrap();
    let long = s.submit(Request::token_rows(vec![row(12, 90)]).priority(2)).unwrap();
    double.open();
    for h in [blocker, hi, short, long] {
        finish(h).unwrap();
    }
    assert_eq!(tags(&double), [vec![1], vec![10, 11], vec![12]]);
}

#[test]
fn the_padding_floor_keeps_rows_of_other_lengths_out_of_a_batch() {
    let run = |floor: f32| {
        let mut c = config(8, Duration::ZERO);
        c.min_padding_efficiency = floor;
        let (double, s) = setup(c);
        let blocker = occupy(&double, &s);
        // 10, 10, 20, 10 tokens: together 50 real of 80 padded (0.63); the 10s alone 1.0.
        let handles: Vec<Handle> = [10, 10, 20, 10].iter().enumerate().map(|(i, &len)| submit(&s, 10 + i as u32, len)).collect();
        double.open();
        for h in std::iter::once(blocker).chain(handles) {
            finish(h).unwrap();
        }
        let mut batches = tags(&double);
        batches.iter_mut().for_each(|b| b.sort());
        (batches, s.metrics().padding_efficiency().unwrap())
    };
    let (without, eff_without) = run(0.0);
    assert_eq!(without, [vec![1], vec![10, 11, 12, 13]]);
    let (with, eff_with) = run(0.9);
    assert_eq!(with, [vec![1], vec![10, 11, 13], vec![12]], "the 20-token row runs alone");
    assert!(eff_with > eff_without && eff_with == 1.0, "padding efficiency {eff_with} with the floor, {eff_without} without");
}

/// Eight equal rows on four instances, cut when the eighth arrives (a
/// preferred size; the delay is 30 s): the batch sizes they ran in.
fn run_spread(spread: Option<bool>, parallel_double: bool) -> Vec<usize> {
    let mut c = config(8, Duration::from_secs(30));
    c.preferred_batch_sizes = vec![8];
    c.spread_across_workers = spread;
    c.cut_when_idle = Some(false);
    let double = Arc::new(ScriptedBackendDouble::new(double_layout(1, 64, MAX_SEQ), 4).parallel_instances(parallel_double));
    let s = Scheduler::new(double.clone(), pipeline(Padding::Longest), c).unwrap();
    double.open();
    let handles: Vec<Handle> = (0..8).map(|i| submit(&s, 10 + i, 6)).collect();
    for h in handles {
        finish(h).unwrap();
    }
    let mut sizes: Vec<usize> = tags(&double).iter().map(Vec::len).collect();
    sizes.sort();
    sizes
}

#[test]
fn rows_queued_at_once_are_spread_over_parallel_workers_and_kept_together_on_a_shared_device() {
    // The double says its instances run side by side (as CPU sessions do): the cut
    // splits the eight rows over the four idle workers.
    assert_eq!(run_spread(None, true), [2, 2, 2, 2]);
    // One shared device (the trait's default, as TensorRT contexts on one GPU): one batch.
    assert_eq!(run_spread(None, false), [8]);
    // The setting overrides the backend either way.
    assert_eq!(run_spread(Some(false), true), [8]);
    assert_eq!(run_spread(Some(true), false), [2, 2, 2, 2]);
}

#[test]
fn rows_the_share_left_queued_stay_due_until_workers_are_free() {
    let mut c = config(8, Duration::from_secs(30));
    c.preferred_batch_sizes = vec![8];
    c.spread_across_workers = Some(true);
    c.cut_when_idle = Some(false);
    let double = Arc::new(ScriptedBackendDouble::new(double_layout(1, 64, MAX_SEQ), 4));
    let s = Scheduler::new(double.clone(), pipeline(Padding::Longest), c).unwrap();
    let first: Vec<Handle> = (0..8).map(|i| submit(&s, 10 + i, 6)).collect();
    double.wait_started(4); // four batches of two, held by the closed double
                            // Eight more form the preferred size while no worker is free; as workers
                            // free up, each takes its share, and the rest must not wait for the 30 s delay.
    let second: Vec<Handle> = (0..8).map(|i| submit(&s, 20 + i, 6)).collect();
    double.open();
    for h in first.into_iter().chain(second) {
        finish(h).unwrap();
    }
    let sizes: Vec<usize> = tags(&double).iter().map(Vec::len).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 16);
    assert!(sizes.iter().all(|&n| n <= 2), "every cut took at most its share of the queue: {sizes:?}");
}

#[test]
fn a_deadline_fires_while_the_model_is_busy_and_the_row_is_never_computed() {
    let (double, s) = setup(config(8, Duration::ZERO));
    let blocker = occupy(&double, &s);
    let t0 = Instant::now();
    let late = s.submit(Request::token_rows(vec![row(10, 5)]).timeout(Duration::from_millis(50))).unwrap();
    let r = finish(late);
    assert!(matches!(r, Err(RequestError::DeadlineExceeded { .. })), "{r:?}");
    assert!(t0.elapsed() < LONG);
    assert_eq!(double.ran().len(), 0, "the model was still busy with the first batch");
    // Already past at submit: refused at once.
    let past = s.submit(Request::token_rows(vec![row(11, 5)]).deadline(Instant::now() - Duration::from_millis(1)));
    assert!(matches!(past, Err(SubmitError::DeadlineExceeded)), "{past:?}");
    double.open();
    finish(blocker).unwrap();
    s.shutdown();
    assert_eq!(tags(&double), [vec![1]]);
    assert_eq!(s.metrics().failures.deadline, 2);
}

#[test]
fn a_default_timeout_applies_to_requests_without_a_deadline() {
    let mut c = config(8, Duration::ZERO);
    c.default_timeout = Some(Duration::from_millis(30));
    let (double, s) = setup(c);
    let blocker = occupy(&double, &s);
    let r = finish(submit(&s, 10, 5));
    assert!(matches!(r, Err(RequestError::DeadlineExceeded { .. })), "{r:?}");
    double.open();
    finish(blocker).unwrap();
}

#[test]
fn a_full_queue_refuses_at_once_with_overloaded_and_cancellation_frees_room() {
    let mut c = config(8, Duration::ZERO);
    c.max_queue_size = 4;
    let (double, s) = setup(c);
    let blocker = occupy(&double, &s);
    let mut queued: Vec<Handle> = (0..4).map(|i| submit(&s, 10 + i, 5)).collect();
    let refused = s.submit(Request::token_rows(vec![row(20, 5)]));
    assert!(matches!(refused, Err(SubmitError::Overloaded { queued: 4, rows: 1, capacity: 4 })), "{refused:?}");
    let too_many = s.submit(Request::token_rows((0..5).map(|i| row(30 + i, 5)).collect()));
    assert!(matches!(too_many, Err(SubmitError::TooManyRows { rows: 5, capacity: 4 })), "{too_many:?}");
    drop(queued.remove(0)); // cancel one: its room is given back
    let admitted = submit(&s, 21, 5);
    double.open();
    finish(blocker).unwrap();
    for h in queued.into_iter().chain([admitted]) {
        finish(h).unwrap();
    }
    let m = s.metrics();
    assert_eq!((m.failures.overloaded, m.failures.cancelled, m.failures.rejected), (1, 1, 1));
    let all: Vec<u32> = tags(&double).concat();
    assert!(!all.contains(&10) && all.contains(&21), "cancelled row 10 was computed: {all:?}");
}

#[test]
fn a_dropped_handle_is_skipped_not_computed() {
    let (double, s) = setup(config(8, Duration::ZERO));
    let blocker = occupy(&double, &s);
    let a = submit(&s, 10, 5);
    let b = submit(&s, 11, 5);
    let c = submit(&s, 12, 5);
    drop(b);
    c.cancel();
    double.open();
    finish(blocker).unwrap();
    finish(a).unwrap();
    assert!(matches!(finish(c), Err(RequestError::Cancelled)));
    s.shutdown();
    assert_eq!(tags(&double), [vec![1], vec![10]]);
    assert_eq!(s.metrics().failures.cancelled, 2);
}

#[test]
fn shutdown_refuses_new_requests_and_finishes_every_accepted_one() {
    let (double, s) = setup(config(4, Duration::from_millis(5)));
    let s = Arc::new(s);
    let blocker = occupy(&double, &s);
    let handles: Vec<Handle> = std::thread::scope(|scope| {
        let joins: Vec<_> = (0..4)
            .map(|t| {
                scope.spawn({
                    let s = &s;
                    move || (0..5).map(|i| submit(s, 100 + t * 10 + i, 4 + i as usize)).collect::<Vec<_>>()
                })
            })
            .collect();
        joins.into_iter().flat_map(|j| j.join().unwrap()).collect()
    });
    let closer = std::thread::spawn({
        let s = Arc::clone(&s);
        move || s.shutdown()
    });
    // Wait (bounded) until shutdown has begun: then submit is refused.
    let end = Instant::now() + LONG;
    loop {
        match s.submit(Request::token_rows(vec![row(50, 5)])) {
            Err(SubmitError::ShuttingDown) => break,
            Ok(h) => drop(h),
            Err(e) => panic!("unexpected {e}"),
        }
        assert!(Instant::now() < end, "shutdown did not begin");
        std::thread::sleep(Duration::from_millis(1));
    }
    double.open();
    closer.join().unwrap();
    finish(blocker).unwrap();
    for h in handles {
        assert!(h.is_finished(), "shutdown returned before an accepted request finished");
        finish(h).unwrap();
    }
    assert_eq!(s.metrics().queued_rows, 0);
}

#[test]
fn a_backend_error_or_panic_fails_only_its_batch() {
    let (double, s) = setup(config(2, Duration::ZERO));
    let blocker = occupy(&double, &s);
    let bad = submit(&s, FAIL_TAG, 5);
    let same_batch = submit(&s, 10, 5);
    let next_batch = submit(&s, 11, 5);
    double.open();
    finish(blocker).unwrap();
    let (e1, e2) = (finish(bad).unwrap_err(), finish(same_batch).unwrap_err());
    match (&e1, &e2) {
        (RequestError::Backend(a), RequestError::Backend(b)) => assert!(Arc::ptr_eq(a, b), "one shared error"),
        other => panic!("{other:?}"),
    }
    finish(next_batch).unwrap();
    // A panic is caught; the worker goes on.
    let boom = submit(&s, PANIC_TAG, 5);
    let r = finish(boom);
    assert!(matches!(&r, Err(RequestError::BackendPanicked(m)) if m.contains("scripted panic")), "{r:?}");
    let after = submit(&s, 12, 5);
    finish(after).unwrap();
    let m = s.metrics();
    assert_eq!(m.failures.backend, 3);
    assert_eq!(m.succeeded, 3);
}

#[test]
fn a_model_minimum_batch_is_met_with_filler_rows_that_are_dropped() {
    let (double, s) = setup_with(config(8, Duration::ZERO), double_layout(2, 8, MAX_SEQ), 1, Padding::Longest);
    double.open();
    let r = finish(submit(&s, 10, 7)).unwrap();
    assert_row_matches(&r, 0, &row(10, 7));
    assert_eq!(tags(&double), [vec![10, 10]]);
    let m = s.metrics();
    assert_eq!((m.inferences, m.executions, m.batch_sizes[1]), (1, 1, 1));
}

#[test]
fn metrics_count_batches_tokens_and_times() {
    let (double, s) = setup_with(config(4, Duration::ZERO), double_layout(1, 64, MAX_SEQ), 1, Padding::Bucket(8));
    let blocker = occupy(&double, &s);
    let handles: Vec<Handle> = [5, 6, 7].iter().enumerate().map(|(i, &len)| submit(&s, 10 + i as u32, len)).collect();
    double.open();
    finish(blocker).unwrap();
    for h in handles {
        finish(h).unwrap();
    }
    let m = s.metrics();
    assert_eq!((m.requests, m.succeeded, m.executions, m.inferences), (4, 4, 2, 4));
    assert_eq!((m.batch_sizes[1], m.batch_sizes[3]), (1, 1));
    // Rows of 4, then 5+6+7, padded to buckets of 8.
    assert_eq!((m.real_tokens, m.padded_tokens), (4 + 18, 8 + 3 * 8));
    assert_eq!(m.queue_time.count(), 4);
    assert_eq!(m.compute_time.count(), 2);
    assert!(m.queue_time.quantile_bound(0.5).is_some());
}

#[test]
fn bad_settings_and_bad_input_are_typed_errors() {
    let layout = double_layout(1, 16, MAX_SEQ);
    let try_config =
        |c: BatchingConfig| Scheduler::new(Arc::new(ScriptedBackendDouble::new(layout.clone(), 1)), pipeline(Padding::Longest), c);
    let invalid = |e: trt_nlp::Error| {
        let message = e.to_string();
        match e {
            trt_nlp::Error::InvalidOption { option, value, expected } => (option, value, expected, message),
            _ => panic!("not InvalidOption: {message}"),
        }
    };
    let (option, value, _, message) = invalid(try_config(config(32, Duration::ZERO)).unwrap_err());
    assert_eq!((option, value.as_str()), ("batching.max_batch_size", "32"), "{message}");
    assert!(message.contains("1..=16"), "{message}");
    let mut c = config(8, Duration::ZERO);
    c.preferred_batch_sizes = vec![9];
    let (option, value, _, message) = invalid(try_config(c).unwrap_err());
    assert_eq!((option, value.as_str()), ("batching.preferred_batch_sizes", "9"), "{message}");
    let mut c = config(8, Duration::ZERO);
    c.min_padding_efficiency = f32::NAN;
    let (option, value, expected, _) = invalid(try_config(c).unwrap_err());
    assert_eq!((option, value.as_str(), expected.as_str()), ("batching.min_padding_efficiency", "NaN", "within 0.0..=1.0"));
    let short_model = double_layout(1, 16, 64);
    let e = Scheduler::new(Arc::new(ScriptedBackendDouble::new(short_model, 1)), pipeline(Padding::Longest), config(8, Duration::ZERO))
        .unwrap_err();
    let (option, value, expected, _) = invalid(e);
    assert_eq!((option, value.as_str()), ("max_len", "128"));
    assert!(expected.contains("max_seq 64"), "{expected}");

    let (_double, s) = setup(config(8, Duration::ZERO));
    assert!(matches!(s.submit(Request::texts(Vec::<String>::new())), Err(SubmitError::Empty)));
    let long = TokenRow::new(vec![101; MAX_SEQ + 1], None).unwrap();
    let r = s.submit(Request::token_rows(vec![row(5, 5), long]));
    assert!(matches!(r, Err(SubmitError::Invalid(trt_nlp::Error::TooLong { index: 1, tokens: 129, max_len: 128 }))), "{r:?}");
    let r = s.submit(Request::token_rows(vec![TokenRow::new(vec![101, 9_999_999, 102], None).unwrap()]));
    assert!(matches!(r, Err(SubmitError::Invalid(trt_nlp::Error::InvalidTokens(_)))), "{r:?}");
    assert!(TokenRow::new(vec![], None).is_err());
    assert!(TokenRow::new(vec![1, 2], Some(vec![0])).is_err());
}

#[test]
fn many_threads_and_many_async_tasks_at_once_get_their_own_outputs() {
    let mut c = config(16, Duration::from_millis(2));
    c.workers = Some(2);
    let (double, s) = setup_with(c, double_layout(1, 64, MAX_SEQ), 2, Padding::Bucket(8));
    double.open();
    let texts: Vec<String> = (0..64).map(|i| format!("text number {i} {}", "word ".repeat(i % 13))).collect();
    let alone = s.pipeline().tokenize(&texts).unwrap();
    std::thread::scope(|scope| {
        for t in 0..8 {
            let (s, texts, alone) = (&s, &texts, &alone);
            scope.spawn(move || {
                for i in (t..texts.len()).step_by(8) {
                    let r = finish(s.submit(Request::text(texts[i].clone())).unwrap()).unwrap();
                    assert_row_matches(&r, 0, &alone[i]);
                }
            });
        }
        // Meanwhile, 64 async tasks on one thread.
        let futures: Vec<Handle> = texts.iter().map(|t| s.submit(Request::text(t.clone())).unwrap()).collect();
        for (i, r) in block_on::block_on_all(futures, LONG).into_iter().enumerate() {
            assert_row_matches(&r.unwrap(), 0, &alone[i]);
        }
    });
    let m = s.metrics();
    assert_eq!((m.succeeded, m.inferences), (128, 128));
    assert!(m.executions <= 128);
}

#[test]
fn the_scheduler_is_shared_across_threads_and_handles_move_between_them() {
    fn send_sync<T: Send + Sync>() {}
    fn send_unpin<T: Send + Unpin>() {}
    send_sync::<Scheduler>();
    send_unpin::<Handle>();
    send_sync::<RequestError>();
    // A handle waited for on another thread than the one that submitted.
    let (double, s) = setup(config(8, Duration::ZERO));
    double.open();
    let h = submit(&s, 10, 5);
    let r = std::thread::spawn(move || finish(h)).join().unwrap().unwrap();
    assert_row_matches(&r, 0, &row(10, 5));
}
