//! Text classification with a TensorRT engine: tokenize, run, softmax, top-k.

use std::path::Path;

use ndarray::Ix2;
use trt::cuda::Device;
use trt::Engine;

use crate::backend::OutputView;
use crate::runner::Runner;
use crate::{softmax, top_k, Error, Labels, Prediction, Result, TokenizerPipeline};

/// How the engine helpers run.
#[derive(Debug, Clone)]
pub struct HelperOptions {
    /// Execution contexts (concurrent batches). Default 2.
    pub contexts: usize,
    /// Tokenizer threads. Default: [`crate::default_threads`].
    pub threads: Option<usize>,
    /// Pad to multiples of this (fewer distinct shapes). Default 8.
    pub bucket: usize,
    /// Reject texts longer than the profile allows instead of truncating them.
    pub reject_long_texts: bool,
}

impl Default for HelperOptions {
    fn default() -> Self {
        HelperOptions { contexts: 2, threads: None, bucket: 8, reject_long_texts: false }
    }
}

impl HelperOptions {
    /// A tokenizer pipeline for an engine whose profiles accept `min_seq..=max_seq` tokens.
    pub(crate) fn pipeline(&self, tokenizer: &Path, min_seq: usize, max_seq: usize) -> Result<TokenizerPipeline> {
        let mut b = TokenizerPipeline::builder(max_seq)
            .min_len(min_seq)
            .padding(crate::Padding::Bucket(self.bucket.max(1)));
        if let Some(t) = self.threads {
            b = b.threads(t);
        }
        if self.reject_long_texts {
            b = b.truncation(crate::Truncation::Reject);
        }
        b.from_file(tokenizer)
    }
}

/// A BERT-style sequence classifier: texts in, ranked labels out.
/// `classify` takes `&self` and may be called from many threads.
#[derive(Debug)]
pub struct Classifier {
    runner: Runner,
    labels: Labels,
    logits: String,
}

impl Classifier {
    /// A classifier over `engine`, whose inputs are token tensors and one of
    /// whose outputs is `[batch, labels]` logits, on `device`.
    pub fn new(engine: &Engine, device: &Device, tokenizer: impl AsRef<Path>, labels: Labels, options: &HelperOptions) -> Result<Self> {
        let runner = Runner::new(engine, device, tokenizer.as_ref(), options)?;
        let logits = runner
            .layout()
            .output_of_rank(2)
            .ok_or_else(|| Error::InvalidConfig("the engine has no [batch, labels] output".into()))?
            .name
            .clone();
        Ok(Classifier { runner, labels, logits })
    }

    /// The `k` most probable labels of each text, best first. Batches larger
    /// than the profile allows are split; an empty input gives an empty result.
    pub fn classify<S: AsRef<str> + Sync>(&self, texts: &[S], k: usize) -> Result<Vec<Vec<Prediction>>> {
        let mut all = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.runner.max_batch()) {
            let preds = self.runner.run_chunk(chunk, |_, _, outputs| {
                let (_, view) = outputs
                    .iter()
                    .find(|(n, _)| *n == self.logits.as_str())
                    .ok_or_else(|| Error::InvalidConfig(format!("output '{}' missing", self.logits)))?;
                let probs = match view {
                    OutputView::F32(v) => softmax(v.view().into_dimensionality::<Ix2>().map_err(shape_err)?),
                    OutputView::F16(v) => softmax(v.view().into_dimensionality::<Ix2>().map_err(shape_err)?),
                    OutputView::BF16(v) => softmax(v.view().into_dimensionality::<Ix2>().map_err(shape_err)?),
                };
                Ok(top_k(probs.view(), k, &self.labels))
            })?;
            // Rows past the chunk are padding up to the profile's minimum batch.
            all.extend(preds.into_iter().take(chunk.len()));
        }
        Ok(all)
    }
}

pub(crate) fn shape_err(e: ndarray::ShapeError) -> Error {
    Error::InvalidConfig(format!("unexpected output rank: {e}"))
}
