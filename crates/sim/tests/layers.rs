//! The crate's files are layered: each imports only files below it in
//! [`LAYERS`], so there is no circle among them. A new file must be given
//! its place here; an import of a file above fails with the two names.

use layers::{assert_layered, Crate};

/// Every file of `src/`, bottom first, in the layers of `src/lib.rs`'s
/// documentation.
const LAYERS: &[&[&str]] = &[
    // Leaves: numbers, limits, tokens, records.
    &[
        "obj.rs",
        "echo.rs",
        "limits.rs",
        "input.rs",
        "mem.rs",
        "cost.rs",
        "runq.rs",
        "token.rs",
        "footprint.rs",
        "trace.rs",
        "statecache.rs",
    ],
    // The task runtime: stacks and switches, what each task and object is.
    &[
        "fiber/stack.rs",
        "fiber/symmetric.rs",
        "fiber/coroutine.rs",
        "fiber.rs",
        "outcome.rs",
        "task.rs",
    ],
    // The strategies, each one file behind the trait of `pick.rs`, and
    // the dispatch the scheduler calls.
    &[
        "strategy/pick.rs",
        "strategy/random.rs",
        "strategy/pct.rs",
        "strategy/fair.rs",
        "strategy/choices.rs",
        "strategy/segments.rs",
        "strategy/dpor.rs",
        "strategy/mod.rs",
    ],
    // One execution: its scheduler, the task-side API, the execution.
    &["sched.rs", "rt.rs", "keys.rs", "host.rs", "exec.rs"],
    // The searches.
    &[
        "search.rs",
        "shrink.rs",
        "seeded.rs",
        "dfs.rs",
        "dpor.rs",
        "explore.rs",
    ],
    &["lib.rs"],
];

/// This crate; `costs` is an inline module of `lib.rs` that re-exports
/// `cost.rs`'s names.
fn sim_crate() -> Crate {
    Crate {
        also: &[("costs", "cost")],
        ..Crate::at(env!("CARGO_MANIFEST_DIR"), "lib.rs")
    }
}

#[test]
fn every_file_imports_only_files_below_it() {
    assert_layered(&sim_crate(), LAYERS);
}

/// The check sees imports: an import of a file above is reported.
#[test]
fn an_import_from_above_is_seen() {
    let krate = sim_crate();
    // `explore.rs` imports the searches; `rt.rs` the scheduler, and
    // `Outcome` through the crate root's re-export.
    let explore = krate.imports("explore.rs");
    assert!(
        explore.contains("dfs.rs") && explore.contains("dpor.rs"),
        "{explore:?}"
    );
    let rt = krate.imports("rt.rs");
    assert!(
        rt.contains("sched.rs") && rt.contains("outcome.rs"),
        "{rt:?}"
    );
    // A strategy's `super::` is the trait's file or a sibling.
    let pct = krate.imports("strategy/pct.rs");
    assert!(
        pct.contains("strategy/pick.rs") && pct.contains("strategy/random.rs"),
        "{pct:?}"
    );
}
