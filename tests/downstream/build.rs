//! Copies the README's first Rust block (the quick start: `TextModel::open`,
//! `embed`, `classify`) into OUT_DIR, where src/bin/readme.rs includes it, so the
//! block a newcomer copies is compiled as a downstream crate compiles it.

use std::path::Path;

fn main() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    println!("cargo:rerun-if-changed={}", readme.display());
    let text = std::fs::read_to_string(&readme).unwrap_or_else(|e| panic!("{}: {e}", readme.display()));
    let start = text.find("\n```rust\n").expect("README.md has a ```rust block") + "\n```rust\n".len();
    let len = text[start..].find("\n```").expect("README.md's first ```rust block is closed");
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("readme_first_block.rs");
    std::fs::write(&out, &text[start..start + len + 1]).unwrap();
}
