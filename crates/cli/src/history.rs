//! `nssim history`: the real kernel bugs the library reproduces. For each
//! patch that declares the commit it is (`fixes` in
//! `kernel::catalog::PATCHES`), the library scenarios with an entry that
//! fails on a kernel without the patch and one that passes on a kernel
//! with it, where among the patches that change code the scenario's ops
//! run through, the two differ only by the fix and what its release merged
//! beside it. Nothing is listed by hand: a new bug is a patch declaration,
//! its model change and a scenario.

use crate::error::CliError;
use crate::library;
use crate::options::Format;
use kernel::catalog::{PatchInfo, PATCHES};
use scenario::{ExpectedOutcome, KernelRun, Scenario};
use serde_json::json;

/// One bug the library shows.
pub struct Row {
    pub patch: &'static PatchInfo,
    pub scenario: String,
    /// The scenario's summary: what the failing execution shows.
    pub summary: String,
    /// The entries that show the bug, and what each expects.
    pub fails: Vec<(String, String)>,
    /// The entries that pass with the fix.
    pub passes: Vec<String>,
}

/// The patches in force for `run` that change code `sc`'s ops run through.
fn bearing(sc: &Scenario, run: &KernelRun) -> Option<Vec<&'static str>> {
    let active = kernel::resolve_patches(&run.profile, &run.toggles()).ok()?;
    Some(active.names_bearing_on(&sc.setup).0)
}

/// Whether `fix` alone, with what its release merged beside it, stands
/// between the patches `without` and `with`: none removed, no other fix
/// added, and every patch added merged in the fix's release (a release
/// that brought several fixes at once cannot tell which one it was).
fn only_the_fix(fix: &PatchInfo, without: &[&str], with: &[&str]) -> bool {
    let added: Vec<&str> = with
        .iter()
        .copied()
        .filter(|p| !without.contains(p))
        .collect();
    let same_release = |name: &&str| {
        kernel::catalog::Patch::from_name(name).is_some_and(|p| p.info().merged_in == fix.merged_in)
    };
    let is_fix = |name: &&str| {
        kernel::catalog::Patch::from_name(name).is_some_and(|p| p.info().fixes.is_some())
    };
    let fixes: Vec<&&str> = added.iter().filter(|p| is_fix(p)).collect();
    without.iter().all(|p| with.contains(p))
        && fixes == [&fix.name]
        && added.iter().all(same_release)
}

/// What a failing entry expects, as the run line says it.
fn symptom(run: &KernelRun) -> String {
    if let Some(bug) = &run.expect.bug {
        return bug.clone();
    }
    match (&run.expect.outcome, &run.expect.invariant) {
        (ExpectedOutcome::Violation, Some(inv)) => format!("violation of {inv}"),
        (outcome, _) => outcome.as_str().to_string(),
    }
}

/// The row of scenario `sc` for fix `patch`, if it shows that bug.
fn row_of(sc: &Scenario, patch: &'static PatchInfo) -> Option<Row> {
    let entries: Vec<(&KernelRun, Vec<&str>)> = sc
        .runs
        .iter()
        .filter_map(|r| Some((r, bearing(sc, r)?)))
        .collect();
    let passing: Vec<&(&KernelRun, Vec<&str>)> = entries
        .iter()
        .filter(|(r, with)| !r.expect.shows_bug() && with.contains(&patch.name))
        .collect();
    let fails: Vec<(String, String)> = entries
        .iter()
        .filter(|(r, _)| r.expect.shows_bug())
        .filter(|(_, without)| {
            passing
                .iter()
                .any(|(_, with)| only_the_fix(patch, without, with))
        })
        .map(|(r, _)| (r.label.clone(), symptom(r)))
        .collect();
    if fails.is_empty() {
        return None;
    }
    Some(Row {
        patch,
        scenario: sc.name.clone(),
        summary: sc.summary.clone(),
        fails,
        passes: passing.iter().map(|(r, _)| r.label.clone()).collect(),
    })
}

/// Every bug the library shows, by the release that fixed it.
pub fn rows() -> Result<Vec<Row>, CliError> {
    let scenarios = library::load_library()?;
    let mut rows: Vec<Row> = PATCHES
        .iter()
        .filter(|p| p.fixes.is_some())
        .flat_map(|p| scenarios.iter().filter_map(move |sc| row_of(sc, p)))
        .collect();
    rows.sort_by_key(|r| {
        (
            r.patch.merged_in.map(kernel::catalog::release_number),
            r.patch.name,
        )
    });
    Ok(rows)
}

