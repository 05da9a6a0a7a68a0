//! Maps of a given number of extents for the lookup benchmark and its
//! table (`benches/lookup.rs`, `examples/lookup_table.rs`).

use crate::{
    map_write_extents, Extent, IdMap, Layout, MapKind, UserNamespace, Userns, UsernsPatches,
};
use std::sync::Arc;

/// Numbers of extents measured (the seed measured 0 to 300).
pub const SIZES: [usize; 10] = [1, 3, 5, 6, 10, 50, 100, 200, 300, 340];

/// A namespace whose uid map has `n` extents of 10 ids each, ids `10·i`
/// mapping to kernel ids `100000 + 20·i` (gaps in both ranges), written
/// by root in lines of descending first id (so the v4.15 layout sorts).
/// `None` when the layout cannot hold `n` extents.
pub fn namespace_with_extents(layout: Layout, n: usize) -> Option<Arc<UserNamespace>> {
    if n > layout.max_extents() {
        return None;
    }
    let sys = Userns::standalone(UsernsPatches {
        layout,
        ..UsernsPatches::NEWEST
    });
    let root = sys.init_root();
    let child = sys.create_user_ns(&root, "bench").ok()?;
    let extents: Vec<Extent> = (0..n as u32)
        .rev()
        .map(|i| Extent::new(10 * i, 100_000 + 20 * i, 10))
        .collect();
    let out = map_write_extents(&sys, &child.user_ns, MapKind::Uid, &root, &root, &extents);
    out.result.ok()?;
    Some(child.user_ns)
}

/// Ids to look up: one in every extent, in a scattered order, so an
/// average lookup meets an average position (as fstat over many files
/// owned by many ids would).
pub fn probe_ids(n: usize) -> Vec<(u32, u32)> {
    let n = n as u32;
    (0..n)
        .map(|i| (i * 7 + 3) % n)
        .map(|i| (10 * i + 5, 100_000 + 20 * i + 5))
        .collect()
}

/// Look every probe up down and up; returns a checksum so the work is
/// not optimised away.
pub fn lookup_all(map: &IdMap, probes: &[(u32, u32)]) -> u64 {
    probes
        .iter()
        .map(|&(id, kid)| u64::from(map.map_id_down(id)) + u64::from(map.map_id_up(kid)))
        .sum()
}
