//! The state cache on the kernel model, counted against the plain search:
//! on a small scenario of each subsystem (ipc, user namespaces, network
//! namespaces, process accounting, uevent sockets, id maps), exhaustive
//! search without reduction, with the cache and symmetry and without
//! (`--no-state-cache`), reaches the same final results and finds the
//! same violation; the cached search names states on each, and explores
//! fewer executions where it cuts any.

use kernel::{OutcomeOf, Results, RunSpec};
use sim::{ExecConfig, ExploreConfig, ExploreReport, StrategySpec};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const DIR: &str = "tests/data/cache";

/// An execution's final results, the same for any permutation of a
/// task's instances (which the cache's symmetry takes as one state): each
/// task's instances' results, sorted.
fn canonical(results: &Results) -> String {
    let mut tasks: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (name, ops) in results {
        let task = name.rsplit_once('.').map_or(name.as_str(), |(t, i)| {
            if i.parse::<u32>().is_ok() {
                t
            } else {
                name.as_str()
            }
        });
        tasks.entry(task).or_default().push(format!("{ops:?}"));
    }
    tasks.values_mut().for_each(|r| r.sort());
    format!("{tasks:?}")
}

/// Search `run` of `file` exhaustively within `bound` preemptions without
/// reduction, with or without the state cache: the report and the final
/// results reached.
fn search(
    file: &str,
    label: &str,
    bound: u32,
    state_cache: bool,
) -> (ExploreReport, BTreeMap<String, u64>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(DIR).join(file);
    let s = scenario::load(&path).expect("a good scenario");
    let run = s.runs.iter().find(|r| r.label == label).expect("the label");
    let patches = kernel::resolve_patches(&run.profile, &run.toggles()).expect("a profile");
    let strategy = StrategySpec::Dfs {
        preemption_bound: bound,
    };
    let mut explore = ExploreConfig::new(strategy, 1, 10_000_000, ExecConfig::default());
    explore.reduction = false;
    explore.shrink = false;
    explore.state_cache = state_cache;
    let spec = RunSpec {
        setup: &s.setup,
        patches: &patches,
        invariants: &s.invariants,
        explore,
    };
    let outcome: OutcomeOf = Arc::new(canonical);
    kernel::explore_outcomes(&spec, &outcome)
}

/// The cached and the plain search of one run agree: both exhaust a
/// passing run with the same final results, or both find the violation.
fn agree(file: &str, label: &str, bound: u32) {
    let (plain, plain_finals) = search(file, label, bound, false);
    let (cached, cached_finals) = search(file, label, bound, true);
    let what = format!("{file} [{label}] within {bound} preemptions");
    assert_eq!(
        cached.report.outcome.invariant(),
        plain.report.outcome.invariant(),
        "{what}"
    );
    let states = cached.states.expect("a stateful search counts its states");
    assert!(states > 0, "{what}: the model named no state");
    if plain.report.outcome.invariant().is_none() {
        assert!(plain.exhausted && cached.exhausted, "{what}");
        assert_eq!(
            cached_finals.keys().collect::<Vec<_>>(),
            plain_finals.keys().collect::<Vec<_>>(),
            "{what}"
        );
        assert!(plain_finals.len() > 1, "{what}: one final state only");
        assert!(
            cached.executions < plain.executions,
            "{what}: {} executions cached, {} plain",
            cached.executions,
            plain.executions
        );
    }
}

#[test]
fn ipc_free_queue() {
    agree("ipc.toml", "v6.3+fix", 1);
    agree("ipc.toml", "v6.2", 2);
}

#[test]
fn user_namespaces() {
    agree("userns.toml", "v6.3", 1);
}

#[test]
fn network_namespaces() {
    agree("netns.toml", "v6.9", 1);
}

#[test]
fn process_accounting() {
    agree("nproc.toml", "v5.17", 1);
    agree("nproc.toml", "v5.13", 1);
}

#[test]
fn uevent_sockets() {
    agree("uevent.toml", "v6.8", 1);
    agree("uevent.toml", "v6.9", 2);
}

#[test]
fn id_maps() {
    agree("idmap.toml", "v6.3", 1);
}
