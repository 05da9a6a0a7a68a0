//! Every `nssim` command shown in the book runs, and prints the lines the
//! book shows under it, in that order. A shown line may end in `...` (a
//! prefix of the real line), `...` alone skips lines, and a trailing
//! `<- remark` is commentary.
//! So do the book's C reproducers: a `cc` line that builds one under
//! [`SCRATCH`], and a program there, run by the shell on this machine's
//! kernel.

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where the book's commands write files (`nssim export ... -o`, `cc -o`).
const SCRATCH: &str = "/tmp/nssim-book";

/// How an example's command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Program {
    /// `$ nssim ARGS`: the binary under test, from the checkout's root.
    Nssim(Vec<String>),
    /// `$ cc ... /tmp/nssim-book/...` or `$ /tmp/nssim-book/...`: a shell
    /// command line.
    Shell(String),
}

impl Program {
    /// Whether it may run processes on the kernel: the C reproducers
    /// (compiled and run by shell lines), and `nssim` on the kernel.
    fn touches_kernel(&self) -> bool {
        match self {
            Program::Shell(_) => true,
            Program::Nssim(args) => args
                .iter()
                .any(|a| a == "--on-kernel" || a == "conformance"),
        }
    }

    /// The program of a `$ ` line, if the book's test runs it.
    fn of(command: &str) -> Option<Program> {
        if let Some(args) = command.strip_prefix("nssim ") {
            return Some(Program::Nssim(
                args.split_whitespace().map(str::to_string).collect(),
            ));
        }
        // Only the lines that work in the scratch directory: elsewhere a
        // `cc` line is an illustration (`cc -o repro repro.c`).
        let runs_here = command.starts_with(SCRATCH)
            || (command.starts_with("cc ") && command.contains(SCRATCH));
        runs_here.then(|| Program::Shell(command.to_string()))
    }

    fn run(&self) -> Output {
        let mut cmd = match self {
            Program::Nssim(args) => {
                let mut c = Command::new(env!("CARGO_BIN_EXE_nssim"));
                c.args(args);
                c
            }
            Program::Shell(line) => {
                let mut c = Command::new("sh");
                c.args(["-c", line]);
                c
            }
        };
        cmd.current_dir(root())
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }

    fn text(&self) -> String {
        match self {
            Program::Nssim(args) => format!("nssim {}", args.join(" ")),
            Program::Shell(line) => line.clone(),
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A command from the book and the output lines shown under it.
struct Example {
    file: String,
    line: usize,
    program: Program,
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
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.extend(current.take());
            current = Program::of(cmd).map(|program| Example {
                file: name.clone(),
                line: i + 1,
                program,
                shown: Vec::new(),
            });
        } else if let Some(ex) = current.as_mut() {
            ex.shown.push(line.to_string());
        }
    }
    out
}

/// Whether `actual` line is what `shown` shows (a line ending in `...` is a
/// prefix of it; a trailing `<- remark` is commentary).
fn shown_line_matches(shown: &str, actual: &str) -> bool {
    let shown = shown.split("  <-").next().unwrap_or(shown).trim();
    match shown.strip_suffix("...") {
        Some(prefix) => actual.trim().starts_with(prefix.trim()),
        None => actual.trim() == shown,
    }
}

/// The index in `actual`, at `from` or after, of the line `shown` shows:
/// the shown lines come in the order the command prints them.
fn next_match(shown: &str, actual: &[String], from: usize) -> Option<usize> {
    (from..actual.len()).find(|&i| shown_line_matches(shown, &actual[i]))
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
    std::fs::create_dir_all(SCRATCH).unwrap();
    let c_runs = c_reproducers_run_here();
    let (mut checked, mut c_checked) = (0, 0);
    for file in book_files() {
        for ex in examples_in(&file) {
            if matches!(ex.program, Program::Shell(_)) && !c_runs {
                continue;
            }
            // The C reproducers run on the kernel, in turn with the other
            // tests that do.
            let turn = ex.program.touches_kernel().then(support::kernel_turn);
            let out = ex.program.run();
            drop(turn);
            let code = out.status.code();
            let allowed = match ex.program {
                Program::Nssim(_) => matches!(code, Some(0) | Some(1)),
                Program::Shell(_) => code == Some(0),
            };
            assert!(
                allowed,
                "{}:{}: `{}` exited with {code:?}: {}",
                ex.file,
                ex.line,
                ex.program.text(),
                String::from_utf8_lossy(&out.stderr)
            );
            let actual: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_string)
                .collect();
            let mut at = 0;
            for shown in &ex.shown {
                if shown.trim().is_empty() || shown.trim() == "..." {
                    continue;
                }
                let found = next_match(shown, &actual, at);
                assert!(
                    found.is_some(),
                    "{}:{}: `{}` does not print, after the lines shown above it,\n  {shown}\nit prints:\n{}",
                    ex.file,
                    ex.line,
                    ex.program.text(),
                    actual.join("\n")
                );
                at = found.map_or(at, |i| i + 1);
            }
            checked += 1;
            c_checked += usize::from(matches!(ex.program, Program::Shell(_)));
        }
    }
    assert!(checked >= 5, "the book shows {checked} commands");
    assert!(
        !c_runs || c_checked >= 2,
        "the book builds and runs a C reproducer ({c_checked} such lines)"
    );
}

