//! Conformance cases for ipc namespaces under `max_ipc_namespaces`: the
//! model (the profile of the running kernel, one `fair` execution) and the
//! running kernel (shell loops of `unshare --ipc` inside a child user
//! namespace whose limit is lowered) answer the same question.
//!
//! Every kernel probe runs in `unshare -U -r --fork`, so the limit is
//! lowered only inside that namespace, is bounded by `timeout`, and waits
//! for all its children.

use crate::catalog;
use crate::profile::resolve_patches;
use crate::setup::{clone_flags::CLONE_NEWIPC, Op, Setup, SysctlSpec, TaskSpec, UserNsSpec};
use crate::world::{explore_run, RunSpec};
use probe::{sh_in_userns, Case, KernelAnswer, Skip};
use sim::{ExecConfig, ExploreConfig, StrategySpec};

/// The user namespace the probes run in (`unshare -U -r`), and a nested
/// one made from inside it.
const CHILD: &str = "child";
const GRANDCHILD: &str = "grandchild";

/// Iterations of each looping process.
const LOOP_ITERATIONS: u32 = 30;

pub fn conformance_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for limit in [1, 2, 3, 5, 10] {
        cases.push(one_loop(limit));
    }
    for (loopers, limit) in [(2, 2), (3, 3), (3, 4), (4, 4)] {
        cases.push(concurrent_loops(loopers, limit));
    }
    for limit in [1u32, 3, 5] {
        cases.push(held_alive(limit, i64::from(limit)));
        cases.push(held_alive(limit - 1, i64::from(limit)));
    }
    cases.push(zero_limit());
    cases.push(nested_limit(2, 3));
    cases.push(nested_limit(3, 3));
    cases
}

/// Answer text for a batch of unshares: how many failed, and with what.
fn failures(enospc: u64, other: u64, calls: u64) -> String {
    if other > 0 {
        format!("{enospc} ENOSPC and {other} other failures in {calls} calls")
    } else {
        format!("{enospc} ENOSPC in {calls} calls")
    }
}

fn one_loop(limit: i64) -> Case {
    let question = format!(
        "one shell loop of {LOOP_ITERATIONS} processes, each `unshare --ipc` then exit, under max_ipc_namespaces = {limit}: how many fail?"
    );
    Case {
        subsystem: "ipc",
        name: format!("ipc.one_loop.limit_{limit}"),
        question,
        model: Box::new(move || model_loops(1, limit)),
        kernel: Box::new(move || kernel_loops(1, limit)),
    }
}

fn concurrent_loops(loopers: u32, limit: i64) -> Case {
    Case {
        subsystem: "ipc",
        name: format!("ipc.loops_{loopers}.limit_{limit}"),
        question: format!(
            "{loopers} concurrent shell loops of {LOOP_ITERATIONS} `unshare --ipc` processes in one user namespace, max_ipc_namespaces = {limit}: how many fail?"
        ),
        model: Box::new(move || model_loops(loopers, limit)),
        kernel: Box::new(move || kernel_loops(loopers, limit)),
    }
}

fn held_alive(held: u32, limit: i64) -> Case {
    Case {
        subsystem: "ipc",
        name: format!("ipc.held_{held}.limit_{limit}"),
        question: format!(
            "{held} processes hold an ipc namespace each under max_ipc_namespaces = {limit}; what does one more `unshare --ipc` get?"
        ),
        model: Box::new(move || model_held(held, limit, false)),
        kernel: Box::new(move || kernel_held(held, limit, false)),
    }
}

fn zero_limit() -> Case {
    Case {
        subsystem: "ipc",
        name: "ipc.limit_0".into(),
        question: "max_ipc_namespaces = 0: what does `unshare --ipc` get?".into(),
        model: Box::new(|| model_held(0, 0, false)),
        kernel: Box::new(|| kernel_held(0, 0, false)),
    }
}

