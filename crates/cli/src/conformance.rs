//! `nssim conformance`: the differential suite. Its cases are scenarios
//! under `sim-scenarios/conformance/<subsystem>/`, each asserting in its
//! `[[kernel]]` entry the answer the kernel gives (checked in the model)
//! and run on the running kernel as `nssim run --on-kernel` runs it (every
//! outcome the kernel shows must be one the model reaches).

use crate::error::{shown, CliError};
use crate::onkernel::{self, OnKernel, Search, Verdict as KernelVerdict};
use crate::options::Format;
use crate::run;
use scenario::Scenario;
use serde_json::json;
use std::path::{Path, PathBuf};

/// Repeats of each conformance scenario on the kernel unless `--repeat`
/// says otherwise: the cases ask one question each, whose answer does not
/// depend on timing.
pub const REPEAT: u32 = 5;

/// The directory of the conformance scenarios: `sim-scenarios/conformance`
/// under the working directory when there is one, else the copy built
/// into the binary.
const SCENARIO_DIR: &str = "sim-scenarios/conformance";

/// One conformance case: a scenario of
/// `sim-scenarios/conformance/<subsystem>/`.
pub struct Case {
    pub subsystem: String,
    pub scenario: Box<Scenario>,
}

impl Case {
    pub fn name(&self) -> &str {
        &self.scenario.name
    }

    pub fn question(&self) -> &str {
        &self.scenario.summary
    }
}

/// Every case, by subsystem and file name: from the working directory's
/// `sim-scenarios/conformance` when there is one, else the built-in ones.
fn all_cases() -> Result<Vec<Case>, CliError> {
    let dir = Path::new(SCENARIO_DIR);
    if dir.is_dir() {
        return cases_in(dir);
    }
    let mut cases = Vec::new();
    for (rel, text) in crate::library::under("conformance") {
        let Some((subsystem, _file)) = rel.split_once('/') else {
            continue;
        };
        let path = format!("{}/conformance/{rel}", crate::library::ROOT);
        cases.push(Case {
            subsystem: subsystem.to_string(),
            scenario: Box::new(crate::library::parse(&path, text)?),
        });
    }
    Ok(cases)
}

/// The cases of the subsystem directories of `dir`.
fn cases_in(dir: &Path) -> Result<Vec<Case>, CliError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        CliError(format!(
            "error: cannot read the conformance scenarios in {}: {e}",
            shown(dir)
        ))
    })?;
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    let mut cases = Vec::new();
    for sub in subdirs {
        let subsystem = sub
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut files = scenario::discover(std::slice::from_ref(&sub))?;
        files.sort();
        for f in files {
            cases.push(Case {
                subsystem: subsystem.clone(),
                scenario: Box::new(scenario::load(&f)?),
            });
        }
    }
    Ok(cases)
}

/// Which cases to run.
pub struct Filter {
    pub subsystems: Vec<String>,
    pub names: Vec<String>,
}

impl Filter {
    fn keeps(&self, c: &Case) -> bool {
        (self.subsystems.is_empty() || self.subsystems.contains(&c.subsystem))
            && (self.names.is_empty() || self.names.iter().any(|n| c.name().contains(n.as_str())))
    }
}

/// What one case answered.
struct Verdict {
    subsystem: String,
    name: String,
    question: String,
    /// The model's answer: for a scenario, whether its expectation held.
    model: String,
    /// The kernel's answer, or why it was skipped.
    kernel: Result<String, String>,
    /// `Some(true)` when the model and the kernel agree, `None` when skipped.
    agree: Option<bool>,
    /// The scenario's run on the kernel, for `--format json`.
    on_kernel: serde_json::Value,
}

/// Where a case's kernel side runs: this machine's kernel, or a lab
/// kernel; given the case, it answers as `onkernel::on_kernel` does.
type KernelSide<'a> = dyn Fn(&Scenario) -> OnKernel + 'a;

fn scenario_verdict(
    subsystem: &str,
    sc: &Scenario,
    profile: &str,
    on_kernel: &KernelSide,
) -> Result<Verdict, CliError> {
    let checks = run::check_model(sc)?;
    let failed: Vec<&(String, bool, String)> = checks.iter().filter(|c| !c.1).collect();
    let model_ok = failed.is_empty();
    let model = if model_ok {
        "as expected".to_string()
    } else {
        for (_, _, text) in &failed {
            eprint!("{text}");
        }
        let labels: Vec<&str> = failed.iter().map(|c| c.0.as_str()).collect();
        format!("NOT as expected ({})", labels.join(", "))
    };
    let r: OnKernel = on_kernel(sc);
    let kernel = match r.verdict {
        KernelVerdict::Skipped => Err(r.reason.clone().unwrap_or_default()),
        v => Ok(format!("{} ({} repeats)", v.name(), r.repeats)),
    };
    let agree = match r.verdict {
        KernelVerdict::Skipped => (!model_ok).then_some(false),
        KernelVerdict::Agree => Some(model_ok),
        // The case's own results never held on the kernel: what it says
        // of the kernel is not so.
        KernelVerdict::ModelMisses | KernelVerdict::Unmet => Some(false),
    };
    if matches!(r.verdict, KernelVerdict::ModelMisses | KernelVerdict::Unmet) {
        // On standard error: standard output is the table or the JSON.
        eprint!("{}", onkernel::text(sc, profile, &r));
    }
    Ok(Verdict {
        subsystem: subsystem.to_string(),
        name: sc.name.clone(),
        question: sc.summary.clone(),
        model,
        kernel,
        agree,
        on_kernel: onkernel::record_json(&r),
    })
}

