//! Texts in, padded `[batch, seq_len]` token tensors out.
//!
//! [`TokenizerPipeline`] wraps a Hugging Face [`Tokenizer`] with the policy an
//! engine needs: a maximum sequence length (from the engine's optimization
//! profile), truncation or rejection of longer texts, and padding to the
//! batch's longest text (optionally rounded up to a bucket). It works in two
//! steps: encode the texts in parallel chunks, then, once the padded length
//! is known, write each row in place into the caller's buffers.
//!
//! The two steps are also public on their own, for callers that must know
//! each text's length long before its batch exists (the batching scheduler
//! groups by length and budgets tokens at submit):
//! [`TokenizerPipeline::tokenize`] gives owned [`TokenRow`]s, and
//! [`TokenizerPipeline::pack`] later writes any set of them as one padded batch.
//!
//! ASCII texts of a standard BERT WordPiece tokenizer take an exact,
//! allocation-free byte-level path (see `fast_path`); every other text goes
//! through `tokenizers`' `encode_fast` (no offsets). Either way the ids equal
//! what the Python `tokenizers` package gives for the same `tokenizer.json`.

use std::path::Path;
use std::sync::Arc;

use ndarray::ArrayView2;
use rayon::prelude::*;
use rayon::ThreadPool;
use tokenizers::{PostProcessor, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::buffers::EncodedBatch;
use crate::error::{Error, Result};
use crate::fast_path::FastWordPiece;
use crate::parallel::build_pool;
use crate::rows::{Chunk, Pad, Row, TokenRow, Tokens};

mod pairs;
pub use pairs::{PairTruncation, TruncationSide};

/// What to do with a text longer than the maximum sequence length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Truncation {
    /// Keep its first tokens, as the Python `tokenizers` does with
    /// `enable_truncation(max_len)` (special tokens are kept).
    #[default]
    Truncate,
    /// Fail the whole batch with [`Error::TooLong`], naming the text.
    Reject,
}

/// How long the rows of a batch are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Padding {
    /// As long as the batch's longest text.
    #[default]
    Longest,
    /// The longest text rounded up to a multiple of this (8, 16, 32, ...),
    /// clamped to the maximum sequence length. Fewer distinct shapes help
    /// engines that tune per shape.
    Bucket(usize),
    /// Always the maximum sequence length (static-shape engines).
    Max,
}

/// The shape of what [`TokenizerPipeline::encode_into`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BatchLayout {
    /// Rows written (the number of texts).
    pub batch: usize,
    /// Padded length of every row.
    pub seq_len: usize,
    /// Tokens of each text (special tokens included, padding excluded), after truncation.
    pub lengths: Vec<usize>,
    /// Indices of the texts that were truncated.
    pub truncated: Vec<usize>,
}

impl BatchLayout {
    /// `[batch, seq_len]`, the shape to give the engine.
    pub fn shape(&self) -> [usize; 2] {
        [self.batch, self.seq_len]
    }

    /// Real (unpadded) tokens in the batch.
    pub fn total_tokens(&self) -> usize {
        self.lengths.iter().sum()
    }

    /// The `[batch, seq_len]` attention mask (1 on real tokens, 0 on padding),
    /// from the row lengths: no read-back of the input tensor, whichever
    /// buffers it was written to.
    ///
    /// ```
    /// let layout = trt_nlp::BatchLayout { batch: 2, seq_len: 3, lengths: vec![2, 3], ..Default::default() };
    /// assert_eq!(layout.attention_mask().row(0).to_vec(), [1, 1, 0]);
    /// ```
    pub fn attention_mask(&self) -> ndarray::Array2<i32> {
        ndarray::Array2::from_shape_fn((self.batch, self.seq_len), |(r, i)| i32::from(i < self.lengths[r]))
    }

    /// The written part of `buffer` as a `[batch, seq_len]` array, e.g. the
    /// attention mask for [`mean_pool`](crate::mean_pool).
    ///
    /// ```
    /// let layout = trt_nlp::BatchLayout { batch: 2, seq_len: 3, ..Default::default() };
    /// let mask = [1i32, 1, 0, 1, 1, 1, 9, 9]; // a larger buffer is fine
    /// assert_eq!(layout.view(&mask)?.row(0).to_vec(), [1, 1, 0]);
    /// # Ok::<(), trt_nlp::Error>(())
    /// ```
    pub fn view<'a, T>(&self, buffer: &'a [T]) -> Result<ArrayView2<'a, T>> {
        let needed = self.batch.saturating_mul(self.seq_len);
        let data = buffer.get(..needed).ok_or_else(|| Error::Shape {
            what: "buffer vs batch layout",
            expected: vec![needed],
            got: vec![buffer.len()],
        })?;
        ArrayView2::from_shape((self.batch, self.seq_len), data).map_err(|_| Error::Shape {
            what: "buffer vs batch layout",
            expected: vec![self.batch, self.seq_len],
            got: vec![data.len()],
        })
    }
}

