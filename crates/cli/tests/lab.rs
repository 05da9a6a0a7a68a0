//! The kernel lab: scenarios on real kernels of several eras, each booted
//! in a disposable VM. These tests need QEMU and the lab's kernels in the
//! cache (`nssim lab fetch`, `nssim lab build-fault-kernel`); without them
//! each says why it skips, and `NSSIM_REQUIRE_LAB` (set by `.ci/run`, which
//! fetches them) makes that a failure. The VMs share nothing with the
//! machine's kernel, so these tests take turns only with each other.

use crate::support::{self, nssim, stderr, stdout};
use serde_json::Value;

const REQUIRED: Option<&str> = Some("NSSIM_REQUIRE_LAB");
/// The Debian kernels `nssim lab fetch` gets, one per era, with the
/// profile each is held to.
const ERAS: [(&str, &str); 4] = [
    ("5.10", "v5.10"),
    ("6.1", "v6.1"),
    ("6.12", "v6.12"),
    ("6.18", "v6.16"),
];
const FAULT_KERNEL: &str = "6.12-fault";

/// The kernels of the lab, as `nssim lab list --format json` shows them.
fn lab_kernels() -> Vec<Value> {
    let o = nssim(&["lab", "list", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line per kernel"))
        .collect()
}

fn qemu_on_path() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("qemu-system-x86_64").is_file()))
}

/// Whether the lab can run `names` here; if not, the test says why.
fn lab_has(test: &str, names: &[&str]) -> bool {
    if !qemu_on_path() {
        support::skip(
            test,
            "QEMU is not installed (apt-get install qemu-system-x86)",
            REQUIRED,
        );
        return false;
    }
    let kernels = lab_kernels();
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !kernels.iter().any(|k| k["name"] == *n))
        .collect();
    if missing.is_empty() {
        return true;
    }
    let why = format!(
        "the lab has no kernel {} (nssim lab fetch; nssim lab build-fault-kernel)",
        missing.join(", ")
    );
    support::skip(test, &why, REQUIRED);
    false
}

/// The JSON records of `nssim run ARGS --on-kernel --lab KERNELS`, after
/// checking the run's exit status.
fn on_lab(args: &[&str], kernels: &str, repeat: &str, exit: i32) -> Vec<Value> {
    let lab = [
        "--on-kernel",
        "--lab",
        kernels,
        "--repeat",
        repeat,
        "--format",
        "json",
    ];
    let _turn = support::lab_turn();
    let o = nssim(&[&["run"], args, &lab[..]].concat());
    assert_eq!(
        o.status.code(),
        Some(exit),
        "{}\n{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON record per line"))
        .collect()
}