/// Run the cases `filter` keeps, on this machine's kernel or on the lab's
/// kernels `lab` names; `Ok(true)` when none disagrees.
pub fn conformance(
    filter: &Filter,
    format: Format,
    list: bool,
    lab: &[String],
    repeat: u32,
) -> Result<bool, CliError> {
    let all = all_cases()?;
    let known: std::collections::BTreeSet<String> =
        all.iter().map(|c| c.subsystem.clone()).collect();
    let cases: Vec<Case> = all.into_iter().filter(|c| filter.keeps(c)).collect();
    if cases.is_empty() {
        return Err(CliError(format!(
            "no conformance case matches (subsystems: {})",
            known.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    if list {
        for c in &cases {
            match format {
                Format::Text => {
                    println!("{:<8} {:<44} {}", c.subsystem, c.name(), c.question())
                }
                Format::Json => println!(
                    "{}",
                    json!({ "subsystem": c.subsystem, "case": c.name(), "question": c.question() })
                ),
            }
        }
        return Ok(true);
    }
    if !lab.is_empty() {
        return crate::kernel_lab::on_each_kernel(lab, &[], |lk| {
            let on_kernel = |sc: &Scenario| {
                onkernel::on_lab_kernel(
                    sc,
                    lk,
                    repeat,
                    Search::CONFORMANCE,
                    onkernel::KERNEL_BUDGET,
                )
            };
            let kernel = KernelShown {
                release: &lk.booted.release,
                lab: Some(lk.kernel.name()),
            };
            run_cases(&cases, &lk.kernel.held_to(), &kernel, &on_kernel, format)
        });
    }
    let profile = kernel::catalog::host_profile();
    let patches = kernel::resolve_patches(profile, &[])
        .map_err(|m| CliError(format!("error: profile {profile}: {m}")))?;
    let on_kernel = |sc: &Scenario| {
        onkernel::on_kernel(
            sc,
            repeat,
            &patches,
            Search::CONFORMANCE,
            onkernel::KERNEL_BUDGET,
        )
    };
    let release = kernel::catalog::host_release();
    let kernel = KernelShown {
        release: &release,
        lab: None,
    };
    run_cases(&cases, profile, &kernel, &on_kernel, format)
}

/// The kernel the cases ran on, as the output names it.
struct KernelShown<'a> {
    release: &'a str,
    /// The lab kernel's name; `None` for this machine's kernel.
    lab: Option<&'a str>,
}

/// Every case against one kernel, printed; whether none disagrees.
fn run_cases(
    cases: &[Case],
    profile: &str,
    kernel: &KernelShown,
    on_kernel: &KernelSide,
    format: Format,
) -> Result<bool, CliError> {
    let mut verdicts = Vec::new();
    for c in cases {
        verdicts.push(scenario_verdict(
            &c.subsystem,
            &c.scenario,
            profile,
            on_kernel,
        )?);
    }
    match format {
        Format::Text => print_table(&verdicts, profile, kernel),
        Format::Json => print_json(&verdicts, profile, kernel),
    }
    Ok(verdicts.iter().all(|v| v.agree != Some(false)))
}

fn kernel_text(v: &Verdict) -> String {
    match &v.kernel {
        Ok(answer) => answer.clone(),
        Err(skip) => format!("skipped: {skip}"),
    }
}

fn agree_text(v: &Verdict) -> &'static str {
    match v.agree {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    }
}

/// The case's name, prefixed with its subsystem unless it already is.
fn qualified(v: &Verdict) -> String {
    if v.name.starts_with(v.subsystem.as_str()) {
        v.name.clone()
    } else {
        format!("{}.{}", v.subsystem, v.name)
    }
}

/// Longest answer shown in the table; `--format json` has them whole.
const SHOWN: usize = 40;

/// `text` cut to [`SHOWN`] characters, with `…` when cut.
fn cut(text: &str) -> String {
    if text.chars().count() <= SHOWN {
        text.to_string()
    } else {
        let mut cut: String = text.chars().take(SHOWN - 1).collect();
        cut.push('…');
        cut
    }
}

fn print_table(verdicts: &[Verdict], profile: &str, kernel: &KernelShown) {
    match kernel.lab {
        Some(name) => println!(
            "model: kernel profile {profile}; kernel: lab kernel {name}, Linux {}",
            kernel.release
        ),
        None => println!(
            "model: kernel profile {profile}; kernel: the running Linux {}",
            kernel.release
        ),
    }
    let rows: Vec<[String; 4]> = verdicts
        .iter()
        .map(|v| {
            [
                qualified(v),
                cut(&v.model),
                cut(&kernel_text(v)),
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
    let count = |want: Option<bool>| verdicts.iter().filter(|v| v.agree == want).count();
    println!(
        "{} cases: {} agree, {} disagree, {} skipped",
        verdicts.len(),
        count(Some(true)),
        count(Some(false)),
        count(None)
    );
}

fn print_json(verdicts: &[Verdict], profile: &str, kernel: &KernelShown) {
    let cases: Vec<_> = verdicts
        .iter()
        .map(|v| {
            json!({
                "subsystem": v.subsystem,
                "case": v.name,
                "question": v.question,
                "model": v.model,
                "kernel": v.kernel.as_ref().ok(),
                "skipped": v.kernel.as_ref().err(),
                "agree": v.agree,
                "on_kernel": v.on_kernel,
            })
        })
        .collect();
    let doc = json!({
        "profile": profile,
        "kernel_release": kernel.release,
        "lab_kernel": kernel.lab,
        "cases": cases,
    });
    println!("{doc}");
}
