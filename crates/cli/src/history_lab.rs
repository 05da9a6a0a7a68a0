//! `nssim history --lab`: each bug of `nssim history` on the lab's real
//! kernels. For every bug and scenario, and every lab kernel: whether the
//! kernel has the fix (its release's profile with its backports, as
//! `nssim lab list` shows), the model's verdict under that profile, and
//! what the scenario did on the kernel, judged as `nssim run --on-kernel`
//! judges it. The kernels before a fix and after it are then side by side.

use crate::error::CliError;
use crate::history::{self, Row};
use crate::kernel_lab::LabKernel;
use crate::library;
use crate::onkernel::{self, OnKernel, Search};
use crate::options::Format;
use crate::run;
use scenario::Scenario;
use serde_json::json;

/// One scenario of one bug on one lab kernel.
struct Cell {
    kernel: String,
    has_fix: bool,
    model: String,
    on_kernel: OnKernel,
}

/// The entry of `row` whose search shows the bug: its exploration is the
/// one the model's verdict on a lab kernel's profile uses.
fn showing_entry<'a>(sc: &'a Scenario, row: &Row) -> Option<&'a scenario::KernelRun> {
    sc.runs
        .iter()
        .find(|r| row.fails.iter().any(|(label, _)| *label == r.label))
}

/// The model's verdict on `sc` under the profile and patches `lk` is held
/// to: `pass`, or `violation of INVARIANT`, or another outcome.
fn model_verdict(sc: &Scenario, row: &Row, lk: &LabKernel) -> Result<String, CliError> {
    let Some(entry) = showing_entry(sc, row) else {
        return Ok("-".into());
    };
    let mut on_profile = sc.clone();
    let mut run = entry.clone();
    run.profile = lk.profile.to_string();
    run.patches = crate::kernel_lab::with_backports(&lk.kernel, &[])
        .into_iter()
        .map(|(name, enable)| scenario::PatchToggle { name, enable })
        .collect();
    run.label = lk.kernel.held_to();
    on_profile.runs = vec![run];
    let records = run::run_quietly(&on_profile, &Default::default())?;
    let Some((_, r)) = records.first() else {
        return Ok("-".into());
    };
    Ok(match &r.record.invariant {
        Some(inv) => format!("{} of {inv}", r.record.outcome),
        None => r.record.outcome.clone(),
    })
}

/// `nssim history --lab NAMES`.
pub fn print(names: &[String], repeat: u32, format: Format) -> Result<bool, CliError> {
    let rows = history::rows()?;
    let scenarios = library::load_library()?;
    let mut cells: Vec<Vec<Cell>> = rows.iter().map(|_| Vec::new()).collect();
    let ran = crate::kernel_lab::on_each_kernel(names, &[], |lk| {
        for (row, out) in rows.iter().zip(cells.iter_mut()) {
            let Some(sc) = scenarios.iter().find(|s| s.name == row.scenario) else {
                continue;
            };
            let budget = onkernel::KERNEL_BUDGET;
            out.push(Cell {
                kernel: lk.label(),
                has_fix: lk.patches.names().contains(&row.patch.name),
                model: model_verdict(sc, row, lk)?,
                on_kernel: onkernel::on_lab_kernel(sc, lk, repeat, Search::CONFORMANCE, budget),
            });
        }
        Ok(true)
    })?;
    for (row, cells) in rows.iter().zip(&cells) {
        match format {
            Format::Json => println!("{}", row_json(row, cells)),
            Format::Text => print_text(row, cells),
        }
    }
    let agree = cells
        .iter()
        .flatten()
        .all(|c| c.on_kernel.verdict != onkernel::Verdict::ModelMisses);
    Ok(ran && agree)
}

/// The kernel's outcomes, most frequent first, as one line.
fn kernel_shows(c: &Cell) -> String {
    if let Some(reason) = &c.on_kernel.reason {
        return format!("skipped: {reason}");
    }
    let mut outcomes: Vec<(&String, &u64)> = c.on_kernel.kernel.iter().collect();
    outcomes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let shown: Vec<String> = outcomes.iter().map(|(o, n)| format!("{n}x {o}")).collect();
    format!("{}: {}", c.on_kernel.verdict.name(), shown.join(" | "))
}

fn print_text(row: &Row, cells: &[Cell]) {
    println!(
        "\"{}\" ({}, patch {}): {}",
        row.patch.fixes.unwrap_or_default(),
        row.patch.merged_in.unwrap_or("never merged"),
        row.patch.name,
        row.scenario
    );
    for c in cells {
        let fix = if c.has_fix {
            "with the fix"
        } else {
            "without the fix"
        };
        println!("    {:<42} {fix:<16} model: {}", c.kernel, c.model);
        println!("        kernel {}", kernel_shows(c));
    }
}

fn row_json(row: &Row, cells: &[Cell]) -> serde_json::Value {
    json!({
        "fix": row.patch.fixes.unwrap_or_default(),
        "fixed_in": row.patch.merged_in.unwrap_or("never merged"),
        "patch": row.patch.name,
        "scenario": row.scenario,
        "kernels": cells.iter().map(|c| json!({
            "kernel": c.kernel,
            "has_fix": c.has_fix,
            "model": c.model,
            "verdict": c.on_kernel.verdict.name(),
            "reason": c.on_kernel.reason,
            "kernel_outcomes": c.on_kernel.kernel,
        })).collect::<Vec<_>>(),
    })
}