/// The limit is set in the outer user namespace; the holders and the late
/// caller run in a user namespace nested inside it, whose own limit is the
/// default. Charges go up the tree, so the outer limit decides.
fn nested_limit(held: u32, outer_limit: i64) -> Case {
    Case {
        subsystem: "ipc",
        name: format!("ipc.nested.held_{held}.parent_limit_{outer_limit}"),
        question: format!(
            "in a nested user namespace, {held} processes hold an ipc namespace each while the parent namespace's max_ipc_namespaces = {outer_limit}; what does one more `unshare --ipc` get?"
        ),
        model: Box::new(move || model_held(held, outer_limit, true)),
        kernel: Box::new(move || kernel_held(held, outer_limit, true)),
    }
}

// ---- the model ----------------------------------------------------------

fn unshare_ipc() -> Op {
    Op::Unshare {
        flags: CLONE_NEWIPC,
    }
}

fn task(name: &str, userns: &str, instances: u32, sequential: bool, ops: Vec<Op>) -> TaskSpec {
    TaskSpec {
        instances,
        sequential,
        ..TaskSpec::new(name, userns, 0, ops)
    }
}

/// The probe's namespaces: `child` (made by `unshare -U -r`, root mapped
/// to root) with its limit, and optionally `grandchild` inside it.
fn base_setup(limit: i64, nested: bool) -> Setup {
    let mut user_namespaces = vec![UserNsSpec {
        name: CHILD.into(),
        parent: "init".into(),
        owner: 0,
    }];
    if nested {
        user_namespaces.push(UserNsSpec {
            name: GRANDCHILD.into(),
            parent: CHILD.into(),
            owner: 0,
        });
    }
    Setup {
        user_namespaces,
        sysctls: vec![SysctlSpec {
            userns: CHILD.into(),
            name: "user.max_ipc_namespaces".into(),
            value: limit,
        }],
        ..Setup::default()
    }
}

fn model_loops(loopers: u32, limit: i64) -> String {
    let mut setup = base_setup(limit, false);
    for l in 0..loopers {
        setup.tasks.push(task(
            &format!("loop{l}"),
            CHILD,
            LOOP_ITERATIONS,
            true,
            vec![unshare_ipc()],
        ));
    }
    let (enospc, other, calls) = model_unshare_results(&setup, |_| true);
    failures(enospc, other, calls)
}

fn model_held(held: u32, limit: i64, nested: bool) -> String {
    let mut setup = base_setup(limit, nested);
    let ns = if nested { GRANDCHILD } else { CHILD };
    if held > 0 {
        setup.tasks.push(task(
            "holder",
            ns,
            held,
            false,
            vec![unshare_ipc(), Op::Sleep { ns: 2_000_000_000 }],
        ));
    }
    setup.tasks.push(task(
        "late",
        ns,
        1,
        false,
        vec![Op::Sleep { ns: 300_000_000 }, unshare_ipc()],
    ));
    let (enospc, other, _) = model_unshare_results(&setup, |task| task == "late");
    match (enospc, other) {
        (0, 0) => "ok".into(),
        (1, 0) => "ENOSPC".into(),
        _ => format!("{enospc} ENOSPC, {other} other"),
    }
}

/// Run `setup` once under the `fair` strategy and the profile of the
/// running kernel; sum the `unshare` results of the tasks `counted` picks.
fn model_unshare_results(setup: &Setup, counted: impl Fn(&str) -> bool) -> (u64, u64, u64) {
    let profile = catalog::host_profile();
    let patches = resolve_patches(profile, &[]).expect("a catalogued profile");
    let spec = RunSpec {
        setup,
        patches: &patches,
        invariants: &[],
        explore: ExploreConfig::new(StrategySpec::Fair, 1, 1, ExecConfig::default()),
    };
    let out = explore_run(&spec);
    let (mut enospc, mut other, mut calls) = (0, 0, 0);
    for (task, ops) in &out.results {
        let base = task.split('.').next().unwrap_or(task);
        if !counted(base) {
            continue;
        }
        for (label, stats) in ops {
            if label.starts_with("unshare") {
                calls += stats.calls;
                for (result, n) in &stats.results {
                    match result.as_str() {
                        "ok" => {}
                        "ENOSPC" => enospc += n,
                        _ => other += n,
                    }
                }
            }
        }
    }
    (enospc, other, calls)
}

