//! Texts and options into `trt_nlp::TokenizerPipeline::encode_into`, with
//! MiniLM's real `tokenizer.json` (BERT WordPiece, vocabulary 30522; from
//! scripts/setup, or `$TRT_FUZZ_TOKENIZER`).
//!
//! Inputs: arbitrary UTF-8 texts, maximum lengths up to BERT's 512, every
//! padding (longest, bucket, max) and truncation (truncate, reject) mode, with
//! and without special tokens, i32 and i64 tensors, one thread or a pool of
//! two, buffers large enough or too small. What must hold on every batch:
//! - the fast byte-level path and the `tokenizers` path write the same tensors
//!   (or fail the same way);
//! - the layout: one length per text, each at most `max_len`, `seq_len` what
//!   the padding mode says; truncated texts are exactly `max_len` long;
//! - each row: ids of real tokens below the vocabulary size and equal to the
//!   untruncated encoding's first tokens ([CLS] first, [SEP] last), mask 1 on
//!   real tokens and 0 on padding, the pad id and pad type id on padding;
//! - nothing is written past `batch * seq_len`, nor anything at all on an error;
//! - errors only where they belong: `TooLong` in reject mode for a text whose
//!   full encoding is longer than `max_len`, `BufferTooSmall` for a short
//!   buffer, `InvalidOption` for impossible settings.
#![no_main]

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use tokenizers::Tokenizer;
use trt_nlp::ElementType;
use trt_nlp::{EncodedBatch, Error, InputRole, InputSpec, Padding, TokenizerPipeline, Truncation};

/// Maximum lengths tried: the edges (at and just above the 2 special tokens) and BERT's limit.
const MAX_LENS: [usize; 12] = [1, 2, 3, 4, 5, 7, 8, 16, 33, 128, 256, 512];
const MAX_TEXTS: usize = 12;
const SENTINEL: i64 = -7;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum PaddingChoice {
    Longest,
    Bucket(u8),
    Max,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Options {
    max_len: u8,
    min_len: u16,
    padding: PaddingChoice,
    reject: bool,
    special_tokens: bool,
    two_threads: bool,
}

/// The input format (so that seeds and dictionary words are plain text):
/// byte 0 max_len index, bytes 1-2 min_len choice, byte 3 padding (mod 3:
/// longest, bucket, max), byte 4 bucket size choice, byte 5 flags (1 reject, 2 no special
/// tokens, 4 two threads, 8 i64, 16 token_type_ids, 32 short buffer), bytes
/// 6-7 how short; then the texts, separated by 0xFF (never part of UTF-8),
/// each decoded lossily when it is not UTF-8.
#[derive(Debug)]
struct Input {
    options: Options,
    i64_tensors: bool,
    bind_type_ids: bool,
    /// Elements taken off the id buffer (0: large enough for any batch).
    short_by: u16,
    texts: Vec<String>,
}

impl Input {
    fn parse(data: &[u8]) -> Option<Input> {
        let (head, rest) = data.split_at_checked(8)?;
        let flags = head[5];
        let options = Options {
            max_len: head[0],
            min_len: u16::from_le_bytes([head[1], head[2]]),
            padding: match head[3] % 3 {
                0 => PaddingChoice::Longest,
                1 => PaddingChoice::Bucket(head[4]),
                _ => PaddingChoice::Max,
            },
            reject: flags & 1 != 0,
            special_tokens: flags & 2 == 0,
            two_threads: flags & 4 != 0,
        };
        let texts = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split(|&b| b == 0xff).take(MAX_TEXTS).map(|t| String::from_utf8_lossy(t).into_owned()).collect()
        };
        Some(Input {
            options,
            i64_tensors: flags & 8 != 0,
            bind_type_ids: flags & 16 != 0,
            short_by: if flags & 32 != 0 { u16::from_le_bytes([head[6], head[7]]) } else { 0 },
            texts,
        })
    }
}

impl Options {
    fn max_len(&self) -> usize {
        MAX_LENS[usize::from(self.max_len) % MAX_LENS.len()]
    }
    // 0, 1, half, all of max_len, or just past it (the "min_len exceeds max_len"
    // check): few distinct settings, so that built pipelines are reused.
    fn min_len(&self) -> usize {
        let m = self.max_len();
        [0, 1, m / 2, m, m + 1][usize::from(self.min_len) % 5]
    }
    fn padding(&self) -> Padding {
        match self.padding {
            PaddingChoice::Longest => Padding::Longest,
            PaddingChoice::Bucket(b) => Padding::Bucket([0, 1, 3, 8, 16, 64][usize::from(b) % 6]),
            PaddingChoice::Max => Padding::Max,
        }
    }
    fn truncation(&self) -> Truncation {
        if self.reject {
            Truncation::Reject
        } else {
            Truncation::Truncate
        }
    }
}

