//! The 2016 RFC's fork benchmark, in virtual time: 5 tasks each doing
//! 250 000 fork-then-reap cycles (`stress-ng -f 5 --fork-ops 250000`) as an
//! unprivileged user, in the initial user namespace and at nesting depth 1
//! and 5 (`unshare -r` repeated), on three kernels: v5.13 (one user_struct
//! per kuid, no per-namespace accounting), v5.13 with the 2016 RFC (per
//! namespace accounting up the tree, as the seed measured it) and v5.17
//! (ucounts). Prints the virtual time of each run and the overhead over
//! v5.13 at the same depth, and the wall time each run took.
//!
//! `cargo run --release -p nssim-kernel --example fork_bench [-- FORKS_PER_TASK]`

use kernel::process::UidMap;
use kernel::setup::{Op, Setup, TaskSpec, UserNsSpec};
use kernel::{replay_run, resolve_patches, RunSpec};
use sim::{ExecConfig, ExploreConfig, Outcome, Schedule, StrategySpec};
use std::time::Instant;

const TASKS: u32 = 5;
const UID: u32 = 1000;

/// `depth` user namespaces, each made by uid 1000 with `unshare -r` (its
/// root mapped to the creator's uid), and the tasks in the deepest.
fn setup(depth: usize, forks: u64) -> Setup {
    let mut s = Setup::default();
    let mut parent = "init".to_string();
    for level in 1..=depth {
        let name = format!("ns{level}");
        s.user_namespaces.push(UserNsSpec {
            name: name.clone(),
            parent: parent.clone(),
            owner: UID,
        });
        let outside = if level == 1 { UID } else { 0 };
        s.processes.maps.insert(
            name.clone(),
            UidMap {
                inside: 0,
                outside,
                count: 1,
            },
        );
        parent = name;
    }
    s.tasks.push(TaskSpec {
        instances: TASKS,
        repeat: forks,
        ..TaskSpec::new("stress-ng", &parent, UID, vec![Op::Fork {}, Op::Exit {}])
    });
    s
}

/// Virtual nanoseconds of one run, and its wall time.
fn run(depth: usize, forks: u64, profile: &str, patches: &[(String, bool)]) -> (u64, f64) {
    let setup = setup(depth, forks);
    let active = resolve_patches(profile, patches).expect("known profile");
    let exec = ExecConfig {
        cpus: TASKS,
        max_steps: u64::MAX,
        livelock_steps: u64::MAX,
        ..ExecConfig::default()
    };
    let spec = RunSpec {
        setup: &setup,
        patches: &active,
        invariants: &[],
        explore: ExploreConfig::new(StrategySpec::Fair, 1, 1, exec),
    };
    let t = Instant::now();
    let (report, results) = replay_run(&spec, &Schedule::Fair, false);
    assert_eq!(report.outcome, Outcome::Pass, "{profile} depth {depth}");
    let forks_ok: u64 = results
        .values()
        .filter_map(|ops| ops.get("fork"))
        .map(|s| s.results.get("ok").copied().unwrap_or(0))
        .sum();
    assert_eq!(forks_ok, forks * u64::from(TASKS), "every fork succeeds");
    (report.virtual_ns, t.elapsed().as_secs_f64())
}

/// A column of the table: its label, profile and patch toggles.
type Kernel = (&'static str, &'static str, Vec<(String, bool)>);

fn main() {
    let forks: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(250_000);
    let kernels: [Kernel; 3] = [
        ("v5.13", "v5.13", vec![]),
        (
            "v5.13 + RFC",
            "v5.13",
            vec![("nproc-per-userns-rfc-2016".to_string(), true)],
        ),
        ("v5.17", "v5.17", vec![]),
    ];
    println!("{TASKS} tasks x {forks} forks (fork + exit + reap), virtual time per run:");
    println!();
    println!(
        "| user namespace | v5.13 (user_struct) | v5.13 + RFC (per-namespace) | v5.17 (ucounts) |"
    );
    println!("|---|---|---|---|");
    let mut wall = Vec::new();
    for depth in [0usize, 1, 5] {
        let mut cells = Vec::new();
        let mut base = 0;
        for (label, profile, patches) in &kernels {
            let (ns, secs) = run(depth, forks, profile, patches);
            wall.push(format!("{label} depth {depth}: {secs:.1} s"));
            if base == 0 {
                base = ns;
                cells.push(format!("{:.3} s", ns as f64 / 1e9));
            } else {
                let pct = (ns as f64 / base as f64 - 1.0) * 100.0;
                cells.push(format!("{:.3} s ({pct:+.2} %)", ns as f64 / 1e9));
            }
        }
        let row = match depth {
            0 => "init_user_ns".to_string(),
            d => format!("depth {d}"),
        };
        println!("| {row} | {} |", cells.join(" | "));
    }
    println!();
    println!("wall time: {}", wall.join(", "));
}
