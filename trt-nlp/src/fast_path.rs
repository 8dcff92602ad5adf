//! An allocation-free WordPiece encoder for ASCII texts, exact to `tokenizers`.
//!
//! Why: with `tokenizers`, a BERT text costs dozens of allocations (a
//! `NormalizedString` with per-byte alignments, one `String` per token, eight
//! vectors per `Encoding`) and several Unicode-table binary searches per
//! character, which together are most of the time. For the common case of an
//! ASCII text and the standard BERT recipe (`BertNormalizer`,
//! `BertPreTokenizer`, `WordPiece`, a `[CLS] $A [SEP]`-style template) every
//! one of those steps reduces to a byte rule, so we run them on bytes, write
//! ids into a reused buffer and get the same ids several times faster.
//!
//! Exactness, rule by rule, on ASCII input (see `tokenizers`' `normalizers/bert.rs`,
//! `pre_tokenizers/bert.rs`, `models/wordpiece/mod.rs`):
//! - clean_text: NUL and other controls (Cc: 0x00-0x1F, 0x7F) go, except
//!   `\t \n \r`, which become spaces;
//! - Chinese-character spacing and accent stripping (NFD, drop Mn) do nothing to ASCII;
//! - lowercase: ASCII lowercase;
//! - pre-tokenizer: split on `char::is_whitespace` (0x09-0x0D, space), isolate
//!   each `is_ascii_punctuation` byte (the Unicode P* test adds nothing in ASCII);
//! - WordPiece: words longer than `max_input_chars_per_word` are `[UNK]`; else
//!   greedy longest match, continuation pieces looked up with their prefix; a
//!   word with an unmatchable rest is one `[UNK]`.
//!
//! Everything else goes to `tokenizers`: any non-ASCII text, any text that
//! contains an added token's content (case-insensitively: conservative), and
//! every text of a tokenizer whose configuration is not this recipe. At build
//! time a few probe texts are encoded both ways; any difference disables the
//! fast path.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::Value;
use tokenizers::Tokenizer;

/// Probes compared with `tokenizers` when the fast path is built.
const PROBES: &[&str] = &[
    "Hello, World! It's 3.14 o'clock; e-mail me: x@y.org #tags (ok?) [ok] {ok}",
    "unaffable Antidisestablishmentarianism xqzvwk \t\r\n tabs\x00nul\x07bell\x7fdel ~`^|\\<=>$%&*+/_\"",
    "",
];

/// Special tokens around the text, and the text's type id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    /// `(id, type_id)` before the text.
    pub prefix: Vec<(u32, u32)>,
    /// Type id of the text's tokens.
    pub seq_type: u32,
    /// `(id, type_id)` after the text.
    pub suffix: Vec<(u32, u32)>,
}

impl Template {
    /// A row's ids: the special tokens around `content`.
    pub(crate) fn ids<'a>(&'a self, content: &'a [u32]) -> impl Iterator<Item = u32> + 'a {
        self.prefix.iter().map(|p| p.0).chain(content.iter().copied()).chain(self.suffix.iter().map(|p| p.0))
    }

    /// A row's type ids, for `content_len` content tokens.
    pub(crate) fn type_ids(&self, content_len: usize) -> impl Iterator<Item = u32> + '_ {
        self.prefix.iter().map(|p| p.1).chain(std::iter::repeat_n(self.seq_type, content_len)).chain(self.suffix.iter().map(|p| p.1))
    }

    /// No special tokens.
    fn none() -> Self {
        Self { prefix: Vec::new(), seq_type: 0, suffix: Vec::new() }
    }

    /// Number of special tokens.
    pub fn added(&self) -> usize {
        self.prefix.len() + self.suffix.len()
    }
}

/// FxHash: vocabulary lookups of short keys are the hot loop, and SipHash's
/// DoS resistance buys nothing on a read-only table.
#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let word = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Vocab = HashMap<Box<[u8]>, u32, BuildHasherDefault<FxHasher>>;

