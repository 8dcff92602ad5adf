//! Texts through a backend, batch by batch: the loop the classifier and the
//! embedder share.
//!
//! A call's texts are ordered by length (bytes, a cheap stand-in for tokens,
//! as sentence-transformers' `encode` does) and cut into batches of at most
//! the model's largest batch, so that each batch pads to a length close to
//! its texts' own: fewer padded tokens computed. The callback is told which
//! input text each row is, so results come back in the caller's order. A
//! batch smaller than the model's smallest is padded with empty texts, rows
//! the callback does not see.

use crate::backend::{Backend, Outputs};
use crate::{BatchLayout, Result, TokenRow, TokenizerPipeline};

/// Runs `texts` through `backend`, tokenized by `pipeline`. `each` sees every
/// batch's outputs with the input index of each real row (row `r` of the
/// outputs is text `rows[r]`; rows past `rows.len()` are padding).
pub(crate) fn for_each_batch<S: AsRef<str> + Sync>(
    backend: &dyn Backend,
    pipeline: &TokenizerPipeline,
    texts: &[S],
    mut each: impl FnMut(&[usize], &BatchLayout, &Outputs<'_>) -> Result<()>,
) -> Result<()> {
    let layout = backend.layout();
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].as_ref().len());
    let mut batch_texts: Vec<&str> = Vec::with_capacity(layout.max_batch.max(layout.min_batch));
    for rows in order.chunks(layout.max_batch.max(1)) {
        batch_texts.clear();
        batch_texts.extend(rows.iter().map(|&i| texts[i].as_ref()));
        if batch_texts.len() < layout.min_batch {
            batch_texts.resize(layout.min_batch, "");
        }
        backend.run(&mut |batch| pipeline.encode_into(&batch_texts, batch), &mut |l, o| each(rows, l, o))?;
    }
    Ok(())
}

/// [`for_each_batch`] over rows tokenized earlier (text pairs): ordered by
/// length, cut at the model's largest batch, a batch below the model's
/// smallest padded with copies of its first row, which `each` does not see.
pub(crate) fn for_each_row_batch(
    backend: &dyn Backend,
    pipeline: &TokenizerPipeline,
    rows: &[TokenRow],
    mut each: impl FnMut(&[usize], &BatchLayout, &Outputs<'_>) -> Result<()>,
) -> Result<()> {
    let layout = backend.layout();
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| rows[i].len());
    for chunk in order.chunks(layout.max_batch.max(1)) {
        let mut batch: Vec<&TokenRow> = chunk.iter().map(|&i| &rows[i]).collect();
        while batch.len() < layout.min_batch {
            batch.push(batch[0]);
        }
        backend.run(&mut |b| pipeline.pack(batch.iter().copied(), b), &mut |l, o| each(chunk, l, o))?;
    }
    Ok(())
}
