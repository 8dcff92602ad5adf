//! Texts through a backend, batch by batch: the loop the classifier and the
//! embedder share. A call's texts are cut into batches of at most the
//! model's largest batch; a batch smaller than the model's smallest is padded
//! with empty texts, whose rows the callback is told to drop.

use crate::backend::{Backend, Outputs};
use crate::{BatchLayout, Result, TokenizerPipeline};

/// Runs `texts` through `backend`, tokenized by `pipeline`; `each` sees every
/// batch's outputs with the number of real rows (the rest is padding).
pub(crate) fn for_each_batch<S: AsRef<str> + Sync>(
    backend: &dyn Backend,
    pipeline: &TokenizerPipeline,
    texts: &[S],
    mut each: impl FnMut(usize, &BatchLayout, &Outputs<'_>) -> Result<()>,
) -> Result<()> {
    let layout = backend.layout();
    let padded_len = layout.min_batch;
    let mut padded: Vec<&str> = Vec::new();
    for chunk in texts.chunks(layout.max_batch.max(1)) {
        let real = chunk.len();
        let mut read = |l: &BatchLayout, o: &Outputs<'_>| each(real, l, o);
        if real < padded_len {
            padded.clear();
            padded.extend(chunk.iter().map(|t| t.as_ref()));
            padded.resize(padded_len, "");
            backend.run(&mut |batch| pipeline.encode_into(&padded, batch), &mut read)?;
        } else {
            backend.run(&mut |batch| pipeline.encode_into(chunk, batch), &mut read)?;
        }
    }
    Ok(())
}
