//! Where batches are cut: which queued rows form the next batch, and
//! whether to cut it now or wait for more.
//!
//! The rule, in order:
//! 1. The oldest row of the first non-empty priority level is always in the
//!    batch, so no row starves.
//! 2. Rows join up to `max_batch_size`, while the padded cost
//!    `rows * padded_len(longest)` stays within `max_batch_tokens` and the
//!    share of real tokens stays at or above `min_padding_efficiency`. With
//!    [`Grouping::Fifo`] they join in arrival order (priority levels first)
//!    and the first row that does not fit stops the batch. With
//!    [`Grouping::ByLength`] the rows of the head's level are sorted by
//!    length and the batch is the window around the head that holds the most
//!    rows and, among those, wastes the fewest padded tokens; rows of lower
//!    levels then join only if they are no longer than the batch's longest.
//! 3. Cut now if the scheduler is draining, if the batch cannot grow (it is
//!    full, or rows are left out by the limits), if a preferred size can be
//!    formed (the largest one), if no batch is running on the backend's
//!    shared device (`device_idle`: waiting would only leave it idle), if the
//!    oldest row has waited `max_queue_delay`, or if a row's deadline falls
//!    before that. Otherwise wait until the delay ends (or something arrives).
//! 4. A cut takes at most the scheduler's share of the queue per worker
//!    (`spread_across_workers`), picked again by rules 1-2 at that size.
//!
//! A pure function of the queue, the settings and the clock, so each rule is
//! tested on its own.

use std::time::Instant;

use super::config::{BatchingConfig, Grouping};
use super::queue::{Item, Queue};

/// What the batcher does next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Nothing is queued.
    Idle,
    /// Cut a batch of these rows, `(level, index in level)`; `deferred` rows
    /// of the batch that was due were left out by the share cap, and are due
    /// for the next idle worker now.
    Cut { picks: Vec<(usize, usize)>, deferred: usize },
    /// Nothing to cut before this instant, unless rows arrive.
    Wait(Instant),
}

/// Most rows of one level looked at when grouping by length (a queue of
/// thousands is sorted in slices, not whole, on every decision).
const POOL_PER_BATCH: usize = 16;

/// Decides the next batch. `padded_len(longest)` is the padded row length
/// of a batch whose longest row has `longest` tokens. When to cut is decided
/// on the batch the settings allow; a cut then takes at most `max_rows` rows
/// (the scheduler's share of the queue per worker), chosen by the same rules;
/// `draining` cuts whatever is queued now; `device_idle` (nothing runs on a
/// device the workers share, and the settings cut then) cuts without waiting
/// for the delay.
pub(crate) fn decide(
    queue: &Queue,
    config: &BatchingConfig,
    padded_len: &dyn Fn(usize) -> usize,
    now: Instant,
    draining: bool,
    device_idle: bool,
    max_rows: usize,
) -> Decision {
    let levels = queue.levels();
    let Some(head_level) = levels.iter().position(|l| !l.is_empty()) else {
        return Decision::Idle;
    };
    let pick = |max_batch: usize| {
        let allowed = |longest: usize, rows: usize, real: usize| admits(config, padded_len, longest, rows, real);
        let (mut picks, full) = match config.grouping {
            Grouping::Fifo => fifo(levels, max_batch, &allowed),
            Grouping::ByLength => by_length(levels, head_level, max_batch, &allowed),
        };
        if picks.is_empty() {
            // The head alone is over the budget: submit refuses such rows, so
            // this is only reachable if settings change; run it alone rather than never.
            picks.push((head_level, 0));
        }
        (picks, full)
    };
    let cap = |picks: Vec<(usize, usize)>| {
        let due = picks.len();
        let picks = if due > max_rows.max(1) { pick(max_rows.max(1)).0 } else { picks };
        Decision::Cut { deferred: due.saturating_sub(picks.len()), picks }
    };
    let (mut picks, full) = pick(config.max_batch_size);
    if draining || full {
        return cap(picks);
    }
    if let Some(size) = config.preferred_cut(picks.len()) {
        // Keep the oldest rows (the head among them).
        picks.sort_unstable();
        picks.truncate(size);
        return cap(picks);
    }
    let head = &levels[head_level][0];
    let window_end = head.request.submitted.checked_add(config.max_queue_delay).unwrap_or(now);
    if device_idle || now >= window_end {
        return cap(picks);
    }
    let expires_first = picks.iter().any(|&(l, i)| levels[l][i].request.deadline.is_some_and(|d| d <= window_end));
    if expires_first {
        return cap(picks);
    }
    Decision::Wait(window_end)
}

