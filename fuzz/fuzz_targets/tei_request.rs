//! TEI request bodies into `trt_serve::tei::request`'s decoders (`/embed`,
//! `/embed_all` (and `/embed_sparse`, which reads the same fields),
//! `/predict`, `/rerank`, `/similarity`, `/tokenize`, `/decode`), and the
//! HF Inference API's token-classification body beside them
//! (`trt_serve::token_classification::decode`).
//!
//! Input format: byte 0 picks the route (mod 8); byte 1 bit 0: small bounds
//! (2 inputs, 16-byte texts, 4 ids) instead of generous ones. The rest is the body.
//!
//! What must hold: no panic; a decoded request is within its bounds: at
//! least one and at most `max_inputs` inputs, no text over `max_text_bytes`,
//! no id list over `max_ids`, `dimensions` within 1..=width.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trt_serve::test_support::api_request::Bounds;
use trt_serve::test_support::tei::request::{self, Input, Sequence};
use trt_serve::test_support::token_classification;

const WIDTH: usize = 384;

fn check_inputs(inputs: &[Input], b: &Bounds) {
    assert!(!inputs.is_empty() && inputs.len() <= b.max_inputs.max(1));
    for i in inputs {
        match i {
            Input::Text(t) => assert!(t.len() <= b.max_text_bytes),
            Input::Ids(ids) => assert!(!ids.is_empty() && ids.len() <= b.max_ids),
        }
    }
}

fn check_texts<'a>(texts: impl IntoIterator<Item = &'a String>, b: &Bounds) {
    texts.into_iter().for_each(|t| assert!(t.len() <= b.max_text_bytes));
}

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_at_checked(2) else { return };
    let b = if head[1] & 1 == 1 {
        Bounds { max_inputs: 2, max_text_bytes: 16, max_ids: 4 }
    } else {
        Bounds { max_inputs: 64, max_text_bytes: 4096, max_ids: 512 }
    };
    match head[0] % 8 {
        0 => {
            if let Ok(r) = request::embed(body, &b, WIDTH) {
                check_inputs(&r.inputs, &b);
                assert!(r.dimensions.is_none_or(|d| (1..=WIDTH).contains(&d)));
            }
        }
        1 => {
            if let Ok(r) = request::embed_all(body, &b) {
                check_inputs(&r.inputs, &b);
            }
        }
        2 => {
            if let Ok(r) = request::predict(body, &b) {
                assert!(!r.inputs.is_empty() && r.inputs.len() <= b.max_inputs.max(1));
                assert!(r.batch || r.inputs.len() == 1);
                for s in &r.inputs {
                    match s {
                        Sequence::Single(a) => check_texts([a], &b),
                        Sequence::Pair(a, c) => check_texts([a, c], &b),
                    }
                }
            }
        }
        3 => {
            if let Ok(r) = request::rerank(body, &b) {
                assert!(!r.texts.is_empty() && r.texts.len() <= b.max_inputs);
                check_texts(r.texts.iter().chain([&r.query]), &b);
            }
        }
        4 => {
            if let Ok(r) = request::similarity(body, &b) {
                assert!(!r.sentences.is_empty() && r.sentences.len() <= b.max_inputs);
                check_texts(r.sentences.iter().chain([&r.source]), &b);
            }
        }
        5 => {
            if let Ok(r) = request::tokenize(body, &b) {
                assert!(!r.inputs.is_empty() && r.inputs.len() <= b.max_inputs.max(1));
                check_texts(&r.inputs, &b);
            }
        }
        6 => {
            if let Ok(r) = request::decode(body, &b) {
                assert!(!r.ids.is_empty() && r.ids.len() <= b.max_inputs.max(1));
                assert!(r.ids.iter().all(|l| l.len() <= b.max_ids));
            }
        }
        _ => {
            if let Ok(r) = token_classification::decode(body, &b) {
                assert!(!r.texts.is_empty() && r.texts.len() <= b.max_inputs.max(1));
                assert!(r.batch || r.texts.len() == 1);
                assert!(r.ignore.is_empty() || r.ignore.iter().any(|l| l == "O"));
                check_texts(&r.texts, &b);
            }
        }
    }
});
