//! `nssim export SCENARIO --c`: the scenario as a standalone C program
//! (`kexec::export_c`), to standard output or a file.

use crate::error::{shown, CliError};
use scenario::{KernelRun, Scenario};
use sim::echo::{echo, echo_path};
use std::io::Write;
use std::path::Path;

/// The `[[kernel]]` entry `--kernel` names: by label, else the first of
/// that profile. Without `--kernel`, the first entry that expects a
/// violation (a reproducer is mailed for the bug it shows), else the
/// first entry.
fn entry<'a>(sc: &'a Scenario, kernel: Option<&str>) -> Result<Option<&'a KernelRun>, CliError> {
    let Some(name) = kernel else {
        let shows_the_bug = sc
            .runs
            .iter()
            .find(|r| r.expect.outcome == scenario::ExpectedOutcome::Violation);
        return Ok(shows_the_bug.or(sc.runs.first()));
    };
    sc.runs
        .iter()
        .find(|r| r.label == name)
        .or_else(|| sc.runs.iter().find(|r| r.profile == name))
        .map(Some)
        .ok_or_else(|| {
            let labels: Vec<&str> = sc.runs.iter().map(|r| r.label.as_str()).collect();
            CliError(format!(
                "error: {}: no [[kernel]] entry is labelled `{}` or of that profile (entries: {})",
                shown(&sc.path),
                echo(name),
                labels.join(", ")
            ))
        })
}

/// Where the model shows `entry`'s expected violation in call results,
/// when its `results` name no errno to look for: the invariant's symptom
/// (`kernel::Invariant::symptom`) and the calls of the model's violating
/// execution that returned it.
fn model_symptom(
    sc: &Scenario,
    entry: &KernelRun,
) -> Result<Option<kexec::export_c::symptom::ModelSymptom>, CliError> {
    let names_an_errno = entry
        .expect
        .results
        .iter()
        .any(|r| r.results.iter().any(|x| x != "ok"));
    let Some(invariant) = entry
        .expect
        .invariant
        .as_deref()
        .filter(|_| !names_an_errno)
    else {
        return Ok(None);
    };
    let Some(errno) = kernel::invariants::Invariant::from_name(invariant).and_then(|i| i.symptom())
    else {
        return Ok(None);
    };
    let ov = crate::options::Overrides {
        kernels: vec![entry.label.clone()],
        ..crate::options::Overrides::default()
    };
    let runs = crate::run::run_quietly(sc, &ov)?;
    let Some((_, run)) = runs.iter().find(|(label, _)| *label == entry.label) else {
        return Ok(None);
    };
    let record = &run.record;
    if record.invariant.as_deref() != Some(invariant) {
        return Ok(None);
    }
    let calls = record
        .results
        .iter()
        .flat_map(|(task, ops)| {
            ops.iter()
                .filter(|(_, op)| op.results.contains_key(errno))
                .map(move |(label, _)| (task.clone(), label.clone()))
        })
        .collect();
    Ok(Some(kexec::export_c::symptom::ModelSymptom {
        invariant: invariant.to_string(),
        errno: errno.to_string(),
        calls,
    }))
}

pub fn export_c(
    scenario: &Path,
    output: Option<&Path>,
    kernel: Option<&str>,
) -> Result<bool, CliError> {
    let sc = crate::library::load_one(scenario)?;
    let entry = entry(&sc, kernel)?;
    let file = shown(&sc.path);
    let model = match entry {
        Some(e) => model_symptom(&sc, e)?,
        None => None,
    };
    let program = kexec::export_c::program(&sc, &file, entry, model.as_ref()).map_err(|why| {
        CliError(format!(
            "error: {file}: {why}; `nssim export --c` cannot write this scenario"
        ))
    })?;
    match output {
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(program.as_bytes());
            let _ = out.flush();
        }
        Some(path) => std::fs::write(path, program).map_err(|e| {
            CliError(format!(
                "error: cannot write {}: {e}",
                echo_path(&path.display().to_string())
            ))
        })?,
    }
    Ok(true)
}
