//! The one-model conformance cases (namespace paths and credentials): the
//! model under the profile of the running kernel and the running kernel
//! answer alike wherever the host can run the kernel half.

#[test]
fn every_nsproxy_case_the_host_can_run_agrees_with_the_model() {
    let cases = kernel::conformance_nsproxy::conformance_cases();
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
