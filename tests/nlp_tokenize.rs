//! TokenizerPipeline against the Python `tokenizers` package, same tokenizer.json.
//!
//! Runs on the CPU (no GPU). Needs `scripts/setup`: `.deps/minilm` and the
//! `.deps/venv` Python, which runs `scripts/tokenizer_reference.py` for the
//! expected values; fails, saying so, when they are missing.

#[path = "nlp_support.rs"]
mod support;

use serde_json::{json, Value};
use trt_nlp::ElementType;
use trt_nlp::{BatchLayout, EncodedBatch, Error, InputRole, InputSpec, Padding, TokenizerPipeline, Truncation};

/// Texts that stress normalisation, pre-tokenization, truncation and padding.
fn corpus() -> Vec<String> {
    let long: String = (0..1500).map(|i| format!("word{} ", i % 97)).collect(); // > 10,000 chars
    assert!(long.chars().count() > 10_000);
    vec![
        "Hello, world!".into(),
        String::new(),
        "   \t\n  ".into(),
        "中文分词测试，日本語のテキスト、한국어 문장".into(),
        "I love 🦀 and 🎉🎉 family: 👨‍👩‍👧 flags 🇫🇷".into(),
        "e\u{301}le\u{300}ve nai\u{308}ve café Ångström Crème Brûlée".into(),
        "tab\there\u{0}nul\u{7}bell\u{200b}zero\u{feff}width\u{1b}[0m esc\r\nCRLF".into(),
        long,
        "Short.".into(),
        "[CLS] literal special tokens [SEP] and [PAD] [MASK] inside".into(),
        "unbelievably antidisestablishmentarianism supercalifragilisticexpialidocious".into(),
        format!("{} end", "x".repeat(150)), // one word over max_input_chars_per_word -> [UNK]
        "مرحبا بالعالم — שלום עולם — Привет, мир!".into(),
        "Numbers 3.14159, 1,000,000 and e-mail foo@bar.com https://example.com/a?b=c".into(),
        "A medium sentence with some more words in it so that padding is exercised for sure.".into(),
    ]
}

/// The Python package's encodings of `texts`; `request` sets `max_len` and
/// optionally `truncate`, `pad_to_multiple_of`, `pad_to_max`,
/// `add_special_tokens`, `tokenizer` (default: MiniLM's).
fn reference(texts: &[String], mut request: Value) -> Value {
    let fields = request.as_object_mut().expect("request is an object");
    fields.entry("tokenizer").or_insert_with(|| json!(support::tokenizer_json()));
    fields.insert("texts".into(), json!(texts));
    support::run_python(&[support::script("tokenizer_reference.py").as_os_str()], &request)
}

fn rows(v: &Value) -> Vec<i64> {
    v.as_array().unwrap().iter().flat_map(|r| r.as_array().unwrap().iter().map(|x| x.as_i64().unwrap())).collect()
}

/// A MiniLM pipeline; `fast` turns the ASCII fast path on or off (and checks it took).
fn pipeline(max_len: usize, padding: Padding, threads: usize, fast: bool) -> TokenizerPipeline {
    let p = TokenizerPipeline::builder(max_len)
        .padding(padding)
        .threads(threads)
        .fast_path(fast)
        .from_file(support::tokenizer_json())
        .expect("pipeline builds");
    assert_eq!(p.uses_fast_path(), fast, "MiniLM's tokenizer is plain BERT WordPiece");
    p
}

/// Three owned tensors and the layout, widened to i64 for comparison.
struct Encoded {
    layout: BatchLayout,
    ids: Vec<i64>,
    mask: Vec<i64>,
    types: Vec<i64>,
}

