//! RLIMIT_NPROC and user-namespace limit questions asked of the model
//! (under the profile of the running kernel) and of the running kernel.
//!
//! The kernel half runs as child processes only: `setpriv` to switch to an
//! otherwise unused uid (61001-61012, one per case), `prlimit` to set
//! RLIMIT_NPROC, `unshare -U -r` for user namespaces made by that uid, and
//! a `dash` loop of background `sleep`s that counts the forks that worked
//! (dash exits at the first fork that fails, printing "Cannot fork").
//! Every sleeper is killed by its pid before the probe returns (orphans
//! are reaped by init), and everything runs under `timeout`. Limits are
//! lowered only for the probe's own processes; the one sysctl a case
//! touches on the host is written with its current value, and the write is
//! expected to be refused.

use crate::catalog;
use crate::process::UidMap;
use crate::setup::{Op, Setup, SysctlSpec, TaskSpec, UserNsSpec};
use crate::world::{replay_run, Results, RunSpec};
use probe::{errno_from_message, sh_as_host, shell_quote, Case, KernelAnswer, Skip};
use sim::{ExecConfig, ExploreConfig, Schedule, StrategySpec};

const NS_NEWUSER: u64 = crate::setup::clone_flags::CLONE_NEWUSER;
/// How long the probes' sleepers live at most.
const SLEEP: &str = "sleep 30 >/dev/null 2>&1";

/// Run `setup` once under the host's profile, in virtual-time order.
pub(crate) fn model(setup: &Setup) -> Results {
    let patches = crate::resolve_patches(catalog::host_profile(), &[]).expect("host profile");
    let spec = RunSpec {
        setup,
        patches: &patches,
        invariants: &[],
        explore: ExploreConfig::new(StrategySpec::Fair, 1, 1, ExecConfig::default()),
    };
    replay_run(&spec, &Schedule::Fair, false).1
}

fn task(name: &str, userns: &str, uid: u32, ops: Vec<Op>) -> TaskSpec {
    TaskSpec::new(name, userns, uid, ops)
}

fn forks(n: usize) -> Vec<Op> {
    vec![Op::Fork {}; n]
}

fn sleep_ms(ms: u64) -> Op {
    Op::Sleep { ns: ms * 1_000_000 }
}

/// `started=N` plus ` refused` if a fork failed with EAGAIN, for the
/// forks (and clones) of `task`.
fn fork_answer(results: &Results, task: &str) -> String {
    let mut ok = 0;
    let mut refused = false;
    for (label, stats) in results.get(task).into_iter().flatten() {
        if label == "fork" || label.starts_with("clone") {
            ok += stats.results.get("ok").copied().unwrap_or(0);
            refused |= stats.results.contains_key("EAGAIN");
        }
    }
    format!("started={ok}{}", if refused { " refused" } else { "" })
}

/// The result (`ok` or an errno) of the first call of `label` by `task`.
fn op_answer(results: &Results, task: &str, label: &str) -> String {
    results
        .get(task)
        .and_then(|ops| ops.get(label))
        .and_then(|s| s.results.keys().next().cloned())
        .unwrap_or_else(|| "not run".into())
}

/// A dash loop trying `n` background sleepers, printing each pid.
fn loop_script(n: usize) -> String {
    let items: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    format!(
        "for i in {}; do {SLEEP} & echo \"started $!\"; done",
        items.join(" ")
    )
}

/// As `uid`, with RLIMIT_NPROC `limit`, through `wrapper` (e.g. `unshare
/// -U -r`), run `inner` with `sh -c`.
fn as_user(uid: u32, limit: Option<u64>, wrapper: &str, inner: &str) -> String {
    let limit = limit.map_or(String::new(), |l| format!("prlimit --nproc={l}:{l} "));
    format!(
        "setpriv --reuid={uid} --regid={uid} --clear-groups {limit}{wrapper} sh -c {}",
        shell_quote(inner)
    )
}

/// Run `cmd` (which prints `started PID` lines), capture what it printed,
/// kill every started pid, and answer `started=N` (+ ` refused`).
fn count_started(cmd: &str) -> String {
    format!(
        "out=$({cmd} 2>&1); for p in $(echo \"$out\" | sed -n 's/^started //p'); do kill $p 2>/dev/null; done; \
         n=$(echo \"$out\" | grep -c '^started '); \
         if echo \"$out\" | grep -q 'Cannot fork'; then echo \"started=$n refused\"; else echo \"started=$n\"; fi"
    )
}

