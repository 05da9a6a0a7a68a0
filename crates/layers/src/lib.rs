//! The layering check the crates' tests share: a crate's files are
//! layered, each importing only files below it in its list of layers, so
//! that there is no circle among them. A crate's test names its layers,
//! bottom first, and calls [`assert_layered`]; a new file must be given its
//! place there, and an import of a file above fails with the two names.
//! Imports are read from the code, comments left out (a doc link is no
//! import): `crate::` paths, `use crate::{..}` groups, names the crate
//! root re-exports, and a directory's files' `super::`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's sources: its `src/` and its root file (`lib.rs`, `main.rs`).
pub struct Crate {
    pub src: PathBuf,
    pub root: &'static str,
    /// Names the root makes available besides its `pub use`s (an inline
    /// module that re-exports), each with the module it comes from.
    pub also: &'static [(&'static str, &'static str)],
}

impl Crate {
    /// The crate at `manifest_dir` (its `CARGO_MANIFEST_DIR`).
    pub fn at(manifest_dir: &str, root: &'static str) -> Crate {
        Crate {
            src: Path::new(manifest_dir).join("src"),
            root,
            also: &[],
        }
    }

    /// The files `file` imports.
    pub fn imports(&self, file: &str) -> BTreeSet<String> {
        imports(&self.src, file, &files(&self.src), &self.reexports())
    }

    fn reexports(&self) -> BTreeMap<String, Vec<String>> {
        let mut out = reexports(&self.src, self.root);
        for (name, module) in self.also {
            out.insert(name.to_string(), vec![module.to_string()]);
        }
        out
    }
}

/// Every file of `krate`'s `src/` is named once in `layers`, and each
/// imports only files below it.
pub fn assert_layered(krate: &Crate, layers: &[&[&str]]) {
    let all = files(&krate.src);
    let order: Vec<&str> = layers.iter().flat_map(|l| l.iter().copied()).collect();
    let placed: BTreeSet<String> = order.iter().map(|f| f.to_string()).collect();
    assert_eq!(
        placed, all,
        "the layers must name every file of src/ once (left: the layers, right: src/)"
    );
    assert_eq!(
        order.len(),
        placed.len(),
        "a file is named twice in the layers"
    );
    let lib = krate.reexports();
    let rank = |f: &str| order.iter().position(|o| *o == f).unwrap();
    let mut above = Vec::new();
    for file in &order {
        for import in imports(&krate.src, file, &all, &lib) {
            if rank(&import) > rank(file) {
                above.push(format!("{file} imports {import}, which is above it"));
            }
        }
    }
    assert!(above.is_empty(), "{}", above.join("\n"));
}

/// Every `.rs` file under `src/`, relative to it.
fn files(src: &Path) -> BTreeSet<String> {
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
    walk(src, src, &mut out);
    out
}

/// The code of a file without its comments (doc links are no imports).
fn code(src: &Path, file: &str) -> String {
    let text = std::fs::read_to_string(src.join(file)).unwrap();
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

/// What the crate root re-exports: name → the module path it comes from,
/// so that `crate::Name` counts as an import of the file that defines it.
fn reexports(src: &Path, root: &str) -> BTreeMap<String, Vec<String>> {
    let lib = code(src, root);
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
    src: &Path,
    file: &str,
    all: &BTreeSet<String>,
    lib: &BTreeMap<String, Vec<String>>,
) -> BTreeSet<String> {
    let code = code(src, file);
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
