//! User namespaces in the simulated world: concurrent map writers, the
//! create-and-drop loop under max_user_namespaces, setns.

use kernel::setup::{
    clone_flags::CLONE_NEWUSER, Op, Setup, SysctlSpec, TaskSpec, UserNsSpec, UsernsFile,
};
use kernel::{resolve_patches, Results};
use sim::{Outcome, StrategySpec};

fn task(name: &str, instances: u32, userns: &str, uid: u32, ops: Vec<Op>) -> TaskSpec {
    TaskSpec {
        instances,
        ..TaskSpec::new(name, userns, uid, ops)
    }
}

/// One process in the initial namespace that `repeat` times creates a user
/// namespace and exits (a shell loop of `unshare -U true`).
fn looper(repeat: u64) -> TaskSpec {
    TaskSpec {
        repeat,
        ..task(
            "looper",
            1,
            "init",
            0,
            vec![Op::UnshareAndExit {
                flags: CLONE_NEWUSER,
            }],
        )
    }
}

fn write_of(target: &str, file: UsernsFile, text: &str) -> Op {
    let (target, text) = (target.to_string(), text.to_string());
    match file {
        UsernsFile::UidMap => Op::WriteUidMapOf { target, text },
        UsernsFile::GidMap => Op::WriteGidMapOf { target, text },
        UsernsFile::Setgroups => Op::WriteSetgroupsOf { target, text },
    }
}

fn run(setup: &Setup, profile: &str, strategy: StrategySpec, seed: u64) -> (Outcome, Results) {
    let out = kernel::explore_profile(setup, profile, strategy, seed, 1);
    (out.explore.report.outcome, out.results)
}

fn count(results: &Results, result: &str) -> u64 {
    results
        .values()
        .flat_map(|ops| ops.values())
        .map(|s| s.results.get(result).copied().unwrap_or(0))
        .sum()
}

fn container() -> UserNsSpec {
    UserNsSpec {
        name: "container".into(),
        parent: "init".into(),
        owner: 1000,
    }
}

/// A process `inside` of the container that exits after 1 us, and
/// `writers` in the initial namespace that write its id files.
fn writers_of_an_exiting_process(writers: Vec<TaskSpec>) -> Setup {
    let inside = task("inside", 1, "container", 1000, vec![Op::Sleep { ns: 1000 }]);
    Setup {
        user_namespaces: vec![container()],
        sysctls: vec![],
        tasks: std::iter::once(inside).chain(writers).collect(),
        ..Setup::default()
    }
}

#[test]
fn of_concurrent_map_writers_exactly_one_succeeds_in_every_interleaving() {
    let setup = writers_of_an_exiting_process(vec![task(
        "writer",
        4,
        "init",
        0,
        vec![write_of("inside", UsernsFile::UidMap, "0 100000 65536\n")],
    )]);
    let mut one_won = 0;
    for seed in 0..40 {
        let (outcome, results) = run(&setup, "v6.3", StrategySpec::Random, seed);
        assert_eq!(outcome, Outcome::Pass, "seed {seed}");
        // A writer that comes after `inside` has been reaped finds no
        // /proc/PID (ENOENT), or loses it during the walk (ESRCH) or just
        // before the file's open (EINVAL); of the others exactly one wins
        // the map.
        let (ok, eperm) = (count(&results, "ok"), count(&results, "EPERM"));
        let gone: u64 = ["ENOENT", "ESRCH", "EINVAL"]
            .iter()
            .map(|e| count(&results, e))
            .sum();
        assert_eq!(ok + eperm + gone, 4, "seed {seed}: {results:?}");
        assert_eq!(ok, u64::from(gone < 4), "seed {seed}: {results:?}");
        one_won += u64::from(gone == 0);
    }
    assert!(
        one_won > 0,
        "some seed runs every writer before `inside` exits"
    );
}

/// The results one task's ops gave, over many random schedules.
fn results_seen(setup: &Setup, task: &str, seeds: u64) -> std::collections::BTreeSet<String> {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..seeds {
        let (outcome, results) = run(setup, "v6.16", StrategySpec::Random, seed);
        assert_eq!(outcome, Outcome::Pass, "seed {seed}");
        for stats in results.get(task).into_iter().flat_map(|ops| ops.values()) {
            seen.extend(stats.results.keys().cloned());
        }
    }
    seen
}

