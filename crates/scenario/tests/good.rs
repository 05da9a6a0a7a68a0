//! Well-formed scenario files parse into exactly the values they describe.

use std::path::PathBuf;

use kernel::setup::{clone_flags, Op, SysctlSpec, TaskSpec, UserNsSpec};
use scenario::{parse, Expect, ExpectedOutcome, Explore, KernelRun, PatchToggle, StrategyName};

const EXAMPLE: &str = include_str!("data/example.toml");

#[test]
fn example_parses_into_every_field() {
    let s = parse("sim-scenarios/example.toml", EXAMPLE).unwrap();
    assert_eq!(s.path, PathBuf::from("sim-scenarios/example.toml"));
    assert_eq!(s.name, "ipc-alloc-vs-free");
    assert_eq!(
        s.summary,
        "unshare(CLONE_NEWIPC) in a loop under a small max_ipc_namespaces"
    );
    assert_eq!(s.source, EXAMPLE);
    assert_eq!(s.invariants, ["ipc.no_false_enospc", "ucounts.balanced"]);
    assert_eq!(
        s.costs,
        [
            ("rcu_grace_period".to_string(), 8_000_000),
            ("syscall".to_string(), 150)
        ]
    );
    assert_eq!(
        s.setup.user_namespaces,
        [UserNsSpec {
            name: "container".into(),
            parent: "init".into(),
            owner: 1000,
        }]
    );
    assert_eq!(
        s.setup.sysctls,
        [
            SysctlSpec {
                userns: "init".into(),
                name: "user.max_ipc_namespaces".into(),
                value: 3,
            },
            SysctlSpec {
                userns: "container".into(),
                name: "user.max_ipc_namespaces".into(),
                value: 2,
            },
        ]
    );
    assert_eq!(
        s.setup.tasks,
        [TaskSpec {
            name: "looper".into(),
            instances: 1,
            userns: "init".into(),
            uid: 0,
            repeat: 1000,
            sequential: false,
            ops: vec![
                Op::Unshare {
                    flags: clone_flags::CLONE_NEWIPC
                },
                Op::Sleep { ns: 10_000 },
            ],
        }]
    );
    assert_eq!(
        s.runs,
        [KernelRun {
            profile: "v6.2".into(),
            patches: vec![
                PatchToggle {
                    name: "ipc-batch-free".into(),
                    enable: true,
                },
                PatchToggle {
                    name: "ipc-wait-pending-free".into(),
                    enable: false,
                },
            ],
            label: "v6.2".into(),
            expect: Expect {
                outcome: ExpectedOutcome::Violation,
                invariant: Some("ipc.no_false_enospc".into()),
                results: vec![],
                exhausted: false,
                bug: None,
            },
            explore: Explore {
                strategy: StrategyName::Fair,
                seed: 1,
                iterations: 100,
                pct_depth: 3,
                preemption_bound: 2,
                cpus: 2,
                max_steps: 10_000_000,
                max_virtual_ns: 3_600_000_000_000,
            },
        }]
    );
}

const MINIMAL: &str = r#"
name = "min"
summary = "smallest valid scenario"
[[task]]
name = "t"
ops = ["unshare(CLONE_NEWIPC)"]
[[kernel]]
profile = "v6.3"
expect = "pass"
"#;

#[test]
fn defaults_are_filled_in() {
    let s = parse("min.toml", MINIMAL).unwrap();
    let all: Vec<String> = kernel::catalog::INVARIANTS
        .iter()
        .map(|i| i.name.to_string())
        .collect();
    assert_eq!(s.invariants, all);
    assert!(s.costs.is_empty());
    assert!(s.setup.user_namespaces.is_empty());
    assert!(s.setup.sysctls.is_empty());
    let t = &s.setup.tasks[0];
    assert_eq!(
        (t.instances, t.userns.as_str(), t.uid, t.repeat),
        (1, "init", 0, 1)
    );
    let run = &s.runs[0];
    assert_eq!(run.label, "v6.3");
    assert!(run.patches.is_empty());
    assert_eq!(
        run.expect,
        Expect {
            outcome: ExpectedOutcome::Pass,
            invariant: None,
            results: vec![],
            exhausted: false,
            bug: None,
        }
    );
    let d = Explore::default();
    assert_eq!(run.explore, d);
    assert_eq!(
        d,
        Explore {
            strategy: StrategyName::Random,
            seed: 1,
            iterations: 100,
            pct_depth: 3,
            preemption_bound: 2,
            cpus: 2,
            max_steps: 10_000_000,
            max_virtual_ns: 3_600_000_000_000,
        }
    );
}

