//! `nssim run --on-kernel`: each scenario on the running kernel and in the
//! model, and whether every outcome the kernel showed is one the model
//! reaches.
//!
//! The kernel side is `kexec` (the scenario's world as real processes);
//! the model side explores the same scenario under the profile matching
//! the running kernel's release, with no invariant checked (an outcome is
//! what the results show, failing execution or not), and reduces each
//! execution to the same outcome string (`kexec::outcome`).

use crate::error::{shown, CliError};
use crate::options::Format;
use kernel::{OutcomeOf, RunSpec};
use scenario::Scenario;
use serde_json::json;
use sim::echo::echo_path;
use sim::{ExecConfig, ExploreConfig, StrategySpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Repeats per scenario when `--repeat` is not given.
pub const DEFAULT_REPEAT: u32 = 20;
/// Wall-clock time the kernel side of one scenario may take (or
/// `--timeout`, when shorter); past it no further repeat starts and a
/// running one is cut off.
pub const KERNEL_BUDGET: Duration = Duration::from_secs(15);
/// Scheduling points the model side of one scenario may spend, over all
/// its searches: a bound in the model's own units, so that what it
/// reaches does not depend on the machine.
const MODEL_STEP_BUDGET: u64 = 20_000_000;
const DFS_PREEMPTION_BOUND: u32 = 2;

/// How widely the model is searched besides the kernel's outcomes.
#[derive(Debug, Clone, Copy)]
pub struct Search {
    /// Most executions of the exhaustive search before it gives up.
    pub dfs_executions: u64,
    /// Executions of each sampling search (random, then PCT of depth 2
    /// and 3 when a kernel outcome is still missing).
    pub samples: u64,
    /// The wall-clock instant (`--timeout` after the scenario began) at
    /// which every search stops, whatever is left of the step budget.
    pub deadline: Option<std::time::Instant>,
}

impl Search {
    /// `nssim run --on-kernel`: wide enough to list the outcomes only the
    /// model reaches.
    pub const LIBRARY: Search = Search {
        dfs_executions: 2_000,
        samples: 1_000,
        deadline: None,
    };
    /// `nssim conformance`: a case asks whether the model reaches what the
    /// kernel shows, so the first searches are smaller (a missing outcome
    /// is still searched for within the same step budget).
    pub const CONFORMANCE: Search = Search {
        dfs_executions: 200,
        samples: 100,
        deadline: None,
    };

    /// The same search, stopped at `deadline` (`--timeout` after the
    /// scenario began).
    pub fn until(self, deadline: Option<std::time::Instant>) -> Search {
        Search { deadline, ..self }
    }

    fn past_deadline(&self) -> bool {
        self.deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
    }
}

/// What a search list says when `--timeout` stopped the model's search.
const STOPPED_AT_DEADLINE: &str = "stopped at the --timeout deadline";
/// Outcomes only the model reached that the text output shows (the most
/// frequent first).
const MODEL_ONLY_SHOWN: usize = 5;

/// The verdict on one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every outcome the kernel showed is one the model reaches.
    Agree,
    /// The kernel showed an outcome the model does not reach.
    ModelMisses,
    /// Every outcome the kernel showed is one the model reaches, but in
    /// no repeat did the kernel meet the scenario's own condition: the
    /// `results` of the entries that model this kernel (it answered
    /// EINVAL where they expect ok), so the check tested nothing there.
    Unmet,
    Skipped,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::ModelMisses => "model-misses",
            Verdict::Unmet => "unmet",
            Verdict::Skipped => "skipped",
        }
    }
}

/// What the model reached, and how it searched.
pub struct ModelOutcomes {
    pub outcomes: BTreeMap<String, u64>,
    pub searches: Vec<String>,
    pub exhausted: bool,
}

/// One scenario held against the kernel.
pub struct OnKernel {
    pub verdict: Verdict,
    pub reason: Option<String>,
    pub repeats: usize,
    pub timed_out: u32,
    pub wall: Duration,
    pub kernel: BTreeMap<String, u64>,
    pub model: Option<ModelOutcomes>,
    /// The file the kernel's runs were read from (`--kernel-output`), or
    /// `None` when they ran here.
    pub printed_in: Option<String>,
    /// Whether the scenario's own expectations held on the kernel.
    pub expectations: Option<Expectations>,
}