/// Settings for a [`TokenizerPipeline`]; made by [`TokenizerPipeline::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct PipelineBuilder {
    max_len: usize,
    min_len: usize,
    truncation: Truncation,
    padding: Padding,
    threads: Option<usize>,
    pool: Option<Arc<ThreadPool>>,
    pad_id: Option<u32>,
    pad_type_id: Option<u32>,
    add_special_tokens: bool,
    fast_path: bool,
}

impl PipelineBuilder {
    /// Truncate (default) or reject texts longer than the maximum length.
    pub fn truncation(mut self, truncation: Truncation) -> Self {
        self.truncation = truncation;
        self
    }

    /// Pad rows to at least `min_len` tokens (an engine profile's minimum
    /// sequence length); default 0.
    pub fn min_len(mut self, min_len: usize) -> Self {
        self.min_len = min_len;
        self
    }

    /// Row length policy; default [`Padding::Longest`].
    pub fn padding(mut self, padding: Padding) -> Self {
        self.padding = padding;
        self
    }

    /// Tokenize on a pool of this many threads. Default:
    /// [`default_threads`](crate::default_threads) (`TOKENIZERS_PARALLELISM`,
    /// then `RAYON_NUM_THREADS`, then all cores).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// Tokenize on this pool (shared with other pipelines, say) instead of a
    /// pool of our own. Wins over [`threads`](Self::threads).
    pub fn thread_pool(mut self, pool: Arc<ThreadPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Id written at padding positions of `input_ids`. Default: the
    /// tokenizer file's padding id, else the id of `[PAD]` or `<pad>`.
    pub fn pad_id(mut self, id: u32) -> Self {
        self.pad_id = Some(id);
        self
    }

    /// Id written at padding positions of `token_type_ids`. Default: the
    /// tokenizer file's, else 0.
    pub fn pad_type_id(mut self, id: u32) -> Self {
        self.pad_type_id = Some(id);
        self
    }

    /// Add the model's special tokens (`[CLS]`, `[SEP]`, ...); default true.
    pub fn add_special_tokens(mut self, add: bool) -> Self {
        self.add_special_tokens = add;
        self
    }

    /// Whether ASCII texts may take the byte-level WordPiece path (default
    /// true). It gives the same ids as `tokenizers`, several times faster; it is
    /// used only for tokenizers it reproduces exactly (see
    /// [`TokenizerPipeline::uses_fast_path`]). Turn it off to compare.
    pub fn fast_path(mut self, enabled: bool) -> Self {
        self.fast_path = enabled;
        self
    }

    /// Loads `tokenizer.json` and builds the pipeline.
    pub fn from_file(self, path: impl AsRef<Path>) -> Result<TokenizerPipeline> {
        let path = path.as_ref();
        let tokenizer = Tokenizer::from_file(path).map_err(|source| Error::TokenizerLoad { path: path.to_owned(), source })?;
        self.build(tokenizer)
    }

    /// Builds the pipeline around `tokenizer`, replacing whatever padding and
    /// truncation it was configured with.
    pub fn build(self, mut tokenizer: Tokenizer) -> Result<TokenizerPipeline> {
        let max_len = self.max_len;
        let declared = tokenizer.get_post_processor().map_or(0, |p| p.added_tokens(false));
        let added = if self.add_special_tokens { declared } else { 0 };
        // tokenizers (0.23) subtracts the post-processor's special tokens from the
        // truncation length even when they are not added: below them it overflows
        // (a panic in debug builds; found by fuzzing).
        if self.truncation == Truncation::Truncate && max_len < declared {
            return Err(Error::InvalidOption {
                option: "max_len",
                value: max_len.to_string(),
                expected: format!(
                    "at least the {declared} special tokens of the tokenizer's post-processor, \
                     which tokenizers cannot truncate below (or Truncation::Reject)"
                ),
            });
        }
        // max_len == added would make tokenizers truncate to length 0, which it treats as "no limit".
        if max_len <= added {
            return Err(Error::InvalidOption {
                option: "max_len",
                value: max_len.to_string(),
                expected: format!("more than the {added} special tokens, to leave room for text"),
            });
        }
        if self.min_len > max_len {
            return Err(Error::InvalidOption {
                option: "min_len",
                value: self.min_len.to_string(),
                expected: format!("at most max_len {max_len}"),
            });
        }
        if let Padding::Bucket(0) = self.padding {
            return Err(Error::InvalidOption {
                option: "padding",
                value: "Bucket(0)".into(),
                expected: "a bucket size of at least 1".into(),
            });
        }
        if self.threads == Some(0) {
            return Err(Error::InvalidOption { option: "threads", value: "0".into(), expected: "at least 1".into() });
        }

        let file_padding = tokenizer.get_padding().cloned();
        let pad = Pad {
            id: match self.pad_id.or(file_padding.as_ref().map(|p| p.pad_id)) {
                Some(id) => id,
                None => ["[PAD]", "<pad>"].iter().find_map(|t| tokenizer.token_to_id(t)).ok_or(Error::NoPadToken)?,
            },
            type_id: self.pad_type_id.or(file_padding.map(|p| p.pad_type_id)).unwrap_or(0),
        };

        // We pad ourselves, straight into the caller's buffers.
        tokenizer.with_padding(None);
        // In truncate mode, a copy that does not truncate tells whether a full row was cut.
        let untruncated = match self.truncation {
            Truncation::Truncate => {
                let mut full = tokenizer.clone();
                full.with_truncation(None).map_err(|source| Error::TokenizerSetup { what: "truncation".into(), source })?;
                Some(full)
            }
            Truncation::Reject => None,
        };
        let truncation = match self.truncation {
            Truncation::Truncate => Some(TruncationParams {
                max_length: max_len,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }),
            // Encode in full so the error can give the real token count.
            Truncation::Reject => None,
        };
        tokenizer.with_truncation(truncation).map_err(|source| Error::TokenizerSetup { what: "truncation".into(), source })?;

        let max_id = tokenizer.get_vocab(true).into_values().max().unwrap_or(0).max(pad.id);
        let fast = if self.fast_path { FastWordPiece::new(&tokenizer, self.add_special_tokens) } else { None };
        let pool = match self.pool {
            Some(pool) => pool,
            None => build_pool(self.threads)?,
        };
        Ok(TokenizerPipeline {
            tokenizer,
            untruncated,
            max_len,
            min_len: self.min_len,
            truncation: self.truncation,
            padding: self.padding,
            pool,
            pad,
            max_id,
            add_special_tokens: self.add_special_tokens,
            added,
            fast,
        })
    }
}

/// A tokenizer plus the truncation, padding and threading policy of one engine.
///
/// `Send + Sync`: one pipeline can serve many threads; calls share its pool.
#[derive(Debug)]
pub struct TokenizerPipeline {
    tokenizer: Tokenizer,
    /// Truncate mode: the tokenizer without truncation (see `was_truncated`).
    untruncated: Option<Tokenizer>,
    max_len: usize,
    min_len: usize,
    truncation: Truncation,
    padding: Padding,
    pool: Arc<ThreadPool>,
    pad: Pad,
    max_id: u32,
    add_special_tokens: bool,
    /// Special tokens per text (0 without them).
    added: usize,
    fast: Option<FastWordPiece>,
}

impl TokenizerPipeline {
    /// Settings for a pipeline whose rows are at most `max_len` tokens (the
    /// engine profile's maximum sequence length).
    /// ```
    /// use trt_nlp::{Error, Padding, TokenizerPipeline};
    ///
    /// # fn main() -> trt_nlp::Result<()> {
    /// # let tokenizer_json = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/bert-hub/tokenizer.json");
    /// let pipeline = TokenizerPipeline::builder(64).padding(Padding::Bucket(8)).threads(2).from_file(tokenizer_json)?;
    /// let rows = pipeline.tokenize(&["Hello there."])?;
    /// assert!(rows[0].len() <= 64);
    /// // A setting that cannot work is refused by name.
    /// let e = TokenizerPipeline::builder(64).threads(0).from_file(tokenizer_json).unwrap_err();
    /// assert!(matches!(e, Error::InvalidOption { option: "threads", .. }));
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(max_len: usize) -> PipelineBuilder {
        PipelineBuilder {
            max_len,
            min_len: 0,
            truncation: Truncation::default(),
            padding: Padding::default(),
            threads: None,
            pool: None,
            pad_id: None,
            pad_type_id: None,
            add_special_tokens: true,
            fast_path: true,
        }
    }

