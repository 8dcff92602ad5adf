//! The engine cache's entry reader: `<key>.json` metadata bytes and `<key>.plan`
//! bytes into the check that decides whether a cached plan is used
//! (`trt::fuzzing::engine_cache_entry`, the code `EngineCache::get_or_build` runs).
//!
//! Input format (plain bytes, so seeds are readable): byte 0 even: "raw", the
//! rest is metadata JSON, a 0x00 byte, then the plan. Byte 0 odd: "forged",
//! byte 1 a size tweak (i8), byte 2 which hash digit to change (0xff: none),
//! byte 3 odd adds an unknown field, the rest is the plan; metadata is written
//! for that plan with those tweaks, which reaches the accept path. What must
//! hold: no panic, and a plan is returned only when the metadata names its
//! exact size and SHA-256.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sha2::{Digest, Sha256};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn raw(data: &[u8]) {
    let (meta, plan) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    if let Some(found) = trt::fuzzing::engine_cache_entry(meta, plan) {
        let v: serde_json::Value = serde_json::from_slice(meta).expect("accepted metadata is JSON");
        assert_eq!(found.as_bytes(), plan);
        assert_eq!(v["plan_bytes"].as_u64(), Some(plan.len() as u64));
        assert_eq!(v["plan_sha256"].as_str(), Some(hex(&Sha256::digest(plan)).as_str()));
    }
}

fn forged(data: &[u8]) {
    let Some((head, plan)) = data.split_at_checked(3) else { return };
    let (size_delta, flip) = (head[0] as i8, (head[1] != 0xff).then_some(head[1]));
    let mut sha = hex(&Sha256::digest(plan)).into_bytes();
    if let Some(n) = flip {
        let i = usize::from(n) % sha.len();
        sha[i] = if sha[i] == b'0' { b'1' } else { b'0' };
    }
    let size = (plan.len() as i64 + i64::from(size_delta)).max(0) as u64;
    let mut meta = serde_json::json!({
        "plan_bytes": size,
        "plan_sha256": String::from_utf8(sha).expect("hex"),
        "model": "m.onnx",
        "tensorrt": "TensorRT-RTX 1.7.1",
        "target": "no-gpu",
        "settings": {},
    });
    if head[2] & 1 == 1 {
        meta["unknown"] = serde_json::json!([1, 2, 3]);
    }
    let meta = serde_json::to_vec(&meta).expect("json");
    let found = trt::fuzzing::engine_cache_entry(&meta, plan);
    let should = size == plan.len() as u64 && flip.is_none();
    assert_eq!(found.is_some(), should, "size {size} vs {}, hash digit changed: {flip:?}", plan.len());
}

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((mode, rest)) if mode % 2 == 0 => raw(rest),
        Some((_, rest)) => forged(rest),
        None => {}
    }
});