/// The byte-level BERT WordPiece encoder.
pub(crate) struct FastWordPiece {
    /// Pieces that start a word.
    vocab: Vocab,
    /// Pieces that continue a word, without the continuation prefix.
    continuation: Vocab,
    longest_piece: usize,
    unk: u32,
    max_word_chars: usize,
    clean_text: bool,
    lowercase: bool,
    /// Added tokens' contents, lowercased, for the conservative check.
    added: Vec<Box<[u8]>>,
    added_first: [bool; 256],
    template: Template,
}

// By hand: the derived Debug would print the whole vocabulary.
impl std::fmt::Debug for FastWordPiece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastWordPiece")
            .field("vocab_len", &self.vocab.len())
            .field("clean_text", &self.clean_text)
            .field("lowercase", &self.lowercase)
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}

impl FastWordPiece {
    /// The fast path for `tokenizer`, or `None` when its recipe is not the
    /// one handled here or a probe disagrees with `tokenizers`.
    pub fn new(tokenizer: &Tokenizer, add_special_tokens: bool) -> Option<Self> {
        let json: Value = serde_json::from_str(&tokenizer.to_string(false).ok()?).ok()?;
        let fast = Self::from_json(&json, add_special_tokens)?;
        fast.agrees_with(tokenizer, add_special_tokens).then_some(fast)
    }

    fn from_json(json: &Value, add_special_tokens: bool) -> Option<Self> {
        let normalizer = &json["normalizer"];
        let model = &json["model"];
        let recipe =
            normalizer["type"] == "BertNormalizer" && json["pre_tokenizer"]["type"] == "BertPreTokenizer" && model["type"] == "WordPiece";
        if !recipe {
            return None;
        }
        let prefix = model["continuing_subword_prefix"].as_str()?.as_bytes();
        let mut vocab = Vocab::default();
        let mut continuation = Vocab::default();
        for (token, id) in model["vocab"].as_object()? {
            let id = as_u32(id)?;
            if let Some(rest) = token.as_bytes().strip_prefix(prefix) {
                continuation.insert(rest.into(), id);
            }
            vocab.insert(token.as_bytes().into(), id);
        }
        let unk = *vocab.get(model["unk_token"].as_str()?.as_bytes())?;
        let longest_piece = vocab.keys().chain(continuation.keys()).map(|k| k.len()).max().unwrap_or(0);

        // Added tokens: ASCII-graphic contents only, so that a case-insensitive
        // search of the normalized bytes finds every possible match.
        let mut added = Vec::new();
        let mut added_first = [false; 256];
        for token in json["added_tokens"].as_array()? {
            let content = token["content"].as_str()?.as_bytes();
            if content.is_empty() || !content.iter().all(u8::is_ascii_graphic) {
                return None;
            }
            added_first[usize::from(content[0].to_ascii_lowercase())] = true;
            added_first[usize::from(content[0].to_ascii_uppercase())] = true;
            added.push(content.to_ascii_lowercase().into());
        }

        let template = if add_special_tokens { parse_template(&json["post_processor"])? } else { Template::none() };
        Some(Self {
            vocab,
            continuation,
            longest_piece,
            unk,
            max_word_chars: usize::try_from(model["max_input_chars_per_word"].as_u64()?).ok()?,
            clean_text: normalizer["clean_text"].as_bool()?,
            lowercase: normalizer["lowercase"].as_bool()?,
            added,
            added_first,
            template,
        })
    }

    /// The special tokens around every text.
    pub fn template(&self) -> &Template {
        &self.template
    }

