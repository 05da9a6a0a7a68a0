//! The crate's files are layered: each imports only files below it in
//! [`LAYERS`], so there is no circle among them. A new file must be given
//! its place here; an import of a file above fails with the two names.
//! (The same check as `crates/sim/tests/layers.rs`.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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

fn src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/`, relative to it.
fn files() -> BTreeSet<String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap();
                out.insert(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(&src(), &src(), &mut out);
    out
}

/// The code of a file without its comments (doc links are no imports).
fn code(file: &str) -> String {
    let text = std::fs::read_to_string(src().join(file)).unwrap();
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The file of module path `segments` (from the crate root).
fn module_file(segments: &[&str], all: &BTreeSet<String>) -> Option<String> {
    let first = segments.first()?;
    if let Some(second) = segments.get(1) {
        let nested = format!("{first}/{second}.rs");
        if all.contains(&nested) {
            return Some(nested);
        }
    }
    [format!("{first}.rs"), format!("{first}/mod.rs")]
        .into_iter()
        .find(|f| all.contains(f))
}

/// What `src/lib.rs` re-exports: name → the module path it comes from,
/// so that `crate::Name` counts as an import of the file that defines it.
fn reexports() -> BTreeMap<String, Vec<String>> {
    let lib = code("lib.rs");
    let mut out = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(at) = stmt.find("pub use ") else {
            continue;
        };
        let path = stmt[at + 8..].trim().trim_start_matches("crate::");
        let (module, names) = match path.split_once("::{") {
            Some((m, rest)) => (m, rest.trim_end_matches('}').to_string()),
            None => path
                .rsplit_once("::")
                .map(|(m, n)| (m, n.to_string()))
                .unwrap(),
        };
        let module: Vec<String> = module.split("::").map(str::to_string).collect();
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            out.insert(name.to_string(), module.clone());
        }
    }
    out
}

/// The paths that follow `prefix` in `code`, a `{...}` group split into
/// its members.
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().last();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            out.extend(group[..end].split(',').map(|p| p.trim().to_string()));
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            out.push(rest[..end].to_string());
        }
    }
    out.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The files `file` imports.
fn imports(
    file: &str,
    all: &BTreeSet<String>,
    lib: &BTreeMap<String, Vec<String>>,
) -> BTreeSet<String> {
    let code = code(file);
    let mut out = BTreeSet::new();
    for path in paths_after(&code, "crate::") {
        let segments: Vec<&str> = path.split("::").collect();
        let target = module_file(&segments, all).or_else(|| {
            let module = lib.get(segments[0])?;
            let module: Vec<&str> = module.iter().map(String::as_str).collect();
            module_file(&module, all)
        });
        out.extend(target);
    }
    // `super::` of a file in a directory, outside its inline modules
    // (whose `super` is the file itself).
    if let Some((dir, _)) = file.rsplit_once('/') {
        let outer = code.split("\nmod ").next().unwrap_or(&code);
        for path in paths_after(outer, "super::") {
            let first = path.split("::").next().unwrap_or("");
            let sibling = format!("{dir}/{first}.rs");
            if all.contains(&sibling) {
                out.insert(sibling);
            } else {
                out.extend(module_file(&[dir], all));
            }
        }
    }
    out.remove(file);
    out
}

#[test]
fn every_file_imports_only_files_below_it() {
    let all = files();
    let order: Vec<&str> = LAYERS.iter().flat_map(|l| l.iter().copied()).collect();
    let placed: BTreeSet<String> = order.iter().map(|f| f.to_string()).collect();
    assert_eq!(
        placed, all,
        "LAYERS must name every file of src/ once (left: LAYERS, right: src/)"
    );
    assert_eq!(order.len(), placed.len(), "a file is named twice in LAYERS");
    let lib = reexports();
    let rank = |f: &str| order.iter().position(|o| *o == f).unwrap();
    let mut above = Vec::new();
    for file in &order {
        for import in imports(file, &all, &lib) {
            if rank(&import) > rank(file) {
                above.push(format!("{file} imports {import}, which is above it"));
            }
        }
    }
    assert!(above.is_empty(), "{}", above.join("\n"));
}

/// The check sees imports: a `use crate::{..}` group, a `use crate::x`
/// and a path written out in the code are each reported.
#[test]
fn an_import_from_above_is_seen() {
    let all = files();
    let lib = reexports();
    // `world.rs` imports the tasks it starts and the lines it reads.
    let world = imports("world.rs", &all, &lib);
    assert!(
        world.contains("task.rs") && world.contains("lines.rs") && world.contains("state.rs"),
        "{world:?}"
    );
    // `outcome.rs` names `crate::ops::reports_values` in its code.
    let outcome = imports("outcome.rs", &all, &lib);
    assert!(outcome.contains("ops.rs"), "{outcome:?}");
    // `export_c.rs` uses both, and a doc link (`crate::lines`) is none.
    let export = imports("export_c.rs", &all, &lib);
    assert!(
        export.contains("world.rs") && export.contains("task.rs") && !export.contains("lines.rs"),
        "{export:?}"
    );
}
