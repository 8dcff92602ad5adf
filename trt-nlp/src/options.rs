//! How the text helpers tokenize: threads, padding bucket, long texts. One
//! place that turns these and a model's [`ModelLayout`] into the
//! [`TokenizerPipeline`] the model needs; backends never see it.

use std::path::Path;

use crate::{ModelLayout, Padding, Result, TokenizerPipeline, Truncation};

/// Tokenizer settings for [`Classifier`](crate::Classifier) and
/// [`Embedder`](crate::Embedder).
#[derive(Debug, Clone)]
pub struct HelperOptions {
    /// Tokenizer threads. Default: [`crate::default_threads`].
    pub threads: Option<usize>,
    /// Pad to multiples of this (fewer distinct shapes). Default 8.
    pub bucket: usize,
    /// Reject texts longer than the model allows instead of truncating them.
    pub reject_long_texts: bool,
}

impl Default for HelperOptions {
    fn default() -> Self {
        HelperOptions { threads: None, bucket: 8, reject_long_texts: false }
    }
}

impl HelperOptions {
    /// A pipeline over `tokenizer` (a `tokenizer.json`) whose rows fit
    /// `layout`'s sequence range.
    pub fn pipeline(&self, tokenizer: &Path, layout: &ModelLayout) -> Result<TokenizerPipeline> {
        let mut b = TokenizerPipeline::builder(layout.max_seq)
            .min_len(layout.min_seq)
            .padding(Padding::Bucket(self.bucket.max(1)));
        if let Some(t) = self.threads {
            b = b.threads(t);
        }
        if self.reject_long_texts {
            b = b.truncation(Truncation::Reject);
        }
        b.from_file(tokenizer)
    }
}
