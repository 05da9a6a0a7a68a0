//! What one run shows, as a string both the kernel's runs and the model's
//! executions are reduced to, so that the two can be compared.
//!
//! For every task instance and op label: the count of each result, the
//! index of the first failure, and (for ops whose kernel implementation
//! sees them) the values reported, except the SEQNUMs received in a
//! scenario that makes network namespaces (see `makes_network_namespaces`),
//! and the words reported (the ACTION of a received uevent). An op a task
//! calls once is thus its result. The instances of one task are listed in sorted order, so
//! that outcomes that differ only in which instance did what are one.

use kernel::clone_flags::CLONE_NEWNET;
use kernel::setup::{Op, Setup};
use kernel::{Results, SyscallStats};
use std::collections::BTreeSet;

/// Calls of one op past which how many gave each result is a measurement
/// of timing, not an outcome: in a loop of 100 000 `unshare(CLONE_NEWIPC)`
/// the ENOSPCs count the frees the kernel's worker had not finished, which
/// depends on the machine's speed to the call, and the model's virtual
/// time does not reproduce it to the call (nor can its search reach each
/// count). Such an op's outcome is the set of results it gave.
pub const MEASURED_CALLS: u64 = 1_000;

fn is_measurement(s: &SyscallStats) -> bool {
    s.calls > MEASURED_CALLS
}

fn stats_text(label: &str, s: &SyscallStats, with_values: bool) -> String {
    if is_measurement(s) {
        let kinds: Vec<&str> = s.results.keys().map(String::as_str).collect();
        return format!("{label}: {} calls, each {}", s.calls, kinds.join(" or "));
    }
    let mut text = if s.calls == 1 {
        format!(
            "{label}: {}",
            s.results.keys().next().map_or("?", |k| k.as_str())
        )
    } else {
        format!(
            "{label}: {}",
            kernel::results_summary(&s.results, s.first_failure)
        )
    };
    if with_values && !s.values.is_empty() {
        let values: Vec<String> = s.values.iter().map(u64::to_string).collect();
        text.push_str(&format!(" [{}]", values.join(", ")));
    }
    if !s.texts.is_empty() {
        text.push_str(&format!(" {{{}}}", s.texts.join(", ")));
    }
    text
}

/// Whether a run of `setup` makes a network namespace: on the kernel its
/// loopback device's uevents (the device and its two queues) take three
/// sequence numbers, which the model does not number, so received SEQNUMs
/// are not compared for such a scenario.
fn makes_network_namespaces(setup: &Setup) -> bool {
    setup.every_op().any(|op| match op {
        Op::Unshare { flags }
        | Op::Clone { flags }
        | Op::CloneChild { flags, .. }
        | Op::UnshareAndExit { flags } => flags & CLONE_NEWNET != 0,
        _ => false,
    })
}

/// The names results are filed under, by task: each task's instances,
/// then each child that acts on its own.
fn groups(setup: &Setup) -> Vec<(String, Vec<String>)> {
    let tasks = setup
        .tasks
        .iter()
        .map(|t| (t.name.clone(), t.instance_names()));
    let children = setup
        .children
        .iter()
        .map(|c| (c.name.clone(), vec![c.name.clone()]));
    tasks.chain(children).collect()
}

/// The labels of the ops of `setup` whose reported values are part of an
/// outcome: those the kernel's runs can be held to.
pub fn valued_labels(setup: &Setup) -> BTreeSet<String> {
    setup
        .every_op()
        .filter(|op| {
            crate::ops::reports_values(op)
                && !(crate::ops::reports_seqnums(op) && makes_network_namespaces(setup))
        })
        .map(|op| op.label())
        .collect()
}