fn encode(p: &TokenizerPipeline, texts: &[String], dtype: ElementType) -> Encoded {
    let [s_ids, s_mask, s_types] = InputSpec::bert(dtype).unwrap();
    let n = p.buffer_len(texts.len());
    // Sentinel values show whether padding positions were really written.
    match dtype {
        ElementType::I32 => {
            let (mut ids, mut mask, mut types) = (vec![-7i32; n], vec![-7i32; n], vec![-7i32; n]);
            let mut out = EncodedBatch::new();
            out.bind(s_ids, &mut ids).unwrap().bind(s_mask, &mut mask).unwrap().bind(s_types, &mut types).unwrap();
            let layout = p.encode_into(texts, &mut out).expect("encodes");
            let used = layout.batch * layout.seq_len;
            let widen = |v: Vec<i32>| v[..used].iter().map(|&x| i64::from(x)).collect();
            Encoded { ids: widen(ids), mask: widen(mask), types: widen(types), layout }
        }
        ElementType::I64 => {
            let (mut ids, mut mask, mut types) = (vec![-7i64; n], vec![-7i64; n], vec![-7i64; n]);
            let mut out = EncodedBatch::new();
            out.bind(s_ids, &mut ids).unwrap().bind(s_mask, &mut mask).unwrap().bind(s_types, &mut types).unwrap();
            let layout = p.encode_into(texts, &mut out).expect("encodes");
            let used = layout.batch * layout.seq_len;
            Encoded { ids: ids[..used].to_vec(), mask: mask[..used].to_vec(), types: types[..used].to_vec(), layout }
        }
        other => panic!("no test buffers for {other}"),
    }
}

