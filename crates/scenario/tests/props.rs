//! Property tests: no input makes the parser panic; every error has a
//! position inside the file (when it has one) and renders.

use proptest::prelude::*;
use scenario::{parse, parse_bytes, ScenarioError};

const EXAMPLE: &str = include_str!("data/example.toml");

const FULL: &str = r#"name = "p"
summary = "s"
invariants = ["ipc.no_false_enospc", "lifetime"]
[explore]
strategy = "pct"
seed = 7
max_virtual_time = "1m30.5s"
[sysctl]
user.max_ipc_namespaces = 5
[costs]
syscall = "150ns"
[[userns]]
name = "u"
sysctl = { "user.max_ipc_namespaces" = 2 }
[[task]]
name = "a"
userns = "u"
ops = ["unshare(CLONE_NEWIPC)", 'bug("x")', "mq_path_walk(b)", "sysctl_write(user.max_ipc_namespaces, 3)"]
[[task]]
name = "b"
instances = 3
ops = ["lock(m)", "sleep(1.5ms)", "unlock(m)"]
[[kernel]]
profile = "v6.2"
patches = ["+ipc-batch-free"]
expect = { outcome = "violation", invariant = "ipc.no_false_enospc" }
explore = { strategy = "dfs", cpus = 4 }
[[kernel]]
profile = "v6.3"
expect = "pass"
"#;

/// Checks the shape of a result: errors point inside the text and render.
fn check(
    text: &str,
    result: Result<scenario::Scenario, ScenarioError>,
) -> Result<(), TestCaseError> {
    match result {
        Ok(s) => {
            prop_assert!(!s.setup.tasks.is_empty());
            prop_assert!(!s.runs.is_empty());
            prop_assert_eq!(s.source.as_str(), text);
        }
        Err(e) => {
            let rendered = e.to_string();
            prop_assert!(rendered.starts_with("error: "));
            prop_assert!(
                !rendered
                    .chars()
                    .any(|c| c.is_control() && c != '\n' && c != '\t'),
                "control character in {:?}",
                rendered
            );
            prop_assert_eq!(e.line.is_some(), e.column.is_some());
            if let (Some(line), Some(column)) = (e.line, e.column) {
                let lines = text.split('\n').count();
                prop_assert!(
                    line >= 1 && line <= lines,
                    "line {} of {}: {}",
                    line,
                    lines,
                    rendered
                );
                prop_assert!(column >= 1);
                let span = e.span().unwrap();
                prop_assert!(span.start <= span.end && span.end <= text.len());
                prop_assert!(text.is_char_boundary(span.start) && text.is_char_boundary(span.end));
            }
        }
    }
    Ok(())
}

/// One edit of a text: delete a range, insert a snippet, or replace a char.
#[derive(Debug, Clone)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, String),
    Replace(usize, char),
}

const SNIPPETS: &[&str] = &[
    "\"",
    "'",
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    "=",
    ",",
    ".",
    "\n",
    "#",
    "\\",
    "-",
    "+",
    "0",
    "-1",
    "99999999999999999999",
    "1.5",
    "true",
    "1979-05-27",
    "\"\"\"",
    "'''",
    "\\u00e9",
    "name",
    "task",
    "kernel",
    "ops",
    "(",
    ")",
    "|",
    "CLONE_NEWUSER",
    "sleep(",
    "µs",
    "\u{0}",
    "\u{feff}",
    "\r\n",
    "\t",
    "é",
    "🦀",
];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 0usize..8).prop_map(|(at, len)| Edit::Delete(at, len)),
        (any::<usize>(), prop::sample::select(SNIPPETS))
            .prop_map(|(at, s)| Edit::Insert(at, s.to_string())),
        (any::<usize>(), "\\PC{1,4}").prop_map(|(at, s)| Edit::Insert(at, s)),
        (any::<usize>(), any::<char>()).prop_map(|(at, c)| Edit::Replace(at, c)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for e in edits {
        let n = chars.len();
        match e {
            Edit::Delete(at, len) if n > 0 => {
                let at = at % n;
                let end = (at + len).min(n);
                chars.drain(at..end);
            }
            Edit::Insert(at, s) => {
                let at = at % (n + 1);
                chars.splice(at..at, s.chars());
            }
            Edit::Replace(at, c) if n > 0 => chars[at % n] = *c,
            _ => {}
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn random_strings(text in "\\PC{0,200}") {
        check(&text, parse("r.toml", &text))?;
    }

    #[test]
    fn random_toml_like_strings(text in "[a-z_\\[\\]{}=\"'.,0-9 \n#+-]{0,200}") {
        check(&text, parse("r.toml", &text))?;
    }

    #[test]
    fn random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        match parse_bytes("r.toml", &bytes) {
            Ok(s) => prop_assert_eq!(s.source.as_bytes(), &bytes[..]),
            Err(e) => {
                let rendered = e.to_string();
                prop_assert!(rendered.starts_with("error: "));
                prop_assert!(!rendered.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
            }
        }
    }

    #[test]
    fn mutated_example(edits in prop::collection::vec(edit(), 1..6)) {
        let text = apply(EXAMPLE, &edits);
        check(&text, parse("m.toml", &text))?;
    }

    #[test]
    fn mutated_full_file(edits in prop::collection::vec(edit(), 1..6)) {
        let text = apply(FULL, &edits);
        check(&text, parse("m.toml", &text))?;
    }

    /// Byte-level damage, including invalid UTF-8.
    #[test]
    fn mutated_bytes(flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4)) {
        let mut bytes = FULL.as_bytes().to_vec();
        for (at, b) in flips {
            let n = bytes.len();
            bytes[at % n] = b;
        }
        match parse_bytes("b.toml", &bytes) {
            Ok(s) => prop_assert_eq!(s.source.as_bytes(), &bytes[..]),
            Err(e) => {
                let rendered = e.to_string();
                prop_assert!(rendered.starts_with("error: "));
                prop_assert!(!rendered.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
            }
        }
    }

    /// Lines of the right vocabulary in random order and combination:
    /// structurally plausible files that reach the semantic checks.
    #[test]
    fn shuffled_lines(lines in prop::collection::vec(prop::sample::select(FULL.lines().collect::<Vec<_>>()), 0..40)) {
        let text = lines.join("\n");
        check(&text, parse("s.toml", &text))?;
    }
}

#[test]
fn unmutated_inputs_are_valid() {
    parse("e.toml", EXAMPLE).unwrap();
    parse("f.toml", FULL).unwrap();
}