/// The scenario's expectations of the kernel it ran on, as the entries
/// that model it say them (those whose patches are the kernel's), and
/// in how many repeats the kernel showed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectations {
    /// The labels of those entries.
    pub entries: Vec<String>,
    /// Repeats in which every `results` expectation held, when there
    /// are any.
    pub results_held: Option<usize>,
    /// How the first repeat that did not meet them differs, one line each.
    pub first_unmet: Vec<String>,
    /// For an entry expecting a violation whose symptom shows in call
    /// results (`Invariant::symptom`): the invariant, its errno, and the
    /// repeats in which some call returned it.
    pub symptom: Option<(String, &'static str, usize)>,
    /// Repeats the kernel ran.
    pub of: usize,
    /// Whether some execution of the model's search, the set-up run as
    /// the kernel ran it, met the `results`: when it did, they depend on
    /// the schedule, and a kernel that did not show them in its repeats
    /// could have.
    pub model_meets: Option<bool>,
    /// The `results` held against the runs (those of the entries, less
    /// the values the kernel's runs do not show comparably).
    results: Vec<scenario::ExpectedResult>,
}

impl Expectations {
    /// What the scenario expects of a kernel modelled by `patches`, held
    /// against its `runs`; `None` when no entry models it or none says
    /// what the kernel shows.
    fn of_runs(
        sc: &Scenario,
        patches: &kernel::ActivePatches,
        runs: &[kernel::Results],
    ) -> Option<Expectations> {
        let entries: Vec<&scenario::KernelRun> = sc
            .runs
            .iter()
            .filter(|k| entry_patches(k).as_ref() == Some(patches))
            .collect();
        // Values the kernel's runs do not show comparably (an injection's
        // SEQNUM, those received where namespaces are made) are not held.
        let valued = kexec::outcome::valued_labels(&sc.setup);
        let results: Vec<scenario::ExpectedResult> = entries
            .iter()
            .flat_map(|k| k.expect.results.iter().cloned())
            .map(|mut want| {
                if !valued.iter().any(|label| want.matches_label(label)) {
                    want.values = None;
                }
                want
            })
            .collect();
        let symptom = entries.iter().find_map(|k| {
            let invariant = k.expect.invariant.as_deref()?;
            let errno = kernel::invariants::Invariant::from_name(invariant)?.symptom()?;
            let showed = runs.iter().filter(|r| returned(r, errno)).count();
            Some((invariant.to_string(), errno, showed))
        });
        if results.is_empty() && symptom.is_none() {
            return None;
        }
        let unmet: Vec<Vec<String>> = runs
            .iter()
            .map(|r| crate::output::result_mismatches(&results, r))
            .collect();
        Some(Expectations {
            entries: entries.iter().map(|k| k.label.clone()).collect(),
            results_held: (!results.is_empty())
                .then(|| unmet.iter().filter(|m| m.is_empty()).count()),
            first_unmet: unmet
                .into_iter()
                .find(|m| !m.is_empty())
                .unwrap_or_default(),
            symptom,
            of: runs.len(),
            model_meets: None,
            results,
        })
    }

    /// The kernel could not meet the `results`: it showed them in no
    /// repeat, and no execution of the model, run as the kernel ran, meets
    /// them either (a capability withheld, an answer that differs), so
    /// that no schedule would have.
    fn never_met(&self) -> bool {
        self.results_held == Some(0) && self.model_meets == Some(false)
    }

    /// One line each: the results, the symptom.
    fn lines(&self) -> Vec<String> {
        let entries = self.entries.join(", ");
        let mut lines = Vec::new();
        if let Some(held) = self.results_held {
            let mut line = format!(
                "the scenario's results ({entries}) held in {held} of {} repeats on the kernel",
                self.of
            );
            if let Some(first) = self.first_unmet.first() {
                line.push_str(&format!("; where they did not: {first}"));
            }
            if held < self.of && self.model_meets == Some(true) {
                line.push_str(" (the model meets them in some schedules only)");
            }
            lines.push(line);
        }
        if let Some((invariant, errno, showed)) = &self.symptom {
            lines.push(format!(
                "the violation of {invariant} that {entries} expects showed ({errno}) in {showed} of {} repeats on the kernel",
                self.of
            ));
        }
        lines
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "entries": self.entries,
            "results_held": self.results_held,
            "first_unmet": self.first_unmet,
            "model_meets": self.model_meets,
            "symptom": self.symptom.as_ref().map(|(invariant, errno, showed)| json!({
                "invariant": invariant,
                "errno": errno,
                "showed": showed,
            })),
            "repeats": self.of,
        })
    }
}

