//! The README's first Rust block (its quick start), verbatim: build.rs copies it
//! from README.md. Built, not run: its model paths are placeholders.

include!(concat!(env!("OUT_DIR"), "/readme_first_block.rs"));