/// A task reaped while another opens its `/proc/PID` id file: before the
/// pid's lookup the file is not there (ENOENT); between the lookup and the
/// directory's permission check the walk fails with ESRCH; between the walk
/// and the file's own open, `proc_id_map_open` fails with EINVAL and
/// `proc_setgroups_open` with ESRCH. The running kernel shows all of them
/// in `sim-scenarios/idmap-write-while-reaped.toml`.
#[test]
fn a_writer_racing_the_reap_of_its_target_sees_each_window() {
    let setup = writers_of_an_exiting_process(vec![
        task(
            "mapper",
            1,
            "init",
            0,
            vec![write_of("inside", UsernsFile::UidMap, "0 100000 65536\n")],
        ),
        task(
            "grouper",
            1,
            "init",
            0,
            vec![write_of("inside", UsernsFile::Setgroups, "deny")],
        ),
    ]);
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
    assert_eq!(
        results_seen(&setup, "mapper", 300),
        set(&["EINVAL", "ENOENT", "ESRCH", "ok"])
    );
    assert_eq!(
        results_seen(&setup, "grouper", 300),
        set(&["ENOENT", "ESRCH", "ok"])
    );
}

/// Between `exit_mm` and its reap an exiting task's `/proc/PID` files
/// belong to root (`task_dump_owner` of a task with no mm): a peer with
/// its euid, which may open them before, is refused (EACCES) in that
/// window, and finds no file (ENOENT) after the reap. The running kernel
/// shows the window in generated scenarios (`nssim gen --check kernel`).
#[test]
fn an_exiting_task_s_id_files_belong_to_root_until_it_is_reaped() {
    let setup = writers_of_an_exiting_process(vec![task(
        "peer",
        1,
        "init",
        1000,
        vec![write_of("inside", UsernsFile::UidMap, "0 1000 1\n")],
    )]);
    let seen = results_seen(&setup, "peer", 300);
    for result in ["ok", "EACCES", "ENOENT"] {
        assert!(seen.contains(result), "{result} not among {seen:?}");
    }
}

#[test]
fn an_unshare_loop_gets_enospc_while_frees_are_pending() {
    let setup = |max: i64| Setup {
        user_namespaces: vec![],
        sysctls: vec![SysctlSpec {
            userns: "init".into(),
            name: "user.max_user_namespaces".into(),
            value: max,
        }],
        tasks: vec![looper(20)],
        ..Setup::default()
    };
    // The fourth unshare fails although no namespace is in use: a false
    // ENOSPC, where the run stops.
    let (outcome, results) = run(&setup(3), "v6.3", StrategySpec::Fair, 1);
    assert!(
        matches!(&outcome, Outcome::Violation { invariant, .. } if invariant == "userns.no_false_enospc"),
        "{outcome:?}"
    );
    assert!(count(&results, "ENOSPC") > 0, "{results:?}");
    assert!(count(&results, "ok") >= 3, "{results:?}");
    // No limit before v4.9; a large limit is never reached.
    let (_, results) = run(&setup(3), "v4.8", StrategySpec::Fair, 1);
    assert_eq!(count(&results, "ok"), 20);
    let (_, results) = run(&setup(1000), "v6.3", StrategySpec::Fair, 1);
    assert_eq!(count(&results, "ok"), 20);
}

#[test]
fn nesting_stops_at_level_33_with_the_errno_of_the_era() {
    // Each level maps root onto the parent's root so the next may be made.
    let ops = kernel::setup::nested_user_namespaces(34);
    let setup = Setup {
        user_namespaces: vec![],
        sysctls: vec![],
        tasks: vec![task("nester", 1, "init", 0, ops)],
        ..Setup::default()
    };
    for (profile, errno) in [("v6.3", "ENOSPC"), ("v4.8", "EUSERS")] {
        let (outcome, results) = run(&setup, profile, StrategySpec::Fair, 1);
        assert_eq!(outcome, Outcome::Pass, "{profile}");
        let unshare = &results["nester"]["unshare(CLONE_NEWUSER)"];
        assert_eq!(
            unshare.results.get("ok"),
            Some(&33),
            "{profile}: {unshare:?}"
        );
        assert_eq!(
            unshare.results.get(errno),
            Some(&1),
            "{profile}: {unshare:?}"
        );
    }
}

#[test]
fn setns_into_a_user_namespace_needs_cap_sys_admin_there() {
    let setup = Setup {
        user_namespaces: vec![container()],
        sysctls: vec![],
        tasks: vec![
            task("inside", 1, "container", 1000, vec![Op::Sleep { ns: 1000 }]),
            task(
                "root",
                1,
                "init",
                0,
                vec![Op::SetnsUser {
                    target: "inside".into(),
                }],
            ),
            task(
                "stranger",
                1,
                "init",
                2000,
                vec![Op::SetnsUser {
                    target: "inside".into(),
                }],
            ),
            task(
                "self",
                1,
                "container",
                1000,
                vec![Op::SetnsUser {
                    target: "inside".into(),
                }],
            ),
        ],
        ..Setup::default()
    };
    let (_, results) = run(&setup, "v6.3", StrategySpec::Fair, 1);
    let got = |t: &str| {
        results[t]["setns_user(inside)"]
            .results
            .keys()
            .next()
            .cloned()
    };
    assert_eq!(got("root").as_deref(), Some("ok"));
    // Another user's /proc/PID/ns/user does not even open.
    assert_eq!(got("stranger").as_deref(), Some("EACCES"));
    assert_eq!(got("self").as_deref(), Some("EINVAL"));
}

