//! What an exported program looks for to say whether the scenario's bug
//! reproduced on the running kernel: groups of calls, each group a set of
//! (task instance, op) calls and the results that show it. A run shows
//! the bug when every group has a call that returned one of its results;
//! the program then prints `reproduced: ...` and exits 1.
//!
//! The groups come from the exported entry: its `results` expectation
//! (each expected result that is an errno), else the symptom of the
//! invariant it expects violated (`kernel::Invariant::symptom`) in the
//! calls the model's violating execution showed it in.

use crate::instance::Instance;
use kernel::setup::Setup;
use scenario::KernelRun;

/// One group: the calls, and the results any of which shows the bug.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symptom {
    /// What a run that shows it did, for `reproduced: ...`.
    pub shows: String,
    /// (instance index, op index) as the program's `R` lines number them.
    pub calls: Vec<(usize, usize)>,
    pub results: Vec<String>,
}

/// The model's violating execution of the exported entry, as far as a
/// reproducer needs it: the invariant's errno and the (task instance, op
/// label) calls that returned it there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSymptom {
    pub invariant: String,
    pub errno: String,
    pub calls: Vec<(String, String)>,
}

/// The calls of `instances` that `wants` (task instance name, op label)
/// picks, numbered as the program numbers them.
fn calls_where(
    setup: &Setup,
    instances: &[Instance],
    wants: impl Fn(&str, &str) -> bool,
) -> Vec<(usize, usize)> {
    let mut calls = Vec::new();
    for (i, instance) in instances.iter().enumerate() {
        for (j, op) in instance.ops(setup).iter().enumerate() {
            if wants(&instance.name, &op.label()) {
                calls.push((i, j));
            }
        }
    }
    calls
}

/// The groups the exported program looks for (none: it cannot tell, and
/// says so).
pub fn symptoms(
    setup: &Setup,
    instances: &[Instance],
    entry: Option<&KernelRun>,
    model: Option<&ModelSymptom>,
) -> Vec<Symptom> {
    let expected: Vec<Symptom> = entry
        .map(|e| e.expect.results.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|want| {
            let errnos: Vec<String> = want
                .results
                .iter()
                .filter(|r| r.as_str() != "ok")
                .cloned()
                .collect();
            if errnos.is_empty() {
                return None;
            }
            let calls = calls_where(setup, instances, |task, label| {
                want.matches_task(task) && want.matches_label(label)
            });
            Some(Symptom {
                shows: format!("{} {} returned {}", want.task, want.op, errnos.join(" or ")),
                calls,
                results: errnos,
            })
        })
        .collect();
    if !expected.is_empty() {
        return expected;
    }
    model
        .filter(|m| !m.calls.is_empty())
        .map(|m| {
            let calls = calls_where(setup, instances, |task, label| {
                m.calls.iter().any(|(t, l)| t == task && l == label)
            });
            let which: Vec<String> = m.calls.iter().map(|(t, l)| format!("{t} {l}")).collect();
            vec![Symptom {
                shows: format!(
                    "{} returned {} (the symptom of {} in the model's violating execution)",
                    which.join(", "),
                    m.errno,
                    m.invariant
                ),
                calls,
                results: vec![m.errno.clone()],
            }]
        })
        .unwrap_or_default()
}