/// The outcome of one run of `setup` with `results`.
pub fn outcome_of(setup: &Setup, results: &Results) -> String {
    let valued = valued_labels(setup);
    let mut parts = Vec::new();
    for (task, names) in groups(setup) {
        let mut instances: Vec<String> = names
            .iter()
            .map(|name| {
                let ops: Vec<String> = results
                    .get(name)
                    .into_iter()
                    .flatten()
                    .map(|(label, s)| stats_text(label, s, valued.contains(label)))
                    .collect();
                if ops.is_empty() {
                    "-".to_string()
                } else {
                    ops.join("; ")
                }
            })
            .collect();
        instances.sort();
        if instances.iter().all(|i| i == "-") {
            continue;
        }
        parts.push(format!("{task}: {}", instances.join(" | ")));
    }
    parts.join(" / ")
}

/// Whether `partial`, the results so far of a run of `setup`, can still
/// become results with the outcome of `target` ([`outcome_of`]): the
/// instances of each task can be paired with the target's so that every
/// op of each has made no more calls, and no more of any result, than its
/// partner, its first failure (where the outcome shows one) is where the
/// partner's is, and its values begin the partner's. A necessary test
/// only: the outcomes are compared in full at the end.
pub fn may_become(setup: &Setup, partial: &Results, target: &Results) -> bool {
    let valued = valued_labels(setup);
    groups(setup).iter().all(|(_, names)| {
        let now: Vec<_> = names.iter().map(|n| partial.get(n)).collect();
        let then: Vec<_> = names.iter().map(|n| target.get(n)).collect();
        pairs_all(now.len(), |i, j| match (now[i], then[j]) {
            (None, _) => true,
            (Some(ops), None) => ops.is_empty(),
            (Some(ops), Some(wanted)) => ops.iter().all(|(label, s)| {
                wanted
                    .get(label)
                    .is_some_and(|w| stats_may_become(s, w, valued.contains(label)))
            }),
        })
    })
}

fn stats_may_become(now: &SyscallStats, then: &SyscallStats, with_values: bool) -> bool {
    if is_measurement(then) {
        return now.calls <= then.calls && now.results.keys().all(|r| then.results.contains_key(r));
    }
    let counts = now.calls <= then.calls
        && now
            .results
            .iter()
            .all(|(r, n)| *n <= then.results.get(r).copied().unwrap_or(0));
    // The outcome shows where the first failure was only when the calls
    // gave different results.
    let first_failure = then.results.len() < 2
        || match (now.first_failure, then.first_failure) {
            (Some(a), Some(b)) => a == b,
            (None, Some(b)) => now.calls <= b,
            (_, None) => now.first_failure.is_none(),
        };
    let values = !with_values || then.values.starts_with(&now.values);
    counts && first_failure && values && then.texts.starts_with(&now.texts)
}

