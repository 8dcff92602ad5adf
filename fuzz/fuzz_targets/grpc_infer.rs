//! gRPC inference requests: protobuf bytes decoded by prost into
//! `inference.ModelInferRequest` (what tonic does before the handler runs),
//! then `trt_serve::grpc::decode_request` (typed `contents` or
//! `raw_input_contents`) and the server's checks against a text model's
//! config (`common/serve.rs`).
//!
//! Input format: byte 0 bit 0: small limits (64 elements, 32-byte texts)
//! instead of the server's defaults; the rest is the protobuf message.
//!
//! What must hold: no panic; prost's failure is a `DecodeError`, the
//! conversion's is `InvalidArgument` or `TooLarge`; a decoded request has
//! one tensor per input, each holding exactly the elements its shape needs,
//! and raw contents come through byte for byte.
#![no_main]

#[path = "common/serve.rs"]
mod serve;

use libfuzzer_sys::fuzz_target;
use prost::Message;
use trt_serve::test_support::grpc::{decode_request, proto::ModelInferRequest};
use trt_serve::test_support::kserve::{encode_bytes_elements, Elements};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, message)) = data.split_first() else { return };
    let limits = serve::limits(flags & 1 == 1);
    let Ok(message) = ModelInferRequest::decode(message) else { return };
    let names: Vec<String> = message.inputs.iter().map(|t| t.name.clone()).collect();
    let raw = message.raw_input_contents.clone();
    let request = match decode_request(message, &limits) {
        Ok(r) => r,
        Err(e) => return serve::check_error(&e),
    };
    assert_eq!(request.inputs.iter().map(|t| &t.name).collect::<Vec<_>>(), names.iter().collect::<Vec<_>>());
    if !raw.is_empty() {
        assert_eq!(raw.len(), request.inputs.len());
        for (t, bytes) in request.inputs.iter().zip(&raw) {
            let again = match &t.data {
                Elements::Fixed(v) => v.clone(),
                Elements::Bytes(elems) => encode_bytes_elements(elems),
            };
            assert_eq!(&again[..], &bytes[..], "input '{}': raw contents changed", t.name);
        }
    }
    serve::check_request(request, &limits);
});
