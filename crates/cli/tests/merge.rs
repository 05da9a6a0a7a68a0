//! Three shards of one run and `nssim merge` print exactly what the
//! unsharded run prints, in JSON, text and JUnit, for random, PCT, dfs and
//! fair runs; every shard record carries its shard and global iteration,
//! and a set of files that is not the shards of one run is refused.

use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use support::{nssim, root, stderr, stdout, timeless, timeless_junit};

/// Runs of every strategy: PCT and random runs that fail in different
/// shards at different iterations, random runs that pass, a dfs and fair
/// runs.
const SCENARIOS: [&str; 3] = [
    "sim-scenarios/ipc-v6.3-window.toml",
    "sim-scenarios/ipc-alloc-vs-free.toml",
    "sim-scenarios/uevent-enobufs.toml",
];

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nssim-merge-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run"];
    args.extend(SCENARIOS);
    args.extend(extra);
    nssim(&args)
}

/// The shards' JSON outputs, written to files in `dir`.
fn shard_files(dir: &Path) -> Vec<String> {
    (1..=3)
        .map(|k| {
            let out = run(&["--shard", &format!("{k}/3"), "--format", "json"]);
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            let file = dir.join(format!("shard-{k}.json"));
            std::fs::write(&file, &out.stdout).unwrap();
            file.display().to_string()
        })
        .collect()
}

fn merge(files: &[String], extra: &[&str]) -> std::process::Output {
    let mut args = vec!["merge"];
    // In another order than 1, 2, 3: the shard is in the records.
    args.extend([&files[2], &files[0], &files[1]].map(String::as_str));
    args.extend(extra);
    nssim(&args)
}

