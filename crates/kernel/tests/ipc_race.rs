//! The ipc allocation-vs-free race across the kernel eras.

use kernel::setup::{clone_flags::CLONE_NEWIPC, Op, Setup, SysctlSpec, TaskSpec};
use kernel::{explore_run, resolve_patches, RunSpec};
use sim::{ExecConfig, ExploreConfig, Outcome, StrategySpec};

fn looper_setup(max: i64, repeat: u64, instances: u32) -> Setup {
    Setup {
        user_namespaces: vec![],
        sysctls: vec![SysctlSpec {
            userns: "init".into(),
            name: "user.max_ipc_namespaces".into(),
            value: max,
        }],
        tasks: vec![TaskSpec {
            name: "looper".into(),
            instances,
            userns: "init".into(),
            uid: 0,
            repeat,
            sequential: false,
            ops: vec![Op::Unshare {
                flags: CLONE_NEWIPC,
            }],
        }],
        ..Default::default()
    }
}

fn all_invariants() -> Vec<String> {
    kernel::catalog::all_invariants()
}

fn run(
    setup: &Setup,
    profile: &str,
    toggles: &[(&str, bool)],
    strategy: StrategySpec,
    seed: u64,
    iterations: u64,
) -> (Outcome, u64, u64) {
    let toggles: Vec<(String, bool)> = toggles.iter().map(|(n, b)| (n.to_string(), *b)).collect();
    let patches = resolve_patches(profile, &toggles).unwrap();
    let invariants = all_invariants();
    let spec = RunSpec {
        setup,
        patches: &patches,
        invariants: &invariants,
        explore: ExploreConfig {
            shrink: false,
            ..ExploreConfig::new(strategy, seed, iterations, ExecConfig::default())
        },
    };
    let out = explore_run(&spec);
    (
        out.explore.report.outcome,
        out.explore.executions,
        out.explore.report.virtual_ns,
    )
}

#[test]
fn v6_2_gives_a_false_enospc_under_random_search() {
    let setup = looper_setup(3, 20, 1);
    for seed in 1..=20 {
        let (o, n, _) = run(&setup, "v6.2", &[], StrategySpec::Random, seed, 100);
        assert_eq!(
            o.invariant(),
            Some("ipc.no_false_enospc"),
            "seed {seed}: {o}"
        );
        assert!(n <= 100);
    }
}

#[test]
fn v6_2_gives_a_false_enospc_under_pct() {
    let setup = looper_setup(3, 20, 1);
    for seed in 1..=20 {
        let (o, _, _) = run(
            &setup,
            "v6.2",
            &[],
            StrategySpec::Pct { depth: 3 },
            seed,
            100,
        );
        assert_eq!(
            o.invariant(),
            Some("ipc.no_false_enospc"),
            "seed {seed}: {o}"
        );
    }
}

#[test]
fn v6_3_passes_in_timed_order() {
    let setup = looper_setup(3, 20, 1);
    let (o, _, t) = run(&setup, "v6.3", &[], StrategySpec::Fair, 1, 1);
    assert_eq!(o, Outcome::Pass);
    assert!(t > 0);
}

/// flush_work returning false means "no free is pending now", not "no free
/// happened since my charge failed": if the worker finishes between the
/// failed inc_ucount and flush_work, v6.3 still returns ENOSPC.
#[test]
fn v6_3_leaves_a_window_that_exhaustive_search_finds() {
    let setup = looper_setup(2, 4, 1);
    let (o, _, _) = run(
        &setup,
        "v6.3",
        &[],
        StrategySpec::Dfs {
            preemption_bound: 2,
        },
        1,
        100_000,
    );
    assert_eq!(o.invariant(), Some("ipc.no_false_enospc"), "{o}");
    // Without the free queue (v5.6) there is no window at all: the search
    // within the same bound is exhausted without a violation.
    let toggles: Vec<(String, bool)> = vec![];
    let patches = resolve_patches("v5.6", &toggles).unwrap();
    let invariants = all_invariants();
    let out = explore_run(&RunSpec {
        setup: &setup,
        patches: &patches,
        invariants: &invariants,
        explore: ExploreConfig {
            strategy: StrategySpec::Dfs {
                preemption_bound: 2,
            },
            seed: 1,
            iterations: 1_000_000,
            exec: ExecConfig::default(),
            shrink: false,
            jobs: 1,
            shard: None,
            progress: Default::default(),
            reduction: true,
            split: sim::Split::DEFAULT,
            state_cache: true,
        },
    });
    assert_eq!(out.explore.report.outcome, Outcome::Pass);
    assert!(out.explore.exhausted);
}

#[test]
fn v5_6_frees_synchronously_and_passes() {
    let setup = looper_setup(3, 10, 1);
    let (o, _, _) = run(&setup, "v5.6", &[], StrategySpec::Random, 1, 50);
    assert_eq!(o, Outcome::Pass, "{o}");
}

#[test]
fn freeing_without_a_grace_period_is_a_use_after_free() {
    let mut setup = looper_setup(1000, 5, 1);
    setup.tasks.push(TaskSpec {
        name: "reader".into(),
        instances: 1,
        userns: "init".into(),
        uid: 0,
        repeat: 5,
        sequential: false,
        ops: vec![Op::MqPathWalk {
            target: "looper".into(),
        }],
    });
    let (o, _, _) = run(
        &setup,
        "v6.3",
        &[("ipc-free-no-grace-period", true)],
        StrategySpec::Random,
        1,
        5000,
    );
    assert!(matches!(o, Outcome::UseAfterFree { .. }), "{o}");
    let (o, _, _) = run(&setup, "v6.3", &[], StrategySpec::Random, 1, 300);
    assert_eq!(o, Outcome::Pass, "{o}");
    let (o, _, _) = run(&setup, "v6.2", &[], StrategySpec::Random, 1, 300);
    assert_eq!(o, Outcome::Pass, "{o}");
}

#[test]
fn the_v6_2_race_shrinks_to_a_few_dozen_steps_without_preemptions() {
    let setup = looper_setup(3, 20, 1);
    let patches = resolve_patches("v6.2", &[]).unwrap();
    let invariants = all_invariants();
    for seed in 1..=5 {
        let out = explore_run(&RunSpec {
            setup: &setup,
            patches: &patches,
            invariants: &invariants,
            explore: ExploreConfig::new(StrategySpec::Random, seed, 100, ExecConfig::default()),
        });
        let s = out.explore.shrink.expect("a failure is shrunk");
        assert_eq!(
            out.explore.report.outcome.invariant(),
            Some("ipc.no_false_enospc")
        );
        assert!(s.steps_after <= s.steps_before);
        assert!(s.steps_after <= 70, "seed {seed}: {s:?}");
        assert_eq!(
            s.preemptions_after, 0,
            "seed {seed}: the looper alone outruns the kworker"
        );
        assert_eq!(out.explore.report.steps, s.steps_after);
        assert!(matches!(out.explore.schedule, sim::Schedule::Segments(_)));
    }
}
