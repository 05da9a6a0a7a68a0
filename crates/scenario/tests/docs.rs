//! The examples in docs/scenario-format.md are valid.

const DOC: &str = include_str!("../../../docs/scenario-format.md");

/// The fenced ```toml blocks of the format reference.
fn toml_blocks() -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in DOC.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```toml") => current = Some(String::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn complete_example_parses() {
    let blocks = toml_blocks();
    assert!(blocks.len() >= 2);
    let s = scenario::parse("docs.toml", &blocks[0]).unwrap();
    assert_eq!(s.name, "ipc-alloc-vs-free");
    assert_eq!(s.runs.len(), 2);
    assert_eq!(s.runs[1].label, "v6.3");
}

#[test]
fn integer_forms() {
    let text = blocks_with_seed("0xdead_beef");
    let s = scenario::parse("x.toml", &text).unwrap();
    assert_eq!(s.runs[0].explore.seed, 0xdead_beef);
    let text = blocks_with_seed("0b101");
    assert_eq!(
        scenario::parse("x.toml", &text).unwrap().runs[0]
            .explore
            .seed,
        5
    );
}

fn blocks_with_seed(seed: &str) -> String {
    toml_blocks()[0].replace("seed = 1\n", &format!("seed = {seed}\n"))
}
