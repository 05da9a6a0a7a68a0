//! Every workload of the comparison, tiny, under all three tools: they
//! compile, and they behave (no timing here; `benches/compare.rs` times).
#![cfg(not(loom))]

#[path = "../models/loom_models.rs"]
mod loom_models;
#[path = "../models/shuttle_models.rs"]
mod shuttle_models;

use bench::*;
use shuttle_models as sh;
use sim::{Outcome, StrategySpec};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

const PCT: StrategySpec = StrategySpec::Pct { depth: PCT_DEPTH };

#[test]
fn mutex_workload_passes_under_every_tool() {
    for strategy in [StrategySpec::Random, PCT] {
        let r = nssim::mutex(strategy, 1, 3, 4, 50);
        assert_eq!(r.report.outcome, Outcome::Pass, "{}", r.report.outcome);
        assert_eq!(r.executions, 3);
    }
    // Two tasks, two locks each: start, and a lock and an unlock per
    // operation, at least 10 steps per execution.
    let build = nssim::mutex_build(2, 2);
    let (r, steps) = nssim::count_steps(StrategySpec::Random, 1, 4, &build);
    assert_eq!(nssim::executions_run(StrategySpec::Random, &r), 4);
    assert!(steps >= 4 * 10, "{steps} steps");

    assert_eq!(
        sh::run(sh::RandomScheduler::new_from_seed(1, 3), sh::mutex(4, 50)),
        3
    );
    let (n, steps) = sh::count_steps(sh::PctScheduler::new_from_seed(1, 3, 2), sh::mutex(2, 2));
    assert_eq!(n, 2);
    assert!(steps > 0);

    let loom_n = loom_models::exhaust(loom_models::mutex(MUTEX_TINY_TASKS, MUTEX_TINY_OPS));
    assert!(loom_n > 1, "loom explored {loom_n} executions");
    let build = nssim::mutex_build(MUTEX_TINY_TASKS, MUTEX_TINY_OPS);
    let unbounded = StrategySpec::Dfs {
        preemption_bound: DFS_UNBOUNDED,
    };
    let r = sim::explore(&nssim::config(unbounded, 0, 100_000), &build);
    assert!(r.exhausted);
    assert_eq!(r.report.outcome, Outcome::Pass);
}

#[test]
fn ipc_race_is_found_by_nssim_and_shuttle_with_pct_for_seed_1() {
    let r = nssim::ipc(PCT, 1, 200, IPC_LIMIT);
    assert_eq!(
        r.report.outcome.invariant(),
        Some(FALSE_ENOSPC),
        "{}",
        r.report.outcome
    );
    assert!(r.executions <= 200);

    let found = sh::first_failure(
        sh::PctScheduler::new_from_seed(1, PCT_DEPTH as usize, 200),
        sh::ipc(IPC_LIMIT, IPC_ROUNDS),
    );
    assert!(
        matches!(found, Some(n) if n <= 200),
        "shuttle pct, seed 1: {found:?}"
    );

    let r = nssim::ipc_kernel(PCT, 1, 200, IPC_LIMIT, IPC_ROUNDS as u64);
    assert_eq!(
        r.report.outcome.invariant(),
        Some("ipc.no_false_enospc"),
        "{}",
        r.report.outcome
    );
}

#[test]
fn ipc_model_cannot_fail_when_the_limit_leaves_room_for_every_pending_item() {
    // With a limit above the rounds no charge can fail: the failures above
    // come from the race, not from the model.
    let build = nssim::ipc_build(IPC_ROUNDS as i64 + 1, IPC_ROUNDS);
    let r = sim::explore(&nssim::config(StrategySpec::Random, 1, 50), &build);
    assert_eq!(r.report.outcome, Outcome::Pass, "{}", r.report.outcome);
    let found = sh::first_failure(
        sh::RandomScheduler::new_from_seed(1, 50),
        sh::ipc(IPC_ROUNDS as i64 + 1, IPC_ROUNDS),
    );
    assert_eq!(found, None);
}

#[test]
fn exhaustive_searches_find_the_same_final_states() {
    let (r, nssim_states) = nssim::small(DFS_UNBOUNDED);
    assert!(r.exhausted);
    assert_eq!(r.report.outcome, Outcome::Pass);

    let states = Arc::new(Mutex::new(BTreeSet::new()));
    let n = loom_models::exhaust(loom_models::small(Arc::clone(&states)));
    let loom_states = states.lock().unwrap().clone();
    assert!(n > 1);

    let states = Arc::new(Mutex::new(BTreeSet::new()));
    sh::run(
        sh::DfsScheduler::new(None, false),
        sh::small(Arc::clone(&states)),
    );
    let shuttle_states = states.lock().unwrap().clone();

    assert_eq!(
        nssim_states,
        loom_states,
        "nssim: {}\nloom: {}",
        show_states(&nssim_states),
        show_states(&loom_states)
    );
    assert_eq!(shuttle_states, loom_states);
    // a's flag is set after its push, so a reader that saw the flag saw 1.
    assert!(nssim_states
        .iter()
        .all(|s| s.flag_seen == 0 || s.seen.contains(&1)));
    assert!(nssim_states.len() >= 5, "{}", show_states(&nssim_states));
}