#[test]
fn empty_invariant_list_means_all() {
    let text = MINIMAL.replace("summary =", "invariants = []\nsummary =");
    let s = parse("x.toml", &text).unwrap();
    assert_eq!(s.invariants.len(), kernel::catalog::INVARIANTS.len());
}

#[test]
fn named_invariants_come_in_catalog_order() {
    let text = MINIMAL.replace(
        "summary =",
        "invariants = [\"lifetime\", \"ucounts.balanced\"]\nsummary =",
    );
    let s = parse("x.toml", &text).unwrap();
    assert_eq!(s.invariants, ["ucounts.balanced", "lifetime"]);
}

const FULL: &str = r#"
name = "every.op_kind-1"
summary = "all ops, all outcomes, several kernels"
invariants = ["ipc.no_false_enospc", "ucounts.balanced", "lifetime"]

[explore]
strategy = "pct"
seed = 18446744073709551615
iterations = 1_000_000_000
max_virtual_time = "1m30.5s"

[sysctl]
user.max_ipc_namespaces = 5        # an unquoted dotted key works too
"user.max_user_namespaces" = 2147483647

[costs]
kworker_wakeup = "5us"
step = 0
rcu_grace_period = "1.5ms"

[[userns]]
name = "outer"
owner = 4294967295

[[userns]]
name = "inner"
parent = "outer"
[userns.sysctl]
"user.max_ipc_namespaces" = 0

[[task]]
name = "writer"
instances = 15_999
userns = "inner"
uid = 1000
repeat = 1_000_000_000
ops = [
  "unshare(CLONE_NEWIPC|CLONE_NEWIPC)",
  " sysctl_write( user.max_ipc_namespaces , 2147483647 ) ",
  "mq_path_walk(reader)",
  "lock(m_1)",
  "unlock(m_1)",
  "sleep(1.5ms)",
  "sleep(250)",
  'bug("boom, \"quoted\" (really)")',
]

[[task]]
name = "reader"
ops = ["mq_path_walk(writer)", "mq_path_walk(reader)"]

[[kernel]]
profile = "v6.3"
patches = ["-ipc-wait-pending-free", "+ipc-free-no-grace-period"]
expect = { outcome = "use-after-free" }

[[kernel]]
profile = "v6.2"
label = "v6.2-fast"
expect = { outcome = "violation", invariant = "ipc.no_false_enospc" }
explore = { strategy = "dfs", preemption_bound = 0, cpus = 1024, pct_depth = 64, max_steps = 1_000_000_000_000, seed = 0, max_virtual_time = 1 }

[[kernel]]
profile = "v5.6"
expect = "deadlock"
[kernel.explore]
iterations = 1

[[kernel]]
profile = "v5.7"
expect = "panic"

[[kernel]]
profile = "v6.3"
expect = "limit"
"#;