fn assert_matches(got: &Encoded, want: &Value, what: &str) {
    let lengths: Vec<usize> = want["lengths"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect();
    assert_eq!(got.layout.seq_len, want["seq_len"].as_u64().unwrap() as usize, "{what}: seq_len");
    assert_eq!(got.layout.batch, lengths.len(), "{what}: batch");
    assert_eq!(got.layout.lengths, lengths, "{what}: lengths");
    assert_eq!(got.ids, rows(&want["input_ids"]), "{what}: input_ids");
    assert_eq!(got.mask, rows(&want["attention_mask"]), "{what}: attention_mask");
    assert_eq!(got.types, rows(&want["token_type_ids"]), "{what}: token_type_ids");
}

#[test]
fn matches_python_i32_padded_to_longest() {
    let texts = corpus();
    let want = reference(&texts, json!({"max_len": 128}));
    for fast in [true, false] {
        let got = encode(&pipeline(128, Padding::Longest, 2, fast), &texts, ElementType::I32);
        assert_matches(&got, &want, &format!("i32 longest, fast path {fast}"));
        // The file's own fixed padding (128) is overridden: only the long text reaches it.
        assert_eq!(got.layout.seq_len, 128);
        assert_eq!(got.layout.truncated, vec![7]);
    }
}

#[test]
fn matches_python_i64_padded_to_longest() {
    let texts = corpus();
    let want = reference(&texts, json!({"max_len": 128}));
    for fast in [true, false] {
        let got = encode(&pipeline(128, Padding::Longest, 2, fast), &texts, ElementType::I64);
        assert_matches(&got, &want, &format!("i64 longest, fast path {fast}"));
    }
}

#[test]
fn matches_python_in_small_mixed_batches_on_one_and_two_threads() {
    let texts = corpus();
    for threads in [1, 2] {
        let p = pipeline(128, Padding::Longest, threads, true);
        assert_eq!(p.threads(), threads);
        for chunk in texts.chunks(4) {
            let want = reference(chunk, json!({"max_len": 128}));
            let got = encode(&p, chunk, ElementType::I32);
            assert_matches(&got, &want, &format!("chunk on {threads} thread(s)"));
            assert!(got.layout.seq_len <= 128);
        }
    }
}

#[test]
fn matches_python_with_buckets() {
    let short: Vec<String> = corpus().into_iter().filter(|t| t.len() < 200).collect();
    for bucket in [8, 16, 32] {
        let want = reference(&short, json!({"max_len": 128, "pad_to_multiple_of": bucket}));
        let got = encode(&pipeline(128, Padding::Bucket(bucket), 2, true), &short, ElementType::I64);
        assert_matches(&got, &want, &format!("bucket {bucket}"));
        assert_eq!(got.layout.seq_len % bucket, 0);
    }
}

#[test]
fn bucket_is_clamped_to_max_len() {
    let texts = corpus();
    // The long text truncates to 40; rounding up to 32 would give 64.
    let want = reference(&texts, json!({"max_len": 40, "pad_to_multiple_of": 32}));
    let got = encode(&pipeline(40, Padding::Bucket(32), 2, true), &texts, ElementType::I32);
    assert_eq!(got.layout.seq_len, 40);
    assert_matches(&got, &want, "clamped bucket");
}

#[test]
fn pads_to_max() {
    let texts = vec!["one".to_owned(), "two words".to_owned()];
    let want = reference(&texts, json!({"max_len": 64, "pad_to_max": true}));
    let got = encode(&pipeline(64, Padding::Max, 1, true), &texts, ElementType::I32);
    assert_eq!(got.layout.shape(), [2, 64]);
    assert_matches(&got, &want, "max");
}

#[test]
fn truncates_like_python_and_keeps_special_tokens() {
    let texts = corpus();
    let want = reference(&texts, json!({"max_len": 16}));
    for fast in [true, false] {
        let got = encode(&pipeline(16, Padding::Longest, 2, fast), &texts, ElementType::I64);
        assert_matches(&got, &want, &format!("max_len 16, fast path {fast}"));
        let long_row = &got.ids[7 * 16..8 * 16];
        assert_eq!((long_row[0], long_row[15]), (101, 102), "[CLS] ... [SEP] survive truncation");
        assert!(got.layout.truncated.contains(&7));
    }
}

/// Regression (fuzz target tokenizer_pipeline): a max_len below the
/// post-processor's special tokens made tokenizers' with_truncation overflow
/// (a panic in debug builds) even without special tokens; now a typed error
/// in truncate mode, and it works in reject mode.
#[test]
fn max_len_below_the_special_tokens_is_a_typed_error_not_a_panic() {
    let build =
        |truncation| TokenizerPipeline::builder(1).add_special_tokens(false).truncation(truncation).from_file(support::tokenizer_json());
    assert!(matches!(build(Truncation::Truncate), Err(Error::InvalidOption { option: "max_len", .. })));
    let p = build(Truncation::Reject).unwrap();
    let got = encode(&p, &["a".to_string()], ElementType::I32);
    assert_eq!(got.layout.lengths, [1]);
}

/// Regression (fuzz target tokenizer_pipeline): without special tokens,
/// `tokenizers` 0.23.2 does not record what truncation cut, and the
/// tokenizers path reported no truncation; both paths must name the same texts.
#[test]
fn truncation_is_reported_on_both_paths_without_special_tokens() {
    let texts: Vec<String> =
        ["Hello, world!", "The quick brown fox jumps over the lazy dog.", "unaffable naïve café déjà vu", "Hello, world! ok"]
            .map(String::from)
            .to_vec();
    for special in [false, true] {
        for fast in [true, false] {
            let p = TokenizerPipeline::builder(5)
                .add_special_tokens(special)
                .fast_path(fast)
                .threads(1)
                .from_file(support::tokenizer_json())
                .unwrap();
            let got = encode(&p, &texts, ElementType::I32);
            // Without special tokens the texts have 4, 10, 8 and 5 (a full row, not cut) tokens; with them 2 more.
            let want: &[usize] = if special { &[0, 1, 2, 3] } else { &[1, 2] };
            assert_eq!(got.layout.truncated, want, "special tokens {special}, fast path {fast}");
        }
    }
}

#[test]
fn without_special_tokens_matches_python() {
    let texts = corpus();
    let want = reference(&texts, json!({"max_len": 32, "add_special_tokens": false}));
    for fast in [true, false] {
        let p = TokenizerPipeline::builder(32).add_special_tokens(false).fast_path(fast).from_file(support::tokenizer_json()).unwrap();
        assert_eq!(p.uses_fast_path(), fast);
        assert_matches(&encode(&p, &texts, ElementType::I32), &want, &format!("no special tokens, fast path {fast}"));
    }
}

/// Deterministic ASCII texts built to hit every byte rule of the fast path:
/// case, digits, all punctuation, every whitespace and control byte, words
/// over 100 characters, WordPiece splits and `[UNK]`s, added-token look-alikes.
fn random_ascii(n: usize) -> Vec<String> {
    const PIECES: &[&str] = &[
        "the",
        "The",
        "UNAFFABLE",
        "unaffable",
        "running",
        "xqzvwk",
        "naive",
        "don't",
        "e-mail",
        "3.14159",
        "1,000",
        "[CLS]",
        "[cls]",
        "[Mask]",
        "[MASK",
        "SEP]",
        "[PAD]",
        "[UNK]",
        "##ing",
        "##",
        "a.b.c",
        "...",
        "hello@world.com",
        "C++",
        "x86_64",
        "AT&T",
        "naïve",
        "Ünïcödé",
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |m: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m as u64) as usize
    };
    (0..n)
        .map(|_| {
            let mut t = String::new();
            for _ in 0..next(40) {
                match next(10) {
                    0 => t.push(char::from(next(128) as u8)), // any ASCII byte, controls included
                    1 => t.push(char::from(b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"[next(32)])),
                    2 => t.push(char::from(b" \t\n\r\x0b\x0c\x00\x7f\x1f"[next(9)])),
                    3 => t.push_str(&"ab".repeat(40 + next(30))), // 80..138 chars: around the 100 limit
                    4 => t.push_str(PIECES[next(PIECES.len() - 2)]), // ASCII pieces
                    5 if next(20) == 0 => t.push_str(PIECES[PIECES.len() - 1 - next(2)]), // rare non-ASCII
                    _ => {
                        let len = 1 + next(9);
                        t.extend((0..len).map(|_| char::from(b'a' + next(26) as u8)));
                    }
                }
                if next(3) > 0 {
                    t.push(' ');
                }
            }
            t
        })
        .collect()
}

#[test]
fn fast_path_equals_tokenizers_and_python_on_random_ascii() {
    let texts = random_ascii(3000);
    let want = reference(&texts, json!({"max_len": 64}));
    let fast = encode(&pipeline(64, Padding::Longest, 2, true), &texts, ElementType::I64);
    let slow = encode(&pipeline(64, Padding::Longest, 2, false), &texts, ElementType::I64);
    assert_matches(&slow, &want, "random ASCII, tokenizers path");
    assert_matches(&fast, &want, "random ASCII, fast path");
    assert_eq!(fast.layout.truncated, slow.layout.truncated);
}

#[test]
fn other_tokenizer_recipes_fall_back_or_match() {
    let original: Value = serde_json::from_str(&std::fs::read_to_string(support::tokenizer_json()).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let texts: Vec<String> = corpus().into_iter().chain(random_ascii(300)).collect();
    type Edit = Box<dyn Fn(&mut Value)>;
    let variants: Vec<(&str, Edit, bool)> = vec![
        // Cased BERT: still the fast path's recipe.
        ("cased", Box::new(|t: &mut Value| t["normalizer"]["lowercase"] = json!(false)), true),
        ("no clean_text", Box::new(|t: &mut Value| t["normalizer"]["clean_text"] = json!(false)), true),
        (
            "BertProcessing",
            Box::new(|t: &mut Value| t["post_processor"] = json!({"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]})),
            true,
        ),
        ("no post-processor", Box::new(|t: &mut Value| t["post_processor"] = Value::Null), true),
        // Anything else: tokenizers for every text.
        (
            "normalizer sequence",
            Box::new(|t: &mut Value| t["normalizer"] = json!({"type": "Sequence", "normalizers": [{"type": "Lowercase"}]})),
            false,
        ),
        ("whitespace pre-tokenizer", Box::new(|t: &mut Value| t["pre_tokenizer"] = json!({"type": "Whitespace"})), false),
    ];
    for (name, edit, expect_fast) in variants {
        let mut tok = original.clone();
        edit(&mut tok);
        let path = dir.path().join(format!("{}.json", name.replace(' ', "_")));
        std::fs::write(&path, tok.to_string()).unwrap();
        let p = TokenizerPipeline::builder(128).threads(2).from_file(&path).unwrap();
        assert_eq!(p.uses_fast_path(), expect_fast, "{name}");
        let want = reference(&texts, json!({"max_len": 128, "tokenizer": path}));
        assert_matches(&encode(&p, &texts, ElementType::I32), &want, name);
    }
}

#[test]
fn reject_names_the_text_and_its_token_count_and_writes_nothing() {
    let texts = corpus();
    let full = reference(&texts, json!({"max_len": 128, "truncate": false}));
    let full_len = full["lengths"][7].as_u64().unwrap() as usize;
    for fast in [true, false] {
        let p = TokenizerPipeline::builder(128)
            .truncation(Truncation::Reject)
            .fast_path(fast)
            .threads(2)
            .from_file(support::tokenizer_json())
            .unwrap();
        let mut ids = vec![-7i32; p.buffer_len(texts.len())];
        let mut out = EncodedBatch::new().with(InputSpec::bert(ElementType::I32).unwrap()[0].clone(), &mut ids).unwrap();
        match p.encode_into(&texts, &mut out) {
            Err(Error::TooLong { index: 7, tokens, max_len: 128 }) => assert_eq!(tokens, full_len),
            other => panic!("expected TooLong for text 7, got {other:?}"),
        }
        drop(out);
        assert!(ids.iter().all(|&x| x == -7), "nothing written on error");

        // Texts that fit are encoded as with truncation.
        let fits: Vec<String> = texts.iter().filter(|t| t.len() < 200).cloned().collect();
        let want = reference(&fits, json!({"max_len": 128}));
        assert_matches(&encode(&p, &fits, ElementType::I32), &want, "reject mode, all fit");
    }
}

#[test]
fn empty_batch_is_an_empty_layout() {
    let p = pipeline(128, Padding::Bucket(16), 2, true);
    let mut ids: Vec<i64> = Vec::new();
    let mut out = EncodedBatch::new().with(InputSpec::bert(ElementType::I64).unwrap()[0].clone(), &mut ids).unwrap();
    let layout = p.encode_into(&[] as &[&str], &mut out).unwrap();
    assert_eq!(layout, BatchLayout::default());
    assert_eq!(layout.shape(), [0, 0]);
}

#[test]
fn buffer_too_small_names_tensor_and_sizes() {
    let p = pipeline(128, Padding::Longest, 2, true);
    let texts = ["Hello, world!", "Short."]; // longest: [CLS] hello , world ! [SEP] = 6
    let (mut ids, mut mask) = (vec![-7i32; 12], vec![-7i32; 11]);
    let [s_ids, s_mask, _] = InputSpec::bert(ElementType::I32).unwrap();
    let mut out = EncodedBatch::new().with(s_ids, &mut ids).unwrap().with(s_mask, &mut mask).unwrap();
    match p.encode_into(&texts, &mut out) {
        Err(e @ Error::BufferTooSmall { .. }) => {
            let Error::BufferTooSmall { ref tensor, needed, len, batch, seq_len } = e else { unreachable!() };
            assert_eq!((tensor.as_str(), needed, len, batch, seq_len), ("attention_mask", 12, 11, 2, 6));
            assert!(e.to_string().contains("attention_mask"), "{e}");
        }
        other => panic!("expected BufferTooSmall, got {other:?}"),
    }
    drop(out);
    assert!(ids.iter().chain(&mask).all(|&x| x == -7), "nothing written on error");
}

#[test]
fn writes_only_bound_tensors_under_custom_names() {
    let p = pipeline(32, Padding::Longest, 1, true);
    let mut mask = vec![-7i64; 64];
    let mut ids = vec![-7i32; 64];
    let mut out = EncodedBatch::new()
        .with(InputSpec::new("mask", InputRole::AttentionMask, ElementType::I64).unwrap(), &mut mask)
        .unwrap()
        .with(InputSpec::new("ids", InputRole::InputIds, ElementType::I32).unwrap(), &mut ids)
        .unwrap();
    let layout = p.encode_into(&["a b".to_owned(), "a".to_owned()], &mut out).unwrap();
    assert_eq!(layout.shape(), [2, 4]);
    assert_eq!(&mask[..8], &[1, 1, 1, 1, 1, 1, 1, 0]);
    assert_eq!(&ids[..8], &[101, 1037, 1038, 102, 101, 1037, 102, 0]);
    assert!(mask[8..].iter().all(|&x| x == -7) && ids[8..].iter().all(|&x| x == -7), "rows beyond the batch untouched");
}

#[test]
fn binding_checks_dtypes_and_names() {
    let mut a = vec![0i32; 4];
    let mut b = vec![0i64; 4];
    let spec64 = InputSpec::new("input_ids", InputRole::InputIds, ElementType::I64).unwrap();
    let mut out = EncodedBatch::new();
    assert!(matches!(
        out.bind(spec64.clone(), &mut a),
        Err(Error::DtypeMismatch { declared: ElementType::I64, buffer: ElementType::I32, .. })
    ));
    out.bind(spec64.clone(), &mut b).unwrap();
    let mut c = vec![0i64; 4];
    assert!(matches!(out.bind(spec64, &mut c), Err(Error::DuplicateTensor(name)) if name == "input_ids"));
    assert!(matches!(
        InputSpec::new("x", InputRole::InputIds, ElementType::F32),
        Err(Error::UnsupportedDtype { dtype: ElementType::F32, .. })
    ));
    // Public fields can be set to anything; binding checks again.
    let bad = InputSpec { name: "x".into(), role: InputRole::InputIds, dtype: ElementType::F16 };
    assert!(matches!(EncodedBatch::new().bind(bad, &mut a), Err(Error::UnsupportedDtype { .. })));
}

#[test]
fn rejects_impossible_settings() {
    let path = support::tokenizer_json();
    let build = |b: trt_nlp::PipelineBuilder| b.from_file(&path);
    // [CLS] and [SEP] alone fill two tokens.
    assert!(matches!(build(TokenizerPipeline::builder(2)), Err(Error::InvalidOption { option: "max_len", .. })));
    assert!(matches!(build(TokenizerPipeline::builder(0)), Err(Error::InvalidOption { option: "max_len", .. })));
    assert!(matches!(
        build(TokenizerPipeline::builder(8).padding(Padding::Bucket(0))),
        Err(Error::InvalidOption { option: "padding", .. })
    ));
    assert!(matches!(build(TokenizerPipeline::builder(8).threads(0)), Err(Error::InvalidOption { option: "threads", .. })));
    // Without special tokens, 2 is enough.
    assert!(build(TokenizerPipeline::builder(2).add_special_tokens(false)).is_ok());
}

#[test]
fn missing_tokenizer_file_names_the_path() {
    let err = TokenizerPipeline::builder(8).from_file("/nonexistent/tokenizer.json").unwrap_err();
    assert!(matches!(&err, Error::TokenizerLoad { path, .. } if path.ends_with("tokenizer.json")));
    assert!(err.to_string().contains("/nonexistent/tokenizer.json"), "{err}");
}

#[test]
fn pipeline_is_send_and_sync_and_usable_from_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<TokenizerPipeline>();
    let p = pipeline(128, Padding::Longest, 2, true);
    let texts = corpus();
    let want = reference(&texts, json!({"max_len": 128}));
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| assert_matches(&encode(&p, &texts, ElementType::I32), &want, "concurrent"));
        }
    });
}
