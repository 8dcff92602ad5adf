//! Test names as libtest knows them, for a test that runs one test of its own
//! binary again in a child process (`--exact NAME`).

/// The `--exact` name of the test function `name` declared in the module whose
/// `module_path!()` is `module`: libtest names a test by its path below the crate
/// root, and each former test file is a module of its crate's one test binary
/// (tests/suites/), so the name starts with that module's.
pub fn exact_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_crate, below)) => format!("{below}::{name}"),
        None => name.to_string(),
    }
}
