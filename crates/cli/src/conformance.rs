//! `nssim conformance`: every conformance case of every subsystem, asked
//! of the model (under the profile of the running kernel) and of the
//! running kernel, printed as a table or JSON.

use crate::run::CliError;
use crate::Format;
use probe::{Case, Verdict};
use serde_json::json;

/// Every subsystem's cases, in a stable order.
pub fn all_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    cases.extend(kernel::conformance_ipc::conformance_cases());
    cases.extend(kernel::conformance_netns::conformance_cases());
    cases.extend(kernel::conformance_nsproxy::conformance_cases());
    cases.extend(userns::conformance::conformance_cases());
    cases.extend(kernel::conformance_nproc::conformance_cases());
    cases
}

/// Which cases to run.
pub struct Filter {
    pub subsystems: Vec<String>,
    pub names: Vec<String>,
}

impl Filter {
    fn keeps(&self, c: &Case) -> bool {
        (self.subsystems.is_empty() || self.subsystems.iter().any(|s| s == c.subsystem))
            && (self.names.is_empty() || self.names.iter().any(|n| c.name.contains(n.as_str())))
    }
}

/// Run the cases `filter` keeps; `Ok(true)` when none disagrees.
pub fn conformance(filter: &Filter, format: Format, list: bool) -> Result<bool, CliError> {
    let cases: Vec<Case> = all_cases()
        .into_iter()
        .filter(|c| filter.keeps(c))
        .collect();
    if cases.is_empty() {
        let known: std::collections::BTreeSet<&str> =
            all_cases().iter().map(|c| c.subsystem).collect();
        return Err(CliError(format!(
            "no conformance case matches (subsystems: {})",
            known.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    if list {
        for c in &cases {
            println!("{:<8} {:<44} {}", c.subsystem, c.name, c.question);
        }
        return Ok(true);
    }
    let profile = kernel::catalog::host_profile();
    let release = probe::kernel_release()
        .map(|(a, b)| format!("{a}.{b}"))
        .unwrap_or_else(|| "unknown".into());
    let verdicts: Vec<Verdict> = cases.iter().map(Case::run).collect();
    match format {
        Format::Text => print_table(&verdicts, profile, &release),
        Format::Json => print_json(&verdicts, profile, &release),
    }
    Ok(verdicts.iter().all(|v| v.agree() != Some(false)))
}

fn kernel_text(v: &Verdict) -> String {
    match &v.kernel {
        Ok(answer) => answer.clone(),
        Err(skip) => format!("skipped: {skip}"),
    }
}

fn agree_text(v: &Verdict) -> &'static str {
    match v.agree() {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    }
}

/// The case's name, prefixed with its subsystem unless it already is.
fn qualified(v: &Verdict) -> String {
    if v.name.starts_with(v.subsystem) {
        v.name.clone()
    } else {
        format!("{}.{}", v.subsystem, v.name)
    }
}

/// Longest answer shown in the table; `--format json` has them whole.
const SHOWN: usize = 40;

/// `text` cut to [`SHOWN`] characters, with `…` when cut.
fn shown(text: &str) -> String {
    if text.chars().count() <= SHOWN {
        text.to_string()
    } else {
        let mut cut: String = text.chars().take(SHOWN - 1).collect();
        cut.push('…');
        cut
    }
}

fn print_table(verdicts: &[Verdict], profile: &str, release: &str) {
    println!("model: kernel profile {profile}; kernel: the running Linux {release}");
    let rows: Vec<[String; 4]> = verdicts
        .iter()
        .map(|v| {
            [
                qualified(v),
                shown(&v.model),
                shown(&kernel_text(v)),
                agree_text(v).to_string(),
            ]
        })
        .collect();
    let width = |i: usize, title: &str| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .max()
            .unwrap_or(0)
            .max(title.len())
    };
    let (wc, wm, wk) = (width(0, "case"), width(1, "model"), width(2, "kernel"));
    let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w - s.chars().count()));
    println!(
        "{}  {}  {}  agree",
        pad("case", wc),
        pad("model", wm),
        pad("kernel", wk)
    );
    for r in &rows {
        println!(
            "{}  {}  {}  {}",
            pad(&r[0], wc),
            pad(&r[1], wm),
            pad(&r[2], wk),
            r[3]
        );
    }
    let count = |want: Option<bool>| verdicts.iter().filter(|v| v.agree() == want).count();
    println!(
        "{} cases: {} agree, {} disagree, {} skipped",
        verdicts.len(),
        count(Some(true)),
        count(Some(false)),
        count(None)
    );
}

fn print_json(verdicts: &[Verdict], profile: &str, release: &str) {
    let cases: Vec<_> = verdicts
        .iter()
        .map(|v| {
            json!({
                "subsystem": v.subsystem,
                "case": v.name,
                "question": v.question,
                "model": v.model,
                "kernel": v.kernel.as_ref().ok(),
                "skipped": v.kernel.as_ref().err().map(|s| s.to_string()),
                "agree": v.agree(),
            })
        })
        .collect();
    let doc = json!({
        "profile": profile,
        "kernel_release": release,
        "cases": cases,
    });
    println!("{doc}");
}
