//! Text classification on any [`Backend`]: tokenize, run, softmax, top-k.
//! A [`TextModel`] that checks at construction that the model has logits.

use std::path::Path;
use std::sync::Arc;

use crate::backend::{Backend, BackendChoice, BackendOptions};
use crate::{Classification, Head, HelperOptions, Labels, ModelFolder, PairTruncation, Prediction, Result, TextModel, TokenizerPipeline};

/// A BERT-style sequence classifier: texts in, ranked labels out.
/// `classify` takes `&self` and may be called from many threads.
#[derive(Debug)]
pub struct Classifier {
    model: TextModel,
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
    /// ```
    /// use trt_nlp::backend::{BackendChoice, BackendOptions};
    /// use trt_nlp::{Classifier, HelperOptions};
    ///
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight BertForSequenceClassification with three labels (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-cls3");
    /// let classifier = Classifier::open(path, BackendChoice::OnnxRuntime, &BackendOptions::default(), &HelperOptions::default())?;
    /// let best = classifier.classify(&["What a lovely day."], 1)?;
    /// assert_eq!(best[0].len(), 1);
    /// let labels = classifier.model().labels();
    /// assert!((0..labels.len()).any(|i| labels.name(i) == best[0][0].label));
    /// # Ok(())
    /// # }
    /// ```
    pub fn open(model: impl AsRef<Path>, choice: BackendChoice, backend: &BackendOptions, options: &HelperOptions) -> Result<Self> {
        Self::from_model(TextModel::from_folder(&ModelFolder::open(model)?, choice, backend, options)?)
    }

    /// A classifier with a pipeline the caller built (its `max_len` must fit the model).
    pub fn with_pipeline(backend: Arc<dyn Backend>, pipeline: TokenizerPipeline, labels: Labels) -> Result<Self> {
        let head = Head { labels, ..Head::default() };
        Self::from_model(TextModel::new(backend, pipeline, head))
    }

    /// A classifier over a text model; fails when it has no `[batch, labels]` output.
    pub fn from_model(model: TextModel) -> Result<Self> {
        model.logits()?;
        Ok(Classifier { model })
    }

    /// The backend it runs on.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        self.model.backend()
    }

    /// The text model it runs.
    pub fn model(&self) -> &TextModel {
        &self.model
    }

    /// The `k` most probable labels of each text, best first. Batches larger
    /// than the model allows are split; an empty input gives an empty result.
    pub fn classify<S: AsRef<str> + Sync>(&self, texts: &[S], k: usize) -> Result<Vec<Vec<Prediction>>> {
        Ok(self.predict(texts, k)?.into_iter().map(|c| c.top).collect())
    }

    /// Logits and the `k` best labels of each text ([`TextModel::classify`]).
    pub fn predict<S: AsRef<str> + Sync>(&self, texts: &[S], k: usize) -> Result<Vec<Classification>> {
        self.model.classify(texts, k)
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
        self.model.pair_logits(pairs, strategy)
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
