//! The RLIMIT_NPROC conformance cases: the model (under the profile of the
//! running kernel) and the running kernel answer alike wherever the host
//! can run the kernel half.

#[test]
fn every_nproc_case_the_host_can_run_agrees_with_the_model() {
    let cases = kernel::conformance_nproc::conformance_cases();
    assert!(cases.len() >= 10);
    let mut ran = 0;
    let mut disagreements = Vec::new();
    for case in &cases {
        let v = case.run();
        match v.agree() {
            Some(true) => ran += 1,
            Some(false) => disagreements.push(format!(
                "{}: {}\n    model:  {}\n    kernel: {}",
                v.name,
                v.question,
                v.model,
                v.kernel.as_ref().unwrap()
            )),
            None => eprintln!("skipped {}: {}", v.name, v.kernel.unwrap_err()),
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    if probe::host_is_root() && probe::host_allows_userns().is_ok() {
        assert_eq!(
            ran,
            cases.len(),
            "as root with user namespaces every case runs"
        );
    }
    eprintln!("{ran} of {} cases agree", cases.len());
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