    /// Tokenizes `texts` and writes the bound tensors of `outputs`, row-major
    /// `[batch, seq_len]`, returning that shape and each text's length.
    ///
    /// Nothing is written when an error is returned. An empty batch returns
    /// an empty layout (`seq_len` 0) and writes nothing.
    ///
    /// Runs on the pipeline's pool. A one-thread pipeline, or a batch too
    /// small to be worth splitting, runs on the calling thread instead.
    pub fn encode_into<S>(&self, texts: &[S], outputs: &mut EncodedBatch<'_>) -> Result<BatchLayout>
    where
        S: AsRef<str> + Sync,
    {
        if texts.is_empty() {
            return Ok(BatchLayout::default());
        }
        let tasks = self.tasks_for(texts);
        if tasks == 1 {
            return self.encode_with(texts, outputs, 1); // on the calling thread
        }
        self.pool.install(|| self.encode_with(texts, outputs, tasks))
    }

    /// Tokenize in `tasks` chunks (in parallel when more than one), then write.
    fn encode_with<S>(&self, texts: &[S], outputs: &mut EncodedBatch<'_>, tasks: usize) -> Result<BatchLayout>
    where
        S: AsRef<str> + Sync,
    {
        let chunks = self.encode_chunks(texts, tasks)?;
        let (rows, layout) = self.layout(&chunks)?;
        outputs.check(layout.batch, layout.seq_len, self.max_id)?;
        outputs.write(&rows, layout.seq_len, self.pad, tasks);
        drop(rows);
        // Encodings from tokenizers are dozens of allocations each: free them in parallel too.
        if tasks > 1 && chunks.iter().any(Chunk::has_encodings) {
            chunks.into_par_iter().for_each(drop);
        }
        Ok(layout)
    }

    /// How many parallel tasks a batch is worth: 1 (the calling thread) for
    /// one thread or a batch so small that waking the pool would cost more
    /// than it saves; else a few per thread, for load balance.
    fn tasks_for<S: AsRef<str>>(&self, texts: &[S]) -> usize {
        const MIN_BYTES_PER_TASK: usize = 2048;
        let threads = self.threads();
        if threads == 1 || texts.len() == 1 {
            return 1;
        }
        let bytes: usize = texts.iter().map(|t| t.as_ref().len()).sum();
        // The tokenizers path costs ~30x the fast path per byte: split it finer.
        let per_task = if self.fast.is_some() { MIN_BYTES_PER_TASK } else { MIN_BYTES_PER_TASK / 32 };
        (bytes / per_task).clamp(1, threads * 4).min(texts.len())
    }

    /// Tokenizes `texts` into owned rows (truncated or rejected as
    /// [`encode_into`](Self::encode_into) would), without writing any batch:
    /// the first of the two steps, for callers that batch later (see [`pack`](Self::pack)).
    ///
    /// ```
    /// # let tokenizer_json = concat!(env!("TRT_DEPS_DIR"), "/minilm/tokenizer.json");
    /// use trt_nlp::ElementType;
    /// use trt_nlp::{EncodedBatch, InputSpec, TokenizerPipeline};
    ///
    /// let pipeline = TokenizerPipeline::builder(128).threads(1).from_file(tokenizer_json)?;
    /// let rows = pipeline.tokenize(&["A short one.", "A somewhat longer sentence to embed."])?;
    /// assert_eq!(rows[0].len(), 6); // [CLS] a short one . [SEP]
    ///
    /// // Later, any subset of rows, in any order, as one batch:
    /// let [ids_spec, mask_spec, _] = InputSpec::bert(ElementType::I32)?;
    /// let (mut ids, mut mask) = (vec![0i32; 2 * 128], vec![0i32; 2 * 128]);
    /// let mut batch = EncodedBatch::new().with(ids_spec, &mut ids)?.with(mask_spec, &mut mask)?;
    /// let layout = pipeline.pack([&rows[1], &rows[0]], &mut batch)?;
    /// assert_eq!(layout.lengths, [rows[1].len(), 6]);
    /// # Ok::<(), trt_nlp::Error>(())
    /// ```
    pub fn tokenize<S>(&self, texts: &[S]) -> Result<Vec<TokenRow>>
    where
        S: AsRef<str> + Sync,
    {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let tasks = self.tasks_for(texts);
        let run = |tasks| -> Result<Vec<TokenRow>> {
            let chunks = self.encode_chunks(texts, tasks)?;
            let (rows, layout) = self.layout(&chunks)?;
            let mut truncated = layout.truncated.iter().peekable();
            let owned = rows.into_iter().enumerate().map(|(i, row)| row.to_token_row(truncated.next_if_eq(&&i).is_some())).collect();
            Ok(owned)
        };
        if tasks == 1 {
            return run(1);
        }
        self.pool.install(|| run(tasks))
    }

    /// Writes `rows` as one `[rows, seq_len]` batch into the bound tensors of
    /// `outputs`, padded by the pipeline's policy (as
    /// [`encode_into`](Self::encode_into) pads): the second of the two steps.
    /// Rows come from [`tokenize`](Self::tokenize) or [`TokenRow::new`]; each
    /// must pass [`check_row`](Self::check_row). Nothing is written on error.
    pub fn pack<'r>(&self, rows: impl IntoIterator<Item = &'r TokenRow>, outputs: &mut EncodedBatch<'_>) -> Result<BatchLayout> {
        let rows: Vec<&'r TokenRow> = rows.into_iter().collect();
        let mut layout = BatchLayout { batch: rows.len(), lengths: Vec::with_capacity(rows.len()), ..BatchLayout::default() };
        for (index, r) in rows.iter().enumerate() {
            self.check_row(r).map_err(|e| match e {
                Error::TooLong { tokens, max_len, .. } => Error::TooLong { index, tokens, max_len },
                e => e,
            })?;
            if r.truncated() {
                layout.truncated.push(index);
            }
            layout.lengths.push(r.len());
        }
        if rows.is_empty() {
            return Ok(layout);
        }
        layout.seq_len = self.padded_len(layout.lengths.iter().copied().max().unwrap_or(0));
        outputs.check(layout.batch, layout.seq_len, self.max_id)?;
        // Packing is a copy of a few thousand ids: not worth waking the pool.
        let rows: Vec<Row<'r>> = rows.into_iter().map(Row::Owned).collect();
        outputs.write(&rows, layout.seq_len, self.pad, 1);
        Ok(layout)
    }

    /// Whether `row` can be packed by this pipeline: at most
    /// [`max_len`](Self::max_len) tokens ([`Error::TooLong`], index 0) and
    /// every id within the tokenizer's vocabulary ([`Error::InvalidTokens`]).
    pub fn check_row(&self, row: &TokenRow) -> Result<()> {
        if row.len() > self.max_len {
            return Err(Error::TooLong { index: 0, tokens: row.len(), max_len: self.max_len });
        }
        if row.is_empty() {
            return Err(Error::InvalidTokens("a token row needs at least one token".into()));
        }
        if let Some(id) = row.ids().iter().find(|&&id| id > self.max_id) {
            return Err(Error::InvalidTokens(format!("token id {id} is outside the vocabulary (largest id {})", self.max_id)));
        }
        Ok(())
    }

    /// The padded length of a non-empty batch whose longest row has `longest`
    /// tokens, by the padding policy and the minimum length: what a batch
    /// costs in padded tokens is `rows * padded_len(longest)`.
    pub fn padded_len(&self, longest: usize) -> usize {
        let padded = match self.padding {
            Padding::Longest => longest,
            Padding::Bucket(b) => longest.div_ceil(b).saturating_mul(b).min(self.max_len),
            Padding::Max => self.max_len,
        };
        padded.max(self.min_len)
    }

    /// The minimum row length (see [`PipelineBuilder::min_len`]).
    pub fn min_len(&self) -> usize {
        self.min_len
    }

    /// Elements a buffer needs to hold any batch of `batch` texts
    /// (`batch * max_len`).
    pub fn buffer_len(&self, batch: usize) -> usize {
        batch.saturating_mul(self.max_len)
    }

    /// The maximum sequence length.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The truncation policy.
    pub fn truncation(&self) -> Truncation {
        self.truncation
    }

    /// The padding policy.
    pub fn padding(&self) -> Padding {
        self.padding
    }

    /// Threads tokenization runs on.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Whether ASCII texts take the byte-level fast path (see
    /// [`PipelineBuilder::fast_path`]): false when it was turned off or when
    /// this tokenizer is not a BERT WordPiece one it reproduces exactly.
    pub fn uses_fast_path(&self) -> bool {
        self.fast.is_some()
    }

    /// The underlying tokenizer (its own padding and truncation are off).
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// Tokenizes `texts` in `tasks` contiguous chunks, one rayon task each.
    fn encode_chunks<S: AsRef<str> + Sync>(&self, texts: &[S], tasks: usize) -> Result<Vec<Chunk>> {
        if tasks == 1 {
            return Ok(vec![self.encode_chunk(0, texts)?]);
        }
        let size = texts.len().div_ceil(tasks);
        texts.par_chunks(size).enumerate().map(|(c, chunk)| self.encode_chunk(c * size, chunk)).collect()
    }

    /// Whether truncation cut `text`, whose truncated encoding is `encoding`.
    /// `tokenizers` (0.23.2) records the cut tokens in `overflowing` only when
    /// special tokens are added, so a full row without that record is checked
    /// against the untruncated encoding (found by fuzzing, see fuzz/).
    fn was_truncated(&self, text: &str, encoding: &tokenizers::Encoding, index: usize) -> Result<bool> {
        if !encoding.get_overflowing().is_empty() {
            return Ok(true);
        }
        match &self.untruncated {
            Some(full) if encoding.len() >= self.max_len => {
                let full = full.encode_fast(text, self.add_special_tokens).map_err(|source| Error::Tokenize { index, source })?;
                Ok(full.len() > self.max_len)
            }
            _ => Ok(false),
        }
    }

    fn encode_chunk<S: AsRef<str>>(&self, first: usize, texts: &[S]) -> Result<Chunk> {
        // About one token per 4 bytes of English: most chunks never reallocate.
        let bytes: usize = texts.iter().map(|t| t.as_ref().len()).sum();
        let mut chunk = Chunk { ids: Vec::with_capacity(bytes / 4 + 16), items: Vec::with_capacity(texts.len()) };
        let mut scratch = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let text = text.as_ref();
            let start = chunk.ids.len();
            let fast = self.fast.as_ref().is_some_and(|f| f.encode(text, &mut scratch, &mut chunk.ids));
            let tokens = if fast {
                Tokens::Fast { start, len: chunk.ids.len() - start }
            } else {
                let encoding = self
                    .tokenizer
                    .encode_fast(text, self.add_special_tokens)
                    .map_err(|source| Error::Tokenize { index: first + i, source })?;
                let truncated = self.was_truncated(text, &encoding, first + i)?;
                Tokens::Full(encoding, truncated)
            };
            chunk.items.push(tokens);
        }
        Ok(chunk)
    }

