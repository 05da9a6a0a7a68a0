//! The uevent conformance cases agree with the running kernel wherever the
//! host can run them (root, user namespaces, python3).
#![cfg(not(loom))]

#[test]
fn the_model_agrees_with_this_kernel() {
    let cases = uevent::conformance::conformance_cases();
    assert!(cases.len() >= 8);
    assert!(probe::names_are_unique(&cases));
    probe::Agreement::of(&cases).assert_no_disagreement();
}
