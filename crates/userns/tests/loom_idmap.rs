//! The publication of an idmap under loom, every interleaving and every
//! value the memory model lets a load see: one task writes a uid map
//! through `map_write` while another looks ids up without a lock. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p nssim-userns --profile loom --test loom_idmap --target-dir target/loom`.
#![cfg(loom)]

use loom::model::Builder;
use std::panic::{catch_unwind, AssertUnwindSafe};
use sync::Arc;
use userns::{map_write, Extent, MapKind, Userns, UsernsPatches, UNMAPPED};

const HALF_WRITTEN: &str = "a reader saw nr_extents before the extents";

/// Write a two-line map while a reader takes a snapshot; the reader panics
/// if it sees a published count with extents that are not the map written.
fn write_while_reading(relaxed_publication: bool) {
    let sys = Userns::standalone(UsernsPatches {
        relaxed_publication,
        ..UsernsPatches::NEWEST
    });
    let root = sys.init_root();
    let child = sys.create_user_ns(&root, "c").expect("a child namespace");
    let ns = Arc::clone(&child.user_ns);
    let reader = loom::thread::spawn(move || {
        let seen = ns.uid_map.extents();
        let expected = [Extent::new(0, 1000, 1), Extent::new(1, 2000, 10)];
        if !seen.is_empty() && seen != expected {
            panic!("{HALF_WRITTEN}: {seen:?}");
        }
        // A lookup is either unmapped (empty map) or right.
        let kid = ns.uid_map.map_id_down(1);
        assert!(
            kid == UNMAPPED || kid == 2000,
            "{HALF_WRITTEN}: uid 1 -> {kid}"
        );
    });
    let out = map_write(
        &sys,
        &child.user_ns,
        MapKind::Uid,
        &root,
        &root,
        b"0 1000 1\n1 2000 10\n",
        0,
    );
    assert_eq!(out.answer(), "ok");
    reader.join().unwrap();
}

/// The v4.15 layout above five extents: the forward and reverse arrays
/// are published by the same count. The reader checks both.
fn write_six_while_reading(relaxed_publication: bool) {
    let sys = Userns::standalone(UsernsPatches {
        relaxed_publication,
        ..UsernsPatches::NEWEST
    });
    let root = sys.init_root();
    let child = sys.create_user_ns(&root, "c").expect("a child namespace");
    let ns = Arc::clone(&child.user_ns);
    let reader = loom::thread::spawn(move || {
        let seen = ns.uid_map.extents();
        let sorted: Vec<Extent> = (0..6).map(|i| Extent::new(i, 1000 + i, 1)).collect();
        assert!(
            seen.is_empty() || seen == sorted,
            "{HALF_WRITTEN}: {seen:?}"
        );
        let up = ns.uid_map.map_id_up(1005);
        assert!(
            up == UNMAPPED || up == 5,
            "{HALF_WRITTEN}: kernel uid 1005 -> {up}"
        );
    });
    let text = b"5 1005 1\n4 1004 1\n3 1003 1\n2 1002 1\n1 1001 1\n0 1000 1\n";
    let out = map_write(&sys, &child.user_ns, MapKind::Uid, &root, &root, text, 0);
    assert_eq!(out.answer(), "ok");
    reader.join().unwrap();
}

fn message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

fn builder() -> Builder {
    let mut b = Builder::new();
    b.preemption_bound = Some(3);
    b
}

#[test]
fn relaxed_publication_lets_a_reader_see_a_half_written_map() {
    let found = catch_unwind(AssertUnwindSafe(|| {
        builder().check(|| write_while_reading(true))
    }))
    .err()
    .map(message)
    .expect("loom finds a reader that sees the count before the extents");
    assert!(found.contains(HALF_WRITTEN), "unexpected failure: {found}");
}

#[test]
fn the_kernels_ordering_never_shows_a_half_written_map() {
    builder().check(|| write_while_reading(false));
}

#[test]
fn the_sorted_arrays_are_published_whole_too() {
    let mut b = Builder::new();
    b.preemption_bound = Some(2);
    b.check(|| write_six_while_reading(false));
}

#[test]
fn relaxed_publication_of_the_sorted_arrays_is_caught() {
    let mut b = Builder::new();
    b.preemption_bound = Some(2);
    let found = catch_unwind(AssertUnwindSafe(|| {
        b.check(|| write_six_while_reading(true))
    }))
    .err()
    .map(message)
    .expect("loom finds a reader that sees the count before the arrays");
    assert!(found.contains(HALF_WRITTEN), "unexpected failure: {found}");
}
