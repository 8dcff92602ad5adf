//! Sentence embeddings with a TensorRT engine: tokenize, run, pool, normalise
//! (sentence-transformers semantics).

use std::path::Path;

use ndarray::{Array2, Ix3};
use trt::cuda::Device;
use trt::Engine;

use crate::classifier::{shape_err, HelperOptions};
use crate::backend::OutputView;
use crate::runner::Runner;
use crate::{l2_normalize, Error, Pooling, Result};

/// Texts in, one embedding row per text out. `embed` takes `&self` and may be
/// called from many threads.
#[derive(Debug)]
pub struct Embedder {
    runner: Runner,
    hidden: String,
    pooling: Pooling,
    normalize: bool,
}

impl Embedder {
    /// An embedder over `engine`, one of whose outputs is `[batch, seq, dim]`
    /// hidden states, pooled with `pooling` and (when `normalize`) L2-normalised.
    pub fn new(
        engine: &Engine,
        device: &Device,
        tokenizer: impl AsRef<Path>,
        pooling: Pooling,
        normalize: bool,
        options: &HelperOptions,
    ) -> Result<Self> {
        let runner = Runner::new(engine, device, tokenizer.as_ref(), options)?;
        let hidden = runner
            .layout()
            .output_of_rank(3)
            .ok_or_else(|| Error::InvalidConfig("the engine has no [batch, seq, dim] output".into()))?
            .name
            .clone();
        Ok(Embedder { runner, hidden, pooling, normalize })
    }

    /// Embeddings of `texts`, `[texts.len(), dim]`. Batches larger than the
    /// profile allows are split; an empty input gives a `[0, 0]` array.
    pub fn embed<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Array2<f32>> {
        let mut rows: Vec<Array2<f32>> = Vec::new();
        for chunk in texts.chunks(self.runner.max_batch()) {
            let pooled = self.runner.run_chunk(chunk, |_, mask, outputs| {
                let (_, view) = outputs
                    .iter()
                    .find(|(n, _)| *n == self.hidden.as_str())
                    .ok_or_else(|| Error::InvalidConfig(format!("output '{}' missing", self.hidden)))?;
                match view {
                    OutputView::F32(v) => self.pooling.pool(v.view().into_dimensionality::<Ix3>().map_err(shape_err)?, mask),
                    OutputView::F16(v) => self.pooling.pool(v.view().into_dimensionality::<Ix3>().map_err(shape_err)?, mask),
                    OutputView::BF16(v) => self.pooling.pool(v.view().into_dimensionality::<Ix3>().map_err(shape_err)?, mask),
                }
            })?;
            // Rows past the chunk are padding up to the profile's minimum batch.
            rows.push(pooled.slice_move(ndarray::s![..chunk.len(), ..]));
        }
        let views: Vec<_> = rows.iter().map(|r| r.view()).collect();
        let mut all = if views.is_empty() {
            Array2::zeros((0, 0))
        } else {
            ndarray::concatenate(ndarray::Axis(0), &views).map_err(shape_err)?
        };
        if self.normalize {
            l2_normalize(all.view_mut());
        }
        Ok(all)
    }
}
