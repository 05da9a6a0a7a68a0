//! Every subcommand's `--help` and its options table in `docs/cli.md`
//! name the same options, and every `--format json` help says what a
//! line is.

use crate::support;

use std::collections::BTreeSet;
use support::{nssim, root, stdout};

/// The subcommands of `nssim <path>`, from its help's `Commands:` list.
fn subcommands(path: &[&str]) -> Vec<String> {
    let help = stdout(&nssim(&[path, &["--help"]].concat()));
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect()
}

/// Every command of nssim, a subcommand's path as words (`idmap check`).
fn commands() -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut todo: Vec<Vec<String>> = subcommands(&[]).into_iter().map(|c| vec![c]).collect();
    while let Some(path) = todo.pop() {
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        for sub in subcommands(&words) {
            todo.push([path.clone(), vec![sub]].concat());
        }
        out.push(path);
    }
    out.sort();
    out
}

/// The long options `--help` lists, `--help` and `--version` aside.
fn help_options(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix("-")
                .filter(|r| r.len() > 2 && r.as_bytes()[1] == b',')
                .map_or(l, |r| r[2..].trim_start());
            let name = l.strip_prefix("--")?;
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                .collect();
            (!name.is_empty() && name != "help" && name != "version").then(|| format!("--{name}"))
        })
        .collect()
}

/// The options named in the first column of the option tables of the
/// section `## \`nssim <command>\`` of docs/cli.md.
fn documented_options(doc: &str, command: &str) -> Option<BTreeSet<String>> {
    let heading = format!("## `nssim {command}`");
    let section: Vec<&str> = doc
        .lines()
        .skip_while(|l| l.trim() != heading)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect();
    if section.is_empty() && !doc.lines().any(|l| l.trim() == heading) {
        return None;
    }
    let mut out = BTreeSet::new();
    for row in section.iter().filter(|l| l.starts_with("| `")) {
        let first = row.split(" | ").next().unwrap_or("");
        let mut rest = first;
        while let Some(i) = rest.find("--") {
            let name: String = rest[i + 2..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                .collect();
            out.insert(format!("--{name}"));
            rest = &rest[i + 2 + name.len()..];
        }
    }
    Some(out)
}

#[test]
fn every_subcommands_help_matches_its_options_table() {
    let doc = std::fs::read_to_string(root().join("docs/cli.md")).expect("docs/cli.md");
    let all = commands();
    assert!(all.len() >= 8, "{all:?}");
    for path in all {
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        let help = stdout(&nssim(&[&words[..], &["--help"]].concat()));
        let options = help_options(&help);
        let command = path.join(" ");
        if options.is_empty() {
            continue;
        }
        let documented = documented_options(&doc, &command)
            .unwrap_or_else(|| panic!("docs/cli.md has no section `nssim {command}`"));
        assert_eq!(
            options, documented,
            "nssim {command}: --help (left) and docs/cli.md (right)"
        );
    }
}

#[test]
fn every_json_format_help_says_what_a_line_is() {
    for path in commands() {
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        let help = stdout(&nssim(&[&words[..], &["--help"]].concat()));
        let Some(at) = help.find("--format <FORMAT>") else {
            continue;
        };
        let text: String = help[at..]
            .lines()
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            text.contains("`json`") && (text.contains("line") || text.contains("one object")),
            "nssim {}: --format does not say what a JSON line is: {text}",
            path.join(" ")
        );
    }
}

#[test]
fn kernels_prints_json_lines_from_the_catalog() {
    let o = nssim(&["kernels", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let kinds: BTreeSet<&str> = lines.iter().filter_map(|l| l["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["cost", "invariant", "known", "patch", "profile"])
    );
    // The text output names the same profiles and patches.
    let text = stdout(&nssim(&["kernels"]));
    for l in &lines {
        let name = l["name"].as_str().expect("a name");
        assert!(text.contains(name), "{name} is not in the text output");
    }
    assert!(lines
        .iter()
        .any(|l| l["kind"] == "profile" && l["name"] == "v6.16"));
}

#[test]
fn conformance_help_and_docs_name_the_subsystems_there_are() {
    let listed = stdout(&nssim(&["conformance", "--list", "--format", "json"]));
    let there: BTreeSet<String> = listed
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .map(|c| c["subsystem"].as_str().expect("a subsystem").to_string())
        .collect();
    let help = stdout(&nssim(&["conformance", "--help"]));
    let doc = std::fs::read_to_string(root().join("docs/cli.md")).expect("docs/cli.md");
    let sentence = |text: &str, from: &str| -> String {
        let at = text.find(from).unwrap_or_else(|| panic!("{from} missing"));
        text[at..].lines().take(3).collect::<Vec<_>>().join(" ")
    };
    for (what, text) in [
        ("--help", sentence(&help, "--subsystem <NAME>")),
        ("docs/cli.md", sentence(&doc, "| `--subsystem NAME`")),
    ] {
        for s in &there {
            assert!(
                text.contains(s.as_str()),
                "{what} does not name {s}: {text}"
            );
        }
    }
}

/// The completion scripts and the manual page come from the same clap
/// definition as `--help`: every command and every option of each is in
/// them.
#[test]
fn completions_and_the_manual_page_cover_every_command_and_option() {
    let bash = stdout(&nssim(&["completions", "bash"]));
    let zsh = stdout(&nssim(&["completions", "zsh"]));
    let man = stdout(&nssim(&["man"]));
    assert!(man.contains(".TH nssim 1"), "{man}");
    for path in commands() {
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        let leaf = path.last().unwrap();
        assert!(
            bash.contains(leaf.as_str()),
            "bash completion lacks `{leaf}`"
        );
        assert!(zsh.contains(leaf.as_str()), "zsh completion lacks `{leaf}`");
        if path.len() == 1 {
            // roff escapes a hyphen as `\-`.
            let page = format!("nssim\\-{}", leaf.replace('-', "\\-"));
            assert!(man.contains(&page), "the manual page lacks `{page}`");
        }
        let help = stdout(&nssim(&[&words[..], &["--help"]].concat()));
        for option in help_options(&help) {
            assert!(
                bash.contains(&option),
                "bash completion lacks `{option}` of nssim {}",
                path.join(" ")
            );
        }
    }
    let bad = nssim(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}
