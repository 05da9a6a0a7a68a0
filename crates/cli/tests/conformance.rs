//! The model against the running kernel: the same questions asked of both.
//! The kernel is probed inside a child user namespace (`unshare -U -r`), so
//! its limits are lowered only there; every child process is reaped.

use crate::support;

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Ask the running kernel, in a fresh user namespace with
/// max_ipc_namespaces = 3: how many of 300 `unshare --ipc true` fail, and
/// what a fourth unshare gets while three namespaces are alive. `None`
/// (with the reason) when this machine cannot run the probe.
fn kernel_probe() -> Result<(u32, u32, String), String> {
    let script = r#"
        echo 3 > /proc/sys/user/max_ipc_namespaces || exit 90
        ok=0; fail=0; i=0
        while [ $i -lt 300 ]; do
            if unshare --ipc true 2>/dev/null; then ok=$((ok+1)); else fail=$((fail+1)); fi
            i=$((i+1))
        done
        echo "loop $ok $fail"
        unshare --ipc sleep 3 & a=$!
        unshare --ipc sleep 3 & b=$!
        unshare --ipc sleep 3 & c=$!
        sleep 0.5
        if msg=$(unshare --ipc true 2>&1); then echo "fourth ok"; else echo "fourth $msg"; fi
        kill $a $b $c 2>/dev/null
        wait
    "#;
    let out = Command::new("timeout")
        .args(["60", "unshare", "-U", "-r", "--fork", "sh", "-c", script])
        .current_dir(std::env::temp_dir())
        .output()
        .map_err(|e| format!("cannot run unshare: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() && !text.contains("loop") {
        return Err(format!(
            "`unshare -U -r` is not available here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let loop_line = text
        .lines()
        .find(|l| l.starts_with("loop "))
        .ok_or_else(|| format!("unexpected probe output: {text}"))?;
    let nums: Vec<u32> = loop_line
        .split_whitespace()
        .skip(1)
        .filter_map(|n| n.parse().ok())
        .collect();
    let fourth = text
        .lines()
        .find(|l| l.starts_with("fourth "))
        .unwrap_or("")
        .to_string();
    Ok((nums[0], nums[1], fourth))
}

fn kernel_is_at_least(major: u32, minor: u32) -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release
        .trim()
        .split(['.', '-'])
        .filter_map(|p| p.parse::<u32>().ok());
    let (a, b) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a, b) >= (major, minor)
}

#[test]
fn the_ipc_limit_answers_like_the_running_kernel() {
    let _turn = support::kernel_turn();
    if !kernel_is_at_least(6, 3) {
        support::skip(
            "the_ipc_limit_answers_like_the_running_kernel",
            "the running kernel is older than 6.3, the era the v6.3 profile models",
            None,
        );
        return;
    }
    let (ok, fail, fourth) = match kernel_probe() {
        Ok(r) => r,
        Err(reason) => {
            support::skip(
                "the_ipc_limit_answers_like_the_running_kernel",
                &reason,
                None,
            );
            return;
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args([
            "run",
            "sim-scenarios/ipc-limit-conformance.toml",
            "--format",
            "json",
        ])
        .current_dir(root)
        .output()
        .unwrap();
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = &line["results"];
    let looper = &results["looper"]["unshare(CLONE_NEWIPC)"]["results"];
    let late = &results["late"]["unshare(CLONE_NEWIPC)"]["results"];

    // A loop that keeps one namespace alive never fails, in both.
    assert_eq!((ok, fail), (300, 0), "kernel loop");
    assert_eq!(looper["ok"], 300);
    assert!(looper.get("ENOSPC").is_none());
    // With three alive, the fourth fails with ENOSPC, in both.
    assert!(
        fourth.contains("No space left on device"),
        "kernel: {fourth}"
    );
    assert_eq!(late["ENOSPC"], 1);
    assert_eq!(
        line["outcome"], "pass",
        "the model's ENOSPC is a justified one"
    );
}

/// `nssim conformance` over two subsystems (the whole suite is
/// `.ci/run`'s): each case holds its expectation in the model and either
/// agrees with the running kernel or is skipped with a printed reason.
/// They are the two whose answers nothing else running on the machine can
/// change: each case makes its own user namespaces and maps, and lowers
/// limits only inside them. (A device uevent another process raises
/// reaches a uevent listener, and namespaces freed late keep their
/// charges: the uevent and netns cases are asked of a lab kernel, in
/// `lab.rs`.)
#[test]
fn nssim_conformance_agrees_with_the_running_kernel() {
    let _turn = support::kernel_turn();
    let out = Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(["conformance", "--format", "json"])
        .args(["--subsystem", "idmap", "--subsystem", "userns"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}); exit {:?}, stderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let cases = doc["cases"].as_array().unwrap();
    let files: usize = ["idmap", "userns"]
        .iter()
        .map(|d| {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sim-scenarios/conformance");
            std::fs::read_dir(dir.join(d))
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "toml"))
                })
                .count()
        })
        .sum();
    assert_eq!(
        cases.len(),
        files,
        "one case per file of the two subsystems"
    );
    for c in cases {
        assert_eq!(c["model"], "as expected", "{}", case_summary(c));
        let verdict = &c["on_kernel"]["verdict"];
        assert!(
            verdict == "agree" || verdict == "skipped",
            "{}",
            case_summary(c)
        );
    }
    let mut ran = 0;
    for c in cases {
        match c["agree"].as_bool() {
            Some(agree) => {
                assert!(agree, "model and kernel disagree: {}", case_summary(c));
                ran += 1;
            }
            None => {
                let reason = c["skipped"].as_str().expect("a skipped case says why");
                eprintln!("skipped {}: {reason}", c["case"]);
            }
        }
    }
    assert_eq!(out.status.code(), Some(0));
    eprintln!("{ran} of {} cases ran against the kernel", cases.len());
}