/// The patches an entry runs the model with (`None` when they do not
/// resolve: the scenario checker reports that).
fn entry_patches(k: &scenario::KernelRun) -> Option<kernel::ActivePatches> {
    let toggles: Vec<(String, bool)> = k
        .patches
        .iter()
        .map(|t| (t.name.clone(), t.enable))
        .collect();
    kernel::resolve_patches(&k.profile, &toggles).ok()
}

/// Some call of `run` returned `errno`.
fn returned(run: &kernel::Results, errno: &str) -> bool {
    run.values()
        .flat_map(|ops| ops.values())
        .any(|stats| stats.results.contains_key(errno))
}

fn spec_explore(
    strategy: StrategySpec,
    seed: u64,
    iterations: u64,
    sc: &Scenario,
    deadline: Option<std::time::Instant>,
) -> ExploreConfig {
    let mut exec = match sc.runs.first() {
        Some(run) => crate::run::exec_config(sc, &run.explore),
        None => ExecConfig::default(),
    };
    exec.deadline = deadline;
    let mut e = ExploreConfig::new(strategy, seed, iterations, exec);
    e.shrink = false;
    e
}

/// The model's outcomes of `sc` under `patches`: exhaustive `dfs` when it
/// finishes within its bounds, else random sampling; then, while a kernel
/// outcome (a key of `wanted`, with the results of one run that showed it)
/// is missing, PCT of depth 2 and 3, then a directed search for each one
/// still missing (`kernel::directed`, with up to half the step budget
/// left), then samples with further seeds and wider exhaustive searches,
/// until the step budget is spent. With them, whether some execution met
/// `expected` (false when it is empty).
pub fn model_outcomes(
    sc: &Scenario,
    patches: &kernel::ActivePatches,
    wanted: &BTreeMap<String, kernel::Results>,
    width: Search,
    expected: &[scenario::ExpectedResult],
) -> (ModelOutcomes, bool) {
    let setup = Arc::new(sc.setup.clone());
    let met = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let outcome: OutcomeOf = {
        let (setup, met) = (Arc::clone(&setup), Arc::clone(&met));
        let expected = expected.to_vec();
        Arc::new(move |r| {
            use std::sync::atomic::Ordering::Relaxed;
            if !expected.is_empty()
                && !met.load(Relaxed)
                && crate::output::result_mismatches(&expected, r).is_empty()
            {
                met.store(true, Relaxed);
            }
            kexec::outcome::outcome_of(&setup, r)
        })
    };
    let seed = sc.runs.first().map_or(1, |r| r.explore.seed);
    let mut budget = MODEL_STEP_BUDGET;
    let mut all: BTreeMap<String, u64> = BTreeMap::new();
    let mut searches = Vec::new();
    let search =
        |strategy: StrategySpec, seed: u64, iterations: u64, all: &mut BTreeMap<String, u64>| {
            let spec = RunSpec {
                setup: &setup,
                patches,
                invariants: &[],
                explore: spec_explore(strategy, seed, iterations, sc, width.deadline),
            };
            let (report, seen) = kernel::explore_outcomes(&spec, &outcome);
            for (o, n) in seen {
                *all.entry(o).or_default() += n;
            }
            // A search ends at its first execution that does not pass (a
            // deadlock or a limit, no invariant being checked): say so.
            let ended = match report.report.outcome.is_failure() {
                true => format!(", ended at a {} execution", report.report.outcome.kind()),
                false => String::new(),
            };
            (
                report.executions,
                report.exhausted,
                report.report.steps.max(1),
                ended,
            )
        };
    let (_, _, steps, ended) = search(StrategySpec::Fair, seed, 1, &mut all);
    searches.push(format!("fair: 1 execution{ended}"));
    budget = budget.saturating_sub(steps);
    let affordable = |budget: u64, want: u64| want.min(budget / steps);
    let mut exhausted = false;
    let mut first_exhausted = None;
    let n = affordable(budget, width.dfs_executions);
    if n == width.dfs_executions {
        let dfs = StrategySpec::Dfs {
            preemption_bound: DFS_PREEMPTION_BOUND,
        };
        let (ran, done, _, ended) = search(dfs, seed, n, &mut all);
        budget = budget.saturating_sub(ran * steps);
        exhausted = done;
        first_exhausted = done.then_some(ran);
        searches.push(format!(
            "dfs (preemption bound {DFS_PREEMPTION_BOUND}): {ran} executions{}{ended}",
            if done {
                ", exhausted"
            } else {
                ", not exhausted"
            }
        ));
    }
    let missing = |all: &BTreeMap<String, u64>| wanted.keys().any(|w| !all.contains_key(w));
    // While a kernel outcome is missing: samples of each kind in turn, and
    // every fourth round an exhaustive search ten times as wide as the
    // last (a preemption more once one is exhausted), since an outcome
    // that needs two narrow windows in one execution is rarely sampled.
    let mut round = 0u64;
    let mut deeper = (
        DFS_PREEMPTION_BOUND + u32::from(exhausted),
        width.dfs_executions,
    );
    // An exhaustive search that a preemption more did not widen has
    // nothing left to find by going deeper: the rounds it would take go to
    // samples instead (it was repeated a hundred times over on a small
    // scenario, each time exhausted with the same executions).
    let mut last_exhausted = first_exhausted;
    let mut deeper_is_useless = false;
    let samplers = [
        StrategySpec::Random,
        StrategySpec::Pct { depth: 2 },
        StrategySpec::Pct { depth: 3 },
    ];
    while (!exhausted && round == 0) || missing(&all) {
        if width.past_deadline() {
            searches.push(STOPPED_AT_DEADLINE.to_string());
            break;
        }
        if round == 3 {
            // The outcomes that one round of samples did not reach: a
            // directed search for each.
            let ran = directed_searches(
                sc,
                &setup,
                patches,
                wanted,
                (budget / 2, width.deadline),
                &mut all,
                &mut searches,
            );
            budget = budget.saturating_sub(ran);
            if !missing(&all) {
                break;
            }
        }
        if round % 4 == 3 {
            let (bound, last) = deeper;
            let n = affordable(budget, last.saturating_mul(10));
            if n <= last || deeper_is_useless {
                round += 1;
                continue;
            }
            let dfs = StrategySpec::Dfs {
                preemption_bound: bound,
            };
            let (ran, done, _, ended) = search(dfs, seed, n, &mut all);
            budget = budget.saturating_sub(ran * steps);
            searches.push(format!(
                "dfs (preemption bound {bound}): {ran} executions{}{ended}",
                if done {
                    ", exhausted"
                } else {
                    ", not exhausted"
                }
            ));
            deeper_is_useless = done && last_exhausted == Some(ran);
            last_exhausted = done.then_some(ran);
            deeper = match done {
                true => (bound + 1, width.dfs_executions),
                false => (bound, n),
            };
            round += 1;
            continue;
        }
        let n = affordable(budget, width.samples);
        if n == 0 {
            break;
        }
        let strategy = samplers[(round % 4) as usize];
        let s = seed.wrapping_add(round / 4);
        let (ran, _, _, ended) = search(strategy, s, n, &mut all);
        budget = budget.saturating_sub(ran * steps);
        searches.push(format!(
            "{} (seed {s}): {ran} executions{ended}",
            strategy_name(strategy)
        ));
        round += 1;
    }
    let model = ModelOutcomes {
        outcomes: all,
        searches,
        exhausted,
    };
    (model, met.load(std::sync::atomic::Ordering::Relaxed))
}

