//! The uevent conformance cases agree with the running kernel wherever the
//! host can run them (root, user namespaces, python3).
#![cfg(not(loom))]

#[test]
fn the_model_agrees_with_this_kernel() {
    let cases = uevent::conformance::conformance_cases();
    assert!(cases.len() >= 8);
    let mut disagreements = Vec::new();
    for c in &cases {
        let v = c.run();
        match &v.kernel {
            Ok(k) if *k != v.model => {
                disagreements.push(format!("{}: model `{}`, kernel `{k}`", v.name, v.model))
            }
            Ok(_) => {}
            Err(skip) => eprintln!("skipped {}: {skip}", v.name),
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}

#[test]
fn case_names_are_unique() {
    let cases = uevent::conformance::conformance_cases();
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), cases.len());
}
