//! A HuggingFace folder with one of its JSON files replaced by the input:
//! `config.json`, `modules.json`, `1_Pooling/config.json`,
//! `sentence_bert_config.json`, `config_sentence_transformers.json` or
//! `tokenizer_config.json` (the first byte picks which; the rest is the
//! file), the others and the weights those of a small BERT embedding model.
//! The folder is read (`trt_hf::HfFolder::open`) and, where it reads, its
//! graph is written (`trt_hf::build`), as an import does; the descriptor
//! an import writes is read back.
//!
//! What must hold: no panic and no allocation sized by a config field
//! alone (dimensions are checked against the weights before any table is
//! sized); an error names a file of the folder; a graph written has the
//! outputs its descriptor lists.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

const FILES: [&str; 6] =
    ["config.json", "modules.json", "1_Pooling/config.json", "sentence_bert_config.json", "config_sentence_transformers.json", "tokenizer_config.json"];

/// A private copy of the fixture, made once per process.
fn folder() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/hf/bert-hub");
        let dir = std::env::temp_dir().join(format!("trt-fuzz-hf-folder-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
        for f in FILES.iter().chain(&["model.safetensors", "tokenizer.json"]) {
            std::fs::copy(src.join(f), dir.join(f)).unwrap();
        }
        dir
    })
}

fn original(f: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/hf/bert-hub").join(f)).unwrap()
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let dir = folder();
    let file = FILES[pick as usize % FILES.len()];
    for f in FILES {
        let bytes = if f == file { body.to_vec() } else { original(f) };
        std::fs::write(dir.join(f), bytes).unwrap();
    }
    let folder = match trt_hf::HfFolder::open(dir) {
        Ok(f) => f,
        Err(e) => {
            let message = e.to_string();
            assert!(message.contains(&dir.display().to_string()), "an error names no file of the folder: {message}");
            return;
        }
    };
    assert!(folder.max_seq_length() >= 1);
    match trt_hf::build(&folder, &trt_hf::ImportOptions::default(), String::from("0")) {
        Ok((model, d)) => {
            let outputs: Vec<String> = model.graph().output.iter().filter_map(|o| o.name.clone()).collect();
            assert_eq!(outputs, d.outputs);
            let text = serde_json::to_string(&d).unwrap();
            let back: trt_hf::Descriptor = serde_json::from_str(&text).unwrap();
            assert_eq!(back, d);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