/// For each kernel outcome in `wanted` not in `all`, a directed search
/// with an even share of `budget` steps, stopped at `deadline`; what they reached goes into
/// `all`, a line each into `searches`. Returns the steps spent.
fn directed_searches(
    sc: &Scenario,
    setup: &Arc<kernel::setup::Setup>,
    patches: &kernel::ActivePatches,
    wanted: &BTreeMap<String, kernel::Results>,
    (budget, deadline): (u64, Option<std::time::Instant>),
    all: &mut BTreeMap<String, u64>,
    searches: &mut Vec<String>,
) -> u64 {
    let targets: Vec<(usize, &String, &kernel::Results)> = wanted
        .iter()
        .enumerate()
        .filter(|(_, (w, _))| !all.contains_key(*w))
        .map(|(i, (w, r))| (i, w, r))
        .collect();
    let share = budget / targets.len().max(1) as u64;
    let mut spent = 0;
    for &(i, w, target) in &targets {
        // A search for an earlier outcome may have reached this one.
        if all.contains_key(w) {
            continue;
        }
        let spec = RunSpec {
            setup,
            patches,
            invariants: &[],
            explore: spec_explore(StrategySpec::Fair, 0, 1, sc, deadline),
        };
        let found = kernel::directed::search(&spec, &wanted_outcome(setup, w, target), share);
        spent += found.steps;
        for r in &found.finished {
            *all.entry(kexec::outcome::outcome_of(setup, r)).or_default() += 1;
        }
        searches.push(format!(
            "directed at kernel outcome {} of {}: {} executions, {}",
            i + 1,
            wanted.len(),
            found.executions,
            match (&found.found, found.timed_out) {
                (Some(_), _) => "reached",
                (None, true) => "stopped by --timeout",
                (None, false) => "not reached",
            }
        ));
        if found.timed_out {
            break;
        }
    }
    spent
}