struct State {
    base: Tokenizer,
    /// The same tokenizer without padding or truncation: the reference encodings.
    reference: Tokenizer,
    pool: Arc<rayon::ThreadPool>,
    /// (fast-path pipeline, tokenizers-only pipeline) per options; bounded.
    pipelines: HashMap<Options, Option<(TokenizerPipeline, TokenizerPipeline)>>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::new());
}

/// The setup folder: `$TRT_DEPS_DIR` when the target runs, else the build's
/// (the workspace's `.cargo/config.toml` names its `.deps/`).
fn setup_dir() -> std::path::PathBuf {
    std::env::var_os("TRT_DEPS_DIR")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| option_env!("TRT_DEPS_DIR").map(std::path::PathBuf::from))
        .expect("TRT_DEPS_DIR names the setup folder (run scripts/setup)")
}

impl State {
    fn new() -> State {
        let path = std::env::var_os("TRT_FUZZ_TOKENIZER")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| setup_dir().join("minilm/tokenizer.json"));
        let base = Tokenizer::from_file(&path).unwrap_or_else(|e| panic!("{}: {e} (run scripts/setup)", path.display()));
        let mut reference = base.clone();
        reference.with_padding(None);
        reference.with_truncation(None).expect("no truncation");
        let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool"));
        State { base, reference, pool, pipelines: HashMap::new() }
    }

    fn pipelines(&mut self, o: Options) -> Option<&(TokenizerPipeline, TokenizerPipeline)> {
        if self.pipelines.len() >= 64 && !self.pipelines.contains_key(&o) {
            self.pipelines.clear();
        }
        let (base, pool) = (&self.base, &self.pool);
        self.pipelines
            .entry(o)
            .or_insert_with(|| {
                let build = |fast: bool| {
                    let b = TokenizerPipeline::builder(o.max_len())
                        .min_len(o.min_len())
                        .padding(o.padding())
                        .truncation(o.truncation())
                        .add_special_tokens(o.special_tokens)
                        .fast_path(fast);
                    let b = if o.two_threads { b.thread_pool(pool.clone()) } else { b.threads(1) };
                    b.build(base.clone())
                };
                let added = if o.special_tokens { 2 } else { 0 };
                // tokenizers cannot truncate below the post-processor's 2 special tokens.
                let impossible = o.max_len() <= added
                    || (!o.reject && o.max_len() < 2)
                    || o.min_len() > o.max_len()
                    || matches!(o.padding(), Padding::Bucket(0));
                match (build(true), build(false)) {
                    (Ok(fast), Ok(slow)) => {
                        assert!(!impossible, "{o:?}: impossible settings accepted");
                        assert!(fast.uses_fast_path() && !slow.uses_fast_path());
                        Some((fast, slow))
                    }
                    (Err(Error::InvalidOption { .. }), Err(Error::InvalidOption { .. })) => {
                        assert!(impossible, "{o:?}: possible settings refused");
                        None
                    }
                    (a, b) => panic!("{o:?}: unexpected build results {:?} / {:?}", a.err(), b.err()),
                }
            })
            .as_ref()
    }
}

/// What one encode_into call gave: the layout or the error, and the tensors.
#[derive(Debug, PartialEq)]
struct Outcome {
    result: Result<trt_nlp::BatchLayout, String>,
    ids: Vec<i64>,
    mask: Vec<i64>,
    type_ids: Option<Vec<i64>>,
}

fn run(p: &TokenizerPipeline, texts: &[String], input: &Input) -> (Outcome, Option<Error>) {
    let full = p.buffer_len(texts.len());
    let ids_len = full.saturating_sub(usize::from(input.short_by));
    macro_rules! encode {
        ($t:ty, $dtype:expr) => {{
            let mut ids = vec![SENTINEL as $t; ids_len];
            let mut mask = vec![SENTINEL as $t; full];
            let mut types = vec![SENTINEL as $t; full];
            let mut batch = EncodedBatch::new();
            batch.bind(InputSpec::new("input_ids", InputRole::InputIds, $dtype).unwrap(), &mut ids).unwrap();
            batch.bind(InputSpec::new("attention_mask", InputRole::AttentionMask, $dtype).unwrap(), &mut mask).unwrap();
            if input.bind_type_ids {
                batch.bind(InputSpec::new("token_type_ids", InputRole::TokenTypeIds, $dtype).unwrap(), &mut types).unwrap();
            }
            let r = p.encode_into(texts, &mut batch);
            drop(batch);
            let widen = |v: Vec<$t>| v.into_iter().map(i64::from).collect::<Vec<i64>>();
            (r, widen(ids), widen(mask), input.bind_type_ids.then(|| widen(types)))
        }};
    }
    let (r, ids, mask, type_ids) = if input.i64_tensors { encode!(i64, ElementType::I64) } else { encode!(i32, ElementType::I32) };
    let (result, err) = match r {
        Ok(l) => (Ok(l), None),
        Err(e) => (Err(e.to_string()), Some(e)),
    };
    (Outcome { result, ids, mask, type_ids }, err)
}

