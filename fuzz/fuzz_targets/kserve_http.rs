//! The HTTP inference body into `trt_serve::kserve::json::decode_request`:
//! KServe v2 JSON and Triton's binary tensor extension (the
//! `Inference-Header-Content-Length` header splits the body into the JSON and
//! the binary part; each binary input's `binary_data_size` takes its share
//! in order), then the server's checks against a text model's config
//! (`common/serve.rs`).
//!
//! Input format: byte 0: bit 0 set: the header is sent, its value bytes 1-2
//! (u16, little-endian); bit 1: small limits (64 elements, 32-byte texts)
//! instead of the server's defaults. The rest is the body.
//!
//! What must hold: no panic; a failure is `InvalidArgument` or `TooLarge`;
//! a decoded request's tensors hold exactly the elements their shapes
//! need, within the limits, and the binary inputs, encoded again in order,
//! are exactly the body's binary part (so BYTES elements lie within it and
//! nothing is left over).
#![no_main]

#[path = "common/serve.rs"]
mod serve;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use trt_serve::test_support::kserve::json::decode_request;
use trt_serve::test_support::kserve::{encode_bytes_elements, Elements};

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_at_checked(3) else { return };
    let header_length = (head[0] & 1 == 1).then(|| usize::from(u16::from_le_bytes([head[1], head[2]])));
    let limits = serve::limits(head[0] & 2 == 2);
    let request = match decode_request(body, header_length, &limits) {
        Ok(r) => r,
        Err(e) => return serve::check_error(&e),
    };
    // The binary inputs are those whose JSON names a binary_data_size.
    let json_len = header_length.unwrap_or(body.len());
    let root: Value = serde_json::from_slice(&body[..json_len]).expect("a decoded request's JSON parses");
    let sent = root["inputs"].as_array().expect("inputs");
    assert_eq!(sent.len(), request.inputs.len());
    let mut binary = Vec::new();
    for (t, json) in request.inputs.iter().zip(sent) {
        assert_eq!(json["name"].as_str(), Some(t.name.as_str()));
        let Some(size) = json["parameters"]["binary_data_size"].as_u64() else {
            if let Elements::Bytes(elems) = &t.data {
                // JSON strings: UTF-8 by construction.
                assert!(elems.iter().all(|e| std::str::from_utf8(e).is_ok()));
            }
            continue;
        };
        let start = binary.len();
        match &t.data {
            Elements::Fixed(raw) => binary.extend_from_slice(raw),
            Elements::Bytes(elems) => binary.extend(encode_bytes_elements(elems)),
        }
        assert_eq!((binary.len() - start) as u64, size, "input '{}': decoded size vs binary_data_size", t.name);
    }
    assert_eq!(binary, &body[json_len..], "the binary inputs are not exactly the body's binary part");
    serve::check_request(request, &limits);
});