/// What a directed search for the kernel outcome `w`, shown by a run with
/// `target` results, looks for.
fn wanted_outcome(
    setup: &Arc<kernel::setup::Setup>,
    w: &str,
    target: &kernel::Results,
) -> kernel::directed::Wanted {
    let (for_test, for_end) = (Arc::clone(setup), Arc::clone(setup));
    let target = target.clone();
    let w = w.to_string();
    kernel::directed::Wanted {
        may_become: Arc::new(move |r| kexec::outcome::may_become(&for_test, r, &target)),
        is: Box::new(move |r| kexec::outcome::outcome_of(&for_end, r) == w),
    }
}

fn strategy_name(s: StrategySpec) -> String {
    match s {
        StrategySpec::Random => "random".into(),
        StrategySpec::Pct { depth } => format!("pct (depth {depth})"),
        StrategySpec::Dfs { preemption_bound } => {
            format!("dfs (preemption bound {preemption_bound})")
        }
        StrategySpec::Fair => "fair".into(),
    }
}

fn skipped(reason: String) -> OnKernel {
    OnKernel {
        verdict: Verdict::Skipped,
        reason: Some(reason),
        repeats: 0,
        timed_out: 0,
        wall: Duration::ZERO,
        kernel: BTreeMap::new(),
        model: None,
        printed_in: None,
        expectations: None,
    }
}

/// Hold `sc` against the running kernel.
pub fn on_kernel(
    sc: &Scenario,
    repeat: u32,
    patches: &kernel::ActivePatches,
    width: Search,
    budget: Duration,
) -> OnKernel {
    let program = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => return skipped(format!("cannot find the nssim binary: {e}")),
    };
    let file = shown(&sc.path);
    let execute = |repeat: u32, budget: Duration| {
        kexec::execute(&program, &file, &sc.source, &sc.setup, repeat, budget)
    };
    match execute(repeat, budget)
        .map(|runs| ask_again_if_unmet(sc, patches, runs, repeat, budget, execute))
    {
        Ok(runs) => judge(
            sc,
            &runs,
            &kexec::world::withheld_here(),
            patches,
            width,
            budget,
        ),
        Err(kexec::Skip(why)) => skipped(why),
    }
}

/// The kernel's `runs`, with as many again four times over when none of
/// them met the scenario's results: a condition the kernel meets only
/// sometimes (the outcome of a race, a free not yet done) can miss each
/// of a few repeats on a loaded machine, and "unmet" is a verdict people
/// act on. The second round gets what is left of `budget`.
fn ask_again_if_unmet(
    sc: &Scenario,
    patches: &kernel::ActivePatches,
    mut runs: kexec::KernelRuns,
    repeat: u32,
    budget: Duration,
    execute: impl Fn(u32, Duration) -> Result<kexec::KernelRuns, kexec::Skip>,
) -> kexec::KernelRuns {
    let unmet = !runs.runs.is_empty()
        && Expectations::of_runs(sc, patches, &runs.runs)
            .is_some_and(|e| e.results_held == Some(0));
    let left = budget.saturating_sub(runs.wall);
    if !unmet || left.is_zero() {
        return runs;
    }
    if let Ok(more) = execute(repeat.saturating_mul(4), left) {
        runs.runs.extend(more.runs);
        runs.timed_out += more.timed_out;
        runs.wall += more.wall;
    }
    runs
}

