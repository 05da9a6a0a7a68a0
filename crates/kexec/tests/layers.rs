//! The crate's files are layered: each imports only files below it in
//! [`LAYERS`], so there is no circle among them. A new file must be given
//! its place here; an import of a file above fails with the two names.
//! (The check is the `layers` crate's, as for `sim` and `cli`.)

use layers::{assert_layered, Crate};

/// Every file of `src/`, bottom first, in the layers of `src/lib.rs`'s
/// documentation.
const LAYERS: &[&[&str]] = &[
    // Leaves: the syscalls, the set-up's files, the instances.
    &[
        "sys.rs",
        "files.rs",
        "instance.rs",
        "machine.rs",
        "fault.rs",
    ],
    // What a run's processes pass each other: uevent sockets, the
    // results pipe's lines, a task's state and its resume argument.
    &["netlink.rs", "lines.rs", "state.rs"],
    // The ops, with the loop that runs a task's, and what results show.
    &["ops.rs", "outcome.rs"],
    // The run: an instance's start, and the world root that starts them.
    &["task.rs", "world.rs"],
    // The run as a C program, and what its verdict looks for.
    &["export_c/symptom.rs", "export_c.rs"],
    &["lib.rs"],
];

#[test]
fn every_file_imports_only_files_below_it() {
    assert_layered(&Crate::at(env!("CARGO_MANIFEST_DIR"), "lib.rs"), LAYERS);
}

/// The check sees imports: a `use crate::{..}` group, a `use crate::x`
/// and a path written out in the code are each reported.
#[test]
fn an_import_from_above_is_seen() {
    let krate = Crate::at(env!("CARGO_MANIFEST_DIR"), "lib.rs");
    // `world.rs` imports the tasks it starts and the lines it reads.
    let world = krate.imports("world.rs");
    assert!(
        world.contains("task.rs") && world.contains("lines.rs") && world.contains("state.rs"),
        "{world:?}"
    );
    // `outcome.rs` names `crate::ops::reports_values` in its code.
    let outcome = krate.imports("outcome.rs");
    assert!(outcome.contains("ops.rs"), "{outcome:?}");
    // `export_c.rs` uses both, and a doc link (`crate::lines`) is none.
    let export = krate.imports("export_c.rs");
    assert!(
        export.contains("world.rs") && export.contains("task.rs") && !export.contains("lines.rs"),
        "{export:?}"
    );
}