    /// Appends the text's ids (special tokens excluded, no truncation) to
    /// `ids`, using `scratch` for the normalized bytes. Returns false, having
    /// appended nothing, when the text is not for the fast path.
    pub fn encode(&self, text: &str, scratch: &mut Vec<u8>, ids: &mut Vec<u32>) -> bool {
        if !text.is_ascii() {
            return false;
        }
        self.normalize(text.as_bytes(), scratch);
        if self.contains_added(scratch) {
            return false;
        }
        let bytes = scratch.as_slice();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if is_whitespace(b) {
                i += 1;
            } else if b.is_ascii_punctuation() {
                self.push_word(&bytes[i..=i], ids);
                i += 1;
            } else {
                let start = i;
                while i < bytes.len() && !is_whitespace(bytes[i]) && !bytes[i].is_ascii_punctuation() {
                    i += 1;
                }
                self.push_word(&bytes[start..i], ids);
            }
        }
        true
    }

    fn normalize(&self, text: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.reserve(text.len());
        for &b in text {
            let b = if self.clean_text {
                match b {
                    b'\t' | b'\n' | b'\r' => b' ',
                    0x00..=0x1f | 0x7f => continue, // Cc: removed
                    _ => b,
                }
            } else {
                b
            };
            out.push(if self.lowercase { b.to_ascii_lowercase() } else { b });
        }
    }

    fn contains_added(&self, text: &[u8]) -> bool {
        text.iter().enumerate().any(|(i, &b)| {
            self.added_first[usize::from(b)]
                && self.added.iter().any(|a| text[i..].get(..a.len()).is_some_and(|s| s.eq_ignore_ascii_case(a)))
        })
    }

    /// WordPiece on one pre-token, exactly as `tokenizers` does it.
    fn push_word(&self, word: &[u8], ids: &mut Vec<u32>) {
        if word.len() > self.max_word_chars {
            ids.push(self.unk);
            return;
        }
        let mark = ids.len();
        let mut start = 0;
        while start < word.len() {
            let pieces = if start == 0 { &self.vocab } else { &self.continuation };
            // No piece is longer than the longest key: skip lookups that must miss.
            let mut end = word.len().min(start + self.longest_piece);
            loop {
                if end == start {
                    ids.truncate(mark);
                    ids.push(self.unk);
                    return;
                }
                if let Some(&id) = pieces.get(&word[start..end]) {
                    ids.push(id);
                    start = end;
                    break;
                }
                end -= 1;
            }
        }
    }

    /// Encodes the probes both ways (untruncated, with special tokens as configured).
    fn agrees_with(&self, tokenizer: &Tokenizer, add_special_tokens: bool) -> bool {
        let mut plain = tokenizer.clone();
        if plain.with_truncation(None).is_err() {
            return false;
        }
        plain.with_padding(None);
        PROBES.iter().all(|probe| {
            let (mut scratch, mut content) = (Vec::new(), Vec::new());
            let Ok(reference) = plain.encode_fast(*probe, add_special_tokens) else {
                return false;
            };
            if !self.encode(probe, &mut scratch, &mut content) {
                return false;
            }
            let t = &self.template;
            t.ids(&content).eq(reference.get_ids().iter().copied())
                && t.type_ids(content.len()).eq(reference.get_type_ids().iter().copied())
        })
    }
}

fn as_u32(v: &Value) -> Option<u32> {
    u32::try_from(v.as_u64()?).ok()
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, 0x09..=0x0d | b' ')
}

/// The single-sequence template of a `TemplateProcessing` or `BertProcessing`
/// post-processor (or none).
fn parse_template(pp: &Value) -> Option<Template> {
    match pp["type"].as_str() {
        None if pp.is_null() => Some(Template::none()),
        Some("BertProcessing") => {
            let (cls, sep) = (as_u32(&pp["cls"][1])?, as_u32(&pp["sep"][1])?);
            Some(Template { prefix: vec![(cls, 0)], seq_type: 0, suffix: vec![(sep, 0)] })
        }
        Some("TemplateProcessing") => {
            let mut t = Template::none();
            let mut seen_sequence = false;
            for piece in pp["single"].as_array()? {
                if let Some(seq) = piece.get("Sequence") {
                    if seen_sequence || seq["id"] != "A" {
                        return None;
                    }
                    seen_sequence = true;
                    t.seq_type = as_u32(&seq["type_id"])?;
                } else {
                    let special = piece.get("SpecialToken")?;
                    let type_id = as_u32(&special["type_id"])?;
                    let ids = pp["special_tokens"][special["id"].as_str()?]["ids"].as_array()?;
                    let side = if seen_sequence { &mut t.suffix } else { &mut t.prefix };
                    for id in ids {
                        side.push((as_u32(id)?, type_id));
                    }
                }
            }
            seen_sequence.then_some(t)
        }
        _ => None,
    }
}
