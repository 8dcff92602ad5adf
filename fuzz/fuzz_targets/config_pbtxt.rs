//! `config.pbtxt` text into `trt_serve::config::ModelConfig::parse` (the
//! protobuf text-format parser and the typed checks), then what the server
//! does with a parsed config at load and on a `config` request: the text
//! input's check, the version policy's selection, the JSON (HTTP) form.
//!
//! The input is the file's bytes; like the server (`read_to_string`), bytes
//! that are not UTF-8 are not parsed.
//!
//! What must hold: no panic; errors name a line within the text; a parsed
//! config has the folder's name, unique input and output names (a config may
//! leave either list out: a tensor model's are then read from the model
//! file at load, as Triton's auto-complete does), dims that are positive or -1, preferred batch sizes sorted and
//! within max_batch_size, at least one instance, a default priority level
//! within the levels; a version policy selects a sorted subset.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trt_serve::config::{text_format, ModelConfig, VersionPolicy};

const FOLDER: &str = "minilm";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let lines = text.matches('\n').count() + 1;
    match text_format::parse(text) {
        Ok(m) => assert!(m.fields.iter().all(|f| (1..=lines).contains(&f.line))),
        Err(e) => assert!((1..=lines).contains(&e.line), "syntax error at line {} of {lines}", e.line),
    }
    let c = match ModelConfig::parse(text, FOLDER) {
        Ok(c) => c,
        Err(e) => {
            assert!(e.line <= lines, "error at line {} of {lines}: {e}", e.line);
            assert!(!e.field.is_empty() && !e.message.is_empty());
            return;
        }
    };
    assert_eq!(c.name, FOLDER);
    for list in [&c.inputs, &c.outputs] {
        for (i, t) in list.iter().enumerate() {
            assert!(!t.dims.is_empty() && t.dims.iter().all(|&d| d == -1 || d > 0), "dims {:?}", t.dims);
            assert!(list[..i].iter().all(|u| u.name != t.name), "'{}' twice", t.name);
        }
    }
    assert!(c.instance_count >= 1);
    if let Some(db) = &c.dynamic_batching {
        assert!(db.preferred_batch_size.windows(2).all(|w| w[0] <= w[1]));
        assert!(db.preferred_batch_size.iter().all(|&p| p >= 1 && p <= c.max_batch_size.max(1)));
        assert!(db.priority_levels == 0 || db.default_priority_level <= db.priority_levels);
    }
    let available = [3u64, 1, 7, 2, 2, u64::MAX];
    let chosen = c.version_policy.select(&available);
    assert!(chosen.windows(2).all(|w| w[0] < w[1]) && chosen.iter().all(|v| available.contains(v)));
    if let VersionPolicy::Latest(n) = c.version_policy {
        assert_eq!(chosen.len(), n.min(5));
    }
    let _ = trt_serve::test_support::text_model::text_input(&c);
    let json = trt_serve::test_support::http::config_json(&c);
    assert_eq!(json["name"].as_str(), Some(FOLDER));
    assert_eq!(json["input"].as_array().map(Vec::len), Some(c.inputs.len()));
});
