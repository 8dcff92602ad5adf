//! Text pairs (query and passage, premise and hypothesis) for cross-encoders,
//! and single texts cut from the left.
//!
//! Each segment is encoded by `tokenizers` on its own, without special tokens
//! and without truncation; the cut is computed here; then the tokenizer's
//! post-processor (its pair template) puts the segments between the special
//! tokens and gives the second its own `token_type_ids`. The cut is ours, not
//! the `tokenizers` crate's, because the crate (0.23.2) and the Python package
//! (0.23.3) disagree on `longest_first` when both segments must be cut to an
//! odd total: the package gives the odd token to the longer segment (its own
//! unit tests say so: lengths 8 and 4 cut to 7 give 4 and 3), the crate to the
//! second. We follow the package, which is what users compare against (the
//! tests do, on hundreds of pairs). The byte-level fast path is not used for
//! pairs: its template is the single-text one.

use rayon::prelude::*;
use tokenizers::{Encoding, PostProcessor, Tokenizer, TruncationDirection};

use super::{TokenizerPipeline, Truncation};
use crate::error::{Error, Result};
use crate::rows::TokenRow;

/// Which segment of a pair too long for the model loses tokens (the
/// `strategy` of Python `tokenizers`' `enable_truncation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PairTruncation {
    /// Take tokens from the longer segment until both fit (the default of
    /// `tokenizers` and `transformers`).
    #[default]
    LongestFirst,
    /// Only the first segment is cut; a pair whose first segment is too
    /// short to make room is an error.
    OnlyFirst,
    /// Only the second segment is cut.
    OnlySecond,
}

/// Which end of a text truncation cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TruncationSide {
    /// Keep the first tokens (the default).
    #[default]
    Right,
    /// Keep the last tokens.
    Left,
}

fn direction(side: TruncationSide) -> TruncationDirection {
    match side {
        TruncationSide::Right => TruncationDirection::Right,
        TruncationSide::Left => TruncationDirection::Left,
    }
}

/// Pairs (or texts) per parallel task: encoding through `tokenizers` costs
/// tens of microseconds a pair, so small batches stay on the calling thread.
const PER_TASK: usize = 8;

impl TokenizerPipeline {
    /// Tokenizes `(first, second)` pairs into owned rows, for a cross-encoder:
    /// `[CLS] first [SEP] second [SEP]` (the tokenizer's pair template) with
    /// `token_type_ids` 0 on the first segment and 1 on the second. Pairs
    /// longer than [`max_len`](Self::max_len) are cut by `strategy` from
    /// `side` in truncate mode, or refused with [`Error::TooLong`] in reject
    /// mode. Pack the rows with [`pack`](Self::pack).
    ///
    /// ```
    /// # let tokenizer_json = concat!(env!("TRT_DEPS_DIR"), "/minilm/tokenizer.json");
    /// use trt_nlp::{PairTruncation, TokenizerPipeline, TruncationSide};
    ///
    /// let pipeline = TokenizerPipeline::builder(128).threads(1).from_file(tokenizer_json)?;
    /// let rows = pipeline.tokenize_pairs(&[("a question", "an answer")], PairTruncation::LongestFirst, TruncationSide::Right)?;
    /// assert_eq!(rows[0].ids(), [101, 1037, 3160, 102, 2019, 3437, 102]);
    /// assert_eq!(rows[0].type_ids(), [0, 0, 0, 0, 1, 1, 1]);
    /// # Ok::<(), trt_nlp::Error>(())
    /// ```
    pub fn tokenize_pairs<A, B>(&self, pairs: &[(A, B)], strategy: PairTruncation, side: TruncationSide) -> Result<Vec<TokenRow>>
    where
        A: AsRef<str> + Sync,
        B: AsRef<str> + Sync,
    {
        let pair_added = if self.add_special_tokens { self.tokenizer.get_post_processor().map_or(0, |p| p.added_tokens(true)) } else { 0 };
        // tokenizers subtracts the pair's special tokens from the limit: below them it overflows.
        if self.max_len <= pair_added {
            return Err(Error::InvalidOption {
                option: "max_len",
                value: self.max_len.to_string(),
                expected: format!("more than a pair's {pair_added} special tokens, to leave room for text"),
            });
        }
        self.run_parallel(pairs.len(), |i| {
            let (first, second) = (self.segment(pairs[i].0.as_ref(), 0, i)?, self.segment(pairs[i].1.as_ref(), 1, i)?);
            let (la, lb) = (first.len(), second.len());
            let Some((ka, kb)) = self.fit(la, lb, pair_added, strategy, i)? else {
                return self.finish(first, Some(second), false, i);
            };
            let (mut first, mut second) = (first, second);
            first.truncate(ka, 0, direction(side));
            second.truncate(kb, 0, direction(side));
            self.finish(first, Some(second), ka < la || kb < lb, i)
        })
    }

