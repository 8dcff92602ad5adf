//! Sentence embeddings on any [`Backend`]: tokenize, run, pool, normalise
//! (sentence-transformers semantics).

use std::path::Path;
use std::sync::Arc;

use ndarray::{Array2, Ix3};

use crate::backend::{Backend, BackendChoice, BackendOptions, OutputView};
use crate::classifier::shape_err;
use crate::texts::for_each_batch;
use crate::{l2_normalize, Error, HelperOptions, ModelFolder, Pooling, Result, TokenizerPipeline};

/// Texts in, one embedding row per text out. `embed` takes `&self` and may be
/// called from many threads.
#[derive(Debug)]
pub struct Embedder {
    backend: Arc<dyn Backend>,
    pipeline: TokenizerPipeline,
    hidden: String,
    pooling: Pooling,
    normalize: bool,
}

impl Embedder {
    /// An embedder over `backend`, one of whose outputs is `[batch, seq, dim]`
    /// hidden states, pooled with `pooling` and (when `normalize`) L2-normalised.
    pub fn new(
        backend: Arc<dyn Backend>,
        tokenizer: impl AsRef<Path>,
        pooling: Pooling,
        normalize: bool,
        options: &HelperOptions,
    ) -> Result<Self> {
        let pipeline = options.pipeline(tokenizer.as_ref(), &*backend)?;
        Self::with_pipeline(backend, pipeline, pooling, normalize)
    }

    /// An embedder from a model folder or file ([`ModelFolder`]): its
    /// tokenizer, pooling and normalisation, on the backend `choice` picks.
    pub fn open(model: impl AsRef<Path>, choice: BackendChoice, backend: &BackendOptions, options: &HelperOptions) -> Result<Self> {
        let folder = ModelFolder::open(model)?;
        Self::new(folder.backend(choice, backend)?, &folder.tokenizer, folder.pooling, folder.normalize, options)
    }

    /// An embedder with a pipeline the caller built (its `max_len` must fit the model).
    pub fn with_pipeline(backend: Arc<dyn Backend>, pipeline: TokenizerPipeline, pooling: Pooling, normalize: bool) -> Result<Self> {
        let hidden = backend
            .layout()
            .output_of_rank(3)
            .ok_or_else(|| Error::InvalidConfig("the model has no [batch, seq, dim] output (hidden states)".into()))?
            .name
            .clone();
        Ok(Embedder { backend, pipeline, hidden, pooling, normalize })
    }

    /// The backend it runs on.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Embeddings of `texts`, `[texts.len(), dim]`. Batches larger than the
    /// model allows are split; an empty input gives a `[0, 0]` array.
    pub fn embed<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Array2<f32>> {
        let mut all: Option<Array2<f32>> = None;
        for_each_batch(&*self.backend, &self.pipeline, texts, |rows, layout, outputs| {
            let mask = layout.attention_mask();
            let pooled = match outputs.get(&self.hidden)? {
                OutputView::F32(v) => self.pooling.pool(v.view().into_dimensionality::<Ix3>().map_err(shape_err)?, mask.view()),
                OutputView::F16(v) => self.pooling.pool(v.view().into_dimensionality::<Ix3>().map_err(shape_err)?, mask.view()),
                OutputView::BF16(v) => self.pooling.pool(v.view().into_dimensionality::<Ix3>().map_err(shape_err)?, mask.view()),
            }?;
            let all = all.get_or_insert_with(|| Array2::zeros((texts.len(), pooled.ncols())));
            // Rows past `rows` are padding up to the model's minimum batch.
            for (&i, row) in rows.iter().zip(pooled.rows()) {
                all.row_mut(i).assign(&row);
            }
            Ok(())
        })?;
        let mut all = all.unwrap_or_else(|| Array2::zeros((0, 0)));
        if self.normalize {
            l2_normalize(all.view_mut());
        }
        Ok(all)
    }
}
