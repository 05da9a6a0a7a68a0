//! What one run shows, as a string both the kernel's runs and the model's
//! executions are reduced to, so that the two can be compared.
//!
//! For every task instance and op label: the count of each result, the
//! index of the first failure, and (for ops whose kernel implementation
//! sees them) the values reported, except the SEQNUMs received in a
//! scenario that makes network namespaces (see `makes_network_namespaces`). An op a task calls once is thus its
//! result. The instances of one task are listed in sorted order, so
//! that outcomes that differ only in which instance did what are one.

use kernel::clone_flags::CLONE_NEWNET;
use kernel::setup::{Op, Setup};
use kernel::{Results, SyscallStats};
use std::collections::BTreeSet;

fn stats_text(label: &str, s: &SyscallStats, with_values: bool) -> String {
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
    text
}

/// Whether a run of `setup` makes a network namespace: on the kernel its
/// loopback device's uevents (the device and its two queues) take three
/// sequence numbers, which the model does not number, so received SEQNUMs
/// are not compared for such a scenario.
fn makes_network_namespaces(setup: &Setup) -> bool {
    setup
        .tasks
        .iter()
        .flat_map(|t| t.ops.iter())
        .any(|op| match op {
            Op::Unshare { flags } | Op::Clone { flags } | Op::UnshareAndExit { flags } => {
                flags & CLONE_NEWNET != 0
            }
            _ => false,
        })
}

/// The outcome of one run of `setup` with `results`.
pub fn outcome_of(setup: &Setup, results: &Results) -> String {
    let valued: BTreeSet<String> = setup
        .tasks
        .iter()
        .flat_map(|t| t.ops.iter())
        .filter(|op| {
            crate::ops::reports_values(op)
                && !(crate::ops::reports_seqnums(op) && makes_network_namespaces(setup))
        })
        .map(|op| op.label())
        .collect();
    let mut parts = Vec::new();
    for task in &setup.tasks {
        let mut instances: Vec<String> = task
            .instance_names()
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
        parts.push(format!("{}: {}", task.name, instances.join(" | ")));
    }
    parts.join(" / ")
}
