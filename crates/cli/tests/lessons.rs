//! Every lesson in docs/lessons/ has the parts a teacher relies on: three
//! questions with their answers folded away in `<details>`, a timeline to
//! look at, and an exercise whose folded answer runs nssim with a changed
//! patch, kernel or setting. (The book test, tests/book.rs, runs every
//! command a lesson shows and checks its output.) The lessons are listed
//! in their index, in the book's SUMMARY.md and in docs/README.md, which
//! lists every chapter of SUMMARY.md.

use crate::support;

use std::path::PathBuf;
use support::root;

/// The options that change what a run explores or which kernel it runs.
const CHANGED_SETTINGS: &[&str] = &[
    "--patch",
    "--kernel",
    "--preemption-bound",
    "--pct-depth",
    "--strategy",
    "--seed",
    "--iterations",
    "--cpus",
];

/// The lessons, one per seed race (every file but the index).
fn lessons() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("docs/lessons"))
        .expect("docs/lessons/")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .filter(|p| p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    files.sort();
    files
}

/// The text under each `## ` heading (outside code blocks), with its
/// heading, up to the next one.
fn sections(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if !in_code {
            if let Some(heading) = line.strip_prefix("## ") {
                out.push((heading.to_string(), String::new()));
                continue;
            }
        }
        if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

fn count_details(text: &str) -> usize {
    text.lines()
        .filter(|l| l.trim_start().starts_with("<details>"))
        .count()
}

/// The `$ nssim ` command lines of the ```text blocks inside the
/// `<details>` of `text`.
fn folded_commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut in_details, mut in_code, mut text_block) = (false, false, false);
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            in_code = !in_code;
            text_block = in_code && t == "```text";
            continue;
        }
        if in_code {
            if in_details && text_block && line.starts_with("$ nssim ") {
                out.push(line.to_string());
            }
            continue;
        }
        if t.starts_with("<details>") {
            in_details = true;
        } else if t.starts_with("</details>") {
            in_details = false;
        }
    }
    out
}

/// What a lesson lacks; empty when it has every part.
fn problems(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let opened = count_details(text);
    let closed = text
        .lines()
        .filter(|l| l.trim_start().starts_with("</details>"))
        .count();
    if opened != closed {
        out.push(format!("{opened} <details> but {closed} </details>"));
    }
    if opened < 4 {
        out.push(format!(
            "{opened} <details>: three answers and the exercise's need four"
        ));
    }
    let secs = sections(text);
    let find = |word: &str| {
        secs.iter()
            .find(|(h, _)| h.to_lowercase().contains(word))
            .map(|(_, body)| body.as_str())
    };
    if find("run it").is_none() {
        out.push("no \"Run it\" section".into());
    }
    match find("timeline") {
        None => out.push("no section on the timeline".into()),
        Some(body) => {
            if !body
                .lines()
                .any(|l| l.starts_with("$ nssim ") && l.contains("--timeline"))
            {
                out.push("the timeline section runs no `--timeline` command".into());
            }
        }
    }
    match find("question") {
        None => out.push("no section of questions".into()),
        Some(body) => {
            let n = count_details(body);
            if n != 3 {
                out.push(format!("the questions have {n} folded answers, not 3"));
            }
        }
    }
    match find("exercise") {
        None => out.push("no heading containing \"Exercise\"".into()),
        Some(body) => {
            if count_details(body) == 0 {
                out.push("the exercise's prediction is not folded in <details>".into());
            }
            let commands = folded_commands(body);
            if commands.is_empty() {
                out.push(
                    "the exercise's answer shows no `$ nssim ` command in a ```text block".into(),
                );
            } else if !commands.iter().any(|c| {
                c.split_whitespace()
                    .any(|w| CHANGED_SETTINGS.iter().any(|s| w.starts_with(s)))
            }) {
                out.push(format!(
                    "no command of the exercise changes a setting ({}): {commands:?}",
                    CHANGED_SETTINGS.join(", ")
                ));
            }
        }
    }
    out
}

