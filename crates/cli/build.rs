//! Embeds the scenario library (`sim-scenarios/`, the conformance cases
//! included) in the binary, so that an installed `nssim` runs it from any
//! directory. The checkout's files stay the source: the list is made anew
//! whenever one of them changes, and a test compares the two.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sim-scenarios");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut out = String::from("/// Every embedded scenario file: its path under `sim-scenarios/` and its text.\npub static FILES: &[(&str, &str)] = &[\n");
    for (rel, abs) in &files {
        writeln!(out, "    ({rel:?}, include_str!({abs:?})),").expect("a String takes every write");
    }
    out.push_str("];\n");
    let dest =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("library.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}

/// The `*.toml` files under `dir`, with their paths relative to `root`
/// (always with `/`) and absolute.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        println!("cargo:rerun-if-changed={}", path.display());
        if path.is_dir() {
            collect(root, &path, out);
        } else if path.extension().is_some_and(|x| x == "toml") {
            let rel = path.strip_prefix(root).expect("under the root");
            let rel: Vec<String> = rel
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            let abs = path.canonicalize().unwrap_or(path.clone());
            out.push((rel.join("/"), abs.display().to_string()));
        }
    }
}