/// `what on A, B` for each symptom of `fails`, in order of first showing.
fn symptoms(fails: &[(String, String)]) -> String {
    let mut by_symptom: Vec<(&str, Vec<&str>)> = Vec::new();
    for (label, what) in fails {
        match by_symptom.iter_mut().find(|(w, _)| w == what) {
            Some((_, labels)) => labels.push(label),
            None => by_symptom.push((what, vec![label])),
        }
    }
    by_symptom
        .iter()
        .map(|(what, labels)| format!("{what} on {}", labels.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The book's table of the bugs (docs/bug-history.md): a row per bug and
/// scenario, from the same rows `nssim history` prints.
#[cfg(test)]
pub fn markdown_table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| Fixing commit | Fixed in | Patch | Scenario | Without the fix | What the failing execution shows |\n\
         |---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | `{}` | `{}` | {} | {} |\n",
            r.patch.fixes.unwrap_or_default(),
            r.patch.merged_in.unwrap_or("never merged"),
            r.patch.name,
            r.scenario,
            symptoms(&r.fails),
            r.summary.replace('|', "\\|"),
        ));
    }
    out
}

/// `nssim history`.
pub fn print(format: Format) -> Result<bool, CliError> {
    let rows = rows()?;
    let mut last_patch = None;
    let mut bugs = 0;
    for r in &rows {
        let fixed_in = r.patch.merged_in.unwrap_or("never merged");
        let subject = r.patch.fixes.unwrap_or_default();
        if format == Format::Json {
            println!(
                "{}",
                json!({
                    "fix": subject,
                    "fixed_in": fixed_in,
                    "patch": r.patch.name,
                    "scenario": r.scenario,
                    "shows": r.summary,
                    "fails": r.fails.iter().map(|(label, what)| json!({"kernel": label, "expect": what})).collect::<Vec<_>>(),
                    "passes": r.passes,
                })
            );
            continue;
        }
        if last_patch != Some(r.patch.name) {
            println!("\"{subject}\" ({fixed_in}, patch {})", r.patch.name);
            last_patch = Some(r.patch.name);
            bugs += 1;
        }
        println!(
            "    {}: {}; pass on {}",
            r.scenario,
            symptoms(&r.fails),
            r.passes.join(", ")
        );
    }
    if format != Format::Json {
        println!(
            "{bugs} bugs of the kernel's history, shown by {} library scenarios",
            rows.len()
        );
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/bug-history.md's table is the rendering of the library's rows;
    /// `NSSIM_BLESS=1 cargo test -p nssim-cli history::` rewrites it.
    #[test]
    fn the_books_table_is_what_the_library_shows() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bug-history.md");
        let mut doc = std::fs::read_to_string(path).unwrap();
        let start_marker = "<!-- table: history -->\n";
        let start = doc
            .find(start_marker)
            .expect("docs/bug-history.md has no table marker")
            + start_marker.len();
        let end = start
            + doc[start..]
                .find("<!-- end table -->")
                .expect("no end marker");
        let table = markdown_table(&rows().unwrap());
        if std::env::var_os("NSSIM_BLESS").is_some() {
            doc.replace_range(start..end, &table);
            std::fs::write(path, doc).unwrap();
            return;
        }
        assert_eq!(
            doc[start..end],
            table,
            "docs/bug-history.md's table differs from the library; \
             NSSIM_BLESS=1 cargo test -p nssim-cli history:: rewrites it"
        );
    }

    /// A bug is shown fixed by a proof, not a sample: every scenario in
    /// the history has an entry with the fix that `dfs` is expected to
    /// exhaust within the scenario's preemption bound (`nssim run` checks
    /// that it does).
    #[test]
    fn every_bug_has_a_passing_entry_that_dfs_exhausts() {
        // Fixes the library shows to leave a race behind, with the
        // scenario that shows what is left.
        const NOT_CLOSED: &[(&str, &str)] = &[(
            "ipc-wait-pending-free",
            "two windows remain after v6.3's fix (ipc-v6.3-window), which dfs finds",
        )];
        let scenarios = library::load_library().unwrap();
        for row in rows().unwrap() {
            if NOT_CLOSED.iter().any(|(p, _)| *p == row.patch.name) {
                continue;
            }
            let sc = scenarios.iter().find(|s| s.name == row.scenario).unwrap();
            let proven = sc.runs.iter().any(|r| {
                row.passes.contains(&r.label)
                    && r.explore.strategy == scenario::StrategyName::Dfs
                    && r.expect.exhausted
            });
            assert!(
                proven,
                "{} shows {:?} but no entry with the fix expects dfs to exhaust it",
                row.scenario, row.patch.name
            );
        }
    }
}
