//! Lookups agree with a naive reference for random maps, in every layout:
//! maps are written through `map_write` (so parsing, translation and
//! sorting are on the path), then `map_id_down`, `map_id_range_down` and
//! `map_id_up` are compared with a scan of the lines written.

use proptest::prelude::*;
use userns::{
    map_write, map_write_extents, CapSet, Cred, Extent, Layout, MapKind, Userns, UsernsPatches,
    UNMAPPED,
};

/// A map of `counts.len()` non-overlapping extents: upper ranges in
/// ascending order with gaps, lower ranges placed in the order `perm`,
/// lines written in the order `line_order`.
fn build(counts: &[u32], gaps: &[u32], perm: &[usize], line_order: &[usize]) -> Vec<Extent> {
    let n = counts.len();
    let mut uppers = Vec::with_capacity(n);
    let mut next = gaps[0];
    for i in 0..n {
        uppers.push(next);
        next += counts[i] + gaps[(i + 1) % n];
    }
    let mut lowers = vec![0u32; n];
    let mut next = 100_000 + gaps[n - 1];
    for &i in perm {
        lowers[i] = next;
        next += counts[i] + gaps[i];
    }
    line_order
        .iter()
        .map(|&i| Extent::new(uppers[i], lowers[i], counts[i]))
        .collect()
}

fn reference_down(map: &[Extent], id: u32, count: u32) -> u32 {
    let last = id as u64 + count as u64 - 1;
    map.iter()
        .find(|e| id >= e.first && last < e.first as u64 + e.count as u64)
        .map_or(UNMAPPED, |e| id - e.first + e.lower_first)
}

fn reference_up(map: &[Extent], kid: u32) -> u32 {
    map.iter()
        .find(|e| kid >= e.lower_first && (kid as u64) < e.lower_first as u64 + e.count as u64)
        .map_or(UNMAPPED, |e| kid - e.lower_first + e.first)
}

fn text(map: &[Extent]) -> String {
    map.iter()
        .map(|e| format!("{} {} {}\n", e.first, e.lower_first, e.count))
        .collect()
}

fn random_map(max: usize) -> impl Strategy<Value = Vec<Extent>> {
    (1..=max).prop_flat_map(|n| {
        (
            proptest::collection::vec(1u32..2000, n),
            proptest::collection::vec(0u32..2000, n),
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
        )
            .prop_map(|(c, g, p, o)| build(&c, &g, &p, &o))
    })
}

fn check_layout(layout: Layout, map: &[Extent], probes: &[u32]) -> Result<(), TestCaseError> {
    let sys = Userns::standalone(UsernsPatches {
        layout,
        ..UsernsPatches::NEWEST
    });
    let root = sys.init_root();
    let child = sys.create_user_ns(&root, "c").unwrap();
    // Maps whose text fits in a page go through the parser too.
    let out = if text(map).len() < 4096 {
        map_write(
            &sys,
            &child.user_ns,
            MapKind::Uid,
            &root,
            &root,
            text(map).as_bytes(),
            0,
        )
    } else {
        map_write_extents(&sys, &child.user_ns, MapKind::Uid, &root, &root, map)
    };
    prop_assert_eq!(out.answer(), "ok", "{:?}", out.rule);
    let m = &child.user_ns.uid_map;
    let mut ids: Vec<u32> = probes.to_vec();
    for e in map {
        ids.extend([e.first.wrapping_sub(1), e.first, e.last(), e.last() + 1]);
        ids.extend([
            e.lower_first.wrapping_sub(1),
            e.lower_first,
            e.lower_last() + 1,
        ]);
    }
    for &id in &ids {
        prop_assert_eq!(m.map_id_down(id), reference_down(map, id, 1), "down {}", id);
        prop_assert_eq!(m.map_id_up(id), reference_up(map, id), "up {}", id);
        for count in [2u32, 7] {
            if id.checked_add(count).is_some() {
                prop_assert_eq!(
                    m.map_id_range_down(id, count),
                    reference_down(map, id, count),
                    "range {} {}",
                    id,
                    count
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_v4_15_layout_agrees_with_a_scan(map in random_map(340), probes in proptest::collection::vec(0u32..900_000, 20)) {
        check_layout(Layout::Sorted340, &map, &probes)?;
    }

    #[test]
    fn the_2017_layout_agrees_with_a_scan(map in random_map(368), probes in proptest::collection::vec(0u32..900_000, 20)) {
        check_layout(Layout::Proposal2017, &map, &probes)?;
    }

    #[test]
    fn the_5_extent_layout_agrees_with_a_scan(map in random_map(5), probes in proptest::collection::vec(0u32..900_000, 20)) {
        check_layout(Layout::Inline5, &map, &probes)?;
    }

    /// Round trip: every mapped id comes back up to itself.
    #[test]
    fn down_then_up_is_the_identity(map in random_map(340)) {
        let sys = Userns::standalone(UsernsPatches::NEWEST);
        let root = sys.init_root();
        let child = sys.create_user_ns(&root, "c").unwrap();
        let out = map_write_extents(&sys, &child.user_ns, MapKind::Gid, &root, &root, &map);
        prop_assert_eq!(out.answer(), "ok");
        let m = &child.user_ns.gid_map;
        for e in &map {
            for id in [e.first, e.last()] {
                prop_assert_eq!(m.map_id_up(m.map_id_down(id)), id);
            }
        }
    }
}

/// Nested maps with more than 5 extents: with the CVE-2018-18955 fix the
/// reverse lookup answers with the namespace's ids, without it (v4.15 to
/// v4.19.1) it answers from parent ids.
#[test]
fn the_reverse_array_holds_kernel_ids_only_with_the_fix() {
    let answers: Vec<u32> = [true, false]
        .into_iter()
        .map(|fixed| {
            let sys = Userns::standalone(UsernsPatches {
                sort_after_translate: fixed,
                ..UsernsPatches::NEWEST
            });
            let root = sys.init_root();
            // The creator is kernel uid 100000, which l1 maps to its root.
            let user = Cred::new(&sys.init, 100_000, 100_000, CapSet::EMPTY);
            let l1 = sys.create_user_ns(&user, "l1").unwrap();
            for kind in [MapKind::Uid, MapKind::Gid] {
                let out = map_write(&sys, &l1.user_ns, kind, &root, &root, b"0 100000 1000", 0);
                assert_eq!(out.answer(), "ok");
            }
            let l2 = sys.create_user_ns(&l1, "l2").unwrap();
            let six = "0 0 1\n1 1 1\n2 2 1\n3 3 1\n4 4 1\n5 5 995\n";
            let out = map_write(&sys, &l2.user_ns, MapKind::Uid, &l1, &l1, six.as_bytes(), 0);
            assert_eq!(out.answer(), "ok");
            userns::from_kuid(&l2.user_ns, 100_000)
        })
        .collect();
    assert_eq!(answers[0], 0, "fixed: kernel uid 100000 is uid 0 in l2");
    assert_eq!(
        answers[1], UNMAPPED,
        "buggy: the reverse array still holds 0..1000"
    );
}
