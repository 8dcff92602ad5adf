//! Text pairs and left truncation in TokenizerPipeline against the Python
//! `tokenizers` package, same tokenizer.json.
//!
//! Runs on the CPU. Needs `scripts/setup` (`.deps/minilm`, `.deps/venv`), whose
//! Python runs `scripts/tokenizer_pair_reference.py` for the expected values;
//! fails, saying so, when they are missing.

#[path = "nlp_support.rs"]
mod support;

use serde_json::{json, Value};
use trt_nlp::ElementType;
use trt_nlp::{EncodedBatch, Error, InputSpec, PairTruncation, TokenRow, TokenizerPipeline, Truncation, TruncationSide};

/// Fragments that stress normalisation, scripts and lengths.
const WORDS: &[&str] = &[
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dogs",
    "Hello,",
    "world!",
    "unbelievably",
    "naïve",
    "café",
    "Ångström",
    "中文分词",
    "日本語の",
    "テキスト",
    "한국어",
    "문장",
    "مرحبا",
    "بالعالم",
    "שלום",
    "Привет,",
    "мир!",
    "🦀",
    "🎉🎉",
    "3.14159",
    "foo@bar.com",
    "[SEP]",
    "[CLS]",
    "e\u{301}le\u{300}ve",
    "tab\there",
    "zero\u{200b}width",
    "x-y_z",
    "(paren)",
];

/// A small deterministic generator (no crate needed for a test corpus).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn text(&mut self) -> String {
        // Lengths from empty to far past 128 tokens, weighted to short.
        let words = match self.next() % 10 {
            0 => 0,
            1..=5 => self.next() % 12,
            6..=8 => 10 + self.next() % 60,
            _ => 100 + self.next() % 200,
        };
        (0..words).map(|_| WORDS[(self.next() % WORDS.len() as u64) as usize]).collect::<Vec<_>>().join(" ")
    }
}

/// 320 pairs: generated ones plus the corner cases named in the doc.
fn pairs() -> Vec<(String, String)> {
    let mut rng = Lcg(20261201);
    let mut pairs: Vec<(String, String)> = vec![
        (String::new(), String::new()),
        (String::new(), "only a second segment".into()),
        ("only a first segment".into(), String::new()),
        ("   \t\n ".into(), "中文分词测试，日本語のテキスト、한국어 문장".into()),
        ("word ".repeat(400), "short".into()),
        ("short".into(), "word ".repeat(400)),
        ("word ".repeat(300), "other ".repeat(300)),
    ];
    while pairs.len() < 320 {
        pairs.push((rng.text(), rng.text()));
    }
    pairs
}

fn pipeline(max_len: usize, truncation: Truncation, threads: usize) -> TokenizerPipeline {
    TokenizerPipeline::builder(max_len)
        .truncation(truncation)
        .threads(threads)
        .from_file(support::tokenizer_json())
        .expect("pipeline builds")
}

fn reference(request: Value) -> Vec<Value> {
    let mut request = request;
    request["tokenizer"] = json!(support::tokenizer_json());
    let answer = support::run_python(&[support::script("tokenizer_pair_reference.py").as_os_str()], &request);
    answer["rows"].as_array().expect("rows").clone()
}

fn ids(v: &Value, key: &str) -> Vec<u32> {
    v[key].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect()
}

fn strategy_name(s: PairTruncation) -> &'static str {
    match s {
        PairTruncation::LongestFirst => "longest_first",
        PairTruncation::OnlyFirst => "only_first",
        PairTruncation::OnlySecond => "only_second",
        _ => unreachable!("no other strategy is tested"),
    }
}

/// Each pair on its own (a refused pair fails only itself), then every pair
/// Python accepts in one parallel batch: the same ids both ways.
fn check_pairs(
    p: &TokenizerPipeline,
    pairs: &[(String, String)],
    want: &[Value],
    strategy: PairTruncation,
    side: TruncationSide,
    what: &str,
) {
    assert_eq!(want.len(), pairs.len());
    let mut accepted = Vec::new();
    let mut accepted_rows = Vec::new();
    for (i, (pair, want)) in pairs.iter().zip(want).enumerate() {
        let got = p.tokenize_pairs(std::slice::from_ref(pair), strategy, side);
        if want.get("error").is_some() {
            assert!(got.is_err(), "{what}: pair {i} is refused by Python ({}), accepted here", want["error"]);
            continue;
        }
        let row = got.unwrap_or_else(|e| panic!("{what}: pair {i}: {e}")).remove(0);
        assert_eq!(row.ids(), ids(want, "ids"), "{what}: pair {i} ids");
        assert_eq!(row.type_ids(), ids(want, "type_ids"), "{what}: pair {i} type ids");
        assert!(row.len() <= p.max_len(), "{what}: pair {i} longer than max_len");
        accepted.push(pair.clone());
        accepted_rows.push(row);
    }
    let batch = p.tokenize_pairs(&accepted, strategy, side).expect("accepted pairs encode as one batch");
    assert_eq!(batch, accepted_rows, "{what}: batch vs one by one");
}

