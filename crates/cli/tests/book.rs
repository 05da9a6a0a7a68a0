//! Every `nssim` command shown in the book runs, and prints the lines the
//! book shows under it. A shown line may end in `...` (a prefix of the real
//! line), `...` alone skips lines, and a trailing `<- remark` is commentary.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A command from the book and the output lines shown under it.
struct Example {
    file: String,
    line: usize,
    args: Vec<String>,
    shown: Vec<String>,
}

fn examples_in(file: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(file).unwrap();
    // The path from the checkout's root: docs/uevent.md and
    // docs/lessons/uevent.md are different pages.
    let name = file
        .strip_prefix(root())
        .unwrap_or(file)
        .to_string_lossy()
        .into_owned();
    let mut out: Vec<Example> = Vec::new();
    let mut in_block = false;
    let mut current: Option<Example> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            out.extend(current.take());
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ nssim ") {
            out.extend(current.take());
            current = Some(Example {
                file: name.clone(),
                line: i + 1,
                args: cmd.split_whitespace().map(str::to_string).collect(),
                shown: Vec::new(),
            });
        } else if line.starts_with("$ ") {
            out.extend(current.take());
        } else if let Some(ex) = current.as_mut() {
            ex.shown.push(line.to_string());
        }
    }
    out
}

fn shown_line_matches(shown: &str, actual: &[String]) -> bool {
    let shown = shown.split("  <-").next().unwrap_or(shown).trim_end();
    let shown = shown.trim();
    if let Some(prefix) = shown.strip_suffix("...") {
        let prefix = prefix.trim();
        return actual.iter().any(|a| a.trim().starts_with(prefix));
    }
    actual.iter().any(|a| a.trim() == shown)
}

/// The Markdown files directly in `dir`.
fn markdown_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect()
}

/// The book's chapters, its lessons (docs/lessons/) and the README.
fn book_files() -> Vec<PathBuf> {
    let mut files = markdown_in(&root().join("docs"));
    files.extend(markdown_in(&root().join("docs/lessons")));
    files.push(root().join("README.md"));
    files.sort();
    files
}

#[test]
fn every_command_in_the_book_runs_as_shown() {
    let mut checked = 0;
    for file in book_files() {
        for ex in examples_in(&file) {
            let out = Command::new(env!("CARGO_BIN_EXE_nssim"))
                .args(&ex.args)
                .current_dir(root())
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            let code = out.status.code();
            assert!(
                matches!(code, Some(0) | Some(1)),
                "{}:{}: `nssim {}` exited with {code:?}: {}",
                ex.file,
                ex.line,
                ex.args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
            let actual: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_string)
                .collect();
            for shown in &ex.shown {
                if shown.trim().is_empty() || shown.trim() == "..." {
                    continue;
                }
                assert!(
                    shown_line_matches(shown, &actual),
                    "{}:{}: `nssim {}` does not print\n  {shown}\nit prints:\n{}",
                    ex.file,
                    ex.line,
                    ex.args.join(" "),
                    actual.join("\n")
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 5, "the book shows {checked} commands");
}

#[test]
fn the_lessons_are_among_the_book_files() {
    let lessons: Vec<PathBuf> = book_files()
        .into_iter()
        .filter(|p| p.parent().is_some_and(|d| d.ends_with("docs/lessons")))
        .collect();
    assert!(
        lessons.len() >= 5,
        "docs/lessons/ holds its README and a lesson per seed race: {lessons:?}"
    );
    let commands: usize = lessons.iter().map(|p| examples_in(p).len()).sum();
    assert!(commands >= 8, "the lessons show {commands} commands");
}
