//! The files of `crates/kernel` import each other without a cycle: the
//! catalogue and the model below, the conformance cases above them. A
//! file that `world.rs` loads with `#[path]` is part of the world module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name → the modules of this crate it names (`crate::name`).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let world = std::fs::read_to_string(src.join("world.rs")).unwrap();
    let children: BTreeSet<String> = world
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#[path = \""))
        .filter_map(|l| l.strip_suffix(".rs\"]"))
        .map(str::to_string)
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if stem == "lib" {
            continue;
        }
        let module = if children.contains(&stem) {
            "world".to_string()
        } else {
            stem
        };
        // Code only: a doc comment may name any module.
        let text: String = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let names = graph.entry(module.clone()).or_default();
        for piece in text.split("crate::").skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let is_module = src.join(format!("{name}.rs")).exists();
            if is_module && name != module && !children.contains(&name) {
                names.insert(name);
            }
        }
    }
    graph
}

fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut cycle = path[i..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_kernel_crates_files_import_without_a_cycle() {
    let graph = imports();
    assert!(graph.contains_key("world") && graph["world"].contains("process"));
    if let Some(cycle) = find_cycle(&graph) {
        panic!("crates/kernel imports in a circle: {}", cycle.join(" -> "));
    }
}

#[test]
fn conformance_cases_import_the_model_and_the_model_not_them() {
    let graph = imports();
    for (module, names) in &graph {
        if module.starts_with("conformance") {
            continue;
        }
        let up: Vec<&String> = names
            .iter()
            .filter(|n| n.starts_with("conformance"))
            .collect();
        assert!(up.is_empty(), "{module} imports {up:?}");
    }
}

#[test]
fn a_cycle_is_found_when_there_is_one() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&graph).unwrap(), ["a", "b", "a"]);
}