/// Wait (at most 10 s) until no process of the probes' uids is left: a
/// killed sleeper is a zombie, still counted against its uid's
/// RLIMIT_NPROC, until init reaps it, which can take a moment.
const SETTLE: &str = "i=0; while [ $i -lt 200 ] && ps -eo uid= | awk '$1 >= 61001 && $1 <= 61012 { found = 1 } END { exit !found }'; do sleep 0.05; i=$((i+1)); done; ";

/// Run a probe script as root on the host, once the probes' earlier
/// processes are gone; its last line is the answer.
fn probe(script: &str) -> KernelAnswer {
    let out = sh_as_host(&format!("{SETTLE}{script}"), 60)?;
    out.stdout
        .lines()
        .last()
        .map(str::to_string)
        .ok_or_else(|| Skip(format!("probe printed nothing: {}", out.stderr.trim())))
}

/// The errno a failed command reported on stderr, or `ok`.
fn errno_of(script: &str) -> KernelAnswer {
    let out = sh_as_host(&format!("{SETTLE}{script}"), 60)?;
    if out.status == Some(0) {
        return Ok("ok".into());
    }
    errno_from_message(&out.stderr)
        .map(str::to_string)
        .ok_or_else(|| Skip(format!("unrecognised failure: {}", out.stderr.trim())))
}

fn unshare_available() -> Result<(), Skip> {
    probe::host_allows_userns()
}

fn need_root() -> Result<(), Skip> {
    if probe::host_is_root() {
        Ok(())
    } else {
        Err(Skip("needs root to switch to the probe's uids".into()))
    }
}

fn case(
    name: &str,
    question: &str,
    model: impl Fn() -> String + Send + Sync + 'static,
    kernel: impl Fn() -> KernelAnswer + Send + Sync + 'static,
) -> Case {
    Case {
        subsystem: "nproc",
        name: name.to_string(),
        question: question.to_string(),
        model: Box::new(model),
        kernel: Box::new(kernel),
    }
}

/// A container as global root's `unshare -U -r` leaves it: owned by uid 0,
/// its root mapped to `outside` in both maps.
pub(crate) fn mapped_container(s: &mut Setup, name: &str, outside: u32) {
    userns(s, name, "init", 0, outside, None);
}

/// A set-up user namespace made by `owner` with root mapped to `outside`.
fn userns(
    s: &mut Setup,
    name: &str,
    parent: &str,
    owner: u32,
    outside: u32,
    creator_nproc: Option<u64>,
) {
    s.user_namespaces.push(UserNsSpec {
        name: name.into(),
        parent: parent.into(),
        owner,
    });
    // `unshare -U -r` maps root to the creator in both maps.
    let map = UidMap {
        inside: 0,
        outside,
        count: 1,
    };
    s.processes.maps.insert(name.into(), map);
    s.processes.gid_maps.insert(name.into(), map);
    if let Some(l) = creator_nproc {
        s.processes.creator_nproc.insert(name.into(), l);
    }
}

/// The RLIMIT_NPROC conformance cases.
pub fn conformance_cases() -> Vec<Case> {
    vec![
        limit_in_init(),
        limit_of_one(),
        root_is_exempt(),
        raising_the_hard_limit(),
        setuid_over_limit_then_execve(),
        setuid_under_limit_then_execve(),
        sibling_containers_made_by_root(),
        namespace_made_by_the_user(),
        sibling_namespaces_made_by_the_user(),
        nested_namespaces(),
        max_user_namespaces_in_a_container(),
        unprivileged_max_sysctl_write(),
    ]
}

fn limit_in_init() -> Case {
    const U: u32 = 61001;
    case(
        "nproc.limit_in_init",
        "uid 61001 with RLIMIT_NPROC 3 tries 4 forks: how many work?",
        || {
            let mut s = Setup::default();
            s.tasks.push(task("t", "init", U, forks(4)));
            s.processes.task_nproc.insert("t".into(), 3);
            fork_answer(&model(&s), "t")
        },
        || {
            need_root()?;
            probe(&count_started(&as_user(U, Some(3), "", &loop_script(4))))
        },
    )
}

