//! The candidate fixes for the user- and network-namespace ENOSPC: a loop
//! that makes and drops one namespace at a time under a limit of 1 gets
//! ENOSPC without them (the dropped namespace is still charged while its
//! deferred free is pending) and none with them, and the invariants judge
//! both ways of the loop as a user would.

use kernel::setup::clone_flags::{CLONE_NEWNET, CLONE_NEWUSER};
use kernel::setup::{Op, Setup, SysctlSpec, TaskSpec};
use kernel::{resolve_patches, ActivePatches, Results, RunOutput, RunSpec};
use sim::{ExecConfig, ExploreConfig, Outcome, StrategySpec};

const CYCLES: u64 = 6;

/// Root of the initial namespace runs `unshare -U true` (or `-n`)
/// `CYCLES` times under a limit of 1 of that kind.
fn create_drop_loop(flags: u64) -> Setup {
    let sysctl = if flags == CLONE_NEWUSER {
        "user.max_user_namespaces"
    } else {
        "user.max_net_namespaces"
    };
    Setup {
        sysctls: vec![SysctlSpec {
            userns: "init".into(),
            name: sysctl.into(),
            value: 1,
        }],
        tasks: vec![TaskSpec {
            repeat: CYCLES,
            ..TaskSpec::new("looper", "init", 0, vec![Op::UnshareAndExit { flags }])
        }],
        ..Setup::default()
    }
}

fn patches(patch: Option<&str>) -> ActivePatches {
    let newest = kernel::catalog::PROFILES.last().unwrap().name;
    let toggles: Vec<(String, bool)> = patch.iter().map(|p| (p.to_string(), true)).collect();
    resolve_patches(newest, &toggles).expect("catalogued patches")
}

fn explore(
    setup: &Setup,
    patches: &ActivePatches,
    invariants: &[String],
    strategy: StrategySpec,
    seed: u64,
    iterations: u64,
) -> RunOutput {
    let mut explore = ExploreConfig::new(strategy, seed, iterations, ExecConfig::default());
    explore.shrink = false;
    kernel::explore_run(&RunSpec {
        setup,
        patches,
        invariants,
        explore,
    })
}

/// The results of the loop's unshares: (ok, ENOSPC).
fn counts(results: &Results, flags: u64) -> (u64, u64) {
    let label = if flags == CLONE_NEWUSER {
        "unshare_and_exit(CLONE_NEWUSER)"
    } else {
        "unshare_and_exit(CLONE_NEWNET)"
    };
    let stats = &results["looper"][label];
    let get = |r: &str| stats.results.get(r).copied().unwrap_or(0);
    (get("ok"), get("ENOSPC"))
}

fn invariant_of(flags: u64) -> &'static str {
    if flags == CLONE_NEWUSER {
        "userns.no_false_enospc"
    } else {
        "netns.no_false_enospc"
    }
}

fn fix_of(flags: u64) -> &'static str {
    if flags == CLONE_NEWUSER {
        "userns-wait-pending-free"
    } else {
        "netns-wait-pending-free"
    }
}

#[test]
fn without_the_fix_the_loop_gets_enospc_and_with_it_none() {
    for flags in [CLONE_NEWUSER, CLONE_NEWNET] {
        let setup = create_drop_loop(flags);
        // Checked for balance only, the unfixed loop runs to its end: the
        // first namespace is made, every later unshare finds it charged.
        let balance = vec!["ucounts.balanced".to_string()];
        let out = explore(&setup, &patches(None), &balance, StrategySpec::Fair, 1, 1);
        assert_eq!(out.explore.report.outcome, Outcome::Pass, "{flags:#x}");
        let (ok, enospc) = counts(&out.results, flags);
        assert_eq!(ok + enospc, CYCLES, "{flags:#x}");
        assert!(enospc > 0, "{flags:#x}: {:?}", out.results);
        // With the fix every unshare succeeds, with every invariant checked.
        let all = kernel::catalog::all_invariants();
        let fixed = patches(Some(fix_of(flags)));
        let out = explore(&setup, &fixed, &all, StrategySpec::Fair, 1, 1);
        assert_eq!(out.explore.report.outcome, Outcome::Pass, "{flags:#x}");
        assert_eq!(counts(&out.results, flags), (CYCLES, 0), "{flags:#x}");
    }
}

#[test]
fn the_unfixed_enospc_is_judged_false() {
    for flags in [CLONE_NEWUSER, CLONE_NEWNET] {
        let setup = create_drop_loop(flags);
        let checked = vec![invariant_of(flags).to_string()];
        let out = explore(&setup, &patches(None), &checked, StrategySpec::Fair, 1, 1);
        let Outcome::Violation { invariant, detail } = &out.explore.report.outcome else {
            panic!("{flags:#x}: {:?}", out.explore.report.outcome);
        };
        assert_eq!(invariant, invariant_of(flags));
        assert!(detail.contains("at most 0"), "{detail}");
        assert!(
            detail.contains("released and waiting to be freed"),
            "{detail}"
        );
        // The run stops at the syscall that got it, with its result recorded.
        assert_eq!(counts(&out.results, flags), (1, 1), "{flags:#x}");
    }
}

#[test]
fn the_user_namespace_fix_holds_in_every_random_schedule_of_one_looper() {
    let setup = create_drop_loop(CLONE_NEWUSER);
    let fixed = patches(Some(fix_of(CLONE_NEWUSER)));
    let checked = vec![
        "userns.no_false_enospc".to_string(),
        "ucounts.balanced".to_string(),
        "ucounts.no_leak".to_string(),
    ];
    for seed in 1..=20 {
        let out = explore(&setup, &fixed, &checked, StrategySpec::Random, seed, 10);
        assert_eq!(out.explore.report.outcome, Outcome::Pass, "seed {seed}");
        assert_eq!(
            counts(&out.results, CLONE_NEWUSER),
            (CYCLES, 0),
            "seed {seed}"
        );
    }
}

#[test]
fn a_deserved_enospc_stays_an_enospc_with_either_fix() {
    // A task that keeps its namespace: the second one is over the limit
    // for as long as the first is alive, and no wait makes room.
    for flags in [CLONE_NEWUSER, CLONE_NEWNET] {
        let mut setup = create_drop_loop(flags);
        setup.tasks = vec![TaskSpec::new(
            "holder",
            "init",
            0,
            vec![Op::Clone { flags }, Op::Clone { flags }],
        )];
        let all = kernel::catalog::all_invariants();
        let fixed = patches(Some(fix_of(flags)));
        let out = explore(&setup, &fixed, &all, StrategySpec::Fair, 1, 1);
        assert_eq!(out.explore.report.outcome, Outcome::Pass, "{flags:#x}");
        let label = if flags == CLONE_NEWUSER {
            "clone(CLONE_NEWUSER)"
        } else {
            "clone(CLONE_NEWNET)"
        };
        let stats = &out.results["holder"][label];
        assert_eq!(stats.results.get("ok"), Some(&1), "{stats:?}");
        assert_eq!(stats.results.get("ENOSPC"), Some(&1), "{stats:?}");
    }
}
