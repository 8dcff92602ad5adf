//! Running one cut batch on the backend and handing each row its outputs.
//!
//! A worker packs the batch's rows straight into the backend's buffers (the
//! rows were tokenized at submit), runs it, and computes each row's selected
//! outputs ([`Selection`](crate::Selection): raw outputs cut per row, pooled
//! ones pooled) while they are still in the backend's buffers. One worker
//! per backend instance: while one batch executes, the next is packed on
//! another instance. Whatever the backend does, error or panic, fails the
//! requests of this batch only; a selection that cannot be computed fails
//! the requests that asked for it only.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use super::error::RequestError;
use super::handle::RowResult;
use super::metrics::Metrics;
use super::queue::Item;
use crate::backend::Outputs;
use crate::text_model::RowOutputs;
use crate::{Backend, BatchLayout, Error, Result, TokenRow, TokenizerPipeline};

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

    // Only the outputs some request of the batch selected cross back to the host.
    let mut wanted = vec![false; backend.layout().outputs.len()];
    for it in &live {
        it.request.selection.reads(backend.layout(), &mut wanted);
    }
    let mut per_row: Vec<Result<RowOutputs>> = Vec::new();
    let mut seq_len = 0;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        backend.run_reading(&wanted, &mut |batch| pipeline.pack(rows.iter().copied(), batch), &mut |layout, outputs| {
            seq_len = layout.seq_len;
            per_row = split_rows(layout, outputs, &live);
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
                let outputs = match outputs {
                    Ok(outputs) => outputs,
                    Err(e) => {
                        item.request.fail(RequestError::Backend(Arc::new(e)));
                        continue;
                    }
                };
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
            RequestError::Backend(Arc::new(Error::Internal(format!(
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

/// Each live row's selected outputs, in `live`'s order (row `r` of the
/// batch is `live[r]`). Rows of one selection are computed together (one
/// pooling per batch); an error fails only the rows of that selection.
fn split_rows(layout: &BatchLayout, outputs: &Outputs<'_>, live: &[Item]) -> Vec<Result<RowOutputs>> {
    let mut per_row: Vec<Option<Result<RowOutputs>>> = (0..live.len()).map(|_| None).collect();
    for first in 0..live.len() {
        if per_row[first].is_some() {
            continue;
        }
        let selection = &live[first].request.selection;
        let indices: Vec<usize> =
            (first..live.len()).filter(|&r| per_row[r].is_none() && Arc::ptr_eq(&live[r].request.selection, selection)).collect();
        match selection.split(layout, outputs, &indices) {
            Ok(rows) => {
                for (&r, row) in indices.iter().zip(rows) {
                    per_row[r] = Some(Ok(row));
                }
            }
            Err(e) => {
                let message = e.to_string();
                for &r in &indices {
                    per_row[r] = Some(Err(Error::Internal(format!("selected outputs: {message}"))));
                }
            }
        }
    }
    per_row.into_iter().map(|r| r.unwrap_or_else(|| Err(Error::Internal("a row left without outputs".into())))).collect()
}