/// Whether the `n` items on each side can all be paired, `fits(i, j)`
/// telling whether left item `i` may go with right item `j` (augmenting
/// paths, Kuhn's algorithm).
fn pairs_all(n: usize, fits: impl Fn(usize, usize) -> bool) -> bool {
    fn augment(
        i: usize,
        n: usize,
        fits: &dyn Fn(usize, usize) -> bool,
        partner: &mut [Option<usize>],
        seen: &mut [bool],
    ) -> bool {
        for j in 0..n {
            if seen[j] || !fits(i, j) {
                continue;
            }
            seen[j] = true;
            let free = match partner[j] {
                None => true,
                Some(k) => augment(k, n, fits, partner, seen),
            };
            if free {
                partner[j] = Some(i);
                return true;
            }
        }
        false
    }
    let mut partner = vec![None; n];
    (0..n).all(|i| augment(i, n, &fits, &mut partner, &mut vec![false; n]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernel::setup::{Setup, TaskSpec, INIT_USER_NS};

    fn loopers() -> Setup {
        let mut setup = Setup::default();
        let ipc = Op::Unshare {
            flags: kernel::clone_flags::CLONE_NEWIPC,
        };
        let mut task = TaskSpec::new("looper", INIT_USER_NS, 1000, vec![ipc]);
        task.instances = 2;
        setup.tasks.push(task);
        setup
    }

    /// Results with, for each instance in turn, its calls' results.
    fn results(setup: &Setup, calls: &[&[&str]]) -> Results {
        let names = setup.tasks[0].instance_names();
        let label = setup.tasks[0].ops[0].label();
        let mut r = Results::new();
        for (name, calls) in names.iter().zip(calls) {
            let s: &mut SyscallStats = r
                .entry(name.clone())
                .or_default()
                .entry(label.clone())
                .or_default();
            for c in calls.iter() {
                s.record(c, [], []);
            }
        }
        r
    }

    /// Whether the loopers' `calls` so far may become `ok ok ENOSPC` for
    /// one and `ENOSPC ok ENOSPC` for the other.
    fn may(calls: &[&[&str]]) -> bool {
        let setup = loopers();
        let target = results(
            &setup,
            &[&["ok", "ok", "ENOSPC"], &["ENOSPC", "ok", "ENOSPC"]],
        );
        may_become(&setup, &results(&setup, calls), &target)
    }

    #[test]
    fn a_prefix_of_the_wanted_calls_may_become_them_in_either_instance() {
        assert!(may(&[&[], &[]]));
        assert!(may(&[&["ok", "ok"], &["ENOSPC"]]));
        // The instances swapped: outcomes do not say which did what.
        assert!(may(&[&["ENOSPC", "ok"], &["ok"]]));
        assert!(may(&[&["ok", "ok", "ENOSPC"], &["ENOSPC", "ok", "ENOSPC"]]));
    }

    #[test]
    fn too_many_of_a_result_or_a_failure_elsewhere_cannot_become_the_wanted_calls() {
        // Three oks in one instance: neither partner has them.
        assert!(!may(&[&["ok", "ok", "ok"], &[]]));
        // Both instances begin with a failure: only one partner does.
        assert!(!may(&[&["ENOSPC"], &["ENOSPC"]]));
        // A first failure at the second call: no partner has one there.
        assert!(!may(&[&["ok", "ENOSPC"], &[]]));
        // An errno no partner got.
        assert!(!may(&[&["EPERM"], &[]]));
    }

    /// A looper's results: `ok` calls that succeeded, then `failed` ENOSPCs.
    fn looped(ok: u64, failed: u64) -> Results {
        let setup = loopers();
        let mut r = Results::new();
        let s: &mut SyscallStats = r
            .entry("looper.0".into())
            .or_default()
            .entry(setup.tasks[0].ops[0].label())
            .or_default();
        for _ in 0..ok {
            s.record("ok", [], []);
        }
        for _ in 0..failed {
            s.record("ENOSPC", [], []);
        }
        r
    }

    #[test]
    fn past_the_measured_calls_only_the_kinds_of_results_are_an_outcome() {
        let setup = loopers();
        let small = |ok, failed| outcome_of(&setup, &looped(ok, failed));
        assert_ne!(
            small(3, 17),
            small(4, 16),
            "a short loop's counts are its outcome"
        );
        let n = MEASURED_CALLS;
        let long = outcome_of(&setup, &looped(n / 2 + 1, n / 2));
        assert_eq!(long, outcome_of(&setup, &looped(n / 2 + 7, n / 2 - 6)));
        assert!(
            long.contains(&format!("{} calls, each ENOSPC or ok", n + 1)),
            "{long}"
        );
        assert_ne!(
            long,
            outcome_of(&setup, &looped(n + 1, 0)),
            "no ENOSPC is another outcome"
        );
        // A run on its way there may become it whatever its counts, but
        // not with a result the target never gave.
        let target = looped(n / 2 + 1, n / 2);
        assert!(may_become(&setup, &looped(10, 400), &target));
        assert!(!may_become(&setup, &looped(10, 400), &looped(n + 1, 0)));
    }
}