/// Whether the book's C programs can be built and run here: `cc` is
/// installed and the tests run as root (the programs make namespaces and
/// write their maps as the executor does). Where not, the test says so;
/// in CI (`CI` set) that is a failure.
fn c_reproducers_run_here() -> bool {
    let test = "every_command_in_the_book_runs_as_shown (its C reproducers)";
    let has_cc = Command::new("cc").arg("--version").output().is_ok();
    let root = unsafe { libc::geteuid() } == 0;
    let why = match (has_cc, root) {
        (true, true) => return true,
        (false, _) => "no C compiler `cc` on PATH",
        (true, false) => "not root: the programs make namespaces",
    };
    support::skip(test, why, Some("CI"));
    false
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

/// The README's figures are the tool's: its count of conformance cases is
/// what `nssim conformance --list` lists.
#[test]
fn the_readmes_figures_are_the_tools() {
    let listed = support::nssim(&["conformance", "--list"]);
    assert_eq!(listed.status.code(), Some(0));
    let cases = support::stdout(&listed).lines().count();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("({cases} cases on this project's machine)")),
        "README.md should say `({cases} cases on this project's machine)`"
    );
}

/// The numbers `prose` names after one of `nouns` ("step", "steps"): a
/// single one, `N and M`, `N to M`.
fn numbers_named(prose: &str, nouns: &[&str]) -> Vec<u64> {
    let words: Vec<&str> = prose
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | '(' | ')' | '.' | '`'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut named = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if !nouns.contains(&w.to_lowercase().as_str()) {
            continue;
        }
        let mut k = i + 1;
        while let Some(n) = words.get(k).and_then(|n| n.parse::<u64>().ok()) {
            named.push(n);
            // `N and M`, `N to M`: the next number belongs to the mention.
            match words.get(k + 1) {
                Some(&"and") | Some(&"to") => k += 2,
                _ => break,
            }
        }
    }
    named
}

/// The steps `prose` names ("at steps 33 and 34").
fn steps_named(prose: &str) -> Vec<u64> {
    numbers_named(prose, &["step", "steps"])
}

/// The calls `prose` names ("the fourth `unshare` (call 4)").
fn calls_named(prose: &str) -> Vec<u64> {
    numbers_named(prose, &["call", "calls"])
}

/// The step rows of a timeline or listing.
fn step_rows(out: &str) -> BTreeSet<u64> {
    out.lines()
        .filter_map(|l| {
            l.trim_start_matches('▶')
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// What a lesson's prose is held to: the run it showed last.
#[derive(Default)]
struct LastRun {
    /// The line of the last `nssim` command, and the command.
    command: Option<(usize, Vec<String>)>,
    /// The step rows of the last timeline or listing, and its line.
    steps: Option<(usize, BTreeSet<u64>)>,
    /// The calls the last command's output names, run when first asked.
    calls: Option<BTreeSet<u64>>,
}

impl LastRun {
    /// A `$ nssim` line of a code block.
    fn shown(&mut self, line: usize, args: Vec<String>) {
        if args.iter().any(|a| a == "--timeline") || args.first().is_some_and(|a| a == "replay") {
            let out = Program::Nssim(args.clone()).run();
            self.steps = Some((line, step_rows(&String::from_utf8_lossy(&out.stdout))));
        }
        self.command = Some((line, args));
        self.calls = None;
    }

    /// The calls the last command's output names (`first failure: call 4`).
    fn calls(&mut self) -> Option<(usize, &BTreeSet<u64>)> {
        let (line, args) = self.command.as_ref()?;
        let calls = self.calls.get_or_insert_with(|| {
            let out = Program::Nssim(args.clone()).run();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            text.lines().flat_map(calls_named).collect()
        });
        Some((*line, calls))
    }
}

/// Every step a lesson's prose names is a step of the timeline or listing
/// the lesson showed last, as the command prints it today: a lesson that
/// says "at steps 33 and 34" is about the rows the reader sees. Every call
/// it names ("call 4") is one the last command's output names.
#[test]
fn the_lessons_prose_names_steps_and_calls_of_the_run_it_shows() {
    let lessons = book_files()
        .into_iter()
        .filter(|p| p.parent().is_some_and(|d| d.ends_with("docs/lessons")));
    let (mut steps, mut calls) = (0, 0);
    for file in lessons {
        let text = std::fs::read_to_string(&file).unwrap();
        let at = |i: usize| format!("{}:{}", file.display(), i + 1);
        let mut last = LastRun::default();
        let mut in_block = false;
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                in_block = !in_block;
                continue;
            }
            if in_block {
                let program = line.strip_prefix("$ ").and_then(Program::of);
                if let Some(Program::Nssim(args)) = program.filter(|p| !p.touches_kernel()) {
                    last.shown(i + 1, args);
                }
                continue;
            }
            for step in steps_named(line) {
                let Some((shown, rows)) = &last.steps else {
                    panic!("{}: names step {step} before any run", at(i));
                };
                assert!(
                    rows.contains(&step),
                    "{}: names step {step}, which the run shown at line {shown} does not have",
                    at(i)
                );
                steps += 1;
            }
            for call in calls_named(line) {
                let Some((shown, named)) = last.calls() else {
                    panic!("{}: names call {call} before any run", at(i));
                };
                assert!(
                    named.contains(&call),
                    "{}: names call {call}, which the output of line {shown} does not name ({named:?})",
                    at(i)
                );
                calls += 1;
            }
        }
    }
    assert!(steps >= 20, "the lessons name {steps} steps");
    assert!(calls >= 2, "the lessons name {calls} calls");
}

#[test]
fn steps_named_reads_single_pairs_and_ranges() {
    assert_eq!(steps_named("At step 56 of the run"), [56]);
    assert_eq!(steps_named("At steps 33 and 34 the old"), [33, 34]);
    assert_eq!(steps_named("The window is steps 56 to 65: the"), [56, 65]);
    assert_eq!(steps_named("(step 4: the check)"), [4]);
    assert!(steps_named("two steps later").is_empty());
    assert_eq!(calls_named("(`first failure: call 4`: the results"), [4]);
    assert!(calls_named("the results count calls from 1").is_empty());
}
