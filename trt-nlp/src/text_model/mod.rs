//! The text model: texts in, answers out, on any [`Backend`]. One place for
//! what happens after the tokens ran, used by [`Embedder`](crate::Embedder),
//! [`Classifier`](crate::Classifier), the batching scheduler's workers and
//! servers alike.
//!
//! | piece | what it holds |
//! |---|---|
//! | [`TextModel`] | a backend, its tokenizer pipeline and its [`Head`]; `embed`, `classify`, and `run` for any [`Selection`] |
//! | [`Head`] | how outputs become answers: labels, pooling, normalisation (from a model folder: `config.json`, `1_Pooling/config.json`, `modules.json`) |
//! | [`Selection`] | which outputs a caller wants: raw model outputs by name, and the pooled [`EMBEDDING`]; computed per batch or per row |
//! | [`OutputRows`] | one selected output for some texts, as f32 rows; rows of different batches put together |
//!
//! [`TextModel::score_pairs`] scores `(query, passage)` pairs on a
//! cross-encoder; [`Scheduler::for_model`](crate::batching::Scheduler::for_model)
//! batches the requests of many threads over a model.
//!
//! The batching scheduler computes a request's [`Selection`] in its workers
//! ([`Request::select`](crate::batching::Request::select)), so what comes
//! back are the rows asked for, pooled where asked, never whole batches.
//!
//! ```no_run
//! use trt_nlp::TextModel;
//!
//! # fn main() -> trt_nlp::Result<()> {
//! let model = TextModel::open("models/minilm")?;
//! let embeddings = model.embed(&["A first text.", "And a second one."])?; // [2, dim]
//! let selection = model.select(&["embedding", "last_hidden_state"])?;
//! let out = model.run(&["Raw and pooled outputs at once."], &selection)?;
//! assert_eq!(out.tensors[0].shape, [1, embeddings.ncols()]);
//! # Ok(())
//! # }
//! ```

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ndarray::{Array2, ArrayView1};

use crate::backend::{Backend, BackendChoice, BackendOptions};
use crate::texts::{for_each_batch, for_each_row_batch};
use crate::{
    scores, top_k, BatchLayout, EncodedBatch, Error, HelperOptions, Labels, ModelFolder, ModelLayout, PairTruncation, Pooling, Prediction,
    Result, ScoreActivation, TokenRow, TokenizerPipeline, TruncationSide,
};

mod builder;
mod selection;
mod tensor;

pub use builder::TextModelBuilder;

pub(crate) use selection::RowOutputs;
pub use selection::{Selected, Selection, Source, EMBEDDING};

pub use tensor::OutputRows;

/// How a model's outputs become answers: the class names of its logits, and
/// how its hidden states become one embedding per text.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Head {
    /// Class names, by logit index.
    pub labels: Labels,
    /// How hidden states pool.
    pub pooling: Pooling,
    /// Whether embeddings are L2-normalised.
    pub normalize: bool,
    /// How logits become the scores of [`TextModel::classify`].
    pub activation: ScoreActivation,
    /// Named prompts put before a text to embed, and the one used when none is named.
    pub prompts: Prompts,
    /// A causal-LM reranker's prompt format ([`crate::rerank`]).
    pub rerank: Option<trt_hf::rerank::RerankFormat>,
}

/// A model's named prompts (sentence-transformers' `prompts`), and which one
/// applies when a caller names none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompts {
    /// `(name, text)` pairs.
    pub named: Vec<(String, String)>,
    /// The prompt used when none is named.
    pub default: Option<String>,
}

impl Prompts {
    /// The text of prompt `name`, of the default prompt when `name` is
    /// `None`; `Some("")` is no prompt. An unknown name is an error listing
    /// the names there are.
    pub fn text(&self, name: Option<&str>) -> Result<&str> {
        match name.or(self.default.as_deref()) {
            None | Some("") => Ok(""),
            Some(n) => self.named.iter().find(|(k, _)| k == n).map(|(_, p)| p.as_str()).ok_or_else(|| {
                let names: Vec<&str> = self.named.iter().map(|(k, _)| k.as_str()).collect();
                Error::UnknownPrompt(format!("no prompt named '{n}' (the model has {names:?})"))
            }),
        }
    }
}

