//! RLIMIT_NPROC across kernel eras, run through the world with the fair
//! (virtual-time) schedule: exact results per profile.

use kernel::process::UidMap;
use kernel::setup::{clone_flags::CLONE_NEWUSER, Op, Setup, SysctlSpec, TaskSpec, UserNsSpec};
use kernel::{replay_run, resolve_patches, Results, RunSpec};
use sim::{ExecConfig, ExploreConfig, Outcome, Schedule, StrategySpec};

const ALL: &[&str] = &[
    "nproc.isolated",
    "ucounts.within_limits",
    "ucounts.balanced",
    "ucounts.no_leak",
    "nproc.execve_enforced",
];

fn run(setup: &Setup, profile: &str, invariants: &[&str]) -> (Outcome, Results) {
    let patches = resolve_patches(profile, &[]).unwrap();
    let invariants: Vec<String> = invariants.iter().map(|s| s.to_string()).collect();
    let spec = RunSpec {
        setup,
        patches: &patches,
        invariants: &invariants,
        explore: ExploreConfig::new(StrategySpec::Fair, 1, 1, ExecConfig::default()),
    };
    let (report, results) = replay_run(&spec, &Schedule::Fair, false);
    (report.outcome, results)
}

fn task(name: &str, userns: &str, uid: u32, ops: Vec<Op>) -> TaskSpec {
    TaskSpec::new(name, userns, uid, ops)
}

fn count(r: &Results, task: &str, label: &str, result: &str) -> u64 {
    r.get(task)
        .and_then(|o| o.get(label))
        .and_then(|s| s.results.get(result))
        .copied()
        .unwrap_or(0)
}

fn container(s: &mut Setup, name: &str, owner: u32, outside: u32) {
    s.user_namespaces.push(UserNsSpec {
        name: name.into(),
        parent: "init".into(),
        owner,
    });
    s.processes.maps.insert(
        name.into(),
        UidMap {
            inside: 0,
            outside,
            count: 65536,
        },
    );
}

/// A forks 5 times under RLIMIT_NPROC 5, then B (same kuid, sibling
/// container made by root) forks once.
fn shared_kuid() -> Setup {
    let mut s = Setup::default();
    container(&mut s, "a", 0, 100_000);
    container(&mut s, "b", 0, 100_000);
    let mut a = vec![Op::Fork {}; 5];
    a.push(Op::Sleep { ns: 10_000_000 });
    s.tasks.push(task("a", "a", 100_000, a));
    let mut b = vec![Op::Sleep { ns: 1_000_000 }, Op::Fork {}];
    b.push(Op::Sleep { ns: 1_000_000 });
    s.tasks.push(task("b", "b", 100_000, b));
    s.processes.task_nproc.insert("a".into(), 5);
    s.processes.task_nproc.insert("b".into(), 5);
    s
}

#[test]
fn a_sibling_container_is_starved_only_while_nproc_is_per_kuid() {
    let s = shared_kuid();
    let (outcome, r) = run(&s, "v5.13", &[]);
    assert_eq!(outcome, Outcome::Pass);
    // 2 processes at the start, A reaches 5 with 3 children, B is refused.
    assert_eq!(count(&r, "a", "fork", "ok"), 3);
    assert_eq!(count(&r, "b", "fork", "EAGAIN"), 1);
    let (_, r) = run(&s, "v5.14", &[]);
    assert_eq!(count(&r, "a", "fork", "ok"), 5, "limit+1 processes in A");
    assert_eq!(count(&r, "b", "fork", "ok"), 1);
    let (_, r) = run(&s, "v5.17", &[]);
    assert_eq!(count(&r, "a", "fork", "ok"), 4, "exactly the limit in A");
    assert_eq!(count(&r, "a", "fork", "EAGAIN"), 1);
    assert_eq!(count(&r, "b", "fork", "ok"), 1);
    let (outcome, _) = run(&s, "v5.13", ALL);
    assert!(
        matches!(outcome, Outcome::Violation { ref invariant, .. } if invariant == "nproc.isolated"),
        "{outcome:?}"
    );
    assert_eq!(run(&s, "v5.17", ALL).0, Outcome::Pass);
}

#[test]
fn the_2016_rfc_isolates_the_containers_on_v5_13() {
    let s = shared_kuid();
    let patches = resolve_patches("v5.13", &[("nproc-per-userns-rfc-2016".into(), true)]).unwrap();
    let invariants: Vec<String> = ALL.iter().map(|s| s.to_string()).collect();
    let spec = RunSpec {
        setup: &s,
        patches: &patches,
        invariants: &invariants,
        explore: ExploreConfig::new(StrategySpec::Fair, 1, 1, ExecConfig::default()),
    };
    let (report, r) = replay_run(&spec, &Schedule::Fair, false);
    assert_eq!(report.outcome, Outcome::Pass);
    assert_eq!(count(&r, "a", "fork", "ok"), 4);
    assert_eq!(count(&r, "b", "fork", "ok"), 1);
}

