//! Sentence embeddings on any [`Backend`]: tokenize, run, pool, normalise
//! (sentence-transformers semantics). A [`TextModel`] that checks at
//! construction that the model has hidden states to pool.

use std::path::Path;
use std::sync::Arc;

use ndarray::Array2;

use crate::backend::{Backend, BackendChoice, BackendOptions};
use crate::{Head, HelperOptions, Labels, ModelFolder, Pooling, Result, TextModel, TokenizerPipeline};

/// Texts in, one embedding row per text out. `embed` takes `&self` and may be
/// called from many threads.
#[derive(Debug)]
pub struct Embedder {
    model: TextModel,
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
    /// ```
    /// use trt_nlp::backend::{BackendChoice, BackendOptions};
    /// use trt_nlp::{Embedder, HelperOptions};
    ///
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight sentence-transformers model (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
    /// let embedder = Embedder::open(path, BackendChoice::OnnxRuntime, &BackendOptions::default(), &HelperOptions::default())?;
    /// let v = embedder.embed(&["one text"])?;
    /// assert_eq!(v.nrows(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn open(model: impl AsRef<Path>, choice: BackendChoice, backend: &BackendOptions, options: &HelperOptions) -> Result<Self> {
        Self::from_model(TextModel::from_folder(&ModelFolder::open(model)?, choice, backend, options)?)
    }

    /// An embedder with a pipeline the caller built (its `max_len` must fit the model).
    pub fn with_pipeline(backend: Arc<dyn Backend>, pipeline: TokenizerPipeline, pooling: Pooling, normalize: bool) -> Result<Self> {
        Self::from_model(TextModel::new(backend, pipeline, Head::new(Labels::default(), pooling, normalize)))
    }

    /// An embedder over a text model; fails when it has no `[batch, seq, dim]` output.
    pub fn from_model(model: TextModel) -> Result<Self> {
        model.embedding()?;
        Ok(Embedder { model })
    }

    /// The backend it runs on.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        self.model.backend()
    }

    /// The text model it runs.
    pub fn model(&self) -> &TextModel {
        &self.model
    }

    /// Embeddings of `texts`, `[texts.len(), dim]` ([`TextModel::embed`]).
    pub fn embed<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Array2<f32>> {
        self.model.embed(texts)
    }
}