fn kernel_outcomes(record: &Value) -> Vec<String> {
    record["on_kernel"]["kernel_outcomes"]
        .as_array()
        .unwrap_or_else(|| panic!("no kernel outcomes: {record}"))
        .iter()
        .map(|o| o["outcome"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_lab_lists_four_eras_and_the_fault_injection_kernel() {
    let test = "the_lab_lists_four_eras_and_the_fault_injection_kernel";
    let names: Vec<&str> = ERAS.iter().map(|(n, _)| *n).chain([FAULT_KERNEL]).collect();
    if !lab_has(test, &names) {
        return;
    }
    let kernels = lab_kernels();
    let kernel = |name: &str| kernels.iter().find(|k| k["name"] == name).unwrap();
    for (name, profile) in ERAS {
        let k = kernel(name);
        assert_eq!(k["profile"], profile, "{k}");
        assert_eq!(k["origin"], "debian", "{k}");
        assert!(
            k["release"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{name}.")),
            "{k}"
        );
        assert_eq!(k["fault_injection"], false, "{k}");
    }
    let fault = kernel(FAULT_KERNEL);
    assert_eq!(fault["origin"], "built", "{fault}");
    assert_eq!(fault["fault_injection"], true, "{fault}");
}

/// The ipc free queue's false ENOSPC on Debian's kernels: 5.10 and 6.1
/// (before the waiting fix) show it in every repeat, 6.12 and 6.18 never;
/// the model's profile for each agrees, and shows the violation exactly
/// for the first two.
#[test]
fn ipc_alloc_vs_free_shows_enospc_before_the_fix_and_none_after() {
    let test = "ipc_alloc_vs_free_shows_enospc_before_the_fix_and_none_after";
    let names: Vec<&str> = ERAS.iter().map(|(n, _)| *n).collect();
    if !lab_has(test, &names) {
        return;
    }
    let file = "sim-scenarios/ipc-alloc-vs-free.toml";
    let records = on_lab(&[file], &names.join(","), "3", 0);
    assert_eq!(records.len(), ERAS.len());
    for (record, (name, profile)) in records.iter().zip(ERAS) {
        let label = record["kernel"].as_str().unwrap();
        assert!(label.starts_with(&format!("{name}:{profile}")), "{record}");
        assert_eq!(record["on_kernel"]["verdict"], "agree", "{record}");
        let before_the_fix = matches!(name, "5.10" | "6.1");
        for outcome in kernel_outcomes(record) {
            assert_eq!(
                outcome.contains("ENOSPC"),
                before_the_fix,
                "{name}: {outcome}"
            );
        }
        let model = nssim(&["run", file, "--kernel", profile, "--format", "json"]);
        let model: Value = serde_json::from_str(stdout(&model).trim()).unwrap();
        let violation = model["outcome"] == "violation";
        assert_eq!(violation, before_the_fix, "{profile}: {model}");
    }
}

/// The one-task shm and mqueue scenarios that met ENOMEM or EMFILE on the
/// shared host in most repeats (each inherited the charges of the one
/// before): in the lab every repeat starts from the same booted kernel.
#[test]
fn shm_and_mqueue_scenarios_agree_in_ten_of_ten_repeats() {
    let test = "shm_and_mqueue_scenarios_agree_in_ten_of_ten_repeats";
    if !lab_has(test, &["6.18"]) {
        return;
    }
    let files = [
        "sim-scenarios/ucounts-init-rlimit-regression.toml",
        "sim-scenarios/ucounts-mqueue-outlives-userns.toml",
        "sim-scenarios/conformance/mqueue/msgqueue_limit_in_userns.toml",
        "sim-scenarios/conformance/shm/memlock_limit_in_userns.toml",
    ];
    let records = on_lab(&files, "6.18", "10", 0);
    assert!(!records.is_empty());
    for record in records {
        assert_eq!(record["on_kernel"]["verdict"], "agree", "{record}");
        assert_eq!(record["on_kernel"]["repeats"], 10, "{record}");
        for outcome in kernel_outcomes(&record) {
            let noise = ["ENOMEM", "EMFILE"].iter().any(|e| outcome.contains(e));
            assert!(!noise || model_reaches(&record, &outcome), "{record}");
        }
    }
}

fn model_reaches(record: &Value, outcome: &str) -> bool {
    record["on_kernel"]["model_outcomes"]
        .as_array()
        .is_some_and(|m| m.iter().any(|o| o["outcome"] == outcome))
}

/// Every `fail_alloc` scenario of the library meets a kernel: the
/// fault-injection build fails the allocation the scenario names, and the
/// kernel's outcome is one the model reaches.
#[test]
fn fail_alloc_scenarios_agree_on_the_fault_injection_kernel() {
    let test = "fail_alloc_scenarios_agree_on_the_fault_injection_kernel";
    if !lab_has(test, &[FAULT_KERNEL]) {
        return;
    }
    let files: Vec<String> = scenario_files()
        .into_iter()
        .filter(|f| {
            std::fs::read_to_string(support::root().join(f))
                .unwrap()
                .contains("fail_alloc(")
        })
        .collect();
    assert!(!files.is_empty(), "the library has fail_alloc scenarios");
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let records = on_lab(&args, FAULT_KERNEL, "3", 0);
    assert_eq!(records.len(), files.len());
    for record in records {
        assert_eq!(record["on_kernel"]["verdict"], "agree", "{record}");
        let failed = kernel_outcomes(&record)
            .iter()
            .all(|o| o.contains("EAGAIN"));
        assert!(failed, "the injected failure reached the call: {record}");
    }
}

/// The library's scenario files, relative to the checkout.
fn scenario_files() -> Vec<String> {
    let dir = support::root().join("sim-scenarios");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.ends_with(".toml")
                .then(|| format!("sim-scenarios/{name}"))
        })
        .collect();
    files.sort();
    files
}

/// The conformance cases a shared machine disturbs (a device uevent that
/// another process raises reaches a listener) asked of a lab kernel of the
/// host's era, where nothing else runs: every case agrees.
#[test]
fn uevent_and_netns_conformance_agrees_on_a_lab_kernel() {
    let test = "uevent_and_netns_conformance_agrees_on_a_lab_kernel";
    if !lab_has(test, &["6.18"]) {
        return;
    }
    let _turn = support::lab_turn();
    let o = nssim(&[
        "conformance",
        "--lab",
        "6.18",
        "--subsystem",
        "uevent",
        "--subsystem",
        "netns",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let doc: Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON line");
    assert_eq!(doc["lab_kernel"], "6.18", "{doc}");
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 20, "{} cases", cases.len());
    let mut ran = 0;
    for c in cases {
        assert_eq!(c["model"], "as expected", "{c}");
        match c["agree"].as_bool() {
            Some(agree) => {
                assert!(agree, "model and kernel disagree: {c}");
                ran += 1;
            }
            None => eprintln!("skipped {}: {}", c["case"], c["skipped"]),
        }
    }
    assert!(ran * 2 > cases.len(), "{ran} of {} cases ran", cases.len());
}

/// Each backport Debian's kernels carry (`lab::eras::BACKPORTS`) is what
/// its scenario shows on the kernel: with the patch the model reaches the
/// kernel's outcome, without it the model misses it.
#[test]
fn every_backport_is_shown_by_its_scenario_on_the_kernel() {
    let test = "every_backport_is_shown_by_its_scenario_on_the_kernel";
    let series: Vec<&str> = lab::eras::BACKPORTS.iter().map(|b| b.series).collect();
    if !lab_has(test, &series) {
        return;
    }
    for b in lab::eras::BACKPORTS {
        let file = format!("sim-scenarios/{}.toml", b.evidence);
        let with = on_lab(&[&file], b.series, "3", 0);
        assert_eq!(with[0]["on_kernel"]["verdict"], "agree", "{}", with[0]);
        let off = format!("-{}", b.patch);
        let without = on_lab(&[&file, "--patch", &off], b.series, "3", 1);
        assert_eq!(
            without[0]["on_kernel"]["verdict"], "model-misses",
            "{}",
            without[0]
        );
    }
}