#[test]
fn pairs_match_python_for_every_strategy_side_and_length() {
    let pairs = pairs();
    let mut refused = 0;
    for max_len in [32, 128] {
        let p = pipeline(max_len, Truncation::Truncate, 2);
        for strategy in [PairTruncation::LongestFirst, PairTruncation::OnlyFirst, PairTruncation::OnlySecond] {
            for (side, side_name) in [(TruncationSide::Right, "right"), (TruncationSide::Left, "left")] {
                let want = reference(json!({
                    "pairs": pairs, "max_len": max_len, "strategy": strategy_name(strategy), "direction": side_name,
                }));
                refused += want.iter().filter(|w| w.get("error").is_some()).count();
                check_pairs(&p, &pairs, &want, strategy, side, &format!("max_len {max_len} {strategy:?} {side_name}"));
            }
        }
    }
    // only_first / only_second refuse pairs whose chosen segment is too short: the corpus has such pairs.
    assert!(refused > 0, "the corpus exercises refused truncations");
}

#[test]
fn truncated_pairs_are_marked_and_fit() {
    let p = pipeline(32, Truncation::Truncate, 1);
    let rows = p
        .tokenize_pairs(
            &[("word ".repeat(50), "short".to_string()), ("a".into(), "b".into())],
            PairTruncation::LongestFirst,
            TruncationSide::Right,
        )
        .unwrap();
    assert!(rows[0].truncated() && rows[0].len() == 32);
    assert!(!rows[1].truncated());
    assert_eq!(rows[1].type_ids(), [0, 0, 0, 1, 1]);
}

#[test]
fn reject_mode_refuses_long_pairs_with_their_length_and_keeps_the_rest_exact() {
    let pairs = pairs();
    let p = pipeline(128, Truncation::Reject, 2);
    let want = reference(json!({"pairs": pairs, "max_len": 128, "truncate": false}));
    let mut long = 0;
    for (i, (pair, want)) in pairs.iter().zip(&want).enumerate() {
        let full = ids(want, "ids");
        match p.tokenize_pairs(std::slice::from_ref(pair), PairTruncation::LongestFirst, TruncationSide::Right) {
            Ok(rows) => {
                assert!(full.len() <= 128, "pair {i}");
                assert_eq!(rows[0].ids(), full, "pair {i}");
            }
            Err(Error::TooLong { index: 0, tokens, max_len: 128 }) => {
                assert_eq!(tokens, full.len(), "pair {i}: the error gives the full token count");
                long += 1;
            }
            Err(e) => panic!("pair {i}: {e}"),
        }
    }
    assert!(long > 10, "the corpus has over-length pairs ({long})");
}

#[test]
fn left_truncated_texts_match_python() {
    let texts: Vec<String> = pairs().into_iter().flat_map(|(a, b)| [a, b]).take(320).collect();
    for max_len in [16, 128] {
        let p = pipeline(max_len, Truncation::Truncate, 2);
        let want = reference(json!({"texts": texts, "max_len": max_len, "direction": "left"}));
        let rows = p.tokenize_from(&texts, TruncationSide::Left).expect("texts encode");
        for (i, (row, want)) in rows.iter().zip(&want).enumerate() {
            assert_eq!(row.ids(), ids(want, "ids"), "max_len {max_len}: text {i}");
        }
        // From the right it is the ordinary path (fast path included).
        assert_eq!(p.tokenize_from(&texts, TruncationSide::Right).unwrap(), p.tokenize(&texts).unwrap());
    }
}

#[test]
fn packed_pairs_carry_their_segments_into_the_batch() {
    let p = pipeline(64, Truncation::Truncate, 1);
    let rows = p
        .tokenize_pairs(
            &[("a question", "an answer"), ("q", "a much longer answer here")],
            PairTruncation::LongestFirst,
            TruncationSide::Right,
        )
        .unwrap();
    let [s_ids, s_mask, s_types] = InputSpec::bert(ElementType::I64).unwrap();
    let n = p.buffer_len(2);
    let (mut ids, mut mask, mut types) = (vec![-1i64; n], vec![-1i64; n], vec![-1i64; n]);
    let mut out = EncodedBatch::new().with(s_ids, &mut ids).unwrap().with(s_mask, &mut mask).unwrap().with(s_types, &mut types).unwrap();
    let layout = p.pack(&rows, &mut out).unwrap();
    let seq = layout.seq_len;
    for (r, row) in rows.iter().enumerate() {
        let line = |v: &[i64]| v[r * seq..(r + 1) * seq].to_vec();
        let mut want_types: Vec<i64> = row.type_ids().iter().map(|&t| i64::from(t)).collect();
        want_types.resize(seq, 0);
        assert_eq!(line(&types), want_types);
        assert_eq!(line(&mask).iter().sum::<i64>(), row.len() as i64);
    }
    let _: &TokenRow = &rows[0];
}

#[test]
fn a_max_len_without_room_for_a_pair_is_a_typed_error() {
    // 3 tokens: enough for a single text's two specials and one token, not for a pair's three.
    let p = pipeline(3, Truncation::Truncate, 1);
    let err = p.tokenize_pairs(&[("a", "b")], PairTruncation::LongestFirst, TruncationSide::Right).unwrap_err();
    assert!(matches!(err, Error::InvalidOption { option: "max_len", .. }), "{err}");
}
