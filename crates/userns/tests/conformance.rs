//! Every map_write conformance case: the model's answer must equal the
//! running kernel's wherever this host can run the kernel half (the
//! others are printed as skipped, with the reason).

#[test]
fn the_model_answers_every_map_write_case_as_the_running_kernel() {
    let cases = userns::conformance::conformance_cases();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    assert!(probe::names_are_unique(&cases));
    probe::Agreement::of(&cases).assert_no_disagreement();
}