#[test]
fn every_lesson_has_three_answered_questions_and_an_exercise() {
    let files = lessons();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for seed in [
        "ipc-free-queue.md",
        "userns-idmaps.md",
        "ucounts-nproc.md",
        "uevent.md",
    ] {
        assert!(
            names.iter().any(|n| n == seed),
            "no lesson {seed}: {names:?}"
        );
    }
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a lesson");
        let found = problems(&text);
        let shown = file.strip_prefix(root()).unwrap_or(file);
        assert!(found.is_empty(), "{}: {found:#?}", shown.display());
    }
}

/// A lesson with every part, for the check to be held against.
const GOOD: &str = "# Lesson

## The race

Two tasks.

## Run it

```text
$ nssim run sim-scenarios/x.toml
```

## What to look at in the timeline

```text
$ nssim replay sim-scenarios/x.toml nss1_x --timeline
```

## Questions for the class

**1.** One?

<details>
<summary>Answer</summary>

Yes.

</details>

**2.** Two?

<details>
<summary>Answer</summary>

Yes.

</details>

**3.** Three?

<details>
<summary>Answer</summary>

Yes.

</details>

## Exercise

Predict.

<details>
<summary>Answer</summary>

```text
$ nssim run sim-scenarios/x.toml --kernel v6.2 --patch +ipc-wait-pending-free
ok   x [v6.2] pass
```

</details>
";

#[test]
fn the_check_finds_what_a_lesson_lacks() {
    assert_eq!(problems(GOOD), Vec::<String>::new());
    let broken = [
        // An answer fewer.
        GOOD.replacen(
            "<details>\n<summary>Answer</summary>\n\nYes.\n\n</details>",
            "",
            1,
        ),
        // An answer more.
        GOOD.replacen(
            "**3.**",
            "<details>\n<summary>Answer</summary>\n\nYes.\n\n</details>\n\n**3.**",
            1,
        ),
        // No exercise heading.
        GOOD.replace("## Exercise", "## Something else"),
        // The exercise's command runs the scenario as it is.
        GOOD.replace(" --kernel v6.2 --patch +ipc-wait-pending-free", ""),
        // The exercise's command is shown, but not in its folded answer.
        format!(
            "{}## Exercise\n\n```text\n$ nssim run x.toml --kernel v6.2\n```\n\n\
             <details>\n<summary>Answer</summary>\n\nIt passes.\n\n</details>\n",
            GOOD.split("## Exercise").next().unwrap()
        ),
        // The exercise's command is not in a ```text block.
        GOOD.replace(
            "```text\n$ nssim run sim-scenarios/x.toml --kernel",
            "```sh\n$ nssim run sim-scenarios/x.toml --kernel",
        ),
        // No timeline.
        GOOD.replace(" --timeline", ""),
    ];
    for (i, text) in broken.iter().enumerate() {
        assert_ne!(text, GOOD, "broken lesson {i} is the good one");
        assert!(
            !problems(text).is_empty(),
            "broken lesson {i} passes the check:\n{text}"
        );
    }
}

/// The `(target.md)` links of a Markdown text.
fn links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')'))
        .map(|(target, _)| target.to_string())
        .collect()
}

#[test]
fn the_lessons_are_in_their_index_the_summary_and_the_book_readme() {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).expect(p);
    let index = links(&read("docs/lessons/README.md"));
    let summary = links(&read("docs/SUMMARY.md"));
    let readme = links(&read("docs/README.md"));
    for file in lessons() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        assert!(index.contains(&name), "docs/lessons/README.md: no {name}");
        let path = format!("lessons/{name}");
        assert!(summary.contains(&path), "docs/SUMMARY.md: no {path}");
        assert!(readme.contains(&path), "docs/README.md: no {path}");
    }
    assert!(summary.contains(&"lessons/README.md".to_string()));
}

#[test]
fn the_book_readme_lists_every_chapter_of_the_summary() {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).expect(p);
    let readme = links(&read("docs/README.md"));
    for chapter in links(&read("docs/SUMMARY.md")) {
        if chapter == "README.md" {
            continue;
        }
        assert!(
            readme.contains(&chapter),
            "docs/README.md does not list {chapter}, a chapter of docs/SUMMARY.md"
        );
    }
}