#[test]
fn full_file() {
    let s = parse("full.toml", FULL).unwrap();
    assert_eq!(s.name, "every.op_kind-1");
    assert_eq!(
        s.invariants,
        ["ipc.no_false_enospc", "ucounts.balanced", "lifetime"]
    );
    assert_eq!(
        s.costs,
        [
            ("kworker_wakeup".to_string(), 5_000),
            ("step".to_string(), 0),
            ("rcu_grace_period".to_string(), 1_500_000),
        ]
    );
    assert_eq!(
        s.setup.user_namespaces,
        [
            UserNsSpec {
                name: "outer".into(),
                parent: "init".into(),
                owner: u32::MAX
            },
            UserNsSpec {
                name: "inner".into(),
                parent: "outer".into(),
                owner: 0
            },
        ]
    );
    let sysctls: Vec<(&str, &str, i64)> = s
        .setup
        .sysctls
        .iter()
        .map(|s| (s.userns.as_str(), s.name.as_str(), s.value))
        .collect();
    assert_eq!(
        sysctls,
        [
            ("init", "user.max_ipc_namespaces", 5),
            ("init", "user.max_user_namespaces", 2_147_483_647),
            ("inner", "user.max_ipc_namespaces", 0),
        ]
    );
    let w = &s.setup.tasks[0];
    assert_eq!(
        (
            w.name.as_str(),
            w.instances,
            w.userns.as_str(),
            w.uid,
            w.repeat
        ),
        ("writer", 15_999, "inner", 1000, 1_000_000_000)
    );
    assert_eq!(
        w.ops,
        [
            Op::Unshare {
                flags: clone_flags::CLONE_NEWIPC
            },
            Op::SysctlWrite {
                name: "user.max_ipc_namespaces".into(),
                value: 2_147_483_647
            },
            Op::MqPathWalk {
                target: "reader".into()
            },
            Op::Lock { name: "m_1".into() },
            Op::Unlock { name: "m_1".into() },
            Op::Sleep { ns: 1_500_000 },
            Op::Sleep { ns: 250 },
            Op::Bug {
                message: "boom, \"quoted\" (really)".into()
            },
        ]
    );
    assert_eq!(
        s.setup.tasks[1].ops,
        [
            Op::MqPathWalk {
                target: "writer".into()
            },
            Op::MqPathWalk {
                target: "reader".into()
            },
        ]
    );

    let base = Explore {
        strategy: StrategyName::Pct,
        seed: u64::MAX,
        iterations: 1_000_000_000,
        max_virtual_ns: 90_500_000_000,
        ..Explore::default()
    };
    let labels: Vec<&str> = s.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "v6.3-ipc-wait-pending-free+ipc-free-no-grace-period",
            "v6.2-fast",
            "v5.6",
            "v5.7",
            "v6.3"
        ]
    );
    let outcomes: Vec<&str> = s.runs.iter().map(|r| r.expect.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        ["use-after-free", "violation", "deadlock", "panic", "limit"]
    );
    assert_eq!(
        s.runs[0].patches,
        [
            PatchToggle {
                name: "ipc-wait-pending-free".into(),
                enable: false
            },
            PatchToggle {
                name: "ipc-free-no-grace-period".into(),
                enable: true
            },
        ]
    );
    assert_eq!(s.runs[0].explore, base);
    assert_eq!(
        s.runs[1].explore,
        Explore {
            strategy: StrategyName::Dfs,
            seed: 0,
            iterations: 1_000_000_000,
            pct_depth: 64,
            preemption_bound: 0,
            cpus: 1024,
            max_steps: 1_000_000_000_000,
            max_virtual_ns: 1,
        }
    );
    assert_eq!(
        s.runs[2].explore,
        Explore {
            iterations: 1,
            ..base
        }
    );
    assert_eq!(s.runs[4].explore, base);
}

#[test]
fn tasks_as_inline_tables_and_escapes_in_basic_strings() {
    let text = r#"
name = "inline"
summary = "s"
task = [ { name = "a", ops = ["sleep(\u0031us)", "bug(\"a\\tb\")"] } ]
kernel = [ { profile = "v5.6", expect = "pass" } ]
"#;
    let s = parse("x.toml", text).unwrap();
    assert_eq!(
        s.setup.tasks[0].ops,
        [
            Op::Sleep { ns: 1_000 },
            Op::Bug {
                message: "a\tb".into()
            }
        ]
    );
}

