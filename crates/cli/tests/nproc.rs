//! RLIMIT_NPROC scenarios through the `nssim` binary, run the way a user
//! runs them.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Run nssim, expect exit 0, and parse its JSON lines.
fn run_json(args: &[&str]) -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("nssim runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn by_kernel<'a>(lines: &'a [Value], kernel: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["kernel"] == kernel)
        .unwrap_or_else(|| panic!("no run for {kernel}"))
}

#[test]
fn shared_kuid_exhausts_a_sibling_container_on_v5_13_within_100_executions_for_seeds_1_to_20() {
    for seed in 1..=20 {
        let s = seed.to_string();
        let lines = run_json(&[
            "run",
            "sim-scenarios/nproc-shared-kuid.toml",
            "--format",
            "json",
            "--seed",
            &s,
        ]);
        let old = by_kernel(&lines, "v5.13");
        assert_eq!(old["outcome"], "violation", "seed {seed}");
        assert_eq!(old["invariant"], "nproc.isolated", "seed {seed}");
        assert!(old["executions"].as_u64().unwrap() <= 100, "seed {seed}");
        assert_eq!(old["as_expected"], true);
        let new = by_kernel(&lines, "v5.17");
        assert_eq!(new["outcome"], "pass", "seed {seed}");
        assert_eq!(new["as_expected"], true);
        // On v5.17 container B's one fork always succeeds.
        assert_eq!(new["results"]["b"]["fork"]["results"]["ok"], 1);
    }
}

#[test]
fn every_nproc_scenario_finishes_as_expected() {
    let dir = root().join("sim-scenarios");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            (n.starts_with("nproc-") || n.starts_with("userns-limits-")) && n.ends_with(".toml")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for f in files {
        let path = format!("sim-scenarios/{f}");
        for line in run_json(&["run", &path, "--format", "json"]) {
            assert_eq!(
                line["as_expected"], true,
                "{path} [{}]: {line}",
                line["kernel"]
            );
        }
    }
}