/// Whether every outcome of the kernel's `runs` of `sc` is one the model
/// reaches under `patches`: what the executor's runs are held to, and
/// those an exported program (`nssim export --c`) printed. The tasks of
/// the initial user namespace ran without the capabilities `withheld`
/// (`kexec::world::withheld_here` for a run on this machine).
pub fn judge(
    sc: &Scenario,
    runs: &kexec::KernelRuns,
    withheld: &[u32],
    patches: &kernel::ActivePatches,
    width: Search,
    budget: Duration,
) -> OnKernel {
    if runs.runs.is_empty() {
        return OnKernel {
            timed_out: runs.timed_out,
            wall: runs.wall,
            ..skipped(format!(
                "no repeat finished within {}",
                scenario::format_duration(budget.as_nanos() as u64)
            ))
        };
    }
    let mut kernel_outcomes: BTreeMap<String, u64> = BTreeMap::new();
    // Each outcome with the results of its first run.
    let mut wanted: BTreeMap<String, kernel::Results> = BTreeMap::new();
    for r in &runs.runs {
        let o = kexec::outcome::outcome_of(&sc.setup, r);
        wanted.entry(o.clone()).or_insert_with(|| r.clone());
        *kernel_outcomes.entry(o).or_default() += 1;
    }
    // The model runs the set-up as the kernel ran it, the initial
    // namespace's tasks without what they were without there.
    let as_run = Scenario {
        setup: kexec::world::as_run(&sc.setup, withheld),
        ..sc.clone()
    };
    let mut expectations = Expectations::of_runs(sc, patches, &runs.runs);
    let expected = expectations.as_ref().map_or(&[][..], |e| &e.results[..]);
    let (model, model_meets) = model_outcomes(&as_run, patches, &wanted, width, expected);
    if let Some(e) = expectations.as_mut().filter(|e| e.results_held.is_some()) {
        e.model_meets = Some(model_meets);
    }
    let misses = wanted.keys().any(|w| !model.outcomes.contains_key(w));
    OnKernel {
        verdict: if misses {
            Verdict::ModelMisses
        } else if expectations.as_ref().is_some_and(Expectations::never_met) {
            Verdict::Unmet
        } else {
            Verdict::Agree
        },
        expectations,
        reason: None,
        repeats: runs.runs.len(),
        timed_out: runs.timed_out,
        wall: runs.wall,
        kernel: kernel_outcomes,
        model: Some(model),
        printed_in: None,
    }
}

pub fn print_text(sc: &Scenario, profile: &str, r: &OnKernel) {
    print!("{}", text(sc, profile, r));
}

/// The verdict of one scenario as text: its head line, then the kernel's
/// outcomes, the model's that the kernel did not show and the search.
pub fn text(sc: &Scenario, profile: &str, r: &OnKernel) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let mut head = format!("{:<40} {:<8} {}", sc.name, profile, r.verdict.name());
    match r.verdict {
        Verdict::Skipped => {
            head.push_str(&format!(": {}", r.reason.as_deref().unwrap_or("")));
            return head + "\n";
        }
        _ => head.push_str(&format!(
            " ({} repeats {}{})",
            r.repeats,
            match &r.printed_in {
                Some(file) => format!("on the kernel, as {file} shows them"),
                None => format!("on the kernel in {:.1} s", r.wall.as_secs_f64()),
            },
            if r.timed_out > 0 {
                format!(", {} cut off", r.timed_out)
            } else {
                String::new()
            }
        )),
    }
    out.push_str(&head);
    out.push('\n');
    let model = r.model.as_ref().expect("a model side for a run that ran");
    for (o, n) in &r.kernel {
        let mark = if model.outcomes.contains_key(o) {
            "kernel"
        } else {
            "kernel, NOT REACHED BY THE MODEL"
        };
        let _ = writeln!(out, "    {mark} {n}x: {o}");
    }
    let mut only: Vec<(&String, &u64)> = model
        .outcomes
        .iter()
        .filter(|(o, _)| !r.kernel.contains_key(*o))
        .collect();
    only.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (o, n) in only.iter().take(MODEL_ONLY_SHOWN) {
        let _ = writeln!(out, "    model only {n}x: {o}");
    }
    if only.len() > MODEL_ONLY_SHOWN {
        let _ = writeln!(
            out,
            "    ... and {} more outcomes only the model reached (--format json lists them all)",
            only.len() - MODEL_ONLY_SHOWN
        );
    }
    let _ = writeln!(out, "    model search: {}", search_summary(&model.searches));
    for line in r.expectations.iter().flat_map(Expectations::lines) {
        let _ = writeln!(out, "    {line}");
    }
    if r.verdict == Verdict::Unmet {
        let _ = writeln!(
            out,
            "    unmet: the kernel never met the scenario's results, nor does any execution of the model run as the kernel ran: the check tested nothing here"
        );
    }
    out
}

/// The first searches, and how many more there were.
fn search_summary(searches: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut text = searches
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if searches.len() > SHOWN {
        text.push_str(&format!("; and {} more samples", searches.len() - SHOWN));
    }
    text
}

fn outcomes_json(m: &BTreeMap<String, u64>) -> serde_json::Value {
    m.iter()
        .map(|(o, n)| json!({ "outcome": o, "count": n }))
        .collect()
}

