//! How the text helpers tokenize: threads, padding bucket, long texts. One
//! place that turns these and a model's [`ModelLayout`] into the
//! [`TokenizerPipeline`] the model needs; backends never see it (they only
//! state the sequence multiple they prefer).

use std::path::Path;

/// `with_<field>(value)` builder methods for an options struct's public
/// fields: a `#[non_exhaustive]` struct cannot be written as a literal
/// outside this crate (so fields can be added without breaking callers),
/// and these are how callers set what they need, in one expression.
macro_rules! setters {
    ($($(#[$meta:meta])* $field:ident: $ty:ty => $with:ident;)*) => {
        $(
            #[doc = concat!("With [`", stringify!($field), "`](Self::", stringify!($field), ") set to `value`.")]
            $(#[$meta])*
            #[must_use]
            pub fn $with(mut self, value: $ty) -> Self {
                self.$field = value;
                self
            }
        )*
    };
}
pub(crate) use setters;

use crate::backend::Backend;
use crate::{ModelLayout, Padding, Result, TokenizerPipeline, Truncation};

/// Tokenizer settings for [`TextModel`](crate::TextModel),
/// [`Classifier`](crate::Classifier) and [`Embedder`](crate::Embedder).
///
/// ```
/// let options = trt_nlp::HelperOptions::default().with_threads(Some(2)).with_reject_long_texts(true);
/// assert_eq!(options.bucket, None); // the backend's preferred multiple
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct HelperOptions {
    /// Tokenizer threads. Default: [`crate::default_threads`].
    pub threads: Option<usize>,
    /// Pad each batch's length to a multiple of this. Default (`None`): what
    /// the backend prefers ([`Capabilities::sequence_multiple`](crate::backend::Capabilities::sequence_multiple): 8 for TensorRT,
    /// whose kernels are chosen per shape; 1 for ONNX Runtime on a CPU, where
    /// every padded token is wasted work).
    pub bucket: Option<usize>,
    /// Reject texts longer than the model allows instead of truncating them.
    pub reject_long_texts: bool,
}

impl HelperOptions {
    setters! {
        threads: Option<usize> => with_threads;
        bucket: Option<usize> => with_bucket;
        reject_long_texts: bool => with_reject_long_texts;
    }

    /// A pipeline over `tokenizer` (a `tokenizer.json`) whose rows fit
    /// `backend`'s sequence range.
    pub fn pipeline(&self, tokenizer: &Path, backend: &dyn Backend) -> Result<TokenizerPipeline> {
        let layout: &ModelLayout = backend.layout();
        let bucket = self.bucket.unwrap_or_else(|| backend.capabilities().sequence_multiple).max(1);
        let mut b = TokenizerPipeline::builder(layout.max_seq).min_len(layout.min_seq).padding(Padding::Bucket(bucket));
        if let Some(t) = self.threads {
            b = b.threads(t);
        }
        if self.reject_long_texts {
            b = b.truncation(Truncation::Reject);
        }
        b.from_file(tokenizer)
    }
}
