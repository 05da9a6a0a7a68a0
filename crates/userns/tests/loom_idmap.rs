//! The publication of an idmap under loom, every interleaving and every
//! value the memory model lets a load see: one task writes a uid map
//! through `map_write` while another looks ids up without a lock. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p nssim-userns --release --test loom_idmap --target-dir target/loom`.
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