fn check(state: &State, o: &Options, texts: &[String], input: &Input, out: &Outcome, err: Option<&Error>) {
    let max_len = o.max_len();
    let reference = &state.reference;
    let vocab = reference.get_vocab_size(true) as i64;
    let (pad_id, pad_type) = (0i64, 0i64); // MiniLM's tokenizer.json: [PAD] = 0, type 0
    let (cls, sep) = (101i64, 102i64);
    let full_len = |t: &str| reference.encode_fast(t, o.special_tokens).expect("reference encoding").len();
    let untouched = |v: &[i64]| v.iter().all(|&x| x == SENTINEL);
    let layout = match (&out.result, err) {
        (Ok(l), _) => l,
        (Err(_), Some(Error::TooLong { index, tokens, max_len: m })) => {
            assert!(o.reject, "TooLong in truncate mode");
            assert_eq!(*m, max_len);
            assert!(*tokens > max_len);
            assert_eq!(full_len(&texts[*index]), *tokens, "TooLong's token count");
            assert!(untouched(&out.ids) && untouched(&out.mask), "nothing is written on an error");
            return;
        }
        (Err(_), Some(Error::BufferTooSmall { tensor, needed, len, .. })) => {
            assert_eq!(tensor, "input_ids", "only the id buffer is short");
            assert!(needed > len && input.short_by > 0);
            assert!(untouched(&out.ids) && untouched(&out.mask), "nothing is written on an error");
            return;
        }
        (Err(e), _) => panic!("unexpected error: {e}"),
    };
    assert_eq!(layout.batch, texts.len());
    assert_eq!(layout.lengths.len(), texts.len());
    if texts.is_empty() {
        assert_eq!(layout.seq_len, 0);
        assert!(untouched(&out.ids) && untouched(&out.mask));
        return;
    }
    let seq = layout.seq_len;
    let longest = *layout.lengths.iter().max().unwrap();
    let want_seq = match o.padding() {
        Padding::Longest => longest,
        Padding::Bucket(b) => longest.div_ceil(b).saturating_mul(b).min(max_len),
        Padding::Max => max_len,
        _ => unreachable!(),
    }
    .max(o.min_len());
    assert_eq!(seq, want_seq, "seq_len for {:?}", o.padding());
    assert!(seq <= max_len && longest <= seq);
    if o.reject {
        assert!(layout.truncated.is_empty(), "reject mode never truncates");
    }
    let used = texts.len() * seq;
    assert!(untouched(&out.ids[used..]) && untouched(&out.mask[used..]), "written past batch * seq_len");
    if let Some(t) = &out.type_ids {
        assert!(untouched(&t[used..]));
    }
    for (i, text) in texts.iter().enumerate() {
        let len = layout.lengths[i];
        let row = &out.ids[i * seq..(i + 1) * seq];
        let mask = &out.mask[i * seq..(i + 1) * seq];
        let full = reference.encode_fast(text.as_str(), o.special_tokens).expect("reference encoding");
        let full: Vec<i64> = full.get_ids().iter().map(|&x| i64::from(x)).collect();
        let truncated = layout.truncated.contains(&i);
        assert_eq!(truncated, full.len() > max_len, "text {i}: truncated flag");
        assert_eq!(len, full.len().min(max_len), "text {i}: length");
        assert!(row[..len].iter().all(|&x| (0..vocab).contains(&x)), "text {i}: id outside the vocabulary");
        assert!(row[len..].iter().all(|&x| x == pad_id), "text {i}: padding ids");
        assert!(mask[..len].iter().all(|&x| x == 1) && mask[len..].iter().all(|&x| x == 0), "text {i}: mask");
        if o.special_tokens {
            assert!(len >= 2 && row[0] == cls && row[len - 1] == sep, "text {i}: [CLS] ... [SEP]");
            assert_eq!(row[..len - 1], full[..len - 1], "text {i}: the first tokens are kept");
        } else {
            assert_eq!(row[..len], full[..len], "text {i}: the first tokens are kept");
        }
        if let Some(t) = &out.type_ids {
            let t = &t[i * seq..(i + 1) * seq];
            assert!(t[..len].iter().all(|&x| x == 0) && t[len..].iter().all(|&x| x == pad_type), "text {i}: type ids");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::parse(data) else { return };
    let texts = &input.texts;
    STATE.with(|state| {
        let mut state = state.borrow_mut();
        let o = input.options;
        let Some((fast, slow)) = state.pipelines(o) else { return };
        let (a, err) = run(fast, texts, &input);
        let (b, _) = run(slow, texts, &input);
        assert_eq!(a, b, "fast path and tokenizers path differ");
        check(&state, &o, texts, &input, &a, err.as_ref());
    });
});