/// A case's verdict and the outcomes each side showed, first and short:
/// a failure's message is cut where it is long, so what differed comes
/// before the whole record.
fn case_summary(c: &Value) -> String {
    let k = &c["on_kernel"];
    let outcomes = |side: &str| -> String {
        k[side]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|o| format!("{} x{}", o["outcome"], o["count"]))
                    .collect::<Vec<_>>()
                    .join(" | ")
            })
            .unwrap_or_default()
    };
    format!(
        "case {} (model {}): verdict {}; expectations {}; kernel showed [{}]; model reaches [{}]\nwhole record: {c}",
        c["case"],
        c["model"],
        k["verdict"],
        k["expectations"],
        outcomes("kernel_outcomes"),
        outcomes("model_outcomes"),
    )
}

#[test]
fn nssim_conformance_lists_and_filters_cases() {
    let out = Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(["conformance", "--list", "--subsystem", "ipc"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().all(|l| l.starts_with("ipc ")), "{text}");
    assert!(text.contains("ipc.one_loop.limit_10"));
    assert_eq!(text.lines().count(), 18, "{text}");
    let bad = Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(["conformance", "--subsystem", "nope"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no conformance case matches"));
}

/// A conformance scenario names its subsystem by its directory; one whose
/// model expectation does not hold makes the suite fail (exit status 1),
/// and one the kernel agrees with is reported as such.
#[test]
fn a_conformance_scenario_whose_expectation_fails_fails_the_suite() {
    let _turn = support::kernel_turn();
    let dir = std::env::temp_dir().join(format!("nssim-conformance-{}", std::process::id()));
    let sub = dir.join("sim-scenarios/conformance/demo");
    std::fs::create_dir_all(&sub).unwrap();
    let scenario = |name: &str, expected: &str| {
        format!(
            r#"name = "{name}"
summary = "uid 1000 writes the uid_map of a namespace it made"

[explore]
strategy = "fair"
iterations = 1

[[userns]]
name = "target"
owner = 1000

[[task]]
name = "holder"
userns = "target"
uid = 1000
ops = ["sleep(50ms)"]

[[task]]
name = "writer"
uid = 1000
ops = ['write_uid_map_of(holder, "0 1000 1")', "read_uid_map_of(holder)"]

[[kernel]]
profile = "v6.9"
expect = {{ outcome = "pass", results = {{ writer = {{ write_uid_map_of = "{expected}", read_uid_map_of = {{ values = [0, 1000, 1] }} }} }} }}
"#
        )
    };
    std::fs::write(sub.join("good.toml"), scenario("demo.good", "ok")).unwrap();
    std::fs::write(sub.join("wrong.toml"), scenario("demo.wrong", "EPERM")).unwrap();
    let run = |case: &str| {
        Command::new(env!("CARGO_BIN_EXE_nssim"))
            .args([
                "conformance",
                "--subsystem",
                "demo",
                "--case",
                case,
                "--format",
                "json",
            ])
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let good = run("good");
    let wrong = run("wrong");
    std::fs::remove_dir_all(&dir).unwrap();
    let doc: Value = serde_json::from_slice(&good.stdout).expect("one JSON document");
    let case = &doc["cases"][0];
    assert_eq!(case["subsystem"], "demo");
    assert_eq!(case["model"], "as expected");
    if case["on_kernel"]["verdict"] == "agree" {
        assert_eq!(case["agree"], true);
        assert_eq!(good.status.code(), Some(0));
    } else {
        eprintln!("skipped on the kernel: {}", case["on_kernel"]["reason"]);
    }
    let doc: Value = serde_json::from_slice(&wrong.stdout).expect("one JSON document");
    let case = &doc["cases"][0];
    assert!(
        case["model"]
            .as_str()
            .unwrap()
            .starts_with("NOT as expected"),
        "{case}"
    );
    assert_eq!(case["agree"], false);
    assert_eq!(wrong.status.code(), Some(1));
}
