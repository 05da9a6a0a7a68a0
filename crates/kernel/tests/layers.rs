//! The crate's files are layered: each imports only files below it in
//! [`LAYERS`], so there is no circle among them. A new file must be given
//! its place here; an import of a file above fails with the two names.
//! (The check is the `layers` crate's, as for `sim`, `cli` and `kexec`.)
//!
//! The models of a pid namespace and of a task's signals sit below the
//! task that holds them; the syscall paths on them (`pidns_ops.rs`,
//! `signal_ops.rs`, and the other files `world.rs` loads with `#[path]`)
//! sit above, with the world's other paths. Which patches are in force
//! comes from one place, `profile.rs`, above the models it configures
//! and below the task and everything that runs.

use layers::{assert_layered, Crate};

/// Every file of `src/`, bottom first, in the layers of `src/lib.rs`'s
/// documentation.
const LAYERS: &[&[&str]] = &[
    // Declarations: flags, costs, errnos, invariants, fault sites.
    &[
        "clone_flags.rs",
        "costs.rs",
        "errno.rs",
        "invariants.rs",
        "fault.rs",
    ],
    // The ops, then a scenario's set-up and the catalogue of patches.
    &["ops.rs"],
    &["setup.rs", "catalog.rs"],
    // The models a task holds, then the patches in force, then the task.
    &["known.rs", "pidns.rs", "signal.rs"],
    &["profile.rs"],
    &["task.rs"],
    &["process.rs", "net.rs"],
    // The world's syscall paths and checkers (`#[path]` files of
    // `world.rs`), the world, and the directed search over it.
    &[
        "checks.rs",
        "denials.rs",
        "fork.rs",
        "mqueue.rs",
        "nsproxy.rs",
        "open.rs",
        "pidns_ops.rs",
        "procfs.rs",
        "shm.rs",
        "signal_ops.rs",
        "statename.rs",
        "sysvipc.rs",
        "userns_ops.rs",
    ],
    &["world.rs"],
    &["directed.rs"],
    &["lib.rs"],
];

#[test]
fn every_file_imports_only_files_below_it() {
    assert_layered(&Crate::at(env!("CARGO_MANIFEST_DIR"), "lib.rs"), LAYERS);
}

/// The check sees what the task holds: its pid namespace and its
/// signals, from the files below it.
#[test]
fn the_task_imports_the_models_it_holds() {
    let krate = Crate::at(env!("CARGO_MANIFEST_DIR"), "lib.rs");
    let task = krate.imports("task.rs");
    assert!(
        task.contains("pidns.rs") && task.contains("signal.rs") && task.contains("profile.rs"),
        "{task:?}"
    );
    let signal_ops = krate.imports("signal_ops.rs");
    assert!(
        signal_ops.contains("signal.rs") && signal_ops.contains("task.rs"),
        "{signal_ops:?}"
    );
}
