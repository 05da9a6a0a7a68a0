//! The RLIMIT_NPROC conformance cases: the model (under the profile of the
//! running kernel) and the running kernel answer alike wherever the host
//! can run the kernel half.

#[test]
fn every_nproc_case_the_host_can_run_agrees_with_the_model() {
    let cases = kernel::conformance_nproc::conformance_cases();
    assert!(cases.len() >= 10);
    assert!(probe::names_are_unique(&cases));
    let a = probe::Agreement::of(&cases);
    a.assert_no_disagreement();
    if probe::host_is_root() && probe::host_allows_userns().is_ok() {
        assert_eq!(
            a.agreed,
            cases.len(),
            "as root with user namespaces every case runs"
        );
    }
}

/// The answers are not all alike: the cases tell limits apart.
#[test]
fn the_model_answers_differ_between_cases() {
    let answers: std::collections::BTreeSet<String> =
        kernel::conformance_nproc::conformance_cases()
            .iter()
            .map(|c| (c.model)())
            .collect();
    assert!(answers.len() >= 6, "{answers:?}");
    eprintln!("{answers:?}");
}
