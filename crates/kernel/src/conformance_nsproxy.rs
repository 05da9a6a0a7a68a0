//! Questions about the one namespace path (`unshare`, `clone`, the
//! `unshare -U true` child) and the one credential model, asked of the
//! model under the profile of the running kernel and of the running kernel
//! itself ([`probe::host_cases`] holds the kernel halves, which name the
//! answers they give). Each question is also a scenario of the library
//! (named in the case's question) that asserts the kernel's answer.

use crate::conformance_nproc::{mapped_container, model};
use crate::setup::clone_flags::{CLONE_NEWNET, CLONE_NEWUSER};
use crate::setup::{nested_user_namespaces, Op, Setup, SysctlSpec, TaskSpec};
use crate::world::Results;
use probe::{host_cases, Case, KernelAnswer};

/// The results of `task`'s `label` calls: `ok`, an errno, or `ok then
/// EPERM`-style when they differ (in call order of first appearance).
fn answer(results: &Results, task: &str, label: &str) -> String {
    let Some(stats) = results.get(task).and_then(|r| r.get(label)) else {
        return "no call".into();
    };
    let mut names: Vec<&str> = stats.results.keys().map(String::as_str).collect();
    names.sort_by_key(|n| (*n != "ok", *n));
    names.join(" then ")
}

/// `ENOSPC at least once` or `never ENOSPC` for a loop's calls.
fn loop_answer(results: &Results, task: &str, label: &str) -> String {
    let enospc = results
        .get(task)
        .and_then(|r| r.get(label))
        .and_then(|s| s.results.get("ENOSPC"))
        .is_some_and(|n| *n > 0);
    if enospc {
        "ENOSPC at least once".into()
    } else {
        "never ENOSPC".into()
    }
}

fn case(
    subsystem: &'static str,
    name: &str,
    question: &str,
    model: impl Fn() -> String + Send + Sync + 'static,
    kernel: fn() -> KernelAnswer,
) -> Case {
    Case {
        subsystem,
        name: name.to_string(),
        question: question.to_string(),
        model: Box::new(model),
        kernel: Box::new(kernel),
    }
}

/// A container (as `unshare -U -r` leaves it) limited to `limit` of `sysctl`,
/// with one task, its root, running `ops` `repeat` times.
fn container_loop(sysctl: &str, limit: i64, ops: Vec<Op>, repeat: u64) -> Setup {
    let mut s = Setup::default();
    mapped_container(&mut s, "c", 0);
    s.sysctls.push(SysctlSpec {
        userns: "c".into(),
        name: sysctl.into(),
        value: limit,
    });
    let mut t = TaskSpec::new("t", "c", 0, ops);
    t.repeat = repeat;
    s.tasks.push(t);
    s
}

/// Root without CAP_SYS_ADMIN in its bounding set: a network namespace,
/// then one inside a new user namespace.
fn bounding_set_kernel() -> KernelAnswer {
    if !probe::host_is_root() {
        return Err(probe::Skip(
            "needs root in the initial user namespace".into(),
        ));
    }
    let drop = "setpriv --bounding-set -sys_admin --inh-caps -sys_admin";
    let script = format!(
        "{drop} unshare -n true 2>/dev/null && a=ok || a=EPERM; \
         {drop} unshare -U -r unshare -n true 2>/dev/null && b=ok || b=EPERM; \
         echo \"netns $a, in a new user namespace $b\""
    );
    let out = probe::sh_as_host(&script, 20)?;
    Ok(out.stdout.trim().to_string())
}

fn bounding_set_model() -> String {
    let mut s = Setup::default();
    let no_admin = vec![userns::caps::CAP_SYS_ADMIN];
    let plain = vec![
        Op::Execve {},
        Op::Unshare {
            flags: CLONE_NEWNET,
        },
    ];
    let mut nested = nested_user_namespaces(1);
    nested.push(Op::Unshare {
        flags: CLONE_NEWNET,
    });
    for (name, ops) in [("a", plain), ("b", nested)] {
        s.tasks.push(TaskSpec::new(name, "init", 0, ops));
        s.processes
            .bounding_drop
            .insert(name.into(), no_admin.clone());
    }
    let r = model(&s);
    format!(
        "netns {}, in a new user namespace {}",
        answer(&r, "a", "unshare(CLONE_NEWNET)"),
        answer(&r, "b", "unshare(CLONE_NEWNET)")
    )
}

