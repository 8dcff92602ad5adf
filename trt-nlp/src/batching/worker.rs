//! Running one cut batch on the backend and handing each row its outputs.
//!
//! A worker packs the batch's rows straight into the backend's buffers (the
//! rows were tokenized at submit), runs it, and cuts every output into
//! per-row arrays. One worker per backend instance: while one batch
//! executes, the next is packed on another instance. Whatever the backend
//! does, error or panic, fails the requests of this batch only.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use ndarray::{ArrayD, ArrayViewD, Axis, Slice};

use super::error::RequestError;
use super::handle::RowResult;
use super::metrics::Metrics;
use super::queue::Item;
use crate::backend::{OutputView, Outputs};
use crate::{Backend, BatchLayout, Error, Result, TokenRow, TokenizerPipeline};

/// One row's outputs, by name.
type RowOutputs = Vec<(String, ArrayD<f32>)>;

/// Runs `items` as one batch and completes (or fails) their requests;
/// `backend_done` runs once the backend is free again (also when every row
/// was cancelled), before the rows are handed out.
pub(crate) fn run_batch(
    backend: &dyn Backend,
    pipeline: &TokenizerPipeline,
    metrics: &Metrics,
    items: Vec<Item>,
    backend_done: &mut dyn FnMut(),
) {
    // Cancelled since the cut: skipped, not computed.
    let live: Vec<Item> = items.into_iter().filter(|it| !it.request.is_finished()).collect();
    let Some(shortest) = live.iter().min_by_key(|it| it.len) else {
        backend_done();
        return;
    };
    let started = Instant::now();
    let mut rows: Vec<&TokenRow> = live.iter().map(|it| &it.request.rows[it.row]).collect();
    // A model whose profile needs more rows gets copies of the shortest; their outputs are dropped.
    let min_batch = backend.layout().min_batch;
    if rows.len() < min_batch {
        rows.resize(min_batch, &shortest.request.rows[shortest.row]);
    }

    let mut per_row: Vec<RowOutputs> = Vec::new();
    let mut seq_len = 0;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        backend.run(&mut |batch| pipeline.pack(rows.iter().copied(), batch), &mut |layout, outputs| {
            seq_len = layout.seq_len;
            per_row = split_rows(layout, outputs, live.len())?;
            Ok(())
        })
    }));
    let compute = started.elapsed();
    backend_done();
    match outcome {
        Ok(Ok(())) if per_row.len() == live.len() => {
            let real: usize = live.iter().map(|it| it.len).sum();
            metrics.record_batch(live.len(), real, live.len() * seq_len, compute);
            for (item, outputs) in live.iter().zip(per_row) {
                metrics.queue_time.record(started.saturating_duration_since(item.request.submitted));
                item.request.complete_row(
                    item.row,
                    RowResult {
                        outputs,
                        length: item.len,
                        truncated: item.request.rows[item.row].truncated(),
                        batch_size: live.len(),
                        queue_time: started.saturating_duration_since(item.request.submitted),
                        compute_time: compute,
                    },
                );
            }
        }
        Ok(Ok(())) => fail_all(
            &live,
            RequestError::Backend(Arc::new(Error::InvalidConfig(format!(
                "the backend returned without reading the outputs of a batch of {} rows",
                live.len()
            )))),
        ),
        Ok(Err(e)) => fail_all(&live, RequestError::Backend(Arc::new(e))),
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            fail_all(&live, RequestError::BackendPanicked(message.into()));
        }
    }
}

fn fail_all(items: &[Item], error: RequestError) {
    for item in items {
        item.request.fail(error.clone());
    }
}

/// Every output cut into its first `rows` rows, each with the batch axis
/// removed and a sequence axis (second axis of a rank-3+ output of length
/// `seq_len`) cut to the row's length.
fn split_rows(layout: &BatchLayout, outputs: &Outputs<'_>, rows: usize) -> Result<Vec<RowOutputs>> {
    let mut per_row: Vec<RowOutputs> = (0..rows).map(|_| Vec::new()).collect();
    for (name, view) in outputs.iter() {
        let shape = view.shape();
        if shape.first().is_none_or(|&b| b < rows) {
            return Err(Error::Shape { what: "batched output vs batch rows", expected: vec![layout.batch], got: shape.to_vec() });
        }
        for (r, out) in per_row.iter_mut().enumerate() {
            let len = layout.lengths.get(r).copied().unwrap_or(layout.seq_len);
            let row = match view {
                OutputView::F32(v) => row_of(v, r, len, layout.seq_len, |x| x),
                OutputView::F16(v) => row_of(v, r, len, layout.seq_len, f32::from),
                OutputView::BF16(v) => row_of(v, r, len, layout.seq_len, f32::from),
            };
            out.push((name.to_string(), row));
        }
    }
    Ok(per_row)
}

fn row_of<T: Copy>(v: &ArrayViewD<'_, T>, r: usize, len: usize, seq_len: usize, to_f32: impl Fn(T) -> f32) -> ArrayD<f32> {
    let row = v.index_axis(Axis(0), r);
    let row = if v.ndim() >= 3 && v.shape()[1] == seq_len { row.slice_axis(Axis(0), Slice::from(..len)) } else { row };
    row.mapv(to_f32)
}