impl Default for Head {
    /// Default labels (`LABEL_i`), mean pooling, normalised, softmax scores,
    /// no prompts: what a model folder without `config.json`, `1_Pooling/`
    /// or `modules.json` gives.
    fn default() -> Self {
        Head {
            labels: Labels::default(),
            pooling: Pooling::Mean,
            normalize: true,
            activation: ScoreActivation::Softmax,
            prompts: Prompts::default(),
            rerank: None,
        }
    }
}

impl Head {
    /// A head from its parts (softmax scores, no prompts).
    pub fn new(labels: Labels, pooling: Pooling, normalize: bool) -> Self {
        Head { labels, pooling, normalize, ..Head::default() }
    }

    /// What a model folder's files say ([`ModelFolder`]).
    pub fn of(folder: &ModelFolder) -> Self {
        let (activation, prompts) = match &folder.imported {
            Some(d) => (d.activation, Prompts { named: d.prompts.clone(), default: d.default_prompt_name.clone() }),
            None => (ScoreActivation::Softmax, Prompts::default()),
        };
        let rerank = folder.imported.as_ref().and_then(|d| d.rerank.clone());
        Head { labels: folder.labels.clone(), pooling: folder.pooling, normalize: folder.normalize, activation, prompts, rerank }
    }
}

/// One text's classification: its logits and its `k` best labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    /// The raw logits, one per class.
    pub logits: Vec<f32>,
    /// The best-scored labels, best first, with scores as the head's activation says.
    pub top: Vec<Prediction>,
}

/// What [`TextModel::run`] computed, and where its time went.
#[derive(Debug, Clone, PartialEq)]
pub struct TextOutputs {
    /// One per selected output, in selection order, one row per text in the
    /// caller's order.
    pub tensors: Vec<OutputRows>,
    /// Time spent tokenizing.
    pub tokenize: Duration,
    /// Time the backend spent on the batches (tokenizing excluded).
    pub compute: Duration,
}

impl TextOutputs {
    /// The output called `name`.
    pub fn get(&self, name: &str) -> Option<&OutputRows> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

/// A text model ready to run: `&self` methods, callable from many threads
/// (each batch takes one of the backend's instances).
pub struct TextModel {
    backend: Arc<dyn Backend>,
    pipeline: Arc<TokenizerPipeline>,
    head: Head,
}

impl std::fmt::Debug for TextModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextModel").field("backend", &self.backend.name()).field("head", &self.head).finish_non_exhaustive()
    }
}

impl TextModel {
    /// A model over `backend`, tokenizing with `pipeline` (its `max_len` must fit the model).
    pub fn new(backend: Arc<dyn Backend>, pipeline: impl Into<Arc<TokenizerPipeline>>, head: Head) -> Self {
        TextModel { backend, pipeline: pipeline.into(), head }
    }

