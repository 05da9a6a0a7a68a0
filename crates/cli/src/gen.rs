//! `nssim gen`: scenarios generated from the ops' declarations
//! ([`scenario::gen`]), written out, or held in a campaign:
//!
//! * `--check model`, no false alarm: each scenario under PCT and dfs
//!   (preemption bound 2) on the newest profile; a violation is either one
//!   of the known kernel behaviours ([`kernel::known`]) or unexplained, and
//!   then shrunk to a minimal scenario and written out;
//! * `--check kernel`, kernel within model: each scenario the executor
//!   can run, run on the running kernel, every outcome it shows looked
//!   for in the model.
//!
//! Exit status 1 when something is unexplained, a model-miss, a panic, a
//! deadlock, a use after free or a run past its `--timeout`.

use crate::error::CliError;
use crate::onkernel::{self, Search, Verdict};
use crate::options::Overrides;
use crate::output::RunRecord;
use scenario::gen::{generate, newest_profile, shrink, Generated};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What to do with the generated scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Check {
    /// No false alarm: PCT and dfs on the newest profile, every violation
    /// a known kernel behaviour.
    Model,
    /// Kernel within model: run on the running kernel, every outcome it
    /// shows one the model reaches.
    Kernel,
}

/// `nssim gen`'s settings.
pub struct GenPlan<'a> {
    pub seed: u64,
    pub count: u64,
    pub out: Option<&'a Path>,
    pub check: Option<Check>,
    pub jobs: usize,
    pub timeout: Option<&'a str>,
    /// Shrink what a campaign finds.
    pub shrink: bool,
}

/// Candidates the shrinker tries for an unexplained failure.
const SHRINK_BUDGET: usize = 60;

/// Wall-clock time one generated run may take (its `--timeout`).
const RUN_TIMEOUT: &str = "20s";

/// The kernel side of one generated scenario: runs and their time.
const KERNEL_REPEAT: u32 = 3;
const KERNEL_BUDGET: Duration = Duration::from_secs(3);

pub fn gen(plan: &GenPlan<'_>) -> Result<bool, CliError> {
    if let Some(dir) = plan.out {
        std::fs::create_dir_all(dir).map_err(|e| {
            CliError(format!(
                "error: cannot make --out {}: {e}",
                crate::error::shown(dir)
            ))
        })?;
    }
    let seeds = plan.seed..plan.seed.saturating_add(plan.count);
    match plan.check {
        None => write_all(seeds, plan.out),
        Some(Check::Model) => check_model(seeds, plan),
        Some(Check::Kernel) => check_kernel(seeds, plan),
    }
}

/// The scenarios of `seeds`: to `out` as `gen-SEED.toml`, or printed.
fn write_all(seeds: std::ops::Range<u64>, out: Option<&Path>) -> Result<bool, CliError> {
    for seed in seeds {
        let g = generate(seed);
        let text = g.text(newest_profile());
        match out {
            Some(dir) => write(&dir.join(format!("{}.toml", g.name())), &text)?,
            None => println!("{text}"),
        }
    }
    Ok(true)
}

fn write(file: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(file, text).map_err(|e| {
        CliError(format!(
            "error: cannot write {}: {e}",
            crate::error::shown(file)
        ))
    })
}

fn parse(g: &Generated) -> Result<scenario::Scenario, CliError> {
    let text = g.text(newest_profile());
    scenario::parse(&format!("{}.toml", g.name()), &text).map_err(|e| {
        CliError(format!(
            "error: the generator made an invalid scenario: {e}"
        ))
    })
}

/// How one run of a generated scenario ended, as the campaign counts it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Pass,
    /// A known kernel behaviour, by name.
    Known(&'static str),
    /// A limit of the model's own (steps, virtual time): no claim.
    Limit(String),
    /// Anything else: a defect of the model until shown otherwise.
    Unexplained,
}

fn classify(r: &RunRecord) -> Class {
    let rec = &r.record;
    match rec.outcome.as_str() {
        "pass" => Class::Pass,
        "violation" => {
            let invariant = rec.invariant.as_deref().unwrap_or("");
            let detail = rec.detail.as_deref().unwrap_or("");
            let has = |p: kernel::catalog::Patch| rec.patches.iter().any(|n| n == p.name());
            kernel::known::explain(invariant, detail, has)
                .map_or(Class::Unexplained, |k| Class::Known(k.name))
        }
        "limit" => {
            let detail = rec.detail.clone().unwrap_or_default();
            if detail.contains("wall-time") {
                Class::Unexplained
            } else {
                Class::Limit(detail)
            }
        }
        _ => Class::Unexplained,
    }
}

/// Every run of a generated scenario: its label and record.
fn run_generated(g: &Generated, ov: &Overrides) -> Result<Vec<(String, RunRecord)>, CliError> {
    crate::run::run_quietly(&parse(g)?, ov)
}

/// The campaign's overrides: the generated scenarios' own searches, each
/// run under the given `--timeout` (a default of its own otherwise).
fn overrides(plan: &GenPlan<'_>) -> Overrides {
    Overrides {
        timeout: Some(plan.timeout.unwrap_or(RUN_TIMEOUT).to_string()),
        jobs: Some(1),
        ..Overrides::default()
    }
}

