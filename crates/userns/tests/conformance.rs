//! Every map_write conformance case: the model's answer must equal the
//! running kernel's wherever this host can run the kernel half (the
//! others are printed as skipped, with the reason).

#[test]
fn the_model_answers_every_map_write_case_as_the_running_kernel() {
    let cases = userns::conformance::conformance_cases();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let mut disagreements = Vec::new();
    let (mut agreed, mut skipped) = (0, 0);
    for case in &cases {
        let v = case.run();
        match v.agree() {
            Some(true) => agreed += 1,
            Some(false) => disagreements.push(format!(
                "{}: {}\n  model:  {}\n  kernel: {}",
                v.name,
                v.question,
                v.model,
                v.kernel.as_ref().unwrap()
            )),
            None => {
                skipped += 1;
                println!("skip {}: {}", v.name, v.kernel.unwrap_err());
            }
        }
    }
    println!(
        "{agreed} agree, {skipped} skipped, {} disagree",
        disagreements.len()
    );
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

#[test]
fn case_names_are_unique() {
    let mut names: Vec<String> = userns::conformance::conformance_cases()
        .into_iter()
        .map(|c| c.name)
        .collect();
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n);
}