fn limit_of_one() -> Case {
    const U: u32 = 61002;
    case(
        "nproc.limit_of_one",
        "uid 61002 with RLIMIT_NPROC 1 (itself) tries 2 forks",
        || {
            let mut s = Setup::default();
            s.tasks.push(task("t", "init", U, forks(2)));
            s.processes.task_nproc.insert("t".into(), 1);
            fork_answer(&model(&s), "t")
        },
        || {
            need_root()?;
            probe(&count_started(&as_user(U, Some(1), "", &loop_script(2))))
        },
    )
}

fn root_is_exempt() -> Case {
    case(
        "nproc.root_exempt",
        "global root with RLIMIT_NPROC 2 tries 4 forks",
        || {
            let mut s = Setup::default();
            s.tasks.push(task("t", "init", 0, forks(4)));
            s.processes.task_nproc.insert("t".into(), 2);
            fork_answer(&model(&s), "t")
        },
        || {
            need_root()?;
            let cmd = format!("prlimit --nproc=2:2 sh -c {}", shell_quote(&loop_script(4)));
            probe(&count_started(&cmd))
        },
    )
}

fn raising_the_hard_limit() -> Case {
    const U: u32 = 61003;
    case(
        "nproc.raise_hard_limit_unprivileged",
        "uid 61003 with RLIMIT_NPROC 3:3 sets it to 5:5",
        || {
            let mut s = Setup::default();
            s.tasks.push(task(
                "t",
                "init",
                U,
                vec![Op::Setrlimit {
                    resource: "NPROC".into(),
                    limit: 5,
                }],
            ));
            s.processes.task_nproc.insert("t".into(), 3);
            op_answer(&model(&s), "t", "setrlimit(NPROC, 5)")
        },
        || {
            need_root()?;
            errno_of(&format!(
                "setpriv --reuid={U} --regid={U} --clear-groups prlimit --nproc=3:3 prlimit --nproc=5:5 true"
            ))
        },
    )
}

/// uid `u` runs `running` processes; root under RLIMIT_NPROC `limit`
/// switches to `u` and executes a new image.
fn setuid_then_execve(name: &str, u: u32, running: usize, limit: u64) -> Case {
    let question = format!(
        "uid {u} runs {running} processes; root with RLIMIT_NPROC {limit} does setuid({u}) and execve"
    );
    case(
        name,
        &question,
        move || {
            let mut s = Setup::default();
            let mut user_ops = forks(running - 1);
            user_ops.push(sleep_ms(10));
            s.tasks.push(task("user", "init", u, user_ops));
            s.tasks.push(task(
                "root",
                "init",
                0,
                vec![sleep_ms(1), Op::Setuid { uid: u }, Op::Execve {}],
            ));
            s.processes.task_nproc.insert("root".into(), limit);
            op_answer(&model(&s), "root", "execve")
        },
        move || {
            need_root()?;
            let holders: Vec<String> = (0..running)
                .map(|_| {
                    format!("setpriv --reuid={u} --regid={u} --clear-groups {SLEEP} & p=\"$p $!\"")
                })
                .collect();
            let script = format!(
                "p=''; {}; sleep 0.3; \
                 prlimit --nproc={limit}:{limit} setpriv --reuid={u} --regid={u} --clear-groups true; st=$?; \
                 kill $p; wait; exit $st",
                holders.join("; ")
            );
            errno_of(&script)
        },
    )
}

fn setuid_over_limit_then_execve() -> Case {
    setuid_then_execve("nproc.setuid_over_limit_execve", 61004, 3, 2)
}

fn setuid_under_limit_then_execve() -> Case {
    setuid_then_execve("nproc.setuid_under_limit_execve", 61005, 1, 3)
}