pub fn conformance_cases() -> Vec<Case> {
    vec![
        case(
            "userns",
            "caps.bounding_set_dropped",
            "root without CAP_SYS_ADMIN in its bounding set unshares a network namespace, then does so inside a new user namespace (scenario security-caps-dropped)",
            bounding_set_model,
            bounding_set_kernel,
        ),
        case(
            "userns",
            "userns.unshare_in_mapped_ns",
            "root of a container whose uid and gid maps are written unshares a user namespace (scenario userns-nest-in-mapped-container)",
            || {
                let mut s = Setup::default();
                mapped_container(&mut s, "c", 0);
                let ops = vec![Op::Unshare { flags: CLONE_NEWUSER }];
                s.tasks.push(TaskSpec::new("t", "c", 0, ops));
                answer(&model(&s), "t", "unshare(CLONE_NEWUSER)")
            },
            host_cases::unshare_user_in_mapped_ns,
        ),
        case(
            "userns",
            "userns.second_uid_map_write",
            "a container's uid_map, written once, is written again (scenario userns-nest-in-mapped-container)",
            || {
                let mut s = Setup::default();
                mapped_container(&mut s, "c", 0);
                let ops = vec![Op::WriteUidMap {
                    text: "0 0 1".into(),
                }];
                s.tasks.push(TaskSpec::new("t", "c", 0, ops));
                answer(&model(&s), "t", "write_uid_map")
            },
            host_cases::second_uid_map_write,
        ),
        case(
            "netns",
            "netns.create_exit_loop_enospc",
            "20 x `unshare -n true` under max_net_namespaces = 1 in a container (scenario netns-create-exit-limit-one)",
            || {
                let op = Op::UnshareAndExit {
                    flags: CLONE_NEWNET,
                };
                let s = container_loop("user.max_net_namespaces", 1, vec![op], 20);
                loop_answer(&model(&s), "t", "unshare_and_exit(CLONE_NEWNET)")
            },
            host_cases::netns_create_exit_loop_enospc,
        ),
        case(
            "userns",
            "userns.create_exit_loop_enospc",
            "20 x `unshare -U true` under max_user_namespaces = 1 in a container (scenario userns-clone-reap-limit-one)",
            || {
                let op = Op::UnshareAndExit {
                    flags: CLONE_NEWUSER,
                };
                let s = container_loop("user.max_user_namespaces", 1, vec![op], 20);
                loop_answer(&model(&s), "t", "unshare_and_exit(CLONE_NEWUSER)")
            },
            host_cases::userns_create_exit_loop_enospc,
        ),
        case(
            "userns",
            "userns.nesting_depth",
            "how many nested user namespaces can be made from the initial one (scenario userns-nesting-depth)",
            || {
                let ops = nested_user_namespaces(34);
                let mut s = Setup::default();
                s.tasks.push(TaskSpec::new("t", "init", 0, ops));
                let r = model(&s);
                let stats = &r["t"]["unshare(CLONE_NEWUSER)"];
                let ok = stats.results.get("ok").copied().unwrap_or(0);
                let failed = stats.results.keys().find(|k| *k != "ok");
                match failed {
                    Some(e) => format!("{ok} ok, then {e}"),
                    None => format!("{ok} ok"),
                }
            },
            host_cases::userns_nesting_depth,
        ),
        case(
            "userns",
            "userns.clone_reap_loop_enospc",
            "20 x clone(CLONE_NEWUSER) and reap under max_user_namespaces = 1 in a container; the kernel half runs `unshare -U true` (fork, then the child's new user namespace), the nearest shell form (scenario userns-clone-reap-limit-one)",
            || {
                let ops = vec![Op::Clone { flags: CLONE_NEWUSER }, Op::Exit {}];
                let s = container_loop("user.max_user_namespaces", 1, ops, 20);
                loop_answer(&model(&s), "t", "clone(CLONE_NEWUSER)")
            },
            host_cases::userns_create_exit_loop_enospc,
        ),
        case(
            "userns",
            "userns.clone_nesting_depth",
            "33 nested user namespaces, then clone(CLONE_NEWUSER) into a 34th (scenario userns-nesting-depth); the kernel half nests by unshare",
            || {
                let mut ops = nested_user_namespaces(33);
                ops.push(Op::Clone { flags: CLONE_NEWUSER });
                let mut s = Setup::default();
                s.tasks.push(TaskSpec::new("t", "init", 0, ops));
                let r = model(&s);
                let made = r["t"]["unshare(CLONE_NEWUSER)"].results.get("ok").copied();
                let clone = answer(&r, "t", "clone(CLONE_NEWUSER)");
                format!("{} ok, then {clone}", made.unwrap_or(0))
            },
            host_cases::userns_nesting_depth,
        ),
        case(
            "userns",
            "userns.creator_writes_own_max_sysctl",
            "uid 1000 unshares a user namespace and writes its user.max_ipc_namespaces (scenario userns-creator-writes-limit)",
            || {
                let mut s = Setup::default();
                let ops = vec![
                    Op::Unshare { flags: CLONE_NEWUSER },
                    Op::SysctlWrite {
                        name: "user.max_ipc_namespaces".into(),
                        value: 5,
                    },
                ];
                s.tasks.push(TaskSpec::new("t", "init", 1000, ops));
                answer(&model(&s), "t", "sysctl_write(user.max_ipc_namespaces)")
            },
            host_cases::creator_writes_own_max_sysctl,
        ),
        case(
            "userns",
            "userns.creator_after_exec_writes_own_max_sysctl",
            "the same write after an execve, unmapped (scenario userns-creator-writes-limit)",
            || {
                let mut s = Setup::default();
                let ops = vec![
                    Op::Unshare { flags: CLONE_NEWUSER },
                    Op::Execve {},
                    Op::SysctlWrite {
                        name: "user.max_ipc_namespaces".into(),
                        value: 5,
                    },
                ];
                s.tasks.push(TaskSpec::new("t", "init", 1000, ops));
                answer(&model(&s), "t", "sysctl_write(user.max_ipc_namespaces)")
            },
            host_cases::creator_after_exec_writes_own_max_sysctl,
        ),
        case(
            "userns",
            "userns.unmapped_creator_unshare",
            "a task of a user namespace whose maps were never written unshares another (create_user_ns wants its ids mapped)",
            || {
                let mut s = Setup::default();
                let ops = vec![
                    Op::Unshare { flags: CLONE_NEWUSER },
                    Op::Unshare { flags: CLONE_NEWUSER },
                ];
                s.tasks.push(TaskSpec::new("t", "init", 1000, ops));
                let r = model(&s);
                let stats = &r["t"]["unshare(CLONE_NEWUSER)"];
                match stats.first_failure {
                    Some(1) => stats
                        .results
                        .keys()
                        .find(|k| *k != "ok")
                        .cloned()
                        .unwrap_or_default(),
                    _ => format!("{:?}", stats.results),
                }
            },
            host_cases::unmapped_creator_unshare_user,
        ),
    ]
}
