//! `trt tokenize --tokenizer tokenizer.json [--max-len N] [TEXT ...]`: one JSON
//! line per text, `{"input_ids": [...], "attention_mask": [...]}`, each as long
//! as its own text (no padding), through trt-nlp's [`TokenizerPipeline`].
//!
//! Texts are the arguments, else the lines of stdin (an empty line is an
//! empty text). Without `--max-len` nothing is truncated; with it, texts are
//! truncated to N tokens, special tokens included, as the Python `tokenizers`
//! package's `enable_truncation(N)` does.
//!
//! Lines are tokenized in chunks (in parallel inside the pipeline); each row's
//! real length comes from the pipeline's [`trt_nlp::BatchLayout`], so padding
//! never reaches the output. Interactive input goes one line at a time.

use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};

use serde_json::Value;
use trt_nlp::ElementType;
use trt_nlp::{EncodedBatch, InputRole, InputSpec, Padding, TokenizerPipeline, Truncation};

use crate::error::{CliError, Result};
use crate::output::emit;

/// Arguments of `trt tokenize`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The Hugging Face tokenizer file.
    #[arg(long, value_name = "tokenizer.json")]
    pub tokenizer: PathBuf,

    /// Truncate each text to at most N tokens, special tokens included.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_len: Option<u32>,

    /// Texts to tokenize [default: the lines of stdin].
    pub texts: Vec<String>,
}

/// The pipeline's length limit when none is given: large enough for any text
/// (nothing is truncated: texts over it are rejected, never cut), while
/// buffers are sized by what each chunk needs.
const UNLIMITED: usize = 1 << 40;

/// A pipeline that writes each text's own tokens (no padding beyond the
/// chunk's longest row, which [`Tokenizer::encode`] strips again).
pub struct Tokenizer {
    pipeline: TokenizerPipeline,
    ids: Vec<i64>,
    mask: Vec<i64>,
}

/// One tokenized text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    /// Token ids, special tokens included.
    pub input_ids: Vec<i64>,
    /// 1 per token.
    pub attention_mask: Vec<i64>,
}

impl Tokenizer {
    /// Load `tokenizer.json`; `max_len` truncates, `None` keeps every token.
    pub fn new(path: &Path, max_len: Option<usize>) -> Result<Self> {
        let builder = match max_len {
            Some(n) => TokenizerPipeline::builder(n).truncation(Truncation::Truncate),
            None => TokenizerPipeline::builder(UNLIMITED).truncation(Truncation::Reject),
        };
        let pipeline = builder.padding(Padding::Longest).from_file(path).map_err(|e| match (e, max_len) {
            (e @ trt_nlp::Error::InvalidOption { option: "max_len", .. }, Some(n)) => CliError::new(format!("--max-len {n}: {e}")),
            (e, _) => e.into(),
        })?;
        Ok(Tokenizer { pipeline, ids: Vec::new(), mask: Vec::new() })
    }

    /// Tokenize a chunk of texts.
    pub fn encode<S: AsRef<str> + Sync>(&mut self, texts: &[S]) -> Result<Vec<Tokens>> {
        // A WordPiece/BPE row rarely has more tokens than its text has bytes
        // (plus special tokens): size for that, so most chunks encode once.
        let longest = texts.iter().map(|t| t.as_ref().len()).max().unwrap_or(0) + 8;
        let guess = texts.len() * longest.min(self.pipeline.max_len());
        if self.ids.len() < guess {
            self.ids.resize(guess, 0);
            self.mask.resize(guess, 0);
        }
        loop {
            let spec = |role: InputRole| InputSpec::new(role.default_name(), role, ElementType::I64);
            let mut batch = EncodedBatch::new()
                .with(spec(InputRole::InputIds)?, &mut self.ids)?
                .with(spec(InputRole::AttentionMask)?, &mut self.mask)?;
            match self.pipeline.encode_into(texts, &mut batch) {
                Ok(layout) => {
                    return Ok(layout
                        .lengths
                        .iter()
                        .enumerate()
                        .map(|(row, &len)| {
                            let start = row * layout.seq_len;
                            Tokens {
                                input_ids: self.ids[start..start + len].to_vec(),
                                attention_mask: self.mask[start..start + len].to_vec(),
                            }
                        })
                        .collect());
                }
                // The buffers grow to what this chunk needs, then the chunk is encoded again.
                Err(trt_nlp::Error::BufferTooSmall { needed, .. }) => {
                    self.ids.resize(needed, 0);
                    self.mask.resize(needed, 0);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Texts from the arguments, or stdin lines in chunks (one at a time when a
/// person is typing), handed to `each`.
pub fn for_each_chunk(texts: &[String], mut each: impl FnMut(&[String]) -> Result<()>) -> Result<()> {
    if !texts.is_empty() {
        return each(texts);
    }
    let stdin = std::io::stdin();
    let chunk_size = if stdin.is_terminal() { 1 } else { 256 };
    let mut chunk = Vec::with_capacity(chunk_size);
    for (n, line) in stdin.lock().lines().enumerate() {
        let line = line.map_err(|e| CliError::new(format!("cannot read line {} of stdin: {e}", n + 1)))?;
        chunk.push(line.strip_suffix('\r').map(str::to_owned).unwrap_or(line));
        if chunk.len() == chunk_size {
            each(&chunk)?;
            chunk.clear();
        }
    }
    if !chunk.is_empty() {
        each(&chunk)?;
    }
    Ok(())
}

/// `trt tokenize`.
pub fn run(args: Args) -> Result<()> {
    let mut tokenizer = Tokenizer::new(&args.tokenizer, args.max_len.map(|n| n as usize))?;
    for_each_chunk(&args.texts, |chunk| {
        let mut out = String::new();
        for t in tokenizer.encode(chunk)? {
            // Written by hand to keep input_ids first (serde_json's maps are sorted).
            let (ids, mask) = (Value::from(t.input_ids), Value::from(t.attention_mask));
            out.push_str(&format!("{{\"input_ids\":{ids},\"attention_mask\":{mask}}}\n"));
        }
        emit(&out);
        Ok(())
    })
}