    /// The rows (truncated) and the batch's layout; rejects any text longer
    /// than `max_len` in reject mode.
    fn layout<'c>(&'c self, chunks: &'c [Chunk]) -> Result<(Vec<Row<'c>>, BatchLayout)> {
        // Room for text tokens once the special tokens are in.
        let room = self.max_len - self.added;
        let batch = chunks.iter().map(|c| c.items.len()).sum();
        let mut rows = Vec::with_capacity(batch);
        let mut layout = BatchLayout { batch, lengths: Vec::with_capacity(batch), ..BatchLayout::default() };
        let items = chunks.iter().flat_map(|c| c.items.iter().map(move |t| (c, t)));
        for (index, (chunk, tokens)) in items.enumerate() {
            let (row, full_len, truncated) = match tokens {
                Tokens::Fast { start, len } => {
                    let keep = match self.truncation {
                        Truncation::Truncate => (*len).min(room),
                        Truncation::Reject => *len,
                    };
                    let template = self.fast.as_ref().expect("fast tokens come from the fast path").template();
                    (Row::Fast { content: &chunk.ids[*start..start + keep], template }, len + self.added, keep < *len)
                }
                Tokens::Full(e, truncated) => (Row::Full(e), e.len(), *truncated),
            };
            // Reject mode encodes in full; in truncate mode this guards the writer.
            if row.len() > self.max_len {
                return Err(Error::TooLong { index, tokens: full_len, max_len: self.max_len });
            }
            if truncated {
                layout.truncated.push(index);
            }
            layout.lengths.push(row.len());
            rows.push(row);
        }
        // An empty batch stays empty; otherwise rows are at least min_len long.
        layout.seq_len = match layout.lengths.iter().copied().max() {
            None => 0,
            Some(longest) => self.padded_len(longest),
        };
        Ok((rows, layout))
    }
}