/// The `on_kernel` object of a record.
pub fn record_json(r: &OnKernel) -> serde_json::Value {
    let mut on_kernel = json!({
        "verdict": r.verdict.name(),
        "repeats": r.repeats,
        "timed_out": r.timed_out,
        "wall_seconds": (r.wall.as_secs_f64() * 1000.0).round() / 1000.0,
        "kernel_outcomes": outcomes_json(&r.kernel),
        "model_outcomes": r.model.as_ref().map_or(json!([]), |m| outcomes_json(&m.outcomes)),
    });
    if let Some(m) = &r.model {
        on_kernel["model_search"] = json!(m.searches);
        on_kernel["model_exhausted"] = json!(m.exhausted);
    }
    if let Some(reason) = &r.reason {
        on_kernel["reason"] = json!(reason);
    }
    if let Some(e) = &r.expectations {
        on_kernel["expectations"] = e.json();
    }
    on_kernel
}

fn print_json(sc: &Scenario, profile: &str, r: &OnKernel) {
    let on_kernel = record_json(r);
    let line = json!({
        "scenario": sc.name,
        "file": shown(&sc.path),
        "kernel": profile,
        "on_kernel": on_kernel,
    });
    println!("{line}");
}

/// `nssim run --on-kernel PATH...`: exit status 1 when any scenario's
/// kernel showed an outcome its model does not reach. With `printed`, the
/// kernel's side is that file, what an exported program printed.
pub fn run(
    paths: &[PathBuf],
    library: bool,
    format: Format,
    repeat: u32,
    overrides: &crate::options::Overrides,
    printed: Option<&Path>,
    lab: &[String],
) -> Result<bool, CliError> {
    let toggles = crate::run::parse_toggles(&overrides.patches)?;
    let timeout = crate::run::timeout_given(overrides)?;
    let budget = timeout.map_or(KERNEL_BUDGET, |t| t.min(KERNEL_BUDGET));
    // --timeout bounds each scenario whole: the kernel's side, then the
    // model's search in what is left of it.
    let search = || Search::LIBRARY.until(timeout.map(|t| std::time::Instant::now() + t));
    let (scenarios, unreadable) = crate::run::load_scenarios(paths, library)?;
    if let Some(file) = printed {
        return unreadable.after(run_printed(&scenarios, file, format, &toggles, search()));
    }
    if !lab.is_empty() {
        let ok = crate::kernel_lab::on_each_kernel(lab, &toggles, |lk| {
            Ok(run_in_lab(&scenarios, lk, repeat, budget, format, &search))
        });
        return unreadable.after(ok);
    }
    let profile = kernel::catalog::host_profile();
    let patches = kernel::resolve_patches(profile, &toggles)
        .map_err(|m| CliError(format!("error: profile {profile}: {m}")))?;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for sc in &scenarios {
        let r = on_kernel(sc, repeat, &patches, search(), budget);
        *counts.entry(r.verdict.name()).or_default() += 1;
        print_record(sc, profile, &r, format);
        if format == Format::Text && r.verdict == Verdict::ModelMisses {
            print!("{}", host_noise_note());
        }
    }
    let n = |v: Verdict| counts.get(v.name()).copied().unwrap_or(0);
    if format == Format::Text {
        println!(
            "{} scenarios on the kernel ({profile}): {}",
            scenarios.len(),
            verdict_counts(&n)
        );
    }
    unreadable.after(Ok(all_held(&n)))
}

/// Every scenario on one lab kernel; whether none missed.
fn run_in_lab(
    scenarios: &[Scenario],
    lk: &crate::kernel_lab::LabKernel,
    repeat: u32,
    budget: Duration,
    format: Format,
    search: &dyn Fn() -> Search,
) -> bool {
    let label = lk.label();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for sc in scenarios {
        let r = on_lab_kernel(sc, lk, repeat, search(), budget);
        *counts.entry(r.verdict.name()).or_default() += 1;
        print_record(sc, &label, &r, format);
    }
    let n = |v: Verdict| counts.get(v.name()).copied().unwrap_or(0);
    if format == Format::Text {
        println!(
            "{} scenarios on lab kernel {} (Linux {}, profile {}): {}",
            scenarios.len(),
            lk.kernel.name(),
            lk.booted.release,
            lk.profile,
            verdict_counts(&n)
        );
    }
    all_held(&n)
}

/// The summary line's counts, by verdict.
pub fn verdict_counts(n: &dyn Fn(Verdict) -> usize) -> String {
    format!(
        "{} agree, {} model-misses, {} unmet, {} skipped",
        n(Verdict::Agree),
        n(Verdict::ModelMisses),
        n(Verdict::Unmet),
        n(Verdict::Skipped)
    )
}