    /// [`tokenize`](Self::tokenize), with long texts cut from `side`: from the
    /// right it is `tokenize` itself (and its fast path); from the left the
    /// texts go through `tokenizers`.
    pub fn tokenize_from<S: AsRef<str> + Sync>(&self, texts: &[S], side: TruncationSide) -> Result<Vec<TokenRow>> {
        if side == TruncationSide::Right || self.truncation == Truncation::Reject {
            return self.tokenize(texts);
        }
        self.run_parallel(texts.len(), |i| {
            let mut encoding = self.segment(texts[i].as_ref(), 0, i)?;
            let room = self.max_len - self.added;
            let cut = encoding.len() > room;
            encoding.truncate(room, 0, TruncationDirection::Left);
            self.finish(encoding, None, cut, i)
        })
    }

    /// The tokenizer without truncation (and, like every tokenizer here, without padding).
    fn plain(&self) -> &Tokenizer {
        self.untruncated.as_ref().unwrap_or(&self.tokenizer)
    }

    /// One segment's tokens, no special tokens, uncut, with `type_id`.
    fn segment(&self, text: &str, type_id: u32, index: usize) -> Result<Encoding> {
        let mut encoding = self.plain().encode_fast(text, false).map_err(|source| Error::Tokenize { index, source })?;
        if type_id != 0 {
            encoding.set_type_ids(vec![type_id; encoding.len()]);
        }
        Ok(encoding)
    }

    /// How many tokens each segment keeps (`None`: the pair fits as it is),
    /// by `strategy`, for segments of `la` and `lb` tokens and `added` special
    /// tokens; in reject mode a pair that does not fit is [`Error::TooLong`].
    fn fit(&self, la: usize, lb: usize, added: usize, strategy: PairTruncation, index: usize) -> Result<Option<(usize, usize)>> {
        let room = self.max_len - added;
        if la + lb <= room {
            return Ok(None);
        }
        if self.truncation == Truncation::Reject {
            return Err(Error::TooLong { index, tokens: la + lb + added, max_len: self.max_len });
        }
        let remove = la + lb - room;
        let keep = match strategy {
            PairTruncation::LongestFirst => {
                // The shorter segment stays whole when the longer can give up
                // enough; else each gets half, the odd token going to the
                // longer one (to the second on a tie).
                let swap = la > lb;
                let short = la.min(lb);
                let (ks, kl) = if 2 * short <= room { (short, room - short) } else { (room / 2, room - room / 2) };
                if swap {
                    (kl, ks)
                } else {
                    (ks, kl)
                }
            }
            PairTruncation::OnlyFirst if la > remove => (la - remove, lb),
            PairTruncation::OnlySecond if lb > remove => (la, lb - remove),
            PairTruncation::OnlyFirst | PairTruncation::OnlySecond => {
                let source = "Truncation error: Sequence to truncate too short to respect the provided max_length".into();
                return Err(Error::Tokenize { index, source });
            }
        };
        Ok(Some(keep))
    }

    /// The segments through the post-processor (special tokens, type ids) as an owned row.
    fn finish(&self, first: Encoding, second: Option<Encoding>, truncated: bool, index: usize) -> Result<TokenRow> {
        let encoding =
            self.plain().post_process(first, second, self.add_special_tokens).map_err(|source| Error::Tokenize { index, source })?;
        if encoding.len() > self.max_len {
            return Err(Error::TooLong { index, tokens: encoding.len(), max_len: self.max_len });
        }
        let mut row = TokenRow::new(encoding.get_ids().to_vec(), Some(encoding.get_type_ids().to_vec()))?;
        row.set_truncated(truncated);
        Ok(row)
    }

    /// `each(0..n)` in order, on the pool when the batch is worth it.
    fn run_parallel(&self, n: usize, each: impl Fn(usize) -> Result<TokenRow> + Sync + Send) -> Result<Vec<TokenRow>> {
        if self.threads() == 1 || n <= PER_TASK {
            return (0..n).map(each).collect();
        }
        self.pool.install(|| (0..n).into_par_iter().with_min_len(PER_TASK).map(&each).collect())
    }
}
