//! PCT finds a bug of depth d with probability at least 1/(n k^(d-1)) per
//! execution (n tasks, k choice points of the probe): checked on the
//! depth-2 and depth-3 models of `bench::nssim::pct_depth_build`, whose set-up task
//! takes many steps alone first (steps PCT must not count).

use bench::nssim::{pct_depth_build, pct_depth_tasks, pct_found, pct_probe};

fn rate_meets_bound(depth: u32, padding: usize, prefix: usize, n: u64) {
    let build = pct_depth_build(depth, padding, prefix);
    // k is counted by the execution; the hint is what `pct` takes from
    // its probe: spread over all steps, the change points would mostly
    // fall past the last choice point and the rate would miss the bound.
    let probe = pct_probe(&build);
    let k = probe.choice_points;
    assert!(
        probe.steps > k + prefix as u64 / 2,
        "the prefix adds steps without a choice"
    );
    let found = pct_found(&build, depth, sim::pct_hint(&probe), n);
    let bound = 1.0 / (f64::from(pct_depth_tasks(depth)) * (k as f64).powi(depth as i32 - 1));
    let rate = found as f64 / n as f64;
    assert!(
        rate >= bound,
        "depth {depth}: found {found} of {n} ({rate:.5}) < bound {bound:.5} (k = {k})"
    );
}

#[test]
fn pct_finds_a_depth_2_bug_at_least_at_its_bound() {
    rate_meets_bound(2, 8, 300, 4000);
}

#[test]
fn pct_finds_a_depth_3_bug_at_least_at_its_bound() {
    rate_meets_bound(3, 2, 300, 20_000);
}
