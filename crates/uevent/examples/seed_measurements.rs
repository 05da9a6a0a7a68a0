//! The three measurements of the 2018 per-namespace sequence number series
//! at full scale (1000 namespaces, 10 000 injections into each), in
//! virtual time, and the thundering herd of one host device event.
//!
//! `cargo run --release -p nssim-uevent --example seed_measurements`
//! (`-- --injections 100` for a quick run; `-- --case 2` for one case).

use std::time::Instant;
use uevent::measure::{measure, thundering_herd, CALIBRATED, SEED_CASES};

fn arg(name: &str) -> Option<u64> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).and_then(|v| v.parse().ok())
}

fn main() {
    if std::env::args().any(|a| a == "--calibrate") {
        calibrate();
        return;
    }
    let injections = arg("--injections").unwrap_or(10_000);
    let only = arg("--case");
    println!("costs: {CALIBRATED:?}");
    println!("injections per namespace: {injections}");
    println!();
    println!("| case | without (model) | with (model) | ratio (model) | without (seed) | with (seed) | ratio (seed) | ratio model/seed | wall |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (i, case) in SEED_CASES.iter().enumerate() {
        if only.is_some_and(|o| o != i as u64 + 1) {
            continue;
        }
        let start = Instant::now();
        let without = measure(case, false, injections, &CALIBRATED);
        let with = measure(case, true, injections, &CALIBRATED);
        let wall = start.elapsed().as_secs_f64();
        let ratio = with.mean_ns / without.mean_ns;
        let seed_ratio = case.seed_us.1 / case.seed_us.0;
        println!(
            "| {} | {:.1} us | {:.1} us | {:.3} | {} us | {} us | {:.3} | {:.3} | {:.1} s |",
            case.name,
            without.mean_ns / 1000.0,
            with.mean_ns / 1000.0,
            ratio,
            case.seed_us.0,
            case.seed_us.1,
            seed_ratio,
            ratio / seed_ratio,
            wall,
        );
    }
    println!();
    println!("| listening containers | wake-ups without uevent-restrict | with |");
    println!("| --- | --- | --- |");
    for n in [10, 100, 1000] {
        println!(
            "| {n} | {} | {} |",
            thundering_herd(n, false),
            thundering_herd(n, true)
        );
    }
}

/// The calibration search (`-- --calibrate`): a deterministic random
/// search over the cost table at a reduced scale (odd numbers of injectors,
/// so that each injector alternates between the two kinds of namespace), scoring each candidate
/// by the squared log error of the three ratios (weight 10) and of the six
/// absolute means (weight 1).
fn calibrate() {
    use uevent::measure::Costs;
    let mut state: u64 = 0x2018_0420;
    let mut next = |lo: u64, hi: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (state >> 33) % (hi - lo + 1)
    };
    let score = |c: &Costs| -> f64 {
        let mut s = 0.0;
        for case in &SEED_CASES {
            let without = measure(case, false, 20, c).mean_ns / 1000.0;
            let with = measure(case, true, 20, c).mean_ns / 1000.0;
            let r = (with / without) / (case.seed_us.1 / case.seed_us.0);
            s += 10.0 * r.ln().powi(2);
            s += (without / case.seed_us.0).ln().powi(2);
            s += (with / case.seed_us.1).ln().powi(2);
        }
        s
    };
    let mut best = (f64::MAX, CALIBRATED);
    for i in 0..1500 {
        let cpus = [4u32, 8, 16][next(0, 2) as usize];
        let c = Costs {
            cpus,
            injectors: [cpus + 1, 2 * cpus + 1, 4 * cpus + 1, 999][next(0, 3) as usize],
            before_lock: next(500, 40_000),
            locked: next(100, 10_000),
            per_bound_socket: next(0, 100),
            per_delivery: next(0, 5_000),
            after_lock: next(200, 20_000),
            wakeup: next(500, 20_000),
            listener_recv: next(200, 20_000),
        };
        let s = score(&c);
        if s < best.0 {
            best = (s, c);
            println!("{i}: score {s:.4} {c:?}");
        }
    }
}