/// No scenario's kernel showed what the model misses, or never met the
/// scenario's condition: exit status 0.
fn all_held(n: &dyn Fn(Verdict) -> usize) -> bool {
    n(Verdict::ModelMisses) == 0 && n(Verdict::Unmet) == 0
}

/// Hold `sc` against a lab kernel: each repeat in a fresh restore of it,
/// nothing withheld from root.
pub fn on_lab_kernel(
    sc: &Scenario,
    lk: &crate::kernel_lab::LabKernel,
    repeat: u32,
    width: Search,
    budget: Duration,
) -> OnKernel {
    let file = shown(&sc.path);
    match lab::execute(&lk.booted, &file, &sc.source, &sc.setup, repeat, budget) {
        Ok(runs) => judge(
            sc,
            &runs,
            kexec::machine::Machine::Disposable.withheld_in_init(),
            &lk.patches,
            width,
            budget,
        ),
        Err(kexec::Skip(why)) => skipped(why),
    }
}

/// What else running on this machine can change what its kernel shows a
/// scenario, each with the outcome it gives: a disagreement on the host
/// may be one of them, never in the lab's VMs.
pub const HOST_NOISE: &[(&str, &str)] = &[
    (
        "a device uevent another process raises reaches the scenario's listeners",
        "uevent_recv gets an event no task of the scenario sent",
    ),
    (
        "namespaces a repeat made are freed after it ends, a grace period later",
        "the next repeat's namespace creation meets their charges (ENOSPC)",
    ),
    (
        "root's counts are the machine's (pending signals, locked memory, message queue bytes)",
        "EAGAIN, ENOMEM or EMFILE where the model's root had room",
    ),
];

/// The note under a disagreement on this machine's kernel.
fn host_noise_note() -> String {
    let mut out = String::from(
        "    note: this machine is shared; what else runs on it can change what the kernel shows:\n",
    );
    for (source, shows) in HOST_NOISE {
        out.push_str(&format!("      - {source} ({shows})\n"));
    }
    out.push_str(
        "      `--lab` runs the scenario on a kernel of its own, each repeat freshly booted\n",
    );
    out
}

fn print_record(sc: &Scenario, profile: &str, r: &OnKernel, format: Format) {
    match format {
        Format::Text => print_text(sc, profile, r),
        Format::Json => print_json(sc, profile, r),
    }
}

/// `--kernel-output FILE`: one scenario held against what its exported
/// program printed, the model under the profile of the kernel release
/// the program printed (this machine's when it printed none).
fn run_printed(
    scenarios: &[Scenario],
    file: &Path,
    format: Format,
    toggles: &[(String, bool)],
    search: Search,
) -> Result<bool, CliError> {
    let [sc] = scenarios else {
        return Err(CliError(format!(
            "error: --kernel-output reads the output of one scenario's program, and {} scenarios were given",
            scenarios.len()
        )));
    };
    let text = sim::input::read_input(file)
        .and_then(|b| String::from_utf8(b).map_err(|_| "not UTF-8 text".to_string()))
        .map_err(|e| {
            CliError(format!(
                "error: cannot read --kernel-output {}: {e}",
                echo_path(&file.display().to_string())
            ))
        })?;
    let (release, runs) = match kexec::printed_runs(&sc.setup, &text) {
        Ok(printed) => printed,
        Err(kexec::Skip(why)) => {
            let r = skipped(why);
            print_record(sc, kernel::catalog::host_profile(), &r, format);
            return Ok(true);
        }
    };
    if runs.runs.is_empty() && runs.timed_out == 0 {
        return Err(CliError(format!(
            "error: --kernel-output {} holds no run (no `N` line): it is not what a program `nssim export --c` wrote printed",
            echo_path(&file.display().to_string())
        )));
    }
    let profile = release
        .as_deref()
        .and_then(kernel::catalog::profile_for_release)
        .map_or_else(kernel::catalog::host_profile, |p| p.name);
    let patches = kernel::resolve_patches(profile, toggles)
        .map_err(|m| CliError(format!("error: profile {profile}: {m}")))?;
    let r = OnKernel {
        printed_in: Some(echo_path(&file.display().to_string())),
        ..judge(
            sc,
            &runs,
            kexec::machine::WITHHELD_IN_INIT,
            &patches,
            search,
            KERNEL_BUDGET,
        )
    };
    print_record(sc, profile, &r, format);
    Ok(!matches!(r.verdict, Verdict::ModelMisses | Verdict::Unmet))
}
