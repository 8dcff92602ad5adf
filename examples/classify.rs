//! Texts classified, and (query, passage) pairs scored, through `TextModel`.
//!
//! | step | call |
//! |---|---|
//! | open a `BertForSequenceClassification` folder (labels from its `config.json`) | `TextModel::open(path)?` |
//! | the `k` best labels of each text, scored as the head says (softmax here) | `model.classify(&texts, k)?` |
//! | open a sentence-transformers cross-encoder folder | `TextModel::open(path)?` |
//! | one score per `(query, passage)` pair (the head's sigmoid, as `CrossEncoder.predict`) | `model.score_pairs(&pairs)?` |
//!
//! `cargo run -p trt-nlp --example classify [CLASSIFIER [CROSS_ENCODER]]`;
//! by default the two small fixtures of `tests/data/hf/`: `bert-cls3`
//! (labels negative / neutral / positive) and `roberta-cross-encoder`, made
//! by transformers and sentence-transformers with RANDOM weights, so their
//! labels and scores mean nothing: the example shows the calls, not a
//! model's judgement. Point it at real folders (e.g. a sentiment model and
//! `cross-encoder/ms-marco-MiniLM-L6-v2` from the HuggingFace cache) for
//! meaningful answers.

use std::path::PathBuf;

use trt_nlp::TextModel;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/hf").join(name)
}

fn run() -> trt_nlp::Result<()> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let classifier_path = args.next().unwrap_or_else(|| fixture("bert-cls3"));
    let cross_encoder_path = args.next().unwrap_or_else(|| fixture("roberta-cross-encoder"));
    let defaults = std::env::args_os().len() == 1;
    if defaults {
        println!("note: the default models are random-weight test fixtures; their labels and scores are not meaningful");
    }

    let classifier = TextModel::open(&classifier_path)?;
    let texts = ["I loved this film, every minute of it.", "The parcel arrived on Tuesday.", "Worst service I have ever had."];
    let labels: Vec<_> = (0..classifier.labels().len()).map(|i| classifier.labels().name(i)).collect();
    println!("{} (labels {}):", classifier_path.display(), labels.join(", "));
    for (text, c) in texts.iter().zip(classifier.classify(&texts, 3)?) {
        let top: Vec<String> = c.top.iter().map(|p| format!("{} {:.3}", p.label, p.score)).collect();
        println!("  {text:<42} -> {}", top.join(", "));
    }

    let cross_encoder = TextModel::open(&cross_encoder_path)?;
    let query = "How many people live in Berlin?";
    let passages = [
        "Berlin has a population of 3,520,031 registered inhabitants.",
        "Berlin is well known for its museums.",
        "The capital of France is Paris.",
    ];
    let pairs: Vec<(&str, &str)> = passages.iter().map(|p| (query, *p)).collect();
    let scores = cross_encoder.score_pairs(&pairs)?;
    println!("{} ({query:?}):", cross_encoder_path.display());
    for (passage, score) in passages.iter().zip(scores) {
        println!("  {score:.4}  {passage}");
    }
    Ok(())
}