#[test]
fn exempt_callers_fork_past_the_limit() {
    let mut s = Setup::default();
    s.tasks.push(task("root", "init", 0, vec![Op::Fork {}; 4]));
    s.tasks
        .push(task("user", "init", 1000, vec![Op::Fork {}; 4]));
    s.processes.task_nproc.insert("root".into(), 2);
    s.processes.task_nproc.insert("user".into(), 2);
    for profile in ["v5.13", "v5.17"] {
        let (outcome, r) = run(&s, profile, ALL);
        assert_eq!(outcome, Outcome::Pass, "{profile}");
        assert_eq!(count(&r, "root", "fork", "ok"), 4, "{profile}");
        assert_eq!(count(&r, "user", "fork", "ok"), 1, "{profile}");
    }
}

#[test]
fn setrlimit_raises_the_hard_limit_only_for_the_privileged() {
    let mut s = Setup::default();
    let ops = vec![
        Op::Setrlimit {
            resource: "NPROC".into(),
            limit: 3,
        },
        Op::Setrlimit {
            resource: "NPROC".into(),
            limit: 5,
        },
    ];
    s.tasks.push(task("root", "init", 0, ops.clone()));
    s.tasks.push(task("user", "init", 1000, ops));
    let (_, r) = run(&s, "v5.17", ALL);
    assert_eq!(count(&r, "root", "setrlimit(NPROC, 5)", "ok"), 1);
    assert_eq!(count(&r, "user", "setrlimit(NPROC, 5)", "EPERM"), 1);
}

#[test]
fn setuid_needs_a_mapped_uid_and_cap_setuid() {
    let mut s = Setup::default();
    container(&mut s, "c", 0, 100_000);
    s.tasks.push(task(
        "root",
        "c",
        100_000,
        vec![
            Op::Setuid { uid: 70_000 },
            Op::Setuid { uid: 5 },
            Op::Setuid { uid: 6 },
        ],
    ));
    let (outcome, r) = run(&s, "v5.17", ALL);
    assert_eq!(outcome, Outcome::Pass);
    assert_eq!(count(&r, "root", "setuid(70000)", "EINVAL"), 1, "unmapped");
    assert_eq!(count(&r, "root", "setuid(5)", "ok"), 1);
    assert_eq!(
        count(&r, "root", "setuid(6)", "EPERM"),
        1,
        "no CAP_SETUID any more"
    );
}

#[test]
fn clone_newuser_charges_user_namespaces_and_frees_them_later() {
    let mut s = Setup::default();
    s.sysctls.push(SysctlSpec {
        userns: "init".into(),
        name: "user.max_user_namespaces".into(),
        value: 2,
    });
    let newuser = Op::Clone {
        flags: CLONE_NEWUSER,
    };
    let ops = vec![
        newuser.clone(),
        newuser.clone(),
        newuser.clone(),
        Op::Exit {},
        newuser,
    ];
    s.tasks.push(task("t", "init", 1000, ops));
    let (outcome, r) = run(&s, "v5.17", ALL);
    assert_eq!(
        outcome,
        Outcome::Pass,
        "balanced and no leak once all exited"
    );
    // The third is over the limit. The reaped child's namespace is freed
    // from a work item after its credentials' grace period, as the
    // kernel frees it, so the clone right after the reap is refused too
    // (the conformance case userns.clone_reap_loop_enospc asks the kernel).
    assert_eq!(count(&r, "t", "clone(CLONE_NEWUSER)", "ok"), 2);
    assert_eq!(count(&r, "t", "clone(CLONE_NEWUSER)", "ENOSPC"), 2);
    assert_eq!(count(&r, "t", "exit", "ok"), 1);
}

#[test]
fn an_unprivileged_max_sysctl_write_is_refused() {
    let mut s = Setup::default();
    let write = Op::SysctlWrite {
        name: "user.max_user_namespaces".into(),
        value: 5,
    };
    s.tasks
        .push(task("user", "init", 1000, vec![write.clone()]));
    s.tasks.push(task("root", "init", 0, vec![write]));
    let (_, r) = run(&s, "v5.17", &[]);
    let label = "sysctl_write(user.max_user_namespaces)";
    assert_eq!(count(&r, "user", label, "EACCES"), 1);
    assert_eq!(count(&r, "root", label, "ok"), 1);
}

#[test]
fn each_profile_has_the_nproc_behaviours_of_its_release() {
    let p = |v: &str| resolve_patches(v, &[]).unwrap().nproc();
    assert!(!p("v5.13").ucounts);
    let v514 = p("v5.14");
    assert!(v514.ucounts && !v514.rlimit_max_check && !v514.enforce_limit);
    let v516 = p("v5.16");
    assert!(v516.rlimit_max_check && !v516.enforce_limit);
    let v517 = p("v5.17");
    assert!(
        v517.enforce_limit
            && v517.flag_after_set_user
            && v517.real_uid
            && v517.limitnproc_regression
            && !v517.rfc_2016
    );
    assert!(p("v6.3").enforce_limit, "later releases keep the fixes");
    assert!(!p("v6.3").rfc_2016, "the RFC was never merged");
}
