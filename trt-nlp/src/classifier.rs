//! Text classification on any [`Backend`]: tokenize, run, softmax, top-k.

use std::path::Path;
use std::sync::Arc;

use ndarray::{Axis, Ix2};

use crate::backend::{Backend, BackendChoice, BackendOptions, OutputView};
use crate::texts::{for_each_batch, for_each_row_batch};
use crate::{
    softmax, top_k, Error, HelperOptions, Labels, ModelFolder, PairTruncation, Prediction, Result, TokenizerPipeline, TruncationSide,
};

/// One text's result: its logits and its `k` best labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    /// The raw logits, one per class.
    pub logits: Vec<f32>,
    /// The most probable labels, best first, with softmax scores.
    pub top: Vec<Prediction>,
}

/// A BERT-style sequence classifier: texts in, ranked labels out.
/// `classify` takes `&self` and may be called from many threads.
#[derive(Debug)]
pub struct Classifier {
    backend: Arc<dyn Backend>,
    pipeline: TokenizerPipeline,
    labels: Labels,
    logits: String,
}

impl Classifier {
    /// A classifier over `backend`, one of whose outputs is `[batch, labels]`
    /// logits, tokenizing with `tokenizer` (a `tokenizer.json`).
    pub fn new(backend: Arc<dyn Backend>, tokenizer: impl AsRef<Path>, labels: Labels, options: &HelperOptions) -> Result<Self> {
        let pipeline = options.pipeline(tokenizer.as_ref(), &*backend)?;
        Self::with_pipeline(backend, pipeline, labels)
    }

    /// A classifier from a model folder or file ([`ModelFolder`]): its
    /// tokenizer and labels, on the backend `choice` picks.
    pub fn open(model: impl AsRef<Path>, choice: BackendChoice, backend: &BackendOptions, options: &HelperOptions) -> Result<Self> {
        let folder = ModelFolder::open(model)?;
        Self::new(folder.backend(choice, backend)?, &folder.tokenizer, folder.labels.clone(), options)
    }

    /// A classifier with a pipeline the caller built (its `max_len` must fit the model).
    pub fn with_pipeline(backend: Arc<dyn Backend>, pipeline: TokenizerPipeline, labels: Labels) -> Result<Self> {
        let logits = backend
            .layout()
            .output_of_rank(2)
            .ok_or_else(|| Error::InvalidConfig("the model has no [batch, labels] output (logits)".into()))?
            .name
            .clone();
        Ok(Classifier { backend, pipeline, labels, logits })
    }

    /// The backend it runs on.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The `k` most probable labels of each text, best first. Batches larger
    /// than the model allows are split; an empty input gives an empty result.
    pub fn classify<S: AsRef<str> + Sync>(&self, texts: &[S], k: usize) -> Result<Vec<Vec<Prediction>>> {
        Ok(self.predict(texts, k)?.into_iter().map(|c| c.top).collect())
    }

    /// Logits and the `k` best labels of each text.
    pub fn predict<S: AsRef<str> + Sync>(&self, texts: &[S], k: usize) -> Result<Vec<Classification>> {
        let mut all: Vec<Option<Classification>> = vec![None; texts.len()];
        for_each_batch(&*self.backend, &self.pipeline, texts, |rows, _, outputs| {
            let view = outputs.get(&self.logits)?;
            let logits = match view {
                OutputView::F32(v) => v.view().into_dimensionality::<Ix2>().map_err(shape_err)?.to_owned(),
                other => other.to_f32().into_dimensionality::<Ix2>().map_err(shape_err)?,
            };
            let probs = softmax(logits.view());
            let top = top_k(probs.view(), k, &self.labels);
            // Rows past `rows` are padding up to the model's minimum batch.
            for ((&i, row), top) in rows.iter().zip(logits.axis_iter(Axis(0))).zip(top) {
                all[i] = Some(Classification { logits: row.to_vec(), top });
            }
            Ok(())
        })?;
        Ok(all.into_iter().flatten().collect())
    }
}

/// A text's place in a [`Classifier::rerank`] answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranked {
    /// Its index in the texts given.
    pub index: usize,
    /// The sigmoid of the pair's first logit (the logit itself when asked for raw scores).
    pub score: f32,
}

impl Classifier {
    /// The logits of each `(first, second)` pair, for a cross-encoder
    /// (a reranker or an NLI classifier): the pairs are tokenized as the
    /// model's tokenizer pairs them ([`TokenizerPipeline::tokenize_pairs`]),
    /// too-long pairs cut by `strategy`, and batched like texts.
    pub fn score_pairs<A, B>(&self, pairs: &[(A, B)], strategy: PairTruncation) -> Result<Vec<Vec<f32>>>
    where
        A: AsRef<str> + Sync,
        B: AsRef<str> + Sync,
    {
        let rows = self.pipeline.tokenize_pairs(pairs, strategy, TruncationSide::Right)?;
        let mut all: Vec<Vec<f32>> = vec![Vec::new(); rows.len()];
        for_each_row_batch(&*self.backend, &self.pipeline, &rows, |order, _, outputs| {
            let logits = outputs.get(&self.logits)?.to_f32().into_dimensionality::<Ix2>().map_err(shape_err)?;
            for (&i, row) in order.iter().zip(logits.axis_iter(Axis(0))) {
                all[i] = row.to_vec();
            }
            Ok(())
        })?;
        Ok(all)
    }

    /// `texts` ordered for `query`, best first, by the pair's first logit
    /// (its sigmoid unless `raw`); ties keep the texts' order.
    pub fn rerank<S: AsRef<str> + Sync>(&self, query: &str, texts: &[S], raw: bool) -> Result<Vec<Ranked>> {
        let pairs: Vec<(&str, &str)> = texts.iter().map(|t| (query, t.as_ref())).collect();
        let logits = self.score_pairs(&pairs, PairTruncation::LongestFirst)?;
        let mut ranked: Vec<Ranked> = logits
            .iter()
            .enumerate()
            .map(|(index, l)| {
                let x = l.first().copied().unwrap_or(f32::NAN);
                Ranked { index, score: if raw { x } else { 1.0 / (1.0 + (-x).exp()) } }
            })
            .collect();
        ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        Ok(ranked)
    }
}

pub(crate) fn shape_err(e: ndarray::ShapeError) -> Error {
    Error::InvalidConfig(format!("unexpected output rank: {e}"))
}
