//! The command-line tool's files are layered: each imports only files
//! below it in [`LAYERS`], so there is no circle among them (the error
//! type and the shared options are leaves; the commands sit on `run`). A
//! new file must be given its place here; an import of a file above fails
//! with the two names. The check is the `layers` crate's.

use layers::{assert_layered, Crate};

/// Every file of `src/`, bottom first.
const LAYERS: &[&[&str]] = &[
    // Leaves: the error, the shared options, JUnit, the progress bar,
    // runs side by side, the watchdog.
    &[
        "error.rs",
        "options.rs",
        "junit.rs",
        "progress.rs",
        "side_by_side.rs",
        "watchdog.rs",
    ],
    // What a run prints and writes, and where scenarios come from.
    &[
        "output.rs",
        "tracefile.rs",
        "views.rs",
        "library.rs",
        "kernel_lab.rs",
    ],
    // `nssim run` and `replay`, then the kernel's side of a run.
    &["run.rs", "onkernel.rs"],
    // The other commands.
    &[
        "merge.rs",
        "export.rs",
        "idmap.rs",
        "history.rs",
        "history_lab.rs",
        "conformance.rs",
        "gen.rs",
        "bench.rs",
    ],
    // The library target (the fuzz targets' bodies) and the binary.
    &["fuzz.rs", "lib.rs", "main.rs"],
];

fn cli() -> Crate {
    Crate::at(env!("CARGO_MANIFEST_DIR"), "main.rs")
}

#[test]
fn every_file_imports_only_files_below_it() {
    assert_layered(&cli(), LAYERS);
}

/// The check sees the imports that made the circle this order breaks:
/// the commands' files import the error type from its own file, and
/// `run.rs` imports what it prints.
#[test]
fn the_error_type_is_imported_from_its_own_file() {
    let krate = cli();
    for file in ["output.rs", "library.rs", "tracefile.rs", "views.rs"] {
        let imports = krate.imports(file);
        assert!(imports.contains("error.rs"), "{file}: {imports:?}");
        assert!(!imports.contains("run.rs"), "{file}: {imports:?}");
    }
    let run = krate.imports("run.rs");
    assert!(
        run.contains("output.rs") && run.contains("views.rs") && run.contains("library.rs"),
        "{run:?}"
    );
}