#[test]
fn strategy_and_outcome_names() {
    for s in StrategyName::ALL {
        assert_eq!(s.as_str().parse::<StrategyName>(), Ok(s));
        assert_eq!(s.to_string(), s.as_str());
    }
    assert!("bfs".parse::<StrategyName>().is_err());
    for o in ExpectedOutcome::ALL {
        assert_eq!(o.as_str().parse::<ExpectedOutcome>(), Ok(o));
    }
    assert_eq!(ExpectedOutcome::UseAfterFree.as_str(), "use-after-free");
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nssim-scenario-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn load_and_discover() {
    let dir = temp_dir("discover");
    std::fs::write(dir.join("b.toml"), MINIMAL).unwrap();
    std::fs::write(dir.join("a.toml"), MINIMAL).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a scenario").unwrap();
    std::fs::create_dir(dir.join("sub.toml")).unwrap();
    std::fs::create_dir(dir.join("nested")).unwrap();
    std::fs::write(dir.join("nested/c.toml"), MINIMAL).unwrap();
    let single = dir.join("notes.txt");

    let found = scenario::discover(&[dir.clone(), single.clone()]).unwrap();
    assert_eq!(found, [dir.join("a.toml"), dir.join("b.toml"), single]);

    let s = scenario::load(&found[0]).unwrap();
    assert_eq!(s.path, dir.join("a.toml"));
    assert_eq!(s.name, "min");

    let missing = dir.join("missing.toml");
    let err = scenario::discover(std::slice::from_ref(&missing)).unwrap_err();
    assert_eq!(err.file, missing.display().to_string());
    assert_eq!((err.line, err.column), (None, None));
    assert!(err.message.contains("no such file"), "{err}");

    let err = scenario::load(&missing).unwrap_err();
    assert_eq!((err.line, err.column), (None, None));
    assert!(err.message.contains("cannot read"), "{err}");
    assert!(err.to_string().starts_with("error: cannot read"), "{err}");

    let empty = dir.join("nested/empty");
    std::fs::create_dir(&empty).unwrap();
    let err = scenario::discover(&[empty]).unwrap_err();
    assert!(err.message.contains("no scenario files"), "{err}");

    let garbage = dir.join("garbage.toml");
    std::fs::write(&garbage, b"name = \"x\"\nsum\xffmary = 1\n").unwrap();
    let err = scenario::load(&garbage).unwrap_err();
    assert_eq!((err.line, err.column), (Some(2), Some(4)), "{err}");
    assert!(err.message.contains("not UTF-8"), "{err}");

    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn renders_like_rustc() {
    let text = "name = \"x\"\nsummary = \"s\"\n[[task]]\nname = \"a\"\nops = [\"sleep(1)\"]\n[[kernel]]\nprofile = \"v9.9\"\nexpect = \"pass\"\n";
    let err = parse("sim-scenarios/x.toml", text).unwrap_err();
    // The list is the catalogue's, in its order.
    let profiles: Vec<&str> = kernel::catalog::PROFILES.iter().map(|p| p.name).collect();
    let want = format!(
        "\
error: unknown kernel profile `v9.9`
  --> sim-scenarios/x.toml:7:11
   |
 7 | profile = \"v9.9\"
   |           ^^^^^^ expected one of: {}
   = help: Linux 9.9 is modelled by `v6.16`, the newest profile at or before it (a profile is named after the release where something it models changed)",
        profiles.join(", ")
    );
    assert_eq!(err.to_string(), want);
    assert_eq!(err.source_line(), Some("profile = \"v9.9\""));

    let err = scenario::ScenarioError::new("f.toml", "cannot read");
    assert_eq!(err.to_string(), "error: cannot read\n  --> f.toml");
}

#[test]
fn crlf_line_endings_and_byte_order_mark() {
    let crlf = MINIMAL.replace('\n', "\r\n");
    let s = parse("crlf.toml", &crlf).unwrap();
    assert_eq!(s.name, "min");
    let err = parse("crlf.toml", &crlf.replace("v6.3", "v9.9")).unwrap_err();
    assert_eq!((err.line, err.column), (Some(8), Some(11)));
    assert_eq!(err.source_line(), Some("profile = \"v9.9\""));

    let bom = format!("\u{feff}{}", MINIMAL.trim_start());
    let s = parse("bom.toml", &bom).unwrap();
    assert_eq!(s.name, "min");
}

#[test]
fn multi_line_op_strings() {
    let text = MINIMAL.replace(
        "ops = [\"unshare(CLONE_NEWIPC)\"]",
        "ops = [\"\"\"\nsysctl_write(\n    user.max_ipc_namespaces,\n    7,\n)\"\"\", '''bug(\"multi\nline\")''']",
    );
    let s = parse("x.toml", &text).unwrap();
    assert_eq!(
        s.setup.tasks[0].ops,
        [
            Op::SysctlWrite {
                name: "user.max_ipc_namespaces".into(),
                value: 7
            },
            Op::Bug {
                message: "multi\nline".into()
            }
        ]
    );
}

/// `"EPERM or EACCES"`: every call returned one of them; `"not EPERM"`:
/// none did; `"some ENOSPC"`: one did. Each needs at least one call.
#[test]
fn an_expected_result_may_be_one_of_several_or_not_one() {
    use std::collections::BTreeMap;
    let text = r#"name = "x"
summary = "s"
[[task]]
name = "t"
ops = ["unshare(CLONE_NEWUSER)", "setuid(0)", "fork()"]
[[kernel]]
profile = "v6.3"
expect = { outcome = "pass", results = { t = { unshare = "EPERM or ok", setuid = "not EPERM", fork = "some EAGAIN or ENOMEM" } } }
"#;
    let s = scenario::parse("t.toml", text).unwrap();
    let want = |op: &str| {
        s.runs[0]
            .expect
            .results
            .iter()
            .find(|r| r.op == op)
            .unwrap()
            .clone()
    };
    let got = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
        pairs.iter().map(|(r, n)| (r.to_string(), *n)).collect()
    };
    let one_of = want("unshare");
    assert_eq!(one_of.written(), "EPERM or ok");
    assert!(one_of.holds_for(&got(&[("ok", 2), ("EPERM", 1)])));
    assert!(!one_of.holds_for(&got(&[("ok", 2), ("EINVAL", 1)])));
    assert!(!one_of.holds_for(&got(&[])));
    let not = want("setuid");
    assert_eq!(not.written(), "not EPERM");
    assert!(not.holds_for(&got(&[("EINVAL", 1)])));
    assert!(!not.holds_for(&got(&[("ok", 1), ("EPERM", 1)])));
    assert!(!not.holds_for(&got(&[])));
    let some = want("fork");
    assert!(some.holds_for(&got(&[("ok", 3), ("ENOMEM", 1)])));
    assert!(!some.holds_for(&got(&[("ok", 3)])));
    let bad = text.replace("not EPERM", "not EWHAT");
    let err = scenario::parse("t.toml", &bad).unwrap_err();
    assert!(err.message.contains("unknown result `EWHAT`"), "{err}");
}

/// `{ calls = [...] }`: the first calls' results, in call order; without a
/// `result`, any of those it names.
#[test]
fn an_expected_result_may_list_the_first_calls_in_order() {
    let text = r#"name = "x"
summary = "s"
[[task]]
name = "t"
ops = ['setgroups("")', 'setgroups("0")']
[[kernel]]
profile = "v6.3"
expect = { outcome = "pass", results = { t = { setgroups = { calls = ["EPERM", "ok"] } } } }
"#;
    let s = scenario::parse("t.toml", text).unwrap();
    let want = &s.runs[0].expect.results[0];
    assert_eq!(
        want.calls,
        Some(vec!["EPERM".to_string(), "ok".to_string()])
    );
    assert_eq!(want.written(), "some EPERM or ok");
    let got = |calls: &[&str]| -> Vec<String> { calls.iter().map(|c| c.to_string()).collect() };
    assert!(want.calls_hold_for(&got(&["EPERM", "ok"])));
    assert!(want.calls_hold_for(&got(&["EPERM", "ok", "EINVAL"])));
    assert!(!want.calls_hold_for(&got(&["ok", "EPERM"])));
    assert!(!want.calls_hold_for(&got(&["EPERM"])));
    for (bad, says) in [
        (r#"calls = ["EPERM", "EWHAT"]"#, "unknown result `EWHAT`"),
        (r#"calls = "EPERM""#, "an array of results"),
    ] {
        let text = text.replace(r#"calls = ["EPERM", "ok"]"#, bad);
        let err = scenario::parse("t.toml", &text).unwrap_err();
        assert!(
            err.message.contains(says) || err.to_string().contains(says),
            "{err}"
        );
    }
    let words = text.replace(
        r#"calls = ["EPERM", "ok"]"#,
        r#"calls = ["EPERM", "ok"], words = ["add"]"#,
    );
    let with_words = scenario::parse("t.toml", &words).unwrap();
    assert_eq!(
        with_words.runs[0].expect.results[0].texts,
        Some(vec!["add".to_string()])
    );
    let many = format!("calls = [{}]", vec!["\"ok\""; 65].join(", "));
    let err =
        scenario::parse("t.toml", &text.replace(r#"calls = ["EPERM", "ok"]"#, &many)).unwrap_err();
    assert!(
        err.to_string().contains("at most the first 64 calls"),
        "{err}"
    );
}

#[test]
fn expected_results_name_tasks_operations_and_errnos() {
    let text = r#"name = "x"
summary = "s"
[[task]]
name = "looper"
ops = ["unshare(CLONE_NEWIPC)", "sysctl_write(user.max_ipc_namespaces, 1)"]
[[kernel]]
profile = "v6.3"
expect = { outcome = "pass", results = { looper = { "unshare(CLONE_NEWIPC)" = "ok", sysctl_write = "EPERM" } } }
"#;
    let s = scenario::parse("t.toml", text).unwrap();
    let results = &s.runs[0].expect.results;
    assert_eq!(results.len(), 2);
    let sysctl = results.iter().find(|r| r.op == "sysctl_write").unwrap();
    assert_eq!(
        (sysctl.task.as_str(), sysctl.written().as_str()),
        ("looper", "EPERM")
    );
    assert!(sysctl.matches_label("sysctl_write(user.max_ipc_namespaces)"));
    assert!(!sysctl.matches_label("sysctl_writer"));
    assert!(sysctl.matches_task("looper.3"));
    assert!(!sysctl.matches_task("looper2"));
    for (bad, message) in [
        (
            "results = { nobody = { unshare = \"ok\" } }",
            "no task named `nobody`",
        ),
        (
            "results = { looper = { frob = \"ok\" } }",
            "unknown operation `frob`",
        ),
        (
            "results = { looper = { unshare = \"EWHAT\" } }",
            "unknown result `EWHAT`",
        ),
    ] {
        let t = text.replace(
            r#"results = { looper = { "unshare(CLONE_NEWIPC)" = "ok", sysctl_write = "EPERM" } }"#,
            bad,
        );
        let e = scenario::parse("t.toml", &t).unwrap_err();
        assert!(e.to_string().contains(message), "{e}");
        assert_eq!(e.line, Some(8), "{e}");
    }
}

/// `preemption_bound = "none"` asks `dfs` for no bound at all.
#[test]
fn no_preemption_bound_is_none() {
    let text = r#"name = "x"
summary = "s"
[explore]
strategy = "dfs"
preemption_bound = "none"
[[task]]
name = "t"
ops = ["fork()"]
[[kernel]]
profile = "v6.3"
expect = "pass"
explore = { preemption_bound = 1 }
"#;
    let s = scenario::parse("x.toml", text).unwrap();
    let bounds: Vec<u32> = s.runs.iter().map(|r| r.explore.preemption_bound).collect();
    assert_eq!(bounds, [1]);
    let s = scenario::parse(
        "x.toml",
        &text.replace("explore = { preemption_bound = 1 }\n", ""),
    )
    .unwrap();
    assert_eq!(s.runs[0].explore.preemption_bound, sim::limits::UNBOUNDED);
}
