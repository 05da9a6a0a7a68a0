//! The scenario library built into the binary, used from a directory
//! that is not the checkout: listed, shown, run by name and whole, and
//! replayed, with the records a run in the checkout prints.

use crate::support;

use support::{empty_dir, nssim, nssim_elsewhere, root, stderr, stdout, timeless};

#[test]
fn scenarios_lists_every_file_of_the_library_with_its_summary() {
    let dir = empty_dir("list");
    let o = nssim_elsewhere(&dir, &["scenarios", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let listed: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    // The files directly in the library's directory and in its
    // regressions, in the order of their paths below it, as a directory is
    // run.
    let toml_names = |dir: &str, prefix: &str| -> Vec<String> {
        std::fs::read_dir(root().join(dir))
            .expect("the checkout's library")
            .filter_map(|e| {
                let name = e.ok()?.file_name().to_string_lossy().into_owned();
                name.ends_with(".toml").then(|| format!("{prefix}{name}"))
            })
            .collect()
    };
    let mut on_disk = toml_names("sim-scenarios", "");
    on_disk.extend(toml_names("sim-scenarios/regressions", "regressions/"));
    on_disk.sort();
    let on_disk: Vec<&str> = on_disk
        .iter()
        .map(|n| n.trim_end_matches(".toml"))
        .collect();
    let names: Vec<&str> = listed
        .iter()
        .map(|l| l["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(names, on_disk);
    assert!(listed
        .iter()
        .all(|l| !l["summary"].as_str().unwrap_or("").is_empty()));
    // `show` prints the file as it is.
    let o = nssim_elsewhere(&dir, &["scenarios", "show", "deadlock-abba"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let file =
        std::fs::read_to_string(root().join("sim-scenarios/deadlock-abba.toml")).expect("readable");
    assert_eq!(stdout(&o), file);
    let o = nssim_elsewhere(&dir, &["scenarios", "show", "no-such-scenario"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`nssim scenarios` lists them"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_library_runs_from_any_directory_as_in_the_checkout() {
    let dir = empty_dir("run");
    let args = [
        "--iterations",
        "30",
        "--no-shrink",
        "--jobs",
        "1",
        "--format",
        "json",
    ];
    fn with<'a>(first: &[&'a str], args: &[&'a str]) -> Vec<&'a str> {
        [first, args].concat()
    }
    // `run --library` from elsewhere is held to the checkout's run by
    // `the_whole_library_runs_as_expected_and_deterministically`.
    let checkout = nssim(&with(&["run", "sim-scenarios/"], &args));
    let elsewhere = nssim_elsewhere(&dir, &with(&["run", "sim-scenarios/"], &args));
    assert_eq!(
        elsewhere.status.code(),
        checkout.status.code(),
        "{}",
        stderr(&elsewhere)
    );
    assert_eq!(timeless(&stdout(&elsewhere)), timeless(&stdout(&checkout)));
    // One scenario by name, as expected, and the replay command it prints
    // works there too.
    let o = nssim_elsewhere(&dir, &["run", "ipc-alloc-vs-free", "--kernel", "v6.2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let replay = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: nssim "))
        .unwrap_or_else(|| panic!("a replay command:\n{text}"));
    let o = nssim_elsewhere(&dir, &replay.split(' ').collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(0), "{replay}: {}", stderr(&o));
    // A path that is neither on the disk nor built in says both.
    let o = nssim_elsewhere(&dir, &["run", "no-such-scenario.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no such file or directory"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("nor is it a built-in scenario"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn conformance_lists_its_cases_from_any_directory() {
    let dir = empty_dir("conformance");
    let o = nssim_elsewhere(&dir, &["conformance", "--list", "--format", "json"]);
    let checkout = nssim(&["conformance", "--list", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), stdout(&checkout));
    assert!(stdout(&o).lines().count() > 100);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `nssim history` finds the bugs from the declarations: the v5.14 ucounts
/// race under its fix with the entry that shows it, and no scenario under
/// a fix whose release brought others with it (v5.17's four RLIMIT_NPROC
/// fixes cannot be told apart by `nproc-setuid-execve`'s entries).
#[test]
fn the_history_lists_each_bug_under_the_fix_that_alone_separates_its_entries() {
    let o = nssim(&["history", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let race = rows
        .iter()
        .find(|r| r["scenario"] == "ucounts-put-race")
        .expect("the ucounts race is listed");
    assert_eq!(race["patch"], "ucounts-put-dec-and-lock");
    assert_eq!(
        race["fix"],
        "ucounts: Fix race condition between alloc_ucounts and put_ucounts"
    );
    assert_eq!(race["fails"][0]["kernel"], "v5.14-rc1");
    assert_eq!(race["fails"][0]["expect"], "use-after-free");
    assert!(rows.iter().all(|r| r["scenario"] != "nproc-setuid-execve"));
    for r in &rows {
        assert!(
            !r["fails"].as_array().unwrap().is_empty()
                && !r["passes"].as_array().unwrap().is_empty(),
            "{r}"
        );
    }
}

/// Every error that an op declaring its errors (`errors:` of
/// `declare_ops!`, the format's table of errors) returns in the library's
/// scenarios and the conformance cases is one it declares.
#[test]
fn the_errors_the_scenarios_show_are_the_ones_their_ops_declare() {
    let mut args = vec!["run".to_string(), "--format".into(), "json".into()];
    args.push("sim-scenarios/".into());
    args.push("sim-scenarios/regressions/".into());
    let conformance = root().join("sim-scenarios/conformance");
    let mut subsystems: Vec<String> = std::fs::read_dir(&conformance)
        .expect("the conformance cases")
        .filter_map(|e| {
            Some(format!(
                "sim-scenarios/conformance/{}/",
                e.ok()?.file_name().to_str()?
            ))
        })
        .collect();
    subsystems.sort();
    args.extend(subsystems);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = nssim(&args);
    assert!(matches!(o.status.code(), Some(0)), "{}", stderr(&o));
    let declared = |op: &str| {
        kernel::ops::OPS
            .iter()
            .find(|o| o.name == op)
            .filter(|o| !o.errors.is_empty())
            .map(|o| o.errors.iter().map(|(e, _)| e.name()).collect::<Vec<_>>())
    };
    let mut checked = 0;
    for line in stdout(&o).lines() {
        let record: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let Some(tasks) = record["results"].as_object() else {
            continue;
        };
        for ops in tasks.values() {
            for (label, calls) in ops.as_object().expect("a task's ops") {
                let op = label.split('(').next().unwrap_or(label);
                let Some(errors) = declared(op) else {
                    continue;
                };
                for result in calls["results"].as_object().expect("the results").keys() {
                    checked += 1;
                    assert!(
                        result == "ok" || errors.contains(&result.as_str()),
                        "{}: {label} returned {result}, which `{op}` does not declare ({errors:?})",
                        record["file"]
                    );
                }
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} results of ops that declare errors"
    );
}