/// The no-false-alarm campaign.
fn check_model(seeds: std::ops::Range<u64>, plan: &GenPlan<'_>) -> Result<bool, CliError> {
    let start = Instant::now();
    let ov = overrides(plan);
    let results = in_parallel(seeds.clone(), plan.jobs, |seed| {
        let g = generate(seed);
        run_generated(&g, &ov).map(|runs| (g, runs))
    })?;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut unexplained = 0;
    for (g, runs) in &results {
        for (label, record) in runs {
            let verdict = classify(record);
            let key = match &verdict {
                Class::Pass => "pass".to_string(),
                Class::Known(name) => format!("known: {name}"),
                Class::Limit(_) => "limit (steps or virtual time)".to_string(),
                Class::Unexplained => "unexplained".to_string(),
            };
            *counts.entry(key).or_default() += 1;
            if verdict == Class::Unexplained {
                unexplained += 1;
                report_unexplained(g, label, record, &ov, plan)?;
            }
        }
    }
    let runs: u64 = counts.values().sum();
    println!(
        "{} generated scenarios (seeds {}..{}), {runs} runs on {} in {:.1}s:",
        results.len(),
        seeds.start,
        seeds.end,
        newest_profile(),
        start.elapsed().as_secs_f64()
    );
    for (what, n) in &counts {
        println!("  {n:>6} {what}");
    }
    Ok(unexplained == 0)
}

/// Print an unexplained run, shrink its scenario to one that still ends
/// that way, and write that to `out` (else print it).
fn report_unexplained(
    g: &Generated,
    label: &str,
    record: &RunRecord,
    ov: &Overrides,
    plan: &GenPlan<'_>,
) -> Result<(), CliError> {
    println!("UNEXPLAINED {}", record.text());
    if !plan.shrink {
        println!("    (nssim gen --seed {})", g.seed);
        return Ok(());
    }
    let same = |candidate: &Generated| -> bool {
        run_generated(candidate, ov).is_ok_and(|runs| {
            runs.iter().any(|(l, r)| {
                l == label
                    && r.record.outcome == record.record.outcome
                    && r.record.invariant == record.record.invariant
                    && classify(r) == Class::Unexplained
            })
        })
    };
    let small = shrink(g, SHRINK_BUDGET, same);
    let text = small.text(newest_profile());
    match plan.out {
        Some(dir) => {
            let file: PathBuf = dir.join(format!("{}-shrunk.toml", g.name()));
            write(&file, &text)?;
            println!("    shrunk to {}", crate::error::shown(&file));
        }
        None => println!("    shrunk to:\n{text}"),
    }
    Ok(())
}

/// The kernel-within-model campaign.
fn check_kernel(seeds: std::ops::Range<u64>, plan: &GenPlan<'_>) -> Result<bool, CliError> {
    let start = Instant::now();
    let profile = kernel::catalog::host_profile();
    let patches = kernel::resolve_patches(profile, &[])
        .map_err(|m| CliError(format!("error: profile {profile}: {m}")))?;
    let budget = plan
        .timeout
        .map(|t| crate::run::wall_duration("--timeout", t))
        .transpose()?
        .map_or(KERNEL_BUDGET, |t| t.min(onkernel::KERNEL_BUDGET));
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    let mut seen = 0;
    for seed in seeds.clone() {
        let g = generate(seed);
        let sc = parse(&g)?;
        let r = onkernel::on_kernel(&sc, KERNEL_REPEAT, &patches, Search::CONFORMANCE, budget);
        *counts.entry(r.verdict.name()).or_default() += 1;
        seen += 1;
        if r.verdict == Verdict::ModelMisses {
            print!("{}", onkernel::text(&sc, profile, &r));
            if !plan.shrink {
                println!("    (nssim gen --seed {seed})");
                continue;
            }
            let misses = |candidate: &Generated| {
                parse(candidate).is_ok_and(|sc| {
                    let r = onkernel::on_kernel(
                        &sc,
                        KERNEL_REPEAT,
                        &patches,
                        Search::CONFORMANCE,
                        budget,
                    );
                    r.verdict == Verdict::ModelMisses
                })
            };
            let small = shrink(&g, SHRINK_BUDGET, misses);
            let text = small.text(newest_profile());
            match plan.out {
                Some(dir) => {
                    let file = dir.join(format!("{}-kernel-shrunk.toml", g.name()));
                    write(&file, &text)?;
                    println!(
                        "    (nssim gen --seed {seed}) shrunk to {}",
                        crate::error::shown(&file)
                    );
                }
                None => println!("    (nssim gen --seed {seed}) shrunk to:\n{text}"),
            }
        }
    }
    let n = |v: Verdict| counts.get(v.name()).copied().unwrap_or(0) as usize;
    println!(
        "{seen} generated scenarios (seeds {}..{}) on the kernel ({profile}) in {:.1}s: {}",
        seeds.start,
        seeds.end,
        start.elapsed().as_secs_f64(),
        crate::onkernel::verdict_counts(&n)
    );
    Ok(n(Verdict::ModelMisses) == 0)
}

/// `f` of every seed on `jobs` threads, the results in seed order.
fn in_parallel<T: Send>(
    seeds: std::ops::Range<u64>,
    jobs: usize,
    f: impl Fn(u64) -> Result<T, CliError> + Sync,
) -> Result<Vec<T>, CliError> {
    let next = AtomicU64::new(seeds.start);
    let done: Mutex<BTreeMap<u64, Result<T, CliError>>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= seeds.end {
                    return;
                }
                let r = f(seed);
                done.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(seed, r);
            });
        }
    });
    done.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_values()
        .collect()
}
