//! The setup folder that `scripts/setup` fills, for the tests, benches and
//! examples (the libraries know no such folder): `$TRT_DEPS_DIR`, else the
//! workspace's `.deps/`. Included with `#[path]` where `common` is not.

use std::path::PathBuf;

/// `$TRT_DEPS_DIR`, else `<workspace>/.deps`.
pub fn deps_dir() -> PathBuf {
    match std::env::var_os("TRT_DEPS_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.deps")),
    }
}
