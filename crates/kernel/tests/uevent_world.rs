//! Network namespaces and uevents through the kernel's syscalls: the
//! results a task sees, and the uevent invariants across the eras.

use kernel::setup::{clone_flags::CLONE_NEWNET, Op, Setup, SysctlSpec, TaskSpec, UserNsSpec};
use kernel::Results;
use sim::{Outcome, StrategySpec};

fn task(name: &str, userns: &str, uid: u32, ops: Vec<Op>) -> TaskSpec {
    TaskSpec {
        name: name.into(),
        instances: 1,
        sequential: false,
        userns: userns.into(),
        uid,
        repeat: 1,
        ops,
    }
}

fn container() -> Vec<UserNsSpec> {
    vec![UserNsSpec {
        name: "container".into(),
        parent: "init".into(),
        owner: 1000,
    }]
}

fn run(
    setup: &Setup,
    profile: &str,
    strategy: StrategySpec,
    iterations: u64,
) -> (Outcome, Results) {
    let out = kernel::explore_profile(setup, profile, strategy, 1, iterations);
    (out.explore.report.outcome, out.results)
}

/// `results[task][op]` as "NAME count" pairs, sorted.
fn results_of(r: &Results, task: &str, op: &str) -> Vec<(String, u64)> {
    r[task][op]
        .results
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

fn inject(payload: &str) -> Op {
    Op::UeventInject {
        payload: payload.into(),
    }
}

/// The host kernel announcing a device, a millisecond in.
fn device_added_after_1ms() -> TaskSpec {
    task(
        "kernel",
        "init",
        0,
        vec![
            Op::Sleep { ns: 1_000_000 },
            Op::UeventDeviceEvent {
                action: "add".into(),
                devpath: "/devices/virtual/mem/full".into(),
            },
        ],
    )
}

fn pairs(p: &[(&str, u64)]) -> Vec<(String, u64)> {
    p.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn injection_needs_cap_sys_admin_over_the_owning_user_namespace() {
    let setup = Setup {
        processes: Default::default(),
        files: Vec::new(),
        children: Vec::new(),
        user_namespaces: container(),
        sysctls: vec![],
        tasks: vec![
            task(
                "container-root",
                "container",
                1000,
                vec![
                    Op::Unshare {
                        flags: CLONE_NEWNET,
                    },
                    inject("add@/a"),
                ],
            ),
            task(
                "host-user",
                "init",
                1000,
                vec![
                    inject("add@/b"),
                    Op::Unshare {
                        flags: CLONE_NEWNET,
                    },
                ],
            ),
            task("host-root", "init", 0, vec![inject("add@/c"), inject("")]),
        ],
    };
    let (outcome, r) = run(&setup, "v4.17", StrategySpec::Fair, 1);
    assert_eq!(outcome, Outcome::Pass);
    assert_eq!(
        results_of(&r, "container-root", "uevent_inject"),
        pairs(&[("ok", 1)])
    );
    assert_eq!(
        results_of(&r, "host-user", "uevent_inject"),
        pairs(&[("EPERM", 1)])
    );
    assert_eq!(
        results_of(&r, "host-root", "uevent_inject"),
        pairs(&[("ok", 2)])
    );
    let (_, old) = run(&setup, "v4.16", StrategySpec::Fair, 1);
    assert_eq!(
        results_of(&old, "host-root", "uevent_inject"),
        pairs(&[("ECONNREFUSED", 2)])
    );
}

#[test]
fn an_overrun_is_reported_once_and_counted() {
    let mut ops = vec![
        Op::UeventListen { rcvbuf: 1500 },
        Op::Sleep { ns: 1_000_000 },
    ];
    ops.extend((0..6).map(|_| Op::UeventRecv {}));
    let flood = (0..5).map(|_| inject("add@/devices/x\0ACTION=add"));
    let setup = Setup {
        processes: Default::default(),
        files: Vec::new(),
        children: Vec::new(),
        user_namespaces: vec![],
        sysctls: vec![],
        tasks: vec![
            task("udevd", "init", 0, ops),
            task(
                "flood",
                "init",
                0,
                std::iter::once(Op::Sleep { ns: 10_000 })
                    .chain(flood)
                    .collect(),
            ),
        ],
    };
    let (outcome, r) = run(&setup, "v6.8", StrategySpec::Fair, 1);
    assert_eq!(outcome, Outcome::Pass);
    assert_eq!(
        results_of(&r, "udevd", "uevent_recv"),
        pairs(&[("EAGAIN", 2), ("ENOBUFS", 1), ("ok", 3)])
    );
    let (outcome, _) = run(&setup, "v6.8", StrategySpec::Random, 200);
    assert_eq!(
        outcome,
        Outcome::Pass,
        "no interleaving loses a uevent silently"
    );
}

fn leak_setup() -> Setup {
    Setup {
        processes: Default::default(),
        files: Vec::new(),
        children: Vec::new(),
        user_namespaces: container(),
        sysctls: vec![],
        tasks: vec![
            task(
                "container-udevd",
                "container",
                1000,
                vec![
                    Op::Unshare {
                        flags: CLONE_NEWNET,
                    },
                    Op::UeventListen { rcvbuf: 4096 },
                    Op::Sleep { ns: 2_000_000 },
                    Op::UeventRecv {},
                ],
            ),
            device_added_after_1ms(),
        ],
    }
}

#[test]
fn host_events_leak_into_containers_until_v4_18() {
    let (outcome, _) = run(&leak_setup(), "v4.17", StrategySpec::Fair, 1);
    assert!(
        matches!(&outcome, Outcome::Violation { invariant, .. } if invariant == "uevent.no_leak_into_unprivileged"),
        "{outcome:?}"
    );
    let (outcome, r) = run(&leak_setup(), "v4.18", StrategySpec::Fair, 1);
    assert_eq!(outcome, Outcome::Pass);
    assert_eq!(
        results_of(&r, "container-udevd", "uevent_recv"),
        pairs(&[("EAGAIN", 1)])
    );
}

#[test]
fn dropped_network_namespaces_hold_their_charge_until_cleanup_net() {
    let setup = Setup {
        processes: Default::default(),
        files: Vec::new(),
        children: Vec::new(),
        user_namespaces: vec![],
        sysctls: vec![SysctlSpec {
            userns: "init".into(),
            name: "user.max_net_namespaces".into(),
            value: 3,
        }],
        tasks: vec![TaskSpec {
            repeat: 20,
            ..task(
                "looper",
                "init",
                0,
                vec![Op::Unshare {
                    flags: CLONE_NEWNET,
                }],
            )
        }],
    };
    let (outcome, r) = run(&setup, "v6.9", StrategySpec::Fair, 1);
    // The fourth unshare fails while one namespace is alive and two wait
    // for cleanup_net: a false ENOSPC, and the run stops there.
    let Outcome::Violation { invariant, detail } = outcome else {
        panic!("expected the false ENOSPC, got {outcome:?}");
    };
    assert_eq!(invariant, "netns.no_false_enospc");
    assert!(
        detail.contains("2 network namespaces were released"),
        "{detail}"
    );
    let res = &r["looper"]["unshare(CLONE_NEWNET)"];
    assert_eq!(res.first_failure, Some(3));
    assert!(res.results["ENOSPC"] > 0);
    // Waiting for the pending cleanup (the candidate fix) leaves no ENOSPC,
    // and the ucounts balance at the end.
    let fixed = kernel::resolve_patches("v6.9", &[("netns-wait-pending-free".into(), true)])
        .expect("a catalogued patch");
    let out = explore_with(&setup, &fixed);
    assert_eq!(out.explore.report.outcome, Outcome::Pass);
    let res = &out.results["looper"]["unshare(CLONE_NEWNET)"];
    assert_eq!(res.results.get("ok"), Some(&20), "{res:?}");
}

/// One fair execution of `setup` under `patches`, every invariant checked.
fn explore_with(setup: &Setup, patches: &kernel::ActivePatches) -> kernel::RunOutput {
    let invariants = kernel::catalog::all_invariants();
    let mut explore = sim::ExploreConfig::new(StrategySpec::Fair, 1, 1, sim::ExecConfig::default());
    explore.shrink = false;
    kernel::explore_run(&kernel::RunSpec {
        setup,
        patches,
        invariants: &invariants,
        explore,
    })
}

#[test]
fn a_new_user_namespace_owns_the_network_namespace_made_with_it() {
    use kernel::setup::clone_flags::CLONE_NEWUSER;
    let setup = Setup {
        processes: Default::default(),
        files: Vec::new(),
        children: Vec::new(),
        user_namespaces: vec![],
        sysctls: vec![],
        tasks: vec![
            task(
                "rootless",
                "init",
                1000,
                vec![
                    Op::Unshare {
                        flags: CLONE_NEWUSER | CLONE_NEWNET,
                    },
                    Op::UeventListen { rcvbuf: 4096 },
                    inject("add@/devices/x"),
                    Op::UeventRecv {},
                ],
            ),
            device_added_after_1ms(),
        ],
    };
    let (outcome, r) = run(&setup, "v6.9", StrategySpec::Fair, 1);
    assert_eq!(outcome, Outcome::Pass, "{r:?}");
    assert_eq!(
        results_of(&r, "rootless", "unshare(CLONE_NEWUSER|CLONE_NEWNET)"),
        pairs(&[("ok", 1)])
    );
    assert_eq!(
        results_of(&r, "rootless", "uevent_inject"),
        pairs(&[("ok", 1)])
    );
    assert_eq!(
        results_of(&r, "rootless", "uevent_recv"),
        pairs(&[("ok", 1)])
    );
    // The same without a new user namespace: no CAP_SYS_ADMIN for uid 1000.
    let (_, r) = run(
        &Setup {
            tasks: vec![task(
                "plain",
                "init",
                1000,
                vec![Op::Unshare {
                    flags: CLONE_NEWNET,
                }],
            )],
            ..setup.clone()
        },
        "v6.9",
        StrategySpec::Fair,
        1,
    );
    assert_eq!(
        results_of(&r, "plain", "unshare(CLONE_NEWNET)"),
        pairs(&[("EPERM", 1)])
    );
}