fn sibling_containers_made_by_root() -> Case {
    const U: u32 = 61006;
    // A container runtime makes the namespaces as root and then switches
    // the container's init to its root without an exec in between; the
    // shell tools here cannot, so the containers are made by uid 61006
    // itself while it has no RLIMIT_NPROC (what `enforced_nproc_rlimit`
    // records for root too), and their roots then lower it to 3.
    case(
        "nproc.sibling_containers_same_kuid",
        "containers a and b, made without an RLIMIT_NPROC, both run as kuid 61006; a's root with RLIMIT_NPROC 3 tries 4 forks, then b's",
        || {
            let mut s = Setup::default();
            userns(&mut s, "a", "init", U, U, None);
            userns(&mut s, "b", "init", U, U, None);
            s.tasks.push(task("a", "a", U, forks(4)));
            let mut b_ops = vec![sleep_ms(1)];
            b_ops.extend(forks(4));
            s.tasks.push(task("b", "b", U, b_ops));
            s.processes.task_nproc.insert("a".into(), 3);
            s.processes.task_nproc.insert("b".into(), 3);
            let r = model(&s);
            format!("a: {}; b: {}", fork_answer(&r, "a"), fork_answer(&r, "b"))
        },
        || {
            need_root()?;
            unshare_available()?;
            let container = |tag: &str| {
                let inner = format!("exec prlimit --nproc=3:3 sh -c {}", shell_quote(&loop_script(4)));
                let cmd = as_user(U, None, "unshare -U -r", &inner);
                format!(
                    "{cmd} > $d/{tag}.out 2>&1; \
                     n=$(grep -c '^started ' $d/{tag}.out); r=''; grep -q 'Cannot fork' $d/{tag}.out && r=' refused'; \
                     {tag}=\"started=$n$r\""
                )
            };
            let script = format!(
                "d=$(mktemp -d); {}; {}; kill $(sed -n 's/^started //p' $d/a.out $d/b.out) 2>/dev/null; rm -rf $d; echo \"a: $a; b: $b\"",
                container("a"),
                container("b")
            );
            probe(&script)
        },
    )
}

fn namespace_made_by_the_user() -> Case {
    const U: u32 = 61007;
    case(
        "nproc.userns_made_by_the_user",
        "uid 61007 with RLIMIT_NPROC 3 makes a user namespace (unshare -U -r) and tries 4 forks in it",
        || {
            let mut s = Setup::default();
            userns(&mut s, "c", "init", U, U, Some(3));
            s.tasks.push(task("t", "c", U, forks(4)));
            s.processes.task_nproc.insert("t".into(), 3);
            fork_answer(&model(&s), "t")
        },
        || {
            need_root()?;
            unshare_available()?;
            probe(&count_started(&as_user(
                U,
                Some(3),
                "unshare -U -r",
                &loop_script(4),
            )))
        },
    )
}

fn sibling_namespaces_made_by_the_user() -> Case {
    const U: u32 = 61008;
    case(
        "nproc.sibling_userns_made_by_the_user",
        "uid 61008 with RLIMIT_NPROC 3 runs a namespace a with 2 processes; from a shell of its own it makes namespace b and tries 3 forks there",
        || {
            let mut s = Setup::default();
            userns(&mut s, "a", "init", U, U, Some(3));
            s.tasks.push(task("a", "a", U, vec![Op::Fork {}, sleep_ms(10)]));
            let mut b_ops = vec![sleep_ms(1), Op::Unshare { flags: NS_NEWUSER }];
            b_ops.extend(forks(3));
            s.tasks.push(task("b", "init", U, b_ops));
            s.processes.task_nproc.insert("a".into(), 3);
            s.processes.task_nproc.insert("b".into(), 3);
            format!("b: {}", fork_answer(&model(&s), "b"))
        },
        || {
            need_root()?;
            unshare_available()?;
            let a_inner = format!("{SLEEP} & echo \"started $!\"; read x < $d/a.go");
            let b_shell = as_user(
                U,
                Some(3),
                "",
                &format!("read x < $d/b.go; exec unshare -U -r sh -c {}", shell_quote(&loop_script(3))),
            );
            let script = format!(
                "d=$(mktemp -d); chmod 755 $d; export d; mkfifo -m 666 $d/a.go $d/b.go; \
                 {b_shell} > $d/b.out 2>&1 & b=$!; \
                 {} > $d/a.out 2>&1 & a=$!; \
                 i=0; while ! grep -q started $d/a.out && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; \
                 echo go > $d/b.go; wait $b; echo go > $d/a.go; wait $a; \
                 kill $(sed -n 's/^started //p' $d/a.out $d/b.out) 2>/dev/null; \
                 n=$(grep -c '^started ' $d/b.out); r=''; grep -q 'Cannot fork' $d/b.out && r=' refused'; \
                 rm -rf $d; echo \"b: started=$n$r\"",
                as_user(U, Some(3), "unshare -U -r", &a_inner)
            );
            probe(&script)
        },
    )
}

