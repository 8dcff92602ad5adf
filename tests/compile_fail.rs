//! Wrong drop orders and thread-safety misuse must not compile.
//! (Run with TRYBUILD=overwrite to refresh the .stderr files after a rustc upgrade.)

#[test]
fn ownership_and_thread_safety_rules_are_enforced_by_the_compiler() {
    let t = trybuild::TestCases::new();
    t.compile_fail("../tests/compile_fail/*.rs");
}