#[test]
fn the_newest_profile_has_the_newest_userns_behaviour() {
    let newest = kernel::catalog::PROFILES.last().unwrap().name;
    assert_eq!(
        resolve_patches(newest, &[]).unwrap().userns(),
        userns::UsernsPatches::NEWEST
    );
}

/// The running kernel, in a child user namespace with
/// max_user_namespaces = 3: how many of 100 `unshare -U true` fail.
fn kernel_loop_failures() -> Result<u32, String> {
    let script = r#"
        echo 3 > /proc/sys/user/max_user_namespaces || exit 90
        fail=0; i=0
        while [ $i -lt 100 ]; do
            unshare -U true 2>/dev/null || fail=$((fail+1))
            i=$((i+1))
        done
        echo "fail $fail"
    "#;
    let out = std::process::Command::new("timeout")
        .args(["60", "unshare", "-U", "-r", "sh", "-c", script])
        .output()
        .map_err(|e| format!("cannot run unshare: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("fail "))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| {
            format!(
                "this host cannot run the probe: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })
}

/// The profile of the running kernel answers the loop as the running
/// kernel does: some `unshare -U true` fail with ENOSPC although at most
/// one namespace is in use.
#[test]
fn the_running_kernel_also_fails_the_unshare_loop_while_frees_are_pending() {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let Some(profile) = kernel::catalog::profile_for_release(release.trim()) else {
        println!("skip: no profile models kernel {release}");
        return;
    };
    let setup = Setup {
        user_namespaces: vec![],
        sysctls: vec![SysctlSpec {
            userns: "init".into(),
            name: "user.max_user_namespaces".into(),
            value: 3,
        }],
        tasks: vec![looper(100)],
        ..Setup::default()
    };
    let (_, results) = run(&setup, profile.name, StrategySpec::Fair, 1);
    let model_failures = count(&results, "ENOSPC");
    match kernel_loop_failures() {
        Ok(kernel_failures) => {
            println!(
                "model ({}): {model_failures} of 100 fail; kernel: {kernel_failures}",
                profile.name
            );
            assert!(model_failures > 0 && kernel_failures > 0);
        }
        Err(skip) => println!("skip: {skip}"),
    }
}

/// What `reader` read of `maker`'s uid_map, in every schedule of an
/// exhaustive search (the values, as text).
fn maps_read(setup: &Setup) -> Vec<String> {
    let patches = resolve_patches("v6.16", &[]).unwrap();
    let invariants = kernel::catalog::all_invariants();
    let strategy = StrategySpec::Dfs {
        preemption_bound: 3,
    };
    let mut explore = sim::ExploreConfig::new(strategy, 0, 100_000, sim::ExecConfig::default());
    explore.shrink = false;
    let spec = kernel::RunSpec {
        setup,
        patches: &patches,
        invariants: &invariants,
        explore,
    };
    let outcome: kernel::OutcomeOf = std::sync::Arc::new(|r: &Results| {
        format!("{:?}", r["reader"]["read_uid_map_of(maker)"].values)
    });
    let (report, seen) = kernel::explore_outcomes(&spec, &outcome);
    assert!(report.exhausted);
    seen.into_keys().collect()
}

/// A scenario's event orders tasks in every schedule the search explores:
/// without it, a reader sees the maker's uid_map before its unshare (the
/// initial namespace's) or after (none written); waiting for the maker's
/// post, only after.
#[test]
fn a_wait_for_a_post_orders_tasks_in_every_schedule() {
    let read = Op::ReadUidMapOf {
        target: "maker".into(),
    };
    let unshare = Op::Unshare {
        flags: CLONE_NEWUSER,
    };
    let (post, wait) = (
        Op::Post {
            event: "made".into(),
        },
        Op::Wait {
            event: "made".into(),
        },
    );
    let setup = |maker: Vec<Op>, reader: Vec<Op>| Setup {
        tasks: vec![
            task("maker", 1, "init", 0, maker),
            task("reader", 1, "init", 0, reader),
        ],
        ..Setup::default()
    };
    let unordered = setup(vec![unshare.clone()], vec![read.clone()]);
    assert_eq!(maps_read(&unordered), ["[0, 0, 4294967295]", "[]"]);
    let ordered = setup(vec![unshare, post], vec![wait, read]);
    assert_eq!(maps_read(&ordered), ["[]"]);
}
