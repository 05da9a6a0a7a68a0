//! What a new user meets in the first hour: a duration without a unit, a
//! scenario name with a typo, a kernel written without its `v`, `nssim
//! run` with nothing to run, the idmap checker's errors, and one broken
//! file in a directory of good ones.

use crate::support;

use support::{nssim, stderr, stdout};

/// `--timeout 10` was ten nanoseconds, and every run ended `limit` at
/// step 0; a number without a unit is now refused with the units to use.
#[test]
fn a_timeout_without_a_unit_is_refused_with_a_hint() {
    for args in [
        vec!["run", "ipc-alloc-vs-free", "--timeout", "10"],
        vec!["replay", "ipc-alloc-vs-free", "nss1_x", "--timeout", "10"],
        vec!["gen", "--check", "model", "--timeout", "10"],
    ] {
        let o = nssim(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("--timeout `10` has no unit"), "{err}");
        assert!(err.contains("`10s`"), "{err}");
    }
}

#[test]
fn a_scenario_name_with_a_typo_gets_a_suggestion() {
    let o = nssim(&["run", "ipc-alloc-vs-fre"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `ipc-alloc-vs-free`?"),
        "{}",
        stderr(&o)
    );
    let o = nssim(&["replay", "regressions/fork-vs-proc-wlak", "nss1_x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `regressions/fork-vs-proc-walk`?"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_kernel_without_its_v_gets_a_suggestion() {
    let o = nssim(&["run", "ipc-alloc-vs-free", "--kernel", "6.2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `v6.2`?"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_with_nothing_to_run_mentions_the_library() {
    let o = nssim(&["run"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with("error: `nssim run` needs something to run"),
        "{err}"
    );
    assert!(err.contains("`nssim run --library`"), "{err}");
}

#[test]
fn the_idmap_checker_s_errors_read_like_the_rest() {
    let o = nssim(&["idmap", "check", "/nonexistent/map"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("error: cannot read /nonexistent/map"),
        "{}",
        stderr(&o)
    );
}

/// One file that does not parse in a directory of good ones: it is
/// reported, the others run, and the command ends with exit status 2.
#[test]
fn a_broken_file_in_a_directory_does_not_stop_the_others() {
    let dir = std::env::temp_dir().join(format!("nssim-first-hour-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let good =
        std::fs::read_to_string(support::root().join("sim-scenarios/deadlock-abba.toml")).unwrap();
    std::fs::write(dir.join("a-good.toml"), &good).unwrap();
    std::fs::write(
        dir.join("b-broken.toml"),
        "name = \"broken\"\nsummary = 3\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("c-good.toml"),
        good.replace("deadlock-abba", "deadlock-abba-2"),
    )
    .unwrap();
    let o = nssim(&["run", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(err.contains("b-broken.toml"), "{err}");
    assert!(err.contains("1 scenario file could not be read"), "{err}");
    assert!(
        out.contains("deadlock-abba ") && out.contains("deadlock-abba-2"),
        "{out}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `run` counted the first failure from 0 and printed `ENOSPC 1, ok 3`,
/// the kernel side from 1 and `1 ENOSPC, 19 ok`: both say it one way now,
/// the count first and the call counted from 1.
#[test]
fn run_and_the_kernel_side_say_results_the_same_way() {
    let o = nssim(&["run", "ipc-alloc-vs-free", "--kernel", "v6.2"]);
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.contains("looper: unshare(CLONE_NEWIPC):"))
        .unwrap_or_else(|| panic!("{out}"));
    let stats = line.split("): ").nth(1).unwrap();
    let (counts, first) = stats.split_once(" (first failure: call ").unwrap();
    for item in counts.split(", ") {
        let (n, result) = item.split_once(' ').unwrap();
        assert!(n.parse::<u64>().is_ok(), "count first: {line}");
        assert!(result == "ok" || result.starts_with('E'), "{line}");
    }
    let call: u64 = first.trim_end_matches(')').parse().unwrap();
    let oks: u64 = counts
        .split(", ")
        .find_map(|i| i.strip_suffix(" ok"))
        .unwrap()
        .parse()
        .unwrap();
    // The loop fails once, after its successes: the call after the last ok.
    assert_eq!(call, oks + 1, "counted from 1: {line}");
}

/// A replayed execution's counters show their value, zero too (the
/// timeline shows 0 where the steps printed nothing).
#[test]
fn a_replay_shows_a_counter_of_zero() {
    let o = nssim(&[
        "run",
        "ipc-alloc-vs-free",
        "--kernel",
        "v6.2",
        "--format",
        "json",
    ]);
    let record: serde_json::Value =
        serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    let token = record["token"].as_str().unwrap();
    let o = nssim(&["replay", "ipc-alloc-vs-free", token]);
    let out = stdout(&o);
    let counters: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("= counter:ipc namespaces pending free"))
        .collect();
    assert!(!counters.is_empty(), "{out}");
    for line in &counters {
        let value = line.rsplit(' ').next().unwrap();
        assert!(value.parse::<u64>().is_ok(), "no value: {line:?}");
    }
    assert!(counters.iter().any(|l| l.ends_with(" 0")), "{counters:?}");
}

/// `export --c` without `--kernel` took the first `[[kernel]]` entry,
/// v5.6 for the ipc race, whose program shows no bug; the reproducer is
/// now of the first entry that expects a violation, and says so.
#[test]
fn an_exported_reproducer_is_of_the_entry_that_shows_the_bug() {
    let o = nssim(&["export", "ipc-alloc-vs-free", "--c"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let program = stdout(&o);
    let comment = program.split("*/").next().unwrap();
    assert!(
        comment.contains("Kernel entry `v6.2` (profile v6.2)"),
        "{comment}"
    );
    let flat = comment
        .lines()
        .map(|l| l.trim_start_matches(" *").trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flat.contains("expects violation of ipc.no_false_enospc"),
        "{comment}"
    );
}

/// `nssim ops` lists every op a scenario can use, from the declarations,
/// each with a signature the scenario parser accepts the name of.
#[test]
fn ops_lists_every_declared_op() {
    let o = nssim(&["ops", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let listed: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let declared: Vec<&str> = kernel::ops::OPS.iter().map(|op| op.name).collect();
    let names: Vec<&str> = listed.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, declared);
    for v in &listed {
        let signature = v["signature"].as_str().unwrap();
        assert!(signature.starts_with(&format!("{}(", v["name"].as_str().unwrap())));
        assert!(!v["summary"].as_str().unwrap().is_empty(), "{v}");
    }
    let text = stdout(&nssim(&["ops"]));
    assert!(text.contains("setns_net(task)"), "{text}");
    assert!(text.contains("kernel: "), "{text}");
}