#[test]
fn three_shards_merge_into_the_unsharded_run() {
    let dir = scratch("same");
    let files = shard_files(&dir);
    let whole = run(&["--format", "json"]);
    let merged = merge(&files, &["--format", "json"]);
    assert_eq!(merged.status.code(), whole.status.code());
    assert_eq!(
        timeless(&stdout(&merged)),
        timeless(&stdout(&whole)),
        "JSON, byte for byte but for the wall time"
    );
    assert_eq!(stderr(&merged), stderr(&whole), "the summary line");
    assert_eq!(stdout(&merge(&files, &[])), stdout(&run(&[])), "text");
    let (whole_xml, merged_xml) = (dir.join("whole.xml"), dir.join("merged.xml"));
    run(&["--junit", whole_xml.to_str().unwrap()]);
    merge(&files, &["--junit", merged_xml.to_str().unwrap()]);
    assert_eq!(
        timeless_junit(&std::fs::read_to_string(&merged_xml).unwrap()),
        timeless_junit(&std::fs::read_to_string(&whole_xml).unwrap()),
        "JUnit"
    );
    // The merge is not trivial: the failures came from different shards,
    // and runs that belong to shard 1 are skipped elsewhere.
    let records: Vec<Value> = files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<Value>>()
        })
        .collect();
    let reporting = |kernel: &str| -> Vec<(String, u64)> {
        records
            .iter()
            .filter(|r| r["kernel"] == kernel && r["outcome"] == "violation")
            .map(|r| {
                (
                    r["shard"].as_str().unwrap().to_string(),
                    r["iteration"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        reporting("v6.3-pct").len(),
        3,
        "every shard found the PCT window"
    );
    let skipped: Vec<&Value> = records.iter().filter(|r| r["skipped"] == true).collect();
    assert!(skipped
        .iter()
        .any(|r| r["kernel"] == "v6.3" && r["shard"] == "2/3"));
    assert!(skipped.iter().all(|r| r["reason"] == "not in this shard"));
    let shard_xml = dir.join("shard.xml");
    run(&["--shard", "2/3", "--junit", shard_xml.to_str().unwrap()]);
    let xml = std::fs::read_to_string(&shard_xml).unwrap();
    assert!(
        xml.contains(
            "name=\"v6.3\" time=\"0.000\">\n      <skipped message=\"not in this shard\"/>"
        ),
        "{xml}"
    );
    // Every shard searched its own subtrees of each dfs search.
    for kernel in ["v6.3-dfs", "v6.3+fix"] {
        let mut seen = std::collections::BTreeSet::new();
        for r in records.iter().filter(|r| r["kernel"] == kernel) {
            let k: u64 = r["shard"].as_str().unwrap()[..1].parse().unwrap();
            let subtrees = r["dfs_shard"]["subtrees"].as_array().unwrap();
            assert!(!subtrees.is_empty(), "{kernel} in shard {k}");
            for s in subtrees {
                let index = s["index"].as_u64().unwrap();
                assert_eq!(index % 3 + 1, k, "{kernel}: subtree {index}");
                assert!(seen.insert(index), "{kernel}: subtree {index} twice");
            }
        }
        assert_eq!(seen.len() as u64, seen.last().unwrap() + 1, "{kernel}");
    }
    let whole: Vec<Value> = stdout(&run(&["--format", "json"]))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let pct = whole.iter().find(|r| r["kernel"] == "v6.3-pct").unwrap();
    let first = reporting("v6.3-pct").iter().map(|r| r.1).min().unwrap();
    assert_eq!(pct["iteration"], first, "the failure of lowest iteration");
    assert_eq!(pct["executions"], first + 1);
    assert_eq!(pct["shard"], "1/1");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dfs_shards_merge_where_the_budget_runs_out() {
    // Budgets that end the dfs searches of ipc-v6.3-window in their first
    // subtree, further on, and past the failure of v6.3-dfs.
    let dir = scratch("budget");
    let file = SCENARIOS[0];
    for iterations in ["1", "40", "300"] {
        let with = |extra: &[&str]| {
            let mut args = vec!["run", file, "--iterations", iterations];
            args.extend(extra);
            nssim(&args)
        };
        let files: Vec<String> = (1..=3)
            .map(|k| {
                let out = with(&["--shard", &format!("{k}/3"), "--format", "json"]);
                let f = dir.join(format!("{iterations}-{k}.json"));
                std::fs::write(&f, &out.stdout).unwrap();
                f.display().to_string()
            })
            .collect();
        let whole = with(&["--format", "json"]);
        let merged = merge(&files, &["--format", "json"]);
        assert_eq!(merged.status.code(), whole.status.code(), "{iterations}");
        assert_eq!(
            timeless(&stdout(&merged)),
            timeless(&stdout(&whole)),
            "{iterations}: JSON"
        );
        assert_eq!(
            stdout(&merge(&files, &[])),
            stdout(&with(&[])),
            "{iterations}: text"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn files_that_are_not_the_shards_of_one_run_are_refused() {
    let dir = scratch("refused");
    let files = shard_files(&dir);
    let refused = |args: &[&str], want: &str| {
        let mut all = vec!["merge"];
        all.extend(args);
        let out = nssim(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty());
    };
    refused(&[&files[0], &files[1]], "shard 3/3 is missing");
    refused(&[&files[0], &files[0], &files[2]], "are both shard 1/3");
    let cut = dir.join("cut.json");
    let text = std::fs::read_to_string(&files[1]).unwrap();
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let cut = cut.display().to_string();
    refused(&[&files[0], &cut, &files[2]], "cut.json:");
    let other = dir.join("other.json");
    let one = nssim(&["run", SCENARIOS[0], "--shard", "2/3", "--format", "json"]);
    std::fs::write(&other, &one.stdout).unwrap();
    let other = other.display().to_string();
    refused(&[&files[0], &other, &files[2]], "not the shards of one run");
    // A random run's record of an iteration its shard does not run, and
    // of one no run reaches (u64::MAX is shard 1's: 3 divides 2^64 - 1).
    let shifted = |file: &str, name: &str, to: &dyn Fn(u64) -> u64| {
        let text = std::fs::read_to_string(file).unwrap();
        let mut changed = false;
        let lines: Vec<String> = text
            .lines()
            .map(|line| {
                let mut v: Value = serde_json::from_str(line).unwrap();
                if !changed && v["strategy"] == "random" {
                    changed = true;
                    v["iteration"] = to(v["iteration"].as_u64().unwrap()).into();
                }
                v.to_string()
            })
            .collect();
        assert!(changed, "{file} has a random run");
        let out = dir.join(name);
        std::fs::write(&out, lines.join("\n")).unwrap();
        out.display().to_string()
    };
    let wrong = shifted(&files[1], "wrong.json", &|i| i + 1);
    refused(
        &[&files[0], &wrong, &files[2]],
        "shard 2/3 reports iteration",
    );
    refused(&[&files[0], &wrong, &files[2]], "which shard 3/3 runs");
    let past = shifted(&files[0], "past.json", &|_| u64::MAX);
    refused(
        &[&past, &files[1], &files[2]],
        "past the last a run can have",
    );
    // A dfs part that claims another shard's subtree.
    let stolen = dir.join("stolen.json");
    let text = std::fs::read_to_string(&files[1]).unwrap();
    assert!(text.contains("\"index\":1}"), "shard 2 searched subtree 1");
    std::fs::write(&stolen, text.replacen("\"index\":1}", "\"index\":2}", 1)).unwrap();
    let stolen = stolen.display().to_string();
    refused(
        &[&files[0], &stolen, &files[2]],
        "shard 2/3 lists subtree 2, which is shard 3's",
    );
    refused(
        &[&root().join("README.md").display().to_string()],
        "README.md:1:",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A record's `as_expected` is judged again on the merged record, never
/// taken from a shard's file: three shards of a run that found a violation
/// where a pass is expected merge into a failure, whatever the files say.
#[test]
fn expectations_are_judged_on_the_merged_record_not_read_from_the_files() {
    let dir = scratch("rejudged");
    let scenario = dir.join("expects-pass.toml");
    let text = std::fs::read_to_string(root().join("sim-scenarios/ipc-alloc-vs-free.toml"))
        .unwrap()
        .replace(
            "expect = { outcome = \"violation\", invariant = \"ipc.no_false_enospc\" }",
            "expect = \"pass\"",
        );
    std::fs::write(&scenario, text).unwrap();
    let files: Vec<String> = (1..=3)
        .map(|k| {
            let out = nssim(&[
                "run",
                scenario.to_str().unwrap(),
                "--kernel",
                "v6.2",
                "--shard",
                &format!("{k}/3"),
                "--format",
                "json",
            ]);
            // Each record says it is as expected, as a tampered file would.
            let forged = stdout(&out).replace("\"as_expected\":false", "\"as_expected\":true");
            let file = dir.join(format!("shard-{k}.json"));
            std::fs::write(&file, forged).unwrap();
            file.display().to_string()
        })
        .collect();
    let merged = merge(&files, &[]);
    assert_eq!(merged.status.code(), Some(1), "{}", stdout(&merged));
    assert!(
        stdout(&merged).contains("violation (expected pass)"),
        "{}",
        stdout(&merged)
    );
}

/// A one-run shard file (the v5.6 run of `ipc-alloc-vs-free`) with `from`
/// replaced by `to` in its record, given to `nssim merge`.
fn merge_forged(name: &str, from: &str, to: &str) -> std::process::Output {
    let dir = scratch(name);
    let out = nssim(&[
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--kernel",
        "v5.6",
        "--format",
        "json",
    ]);
    let forged = stdout(&out).replace(from, to);
    assert_ne!(forged, stdout(&out), "`{from}` was replaced");
    let file = dir.join("shard.json");
    std::fs::write(&file, forged).unwrap();
    nssim(&["merge", file.to_str().unwrap()])
}

/// A shard file's names reach the terminal escaped: an escape sequence in
/// a scenario's name (a window title, a screen clear) is shown, not sent.
#[test]
fn control_characters_of_a_shard_file_are_escaped() {
    let merged = merge_forged(
        "controls",
        "\"scenario\":\"ipc-alloc-vs-free\"",
        "\"scenario\":\"ipc\\u001b]0;owned\\u0007\\u001b[2J\"",
    );
    let text = stdout(&merged);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(text.contains("ipc\\u{1b}]0;owned"), "{text}");
}

/// An error about a shard file quotes what the parser choked on only so
/// far: a 200 KB string in the wrong field is cut, not echoed whole, and
/// its control characters are escaped.
#[test]
fn an_error_about_a_long_value_quotes_it_cut() {
    let long = format!("\\u001b[2J{}", "A".repeat(200_000));
    let merged = merge_forged(
        "long-value",
        "\"executions\":",
        &format!("\"executions\":\"{long}\",\"x\":"),
    );
    assert_eq!(merged.status.code(), Some(2), "{}", stderr(&merged));
    let err = stderr(&merged);
    assert!(
        err.contains("not a record of `nssim run --format json`"),
        "{err}"
    );
    assert!(err.len() < 2_000, "{} bytes of error", err.len());
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

/// Shards made with another seed, budget or scenario content are not
/// shards of one run: the merge refuses them (exit status 2), naming the
/// first difference, instead of printing what neither run would.
#[test]
fn shards_of_different_runs_are_refused_naming_the_first_difference() {
    let dir = scratch("origins");
    let scenario = dir.join("window.toml");
    let original = std::fs::read_to_string(root().join(SCENARIOS[0])).unwrap();
    std::fs::write(&scenario, &original).unwrap();
    let scenario = scenario.display().to_string();
    let shard = |k: u64, extra: &[&str]| {
        let shard = format!("{k}/3");
        let mut args = vec![
            "run",
            scenario.as_str(),
            "--shard",
            &shard,
            "--format",
            "json",
        ];
        args.extend(extra);
        let out = nssim(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let file = dir.join(format!("{k}{}.json", extra.join("")));
        std::fs::write(&file, &out.stdout).unwrap();
        file.display().to_string()
    };
    let refused = |files: [&String; 3], want: &str| {
        let out = nssim(&["merge", files[0], files[1], files[2]]);
        assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
        assert!(stderr(&out).contains(want), "{}", stderr(&out));
        assert!(stdout(&out).is_empty());
    };
    let (one, two, three) = (
        shard(1, &["--seed", "1"]),
        shard(2, &["--seed", "9"]),
        shard(3, &["--seed", "9"]),
    );
    refused([&one, &two, &three], "was run with seed 9 where");
    let fewer = shard(2, &["--seed", "1", "--iterations", "50"]);
    let three_same = shard(3, &["--seed", "1"]);
    refused(
        [&one, &fewer, &three_same],
        "was run with iterations 50 where",
    );
    // The same file, an expectation changed between shards.
    std::fs::write(
        &scenario,
        original.replacen(
            "expect = { outcome = \"pass\", exhausted = true }",
            "expect = { outcome = \"violation\", invariant = \"ipc.no_false_enospc\" }",
            1,
        ),
    )
    .unwrap();
    let edited = shard(2, &["--seed", "1"]);
    refused([&one, &edited, &three_same], "was run with scenario ");
    std::fs::write(&scenario, &original).unwrap();
    let same = shard(2, &["--seed", "1"]);
    let merged = nssim(&["merge", &one, &same, &three_same]);
    assert_ne!(merged.status.code(), Some(2), "{}", stderr(&merged));
    std::fs::remove_dir_all(&dir).unwrap();
}
