//! Print the lookup-cost table of docs/userns.md: nanoseconds per
//! `map_id_down` + `map_id_up` pair, by number of extents and layout,
//! measured side by side in one process (std backend). Run it with
//! `cargo run --release -p nssim-userns --example lookup_table`.

use std::hint::black_box;
use std::time::Instant;
use userns::bench_maps::{lookup_all, namespace_with_extents, probe_ids, SIZES};
use userns::{IdMap, Layout};

/// ns per probe (one down and one up) of one timed round.
fn round(map: &IdMap, probes: &[(u32, u32)]) -> f64 {
    let pairs = 100_000usize;
    let reps = pairs.div_ceil(probes.len());
    let start = Instant::now();
    for _ in 0..reps {
        black_box(lookup_all(black_box(map), probes));
    }
    start.elapsed().as_secs_f64() * 1e9 / (reps * probes.len()) as f64
}

const LAYOUTS: [Layout; 3] = [Layout::Inline5, Layout::Proposal2017, Layout::Sorted340];

fn main() {
    let mut rows = Vec::new();
    for n in SIZES {
        let maps: Vec<_> = LAYOUTS
            .into_iter()
            .map(|layout| namespace_with_extents(layout, n))
            .collect();
        let probes = probe_ids(n);
        // The layouts take turns round after round, so a busy machine
        // slows them alike; each keeps its best round.
        let mut best = [f64::INFINITY; 3];
        for _ in 0..21 {
            for (i, ns) in maps.iter().enumerate() {
                if let Some(ns) = ns {
                    best[i] = best[i].min(round(&ns.uid_map, &probes));
                }
            }
        }
        let cells = maps
            .iter()
            .zip(best)
            .map(|(ns, b)| ns.as_ref().map(|_| b))
            .collect();
        rows.push((n, cells));
    }
    print_table(&rows);
}

fn print_table(rows: &[(usize, Vec<Option<f64>>)]) {
    println!("| extents | 5 inline (< v4.15) | 2017 proposal | v4.15 (sorted, bsearch) |");
    println!("|--------:|-------------------:|--------------:|------------------------:|");
    for (n, cells) in rows {
        let cells: Vec<String> = cells
            .iter()
            .map(|c| c.map_or("—".to_string(), |ns| format!("{ns:.1} ns")))
            .collect();
        println!("| {n} | {} |", cells.join(" | "));
    }
    let at = |n: usize, col: usize| rows.iter().find(|r| r.0 == n).and_then(|r| r.1[col]);
    for (col, name) in [(1, "2017 proposal"), (2, "v4.15")] {
        if let (Some(a), Some(b)) = (at(10, col), at(340, col)) {
            println!("\n{name}: 340 extents cost {:.1}x what 10 cost", b / a);
        }
    }
}