// ---- the running kernel -------------------------------------------------

const SET_LIMIT: &str =
    "echo $LIMIT > /proc/sys/user/max_ipc_namespaces || { echo nolimit; exit 0; }";

fn kernel_loops(loopers: u32, limit: i64) -> KernelAnswer {
    let script = format!(
        r#"LIMIT={limit}
{SET_LIMIT}
loop() {{
    e=0; o=0; i=0
    while [ $i -lt {LOOP_ITERATIONS} ]; do
        if ! msg=$(unshare --ipc true 2>&1); then
            case "$msg" in *"No space left"*) e=$((e+1));; *) o=$((o+1));; esac
        fi
        i=$((i+1))
    done
    echo "result $e $o"
}}
n=0
while [ $n -lt {loopers} ]; do loop & n=$((n+1)); done
wait
"#
    );
    let out = sh_in_userns(&script, 120)?;
    no_limit_file(&out.stdout)?;
    let (mut enospc, mut other, mut lines) = (0u64, 0u64, 0);
    for line in out.stdout.lines().filter(|l| l.starts_with("result ")) {
        let nums: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|n| n.parse().ok())
            .collect();
        enospc += nums.first().copied().unwrap_or(0);
        other += nums.get(1).copied().unwrap_or(0);
        lines += 1;
    }
    if lines != loopers {
        return Err(Skip(format!(
            "the probe printed {lines} of {loopers} loop results: {}",
            out.stderr.trim()
        )));
    }
    Ok(failures(
        enospc,
        other,
        u64::from(loopers) * u64::from(LOOP_ITERATIONS),
    ))
}

fn kernel_held(held: u32, limit: i64, nested: bool) -> KernelAnswer {
    let inner = format!(
        r#"n=0
while [ $n -lt {held} ]; do unshare --ipc sleep 3 & n=$((n+1)); done
sleep 0.5
if msg=$(unshare --ipc true 2>&1); then echo "late ok"; else echo "late $msg"; fi
kill $(jobs -p) 2>/dev/null
wait
"#
    );
    let body = if nested {
        format!(
            "exec unshare -U -r --fork sh -c {}",
            probe::shell_quote(&inner)
        )
    } else {
        inner
    };
    let script = format!("LIMIT={limit}\n{SET_LIMIT}\n{body}");
    let out = sh_in_userns(&script, 60)?;
    no_limit_file(&out.stdout)?;
    let late = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("late "))
        .ok_or_else(|| Skip(format!("unexpected probe output: {}", out.stdout.trim())))?;
    Ok(match late {
        "ok" => "ok".into(),
        msg => probe::errno_from_message(msg)
            .map(str::to_string)
            .unwrap_or_else(|| format!("error: {msg}")),
    })
}

fn no_limit_file(stdout: &str) -> Result<(), Skip> {
    if stdout.lines().any(|l| l == "nolimit") {
        Err(Skip(
            "/proc/sys/user/max_ipc_namespaces cannot be written in a child user namespace here"
                .into(),
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_answers_the_loop_and_held_questions() {
        // A loop of processes never holds more than one namespace: no
        // ENOSPC even at limit 1, on the profile of a kernel with the
        // waiting fix.
        assert_eq!(model_loops(1, 1), "0 ENOSPC in 30 calls");
        assert_eq!(model_held(3, 3, false), "ENOSPC");
        assert_eq!(model_held(2, 3, false), "ok");
        assert_eq!(model_held(0, 0, false), "ENOSPC");
        assert_eq!(model_held(3, 3, true), "ENOSPC");
        assert_eq!(model_held(2, 3, true), "ok");
    }

    #[test]
    fn case_names_are_unique() {
        let cases = conformance_cases();
        let mut names: Vec<_> = cases.iter().map(|c| c.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), cases.len());
        assert!(cases.len() >= 15);
    }
}
