//! The map_write conformance case still written by hand (the others are
//! scenarios under `sim-scenarios/conformance/idmap/`): the model's answer
//! must equal the running kernel's wherever this host can run the kernel
//! half (else it is printed as skipped, with the reason).

#[test]
fn the_model_answers_every_map_write_case_as_the_running_kernel() {
    let cases = userns::conformance::conformance_cases();
    assert_eq!(cases.len(), 1);
    assert!(probe::names_are_unique(&cases));
    probe::Agreement::of(&cases).assert_no_disagreement();
}
