//! Lookup cost against the number of extents, for the three layouts
//! (std backend: outside a simulation the `sync` atomics are plain
//! atomics). `cargo bench -p nssim-userns --features criterion --bench lookup`; the table in
//! docs/userns.md comes from `cargo run --release -p nssim-userns --example lookup_table`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::hint::black_box;
use std::time::Duration;
use userns::bench_maps::{lookup_all, namespace_with_extents, probe_ids, SIZES};
use userns::Layout;

fn lookups(c: &mut Criterion) {
    for layout in Layout::ALL {
        let mut group = c.benchmark_group(format!("{layout:?}"));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        for n in SIZES {
            let Some(ns) = namespace_with_extents(layout, n) else {
                continue;
            };
            let probes = probe_ids(n);
            let map = &ns.uid_map;
            assert!(lookup_all(map, &probes) > 0);
            group.bench_with_input(BenchmarkId::new("down_and_up", n), &n, |b, _| {
                // One map_id_down and one map_id_up per iteration, cycling
                // through ids in every extent.
                let mut i = 0;
                b.iter(|| {
                    let (id, kid) = probes[i % probes.len()];
                    i += 1;
                    let map = black_box(map);
                    black_box(map.map_id_down(id)) ^ black_box(map.map_id_up(kid))
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, lookups);
criterion_main!(benches);