fn nested_namespaces() -> Case {
    const U: u32 = 61009;
    case(
        "nproc.nested_userns",
        "uid 61009 with RLIMIT_NPROC 3 makes a namespace, forks once there, makes a nested one and tries 3 forks in it",
        || {
            let mut s = Setup::default();
            userns(&mut s, "outer", "init", U, U, Some(3));
            let mut ops = vec![Op::Fork {}, Op::Unshare { flags: NS_NEWUSER }];
            ops.extend(forks(3));
            s.tasks.push(task("t", "outer", U, ops));
            s.processes.task_nproc.insert("t".into(), 3);
            fork_answer(&model(&s), "t")
        },
        || {
            need_root()?;
            unshare_available()?;
            let inner = format!(
                "{SLEEP} & echo \"started $!\"; exec unshare -U -r sh -c {}",
                shell_quote(&loop_script(3))
            );
            probe(&count_started(&as_user(U, Some(3), "unshare -U -r", &inner)))
        },
    )
}

fn max_user_namespaces_in_a_container() -> Case {
    case(
        "userns.max_user_namespaces_in_a_container",
        "in a user namespace with max_user_namespaces = 2 and two namespaces alive, a third unshare(CLONE_NEWUSER)",
        || {
            let mut s = Setup::default();
            userns(&mut s, "c", "init", 0, 0, None);
            s.sysctls.push(SysctlSpec {
                userns: "c".into(),
                name: "user.max_user_namespaces".into(),
                value: 2,
            });
            let ops = vec![Op::Clone { flags: NS_NEWUSER }; 3];
            s.tasks.push(task("t", "c", 0, ops));
            let r = model(&s);
            let stats = r.get("t").and_then(|o| o.get("clone(CLONE_NEWUSER)"));
            stats
                .and_then(|s| s.results.keys().find(|k| *k != "ok").cloned())
                .unwrap_or_else(|| "ok".into())
        },
        || {
            unshare_available()?;
            let script = format!(
                "echo 2 > /proc/sys/user/max_user_namespaces || exit 90; \
                 unshare -U {SLEEP} & a=$!; unshare -U {SLEEP} & b=$!; \
                 i=0; while {{ [ \"$(readlink /proc/$a/ns/user)\" = \"$(readlink /proc/self/ns/user)\" ] || [ \"$(readlink /proc/$b/ns/user)\" = \"$(readlink /proc/self/ns/user)\" ]; }} && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; \
                 unshare -U true; st=$?; kill $a $b; wait; exit $st"
            );
            let out = probe::sh_in_userns(&script, 60)?;
            if out.status == Some(0) {
                return Ok("ok".into());
            }
            errno_from_message(&out.stderr)
                .map(str::to_string)
                .ok_or_else(|| Skip(format!("unrecognised failure: {}", out.stderr.trim())))
        },
    )
}

fn unprivileged_max_sysctl_write() -> Case {
    const U: u32 = 61010;
    case(
        "userns.max_sysctl_write_unprivileged",
        "uid 61010 writes /proc/sys/user/max_user_namespaces of the initial namespace",
        || {
            let mut s = Setup::default();
            s.tasks.push(task(
                "t",
                "init",
                U,
                vec![Op::SysctlWrite {
                    name: "user.max_user_namespaces".into(),
                    value: 5,
                }],
            ));
            op_answer(&model(&s), "t", "sysctl_write(user.max_user_namespaces)")
        },
        || {
            need_root()?;
            // The current value, so that even a wrongly allowed write
            // would change nothing.
            errno_of(&format!(
                "v=$(cat /proc/sys/user/max_user_namespaces); \
                 setpriv --reuid={U} --regid={U} --clear-groups sh -c \"echo $v > /proc/sys/user/max_user_namespaces\""
            ))
        },
    )
}