/// Whether a batch of `rows` rows, the longest `longest` tokens and `real`
/// tokens in all, keeps within the token budget and the padding floor (a
/// row alone always passes the floor).
fn admits(config: &BatchingConfig, padded_len: &dyn Fn(usize) -> usize, longest: usize, rows: usize, real: usize) -> bool {
    let padded = padded_len(longest).saturating_mul(rows);
    config.max_batch_tokens.is_none_or(|b| padded <= b)
        && (rows == 1 || real as f64 >= f64::from(config.min_padding_efficiency) * padded as f64)
}

/// `(longest, rows, real tokens)`: whether a batch of that shape is allowed.
type Admits<'a> = dyn Fn(usize, usize, usize) -> bool + 'a;

/// Arrival order, levels first; stops at the first row that does not fit.
/// Returns the picks and whether rows were left out by the limits.
fn fifo(levels: &[std::collections::VecDeque<Item>], max_batch: usize, admits: &Admits<'_>) -> (Vec<(usize, usize)>, bool) {
    let mut picks = Vec::new();
    let (mut longest, mut real) = (0, 0);
    for (l, level) in levels.iter().enumerate() {
        for (i, item) in level.iter().enumerate() {
            let longer = longest.max(item.len);
            if picks.len() == max_batch || !admits(longer, picks.len() + 1, real + item.len) {
                return (picks, true);
            }
            picks.push((l, i));
            longest = longer;
            real += item.len;
        }
    }
    let full = picks.len() == max_batch;
    (picks, full)
}

/// The window of similar lengths around the head of `head_level`, then rows
/// of lower levels that add no padding.
fn by_length(
    levels: &[std::collections::VecDeque<Item>],
    head_level: usize,
    max_batch: usize,
    admits: &Admits<'_>,
) -> (Vec<(usize, usize)>, bool) {
    let level = &levels[head_level];
    let pool_len = level.len().min(max_batch.saturating_mul(POOL_PER_BATCH));
    // (len, index in level), sorted by length then age: ties keep the older row first.
    let mut sorted: Vec<(usize, usize)> = level.iter().take(pool_len).enumerate().map(|(i, it)| (it.len, i)).collect();
    sorted.sort_unstable();
    let head = sorted.iter().position(|&(_, i)| i == 0).unwrap_or(0);
    let mut prefix = Vec::with_capacity(sorted.len() + 1);
    prefix.push(0usize);
    for &(len, _) in &sorted {
        prefix.push(prefix.last().copied().unwrap_or(0) + len);
    }
    let n = sorted.len();
    let mut chosen = None;
    for k in (1..=max_batch.min(n)).rev() {
        let mut best: Option<(usize, usize)> = None; // (waste, start)
        for start in head.saturating_sub(k - 1)..=head.min(n - k) {
            let longest = sorted[start + k - 1].0;
            let real = prefix[start + k] - prefix[start];
            if !admits(longest, k, real) {
                continue;
            }
            // Waste ordering only needs to be consistent: unpadded cost of the window's longest row.
            let waste = longest * k - real;
            if best.is_none_or(|(w, _)| waste < w) {
                best = Some((waste, start));
            }
        }
        if let Some((_, start)) = best {
            chosen = Some((start, k));
            break;
        }
    }
    let Some((start, k)) = chosen else {
        return (Vec::new(), true);
    };
    let mut picks: Vec<(usize, usize)> = sorted[start..start + k].iter().map(|&(_, i)| (head_level, i)).collect();
    let longest = sorted[start + k - 1].0;
    let mut real = prefix[start + k] - prefix[start];
    let mut full = k == max_batch || k < level.len();
    for (l, lower) in levels.iter().enumerate().skip(head_level + 1) {
        for (i, item) in lower.iter().enumerate() {
            if picks.len() == max_batch {
                full = true;
                break;
            }
            if item.len <= longest && admits(longest, picks.len() + 1, real + item.len) {
                picks.push((l, i));
                real += item.len;
            }
        }
    }
    (picks, full)
}