    /// Opens `model` with the defaults: a model folder or file of this
    /// project, a HuggingFace folder (imported on first use: its graph
    /// written from the safetensors weights, cached by content), or
    /// `org/name` in the local HuggingFace cache; on TensorRT where it is
    /// built and can execute here, else ONNX Runtime (CUDA where there is a
    /// GPU, else the CPU). [`builder`](Self::builder) sets the rest.
    ///
    /// `"sentence-transformers/all-MiniLM-L6-v2"` (from the local
    /// HuggingFace cache) opens the same way; here a small folder of the
    /// workspace:
    ///
    /// ```
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight sentence-transformers model (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
    /// let model = trt_nlp::TextModel::open(path)?;
    /// let v = model.embed(&["A first text.", "And a second one."])?;
    /// assert_eq!(v.nrows(), 2); // one row per text, as sentence-transformers' encode
    /// # Ok(())
    /// # }
    /// ```
    pub fn open(model: impl AsRef<Path>) -> Result<Self> {
        Self::builder(model).build()
    }

    /// A [`TextModelBuilder`] for `model` (see [`open`](Self::open)).
    ///
    /// ```
    /// use trt_nlp::TextModel;
    ///
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight model the workspace commits (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
    /// let model = TextModel::builder(path).cpu().max_batch(8).threads(2).build()?;
    /// assert_eq!(model.max_batch(), 8);
    /// assert_eq!(model.backend().name(), "onnxruntime");
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(model: impl AsRef<Path>) -> TextModelBuilder {
        TextModelBuilder::new(model.as_ref().to_owned())
    }

    /// A model from a model folder or file ([`ModelFolder`]): its tokenizer
    /// and head, on the backend `choice` picks, with every option given.
    /// ```
    /// use trt_nlp::backend::{BackendChoice, BackendOptions};
    /// use trt_nlp::{HelperOptions, TextModel};
    ///
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight model (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
    /// let backend = BackendOptions::default().with_max_batch(4).with_max_seq(64);
    /// let model = TextModel::open_with(path, BackendChoice::OnnxRuntime, &backend, &HelperOptions::default())?;
    /// assert_eq!(model.max_batch(), 4);
    /// assert_eq!(model.max_seq(), 20); // an imported folder's own max_seq_length (sentence-transformers') wins
    /// # Ok(())
    /// # }
    /// ```
    pub fn open_with(model: impl AsRef<Path>, choice: BackendChoice, backend: &BackendOptions, options: &HelperOptions) -> Result<Self> {
        Self::from_folder(&ModelFolder::open(model)?, choice, backend, options)
    }

    /// A model from an opened [`ModelFolder`].
    pub fn from_folder(folder: &ModelFolder, choice: BackendChoice, backend: &BackendOptions, options: &HelperOptions) -> Result<Self> {
        let backend = folder.backend(choice, backend)?;
        let pipeline = options.pipeline(&folder.tokenizer, &*backend)?;
        Ok(Self::new(backend, pipeline, Head::of(folder)))
    }

    /// The backend it runs on.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The tokenizer pipeline (shared with a batching scheduler).
    pub fn pipeline(&self) -> &Arc<TokenizerPipeline> {
        &self.pipeline
    }

    /// How outputs become answers.
    pub fn head(&self) -> &Head {
        &self.head
    }

    /// Class names.
    pub fn labels(&self) -> &Labels {
        &self.head.labels
    }

    /// The model's inputs, outputs and batch and sequence ranges.
    pub fn layout(&self) -> &ModelLayout {
        self.backend.layout()
    }

    /// Largest batch the backend runs at once (at least 1).
    pub fn max_batch(&self) -> usize {
        self.layout().max_batch.max(1)
    }

    /// Longest sequence the backend takes (at least 1; longer texts are truncated).
    pub fn max_seq(&self) -> usize {
        self.layout().max_seq.max(1)
    }

    /// Batches that can run at once (at least 1).
    pub fn instances(&self) -> usize {
        self.backend.capabilities().instances.max(1)
    }

    /// The outputs called `names` ([`Selection::by_names`]), pooled with this model's head.
    pub fn select<S: AsRef<str>>(&self, names: &[S]) -> Result<Selection> {
        Selection::by_names(self.layout(), names, self.head.pooling, self.head.normalize)
    }

    /// Which outputs computing `selection` reads, by position in the layout.
    pub(crate) fn reads(&self, selection: &Selection) -> Vec<bool> {
        let mut wanted = vec![false; self.layout().outputs.len()];
        selection.reads(self.layout(), &mut wanted);
        wanted
    }

    /// The pooled [`EMBEDDING`] alone; fails when the model has no `[batch, seq, dim]` output.
    pub fn embedding(&self) -> Result<Selection> {
        Selection::embedding(self.layout(), self.head.pooling, self.head.normalize)
    }

    /// The `[batch, labels]` logits alone; fails when the model has none.
    pub fn logits(&self) -> Result<Selection> {
        // A sentence embedding is rank 2 too, but no logits.
        let layout = self.layout();
        let logits = layout
            .model_outputs()
            .find(|o| o.rank == 2 && o.name == "logits")
            .or_else(|| layout.model_outputs().find(|o| o.rank == 2 && o.name != EMBEDDING))
            .ok_or_else(|| Error::unsupported("the model has no [batch, labels] output (logits) to classify with"))?;
        self.select(&[logits.name.as_str()])
    }

    /// Embeddings of `texts`, `[texts.len(), dim]`, in their order, with the
    /// model's default prompt before each text where it has one (as
    /// sentence-transformers' `encode`). Texts are run in batches of similar
    /// length (fewer padded tokens); an empty input gives a `[0, 0]` array.
    /// ```
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight sentence-transformers model with Dense and Normalize (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-st5");
    /// let model = trt_nlp::TextModel::open(path)?;
    /// let v = model.embed(&["A first text.", "And a second, longer one."])?;
    /// assert_eq!(v.nrows(), 2);
    /// // Its folder ends in sentence-transformers' Normalize: unit rows.
    /// assert!(v.rows().into_iter().all(|r| (r.dot(&r) - 1.0).abs() < 1e-4));
    /// # Ok(())
    /// # }
    /// ```
    pub fn embed<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Array2<f32>> {
        self.embed_with_prompt(texts, None)
    }

    /// [`embed`](Self::embed) with the prompt called `prompt` before each
    /// text (`Some("")`: none; `None`: the model's default).
    /// ```
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight model (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
    /// let model = trt_nlp::TextModel::open(path)?;
    /// let v = model.embed_with_prompt(&["no prompt before this text"], Some(""))?;
    /// assert_eq!(v, model.embed(&["no prompt before this text"])?); // this model has no default prompt
    /// assert!(model.embed_with_prompt(&["x"], Some("no-such-prompt")).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn embed_with_prompt<S: AsRef<str> + Sync>(&self, texts: &[S], prompt: Option<&str>) -> Result<Array2<f32>> {
        let prefix = self.head.prompts.text(prompt)?;
        if prefix.is_empty() {
            return self.embed_texts(texts);
        }
        let prompted: Vec<String> = texts.iter().map(|t| format!("{prefix}{}", t.as_ref())).collect();
        self.embed_texts(&prompted)
    }

    fn embed_texts<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Array2<f32>> {
        let selection = self.embedding()?;
        let all: Mutex<Option<Array2<f32>>> = Mutex::new(None);
        for_each_batch(&*self.backend, &self.pipeline, texts, &self.reads(&selection), |rows, layout, outputs| {
            let pooled = one(selection.tensors(layout, outputs, rows.len())?)?;
            let mut all = all.lock().unwrap_or_else(PoisonError::into_inner);
            let all = all.get_or_insert_with(|| Array2::zeros((texts.len(), pooled.row_len())));
            for (k, &i) in rows.iter().enumerate() {
                let row = pooled.row(k).ok_or_else(|| Error::Shape {
                    what: "pooled output rows",
                    expected: vec![rows.len()],
                    got: vec![pooled.rows()],
                })?;
                all.row_mut(i).assign(&ArrayView1::from(row));
            }
            Ok(())
        })?;
        Ok(all.into_inner().unwrap_or_else(PoisonError::into_inner).unwrap_or_else(|| Array2::zeros((0, 0))))
    }

    /// The logits and the `k` best-scored labels of each text, in their
    /// order; scores as the model's [`Head::activation`] says (softmax for
    /// single-label classifiers, sigmoid for multi-label ones and one-logit
    /// cross-encoders). Texts are run in batches of similar length; an empty input
    /// gives an empty result.
    /// ```
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight BertForSequenceClassification with three labels (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-cls3");
    /// let model = trt_nlp::TextModel::open(path)?;
    /// let top2 = model.classify(&["What a lovely day.", "Nothing to see here."], 2)?;
    /// assert_eq!(top2.len(), 2);
    /// let best = &top2[0].top[0];
    /// assert!(["negative", "neutral", "positive"].contains(&best.label.as_str()), "{}", best.label);
    /// assert!(top2[0].top[0].score >= top2[0].top[1].score);
    /// # Ok(())
    /// # }
    /// ```
    pub fn classify<S: AsRef<str> + Sync>(&self, texts: &[S], k: usize) -> Result<Vec<Classification>> {
        let selection = self.logits()?;
        let all: Mutex<Vec<Option<Classification>>> = Mutex::new(vec![None; texts.len()]);
        for_each_batch(&*self.backend, &self.pipeline, texts, &self.reads(&selection), |rows, layout, outputs| {
            let logits = one(selection.tensors(layout, outputs, rows.len())?)?;
            let logits = Array2::from_shape_vec((logits.rows(), logits.row_len()), logits.values)
                .map_err(|source| Error::ArrayShape { what: "logits".into(), source })?;
            let top = top_k(scores(logits.view(), self.head.activation).view(), k, &self.head.labels);
            let mut all = all.lock().unwrap_or_else(PoisonError::into_inner);
            for ((&i, row), top) in rows.iter().zip(logits.rows()).zip(top) {
                all[i] = Some(Classification { logits: row.to_vec(), top });
            }
            Ok(())
        })?;
        Ok(all.into_inner().unwrap_or_else(PoisonError::into_inner).into_iter().flatten().collect())
    }

    /// The score of each `(query, passage)` pair on a cross-encoder (a
    /// reranker), in their order: each pair tokenized as the model's
    /// tokenizer pairs two texts ([`TokenizerPipeline::tokenize_pairs`]; a
    /// pair past the model's length loses tokens from its longer side
    /// first), pairs run in batches of similar length, and the pair's one
    /// logit scored by the head's [`activation`](Head::activation) (sigmoid
    /// for a sentence-transformers cross-encoder, as its `predict`). Fails
    /// when the model gives other than one logit per pair (an NLI classifier:
    /// [`Classifier::score_pairs`](crate::Classifier::score_pairs) returns
    /// every logit); an empty input gives an empty result.
    ///
    /// ```
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight cross-encoder made by sentence-transformers (tests/data/hf/).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/roberta-cross-encoder");
    /// let model = trt_nlp::TextModel::open(path)?;
    /// let scores = model.score_pairs(&[("How old is the moon?", "About 4.5 billion years."), ("How old is the moon?", "Paris.")])?;
    /// assert_eq!(scores.len(), 2);
    /// assert!(scores.iter().all(|s| (0.0..=1.0).contains(s))); // its head says sigmoid
    /// # Ok(())
    /// # }
    /// ```
    pub fn score_pairs<A, B>(&self, pairs: &[(A, B)]) -> Result<Vec<f32>>
    where
        A: AsRef<str> + Sync,
        B: AsRef<str> + Sync,
    {
        let logits = self.pair_logits(pairs, PairTruncation::LongestFirst)?;
        if let Some(l) = logits.iter().find(|l| l.len() != 1) {
            return Err(Error::unsupported(format!(
                "score_pairs needs a model with one logit per pair (a cross-encoder); this one gives {} (Classifier::score_pairs returns them all)",
                l.len()
            )));
        }
        let column = Array2::from_shape_vec((logits.len(), 1), logits.concat())
            .map_err(|source| Error::ArrayShape { what: "logits".into(), source })?;
        Ok(scores(column.view(), self.head.activation).into_iter().collect())
    }

    /// The logits of each `(first, second)` pair, in their order: tokenized
    /// as the model's tokenizer pairs them, too-long pairs cut by `strategy`,
    /// batched like texts.
    pub(crate) fn pair_logits<A, B>(&self, pairs: &[(A, B)], strategy: PairTruncation) -> Result<Vec<Vec<f32>>>
    where
        A: AsRef<str> + Sync,
        B: AsRef<str> + Sync,
    {
        let selection = self.logits()?;
        let rows = self.pipeline.tokenize_pairs(pairs, strategy, TruncationSide::Right)?;
        let all: Mutex<Vec<Vec<f32>>> = Mutex::new(vec![Vec::new(); rows.len()]);
        for_each_row_batch(&*self.backend, &self.pipeline, &rows, &self.reads(&selection), |order, layout, outputs| {
            let logits = one(selection.tensors(layout, outputs, order.len())?)?;
            let mut all = all.lock().unwrap_or_else(PoisonError::into_inner);
            for (k, &i) in order.iter().enumerate() {
                all[i] = logits.row(k).unwrap_or_default().to_vec();
            }
            Ok(())
        })?;
        Ok(all.into_inner().unwrap_or_else(PoisonError::into_inner))
    }

    /// The `selection` of `texts`, one row per text in their order. Texts
    /// are run in the given order, in batches of at most
    /// [`max_batch`](Self::max_batch) (a batch smaller than the model's
    /// smallest is padded with empty texts, whose rows are dropped); a
    /// `[batch, seq, ...]` output is padded to the longest batch's length.
    /// Fails on an empty input.
    /// ```
    /// # fn main() -> trt_nlp::Result<()> {
    /// # // A small random-weight sentence-transformers model (tests/data/hf/, made by scripts/make_hf_fixtures*.py).
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub");
    /// let model = trt_nlp::TextModel::open(path)?;
    /// let selection = model.embedding()?; // the pooled sentence embedding, called "embedding"
    /// let out = model.run(&["one text", "and another"], &selection)?;
    /// let embedding = out.get("embedding").expect("selected");
    /// assert_eq!(embedding.rows(), 2);
    /// assert_eq!(embedding.row_len(), model.embed(&["x"])?.ncols());
    /// # Ok(())
    /// # }
    /// ```
    pub fn run<S: AsRef<str> + Sync>(&self, texts: &[S], selection: &Selection) -> Result<TextOutputs> {
        let mut padded: Vec<&str> = Vec::with_capacity(self.max_batch().max(self.layout().min_batch));
        let min_batch = self.layout().min_batch;
        self.run_batches(texts.len(), selection, &mut |range, batch| {
            padded.clear();
            padded.extend(texts[range].iter().map(|t| t.as_ref()));
            if padded.len() < min_batch {
                padded.resize(min_batch, "");
            }
            self.pipeline.encode_into(&padded, batch)
        })
    }

    /// [`run`](Self::run) for rows tokenized earlier (text pairs, ready
    /// token ids, texts cut from the left; see [`TokenizerPipeline::pack`]).
    pub fn run_rows(&self, rows: &[TokenRow], selection: &Selection) -> Result<TextOutputs> {
        let min_batch = self.layout().min_batch;
        // A batch under the model's smallest is filled with an empty text's row.
        let filler = if rows.len() < min_batch { self.pipeline.tokenize(&[""])?.pop() } else { None };
        self.run_batches(rows.len(), selection, &mut |range, batch| {
            let real = range.len();
            let fill = filler.iter().cycle().take(min_batch.saturating_sub(real));
            self.pipeline.pack(rows[range].iter().chain(fill), batch)
        })
    }

    /// `n` rows in batches of at most `max_batch`, `encode` writing each
    /// batch's tokens (the rows of `range`, padded to the model's smallest
    /// batch), `selection` computed from each and put together.
    fn run_batches(
        &self,
        n: usize,
        selection: &Selection,
        encode: &mut dyn FnMut(std::ops::Range<usize>, &mut EncodedBatch<'_>) -> Result<BatchLayout>,
    ) -> Result<TextOutputs> {
        if n == 0 {
            return Err(Error::EmptyBatch);
        }
        let mut tokenize = Duration::ZERO;
        let started = Instant::now();
        let mut parts: Vec<Vec<OutputRows>> = Vec::new();
        let wanted = self.reads(selection);
        for start in (0..n).step_by(self.max_batch()) {
            let range = start..(start + self.max_batch()).min(n);
            let real = range.len();
            self.backend.run_reading(
                &wanted,
                &mut |batch| {
                    let t = Instant::now();
                    let l = encode(range.clone(), batch);
                    tokenize += t.elapsed();
                    l
                },
                &mut |l, outs| {
                    parts.push(selection.tensors(l, outs, real)?);
                    Ok(())
                },
            )?;
        }
        let compute = started.elapsed().saturating_sub(tokenize);
        let tensors = if parts.len() == 1 {
            parts.pop().unwrap_or_default()
        } else {
            (0..selection.outputs().len())
                .map(|o| OutputRows::concat(&parts.iter().map(|p| p[o].clone()).collect::<Vec<_>>()))
                .collect::<Result<_>>()?
        };
        Ok(TextOutputs { tensors, tokenize, compute })
    }
}

/// The one tensor of a one-output selection.
fn one(mut tensors: Vec<OutputRows>) -> Result<OutputRows> {
    match (tensors.pop(), tensors.is_empty()) {
        (Some(t), true) => Ok(t),
        _ => Err(Error::Internal("a one-output selection computed another number of outputs".into())),
    }
}
