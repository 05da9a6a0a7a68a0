//! The reference tables of `docs/scenario-format.md`, rendered from the
//! declarations (ops, patches, profiles, invariants, sysctls, costs). A
//! test in the scenario crate compares each table in the document with
//! its rendering here, so the document cannot drift from the code.

use crate::duration::format_duration;
use crate::ops::{kind_name, signature};
use kernel::catalog::{self, INVARIANTS, PATCHES, PROFILES, SYSCTLS};
use kernel::ops::OPS;

/// The tables, each by the name its markers in the document use:
/// `<!-- table: NAME -->` before it and `<!-- end table -->` after it.
pub fn reference_tables() -> Vec<(&'static str, String)> {
    vec![
        ("invariants", invariants()),
        ("sysctls", sysctls()),
        ("costs", costs()),
        ("ops", ops()),
        ("errors", errors()),
        ("profiles", profiles()),
        ("patches", patches()),
    ]
}

fn table(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!("|{}\n", " --- |".repeat(header.len())));
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

/// `a|b` would split a Markdown cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn code(text: &str) -> String {
    format!("`{}`", cell(text))
}

fn invariants() -> String {
    table(
        &["invariant", "meaning"],
        INVARIANTS
            .iter()
            .map(|i| vec![code(i.name), cell(i.summary)]),
    )
}

fn sysctls() -> String {
    table(
        &["sysctl", "meaning"],
        SYSCTLS.iter().map(|(n, s)| vec![code(n), cell(s)]),
    )
}

fn costs() -> String {
    table(
        &["cost", "default", "what it costs"],
        catalog::costs()
            .into_iter()
            .map(|c| vec![code(c.name), format_duration(c.default_ns), cell(c.summary)]),
    )
}

/// The errors of the ops that declare them, op by op.
fn errors() -> String {
    table(
        &["op", "error", "when"],
        OPS.iter().flat_map(|o| {
            o.errors
                .iter()
                .map(move |(errno, when)| vec![code(o.name), code(errno.name()), cell(when)])
        }),
    )
}

fn ops() -> String {
    table(
        &["op", "arguments", "meaning"],
        OPS.iter().map(|o| {
            let kinds: Vec<&str> = o.args.iter().map(|&k| kind_name(k)).collect();
            let kinds = if kinds.is_empty() {
                "none".to_string()
            } else {
                kinds.join(", ")
            };
            vec![code(&signature(o)), cell(&kinds), cell(o.summary)]
        }),
    )
}

fn profiles() -> String {
    table(
        &["profile", "new patches", "summary"],
        PROFILES.iter().map(|p| {
            let new: Vec<String> = PATCHES
                .iter()
                .filter(|x| x.merged_in == Some(p.name))
                .map(|x| code(x.name))
                .collect();
            let new = if new.is_empty() {
                "—".to_string()
            } else {
                new.join(", ")
            };
            vec![code(p.name), new, cell(p.summary)]
        }),
    )
}

fn patches() -> String {
    table(
        &["patch", "merged in", "what it changes"],
        PATCHES.iter().map(|p| {
            vec![
                code(p.name),
                p.merged_in.unwrap_or("never").to_string(),
                cell(p.summary),
            ]
        }),
    )
}
