//! OpenAI embeddings request bodies into `trt_serve::openai::request::embeddings`.
//!
//! Input format: byte 0 bit 0: small bounds (2 inputs, 16-byte texts, 4 ids)
//! instead of generous ones; byte 1: the model's width (1-256). The rest is the body.
//!
//! What must hold: no panic; a decoded request names a model, has at least
//! one and at most `max_inputs` inputs within the text and id bounds, and
//! `dimensions` within 1..=width; `model_of` agrees with the full decoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trt_serve::test_support::api_request::Bounds;
use trt_serve::test_support::openai::request::{embeddings, model_of};
use trt_serve::test_support::tei::request::Input;

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_at_checked(2) else { return };
    let b = if head[0] & 1 == 1 {
        Bounds { max_inputs: 2, max_text_bytes: 16, max_ids: 4 }
    } else {
        Bounds { max_inputs: 64, max_text_bytes: 4096, max_ids: 512 }
    };
    let width = usize::from(head[1]) + 1;
    let Ok(r) = embeddings(body, &b, width) else { return };
    assert!(!r.model.is_empty());
    assert_eq!(model_of(body).as_deref(), Ok(r.model.as_str()));
    assert!(!r.input.is_empty() && r.input.len() <= b.max_inputs.max(1));
    for i in &r.input {
        match i {
            Input::Text(t) => assert!(t.len() <= b.max_text_bytes),
            Input::Ids(ids) => assert!(!ids.is_empty() && ids.len() <= b.max_ids),
        }
    }
    assert!(r.dimensions.is_none_or(|d| (1..=width).contains(&d)));
});
