//! `nssim run` and `nssim replay`.

use crate::error::{shown, CliError};
use crate::options::{Format, Overrides, StrategyArg};
use crate::output::{self, RunRecord};
use crate::progress;
use crate::side_by_side;
use crate::tracefile;
use crate::views::{self, ViewArgs, ViewContext};
use kernel::{catalog, explore_run, replay_run, resolve_patches, ActivePatches, RunSpec};
use scenario::{Expect, Explore, KernelRun, Scenario, StrategyName};
use sim::echo::echo;
use sim::limits;
use sim::{CostTable, ExecConfig, ExploreConfig, Schedule, Token};
use std::path::{Path, PathBuf};

/// One (scenario, kernel) run to do.
struct Plan {
    label: String,
    profile: String,
    /// The scenario's toggles, then the command line's.
    toggles: Vec<(String, bool)>,
    /// The command line's toggles as written (they go into the token).
    cli_patches: Vec<String>,
    shrink: bool,
    reduction: bool,
    /// dfs without reduction: end an execution at a state explored before.
    state_cache: bool,
    /// Wall-clock time the run may take.
    timeout: std::time::Duration,
    stack_size: Option<usize>,
    jobs: usize,
    shard: Option<(u64, u64)>,
    expect: Option<Expect>,
    explore: Explore,
}

impl Plan {
    /// Which run this is, as its records say it (`nssim merge` compares
    /// them).
    fn origin(&self, sc: &Scenario) -> output::RunOrigin {
        output::RunOrigin {
            nssim: env!("CARGO_PKG_VERSION").to_string(),
            scenario: format!("{:032x}", sc.definition_digest()),
            explore: self.explore,
            patch_toggles: self.cli_patches.clone(),
            reduction: self.reduction,
            state_cache: self.state_cache,
            shrink: self.shrink,
        }
    }

    /// A run of `label` (profile `profile`) with the command line's settings.
    fn new(
        label: &str,
        profile: &str,
        toggles: Vec<(String, bool)>,
        expect: Option<Expect>,
        explore: Explore,
        ov: &Overrides,
    ) -> Result<Plan, CliError> {
        Ok(Plan {
            label: label.to_string(),
            profile: profile.to_string(),
            toggles,
            cli_patches: ov.patches.clone(),
            shrink: !ov.no_shrink,
            reduction: !ov.no_reduction,
            state_cache: !ov.no_state_cache,
            timeout: timeout(ov)?,
            stack_size: ov.stack_size,
            jobs: ov.jobs.map_or_else(default_jobs, |j| j as usize),
            shard: ov.shard,
            expect,
            explore,
        })
    }
}

pub(crate) fn parse_toggles(patches: &[String]) -> Result<Vec<(String, bool)>, CliError> {
    patches
        .iter()
        .map(|p| {
            let (on, name) = match p.split_at_checked(1) {
                Some(("+", n)) => (true, n),
                Some(("-", n)) => (false, n),
                _ => {
                    return Err(CliError(format!(
                        "error: --patch `{}` must start with + (turn on) or - (turn off), e.g. --patch +ipc-batch-free",
                        echo(p)
                    )))
                }
            };
            if catalog::patch(name).is_none() {
                let known: Vec<_> = catalog::PATCHES.iter().map(|p| p.name).collect();
                return Err(CliError(format!(
                    "error: unknown patch `{}` in --patch {} (known: {})",
                    echo(name),
                    echo(p),
                    known.join(", ")
                )));
            }
            Ok((name.to_string(), on))
        })
        .collect()
}

fn apply_overrides(mut e: Explore, ov: &Overrides) -> Result<Explore, CliError> {
    if let Some(s) = ov.strategy {
        e.strategy = match s {
            StrategyArg::Random => StrategyName::Random,
            StrategyArg::Pct => StrategyName::Pct,
            StrategyArg::Dfs => StrategyName::Dfs,
            StrategyArg::Fair => StrategyName::Fair,
        };
    }
    e.seed = ov.seed.unwrap_or(e.seed);
    // Numbers were checked against `sim::limits` when parsed.
    e.iterations = ov.iterations.unwrap_or(e.iterations);
    e.pct_depth = ov.pct_depth.unwrap_or(e.pct_depth);
    e.preemption_bound = ov.preemption_bound.unwrap_or(e.preemption_bound);
    e.cpus = ov.cpus.unwrap_or(e.cpus);
    e.max_steps = ov.max_steps.unwrap_or(e.max_steps);
    if let Some(t) = &ov.max_virtual_time {
        let bad = |m: String| CliError(format!("error: --max-virtual-time `{}`: {m}", echo(t)));
        let ns = scenario::parse_duration(t).map_err(|m| bad(m.to_string()))?;
        e.max_virtual_ns = limits::MAX_VIRTUAL_NS.check(ns.into()).map_err(bad)?;
    }
    Ok(e)
}

fn kernel_matches(run: &KernelRun, name: &str) -> bool {
    run.label == name || run.profile == name
}

fn plans(sc: &Scenario, ov: &Overrides, cli: &[(String, bool)]) -> Result<Vec<Plan>, CliError> {
    let mut out = Vec::new();
    // `--kernel NAME` picks the entry labelled NAME; failing that, every
    // entry of profile NAME.
    let picks = |r: &KernelRun, k: &str| {
        if sc.runs.iter().any(|x| x.label == k) {
            r.label == k
        } else {
            r.profile == k
        }
    };
    let wanted = |r: &KernelRun| ov.kernels.is_empty() || ov.kernels.iter().any(|k| picks(r, k));
    for r in sc.runs.iter().filter(|r| wanted(r)) {
        let mut toggles = r.toggles();
        toggles.extend(cli.iter().cloned());
        let explore = apply_overrides(r.explore, ov)?;
        out.push(Plan::new(
            &r.label,
            &r.profile,
            toggles,
            Some(r.expect.clone()),
            explore,
            ov,
        )?);
    }
    // A kernel the scenario does not list runs without an expectation.
    for k in &ov.kernels {
        if sc.runs.iter().any(|r| kernel_matches(r, k)) {
            continue;
        }
        let base = sc.runs.first().map(|r| r.explore).unwrap_or_default();
        let explore = apply_overrides(base, ov)?;
        out.push(Plan::new(k, k, cli.to_vec(), None, explore, ov)?);
    }
    Ok(out)
}

/// `--timeout`, ten minutes by default.
pub(crate) fn timeout(ov: &Overrides) -> Result<std::time::Duration, CliError> {
    Ok(timeout_given(ov)?.unwrap_or(std::time::Duration::from_secs(600)))
}

/// The shortest `--timeout`: below it every run would end `limit` before
/// it could start.
const MIN_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(100);

/// A wall-clock duration given to `flag` on the command line. A number
/// without a unit is refused, where a scenario file reads it as
/// nanoseconds: `--timeout 10` is meant as seconds far more often than as
/// ten nanoseconds.
pub(crate) fn wall_duration(flag: &str, text: &str) -> Result<std::time::Duration, CliError> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CliError(format!(
            "error: {flag} `{}` has no unit: write `{0}s` for seconds, `{0}m` for minutes or `{0}ms` for milliseconds",
            echo(t)
        )));
    }
    scenario::parse_duration(t)
        .map(std::time::Duration::from_nanos)
        .map_err(|m| CliError(format!("error: {flag} `{}`: {m}", echo(t))))
}

/// `--timeout`, if it was given.
pub(crate) fn timeout_given(ov: &Overrides) -> Result<Option<std::time::Duration>, CliError> {
    ov.timeout
        .as_ref()
        .map(|t| {
            let d = wall_duration("--timeout", t)?;
            if d < MIN_TIMEOUT {
                return Err(CliError(format!(
                    "error: --timeout `{}` is too short: a run needs at least 100ms to start and report",
                    echo(t)
                )));
            }
            Ok(d)
        })
        .transpose()
}

/// A run stopped by a resource of this process (wall-clock time, memory)
/// rather than by the model: its token carries the step it stopped at as
/// the step limit, so that a replay stops at the same point, on any
/// machine, with the same trace hash.
fn pin_resource_limit(exec: &mut sim::ExecConfig, report: &sim::ExecReport) {
    if let sim::Outcome::Limit { which, value } = &report.outcome {
        // Reached between executions, the execution reported ran whole.
        let between = *value == sim::Outcome::BETWEEN_EXECUTIONS;
        if (which == "wall-time" && !between) || which == "memory" {
            exec.max_steps = report.steps;
        }
    }
}

/// `--max-memory`, half of the machine's memory by default: the bytes and
/// the words that name the limit in messages.
pub fn memory_limit(ov: &Overrides) -> Option<(usize, String)> {
    ov.max_memory.clone().or_else(default_memory_limit)
}

/// Bound the process's memory as `--max-memory` (or its default) says.
fn set_memory_limit(limit: Option<(usize, String)>) {
    match limit {
        Some((bytes, given)) => sim::mem::set_limit_as_given(Some(bytes), &given),
        None => sim::mem::set_limit(None),
    }
}

fn default_memory_limit() -> Option<(usize, String)> {
    let half = half_of_the_memory()?;
    Some((
        half,
        format!(
            "the default --max-memory (half of this machine's memory, {:.1} GiB)",
            half as f64 / f64::from(1u32 << 30)
        ),
    ))
}

fn half_of_the_memory() -> Option<usize> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: usize = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024 / 2)
}

/// `--jobs` by default: every core.
fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(limits::JOBS.max as usize)
}

fn cost_table(sc: &Scenario) -> CostTable {
    let mut t = CostTable::new();
    for (name, ns) in &sc.costs {
        t.set(name, *ns);
    }
    t
}

pub(crate) fn exec_config(sc: &Scenario, e: &Explore) -> ExecConfig {
    ExecConfig {
        cpus: e.cpus,
        max_steps: e.max_steps,
        max_virtual_ns: e.max_virtual_ns,
        costs: cost_table(sc),
        ..ExecConfig::default()
    }
}

fn scenario_hash(sc: &Scenario) -> u32 {
    sim::token::hash32(sc.name.as_bytes())
}

fn check_kernels(scenarios: &[Scenario], ov: &Overrides) -> Result<(), CliError> {
    for k in &ov.kernels {
        let listed = scenarios
            .iter()
            .any(|s| s.runs.iter().any(|r| kernel_matches(r, k)));
        if !listed && catalog::profile(k).is_none() {
            let known: Vec<_> = catalog::PROFILES.iter().map(|p| p.name).collect();
            let labels = scenarios
                .iter()
                .flat_map(|s| s.runs.iter().map(|r| r.label.as_str()));
            let hint = catalog::release_hint(k)
                .or_else(|| scenario::did_you_mean(k, known.iter().copied().chain(labels)))
                .map_or(String::new(), |h| format!("\n  = help: {h}"));
            return Err(CliError(format!(
                "error: unknown kernel `{}` in --kernel (profiles: {}; or a label of a scenario's [[kernel]] entry){hint}",
                echo(k),
                known.join(", ")
            )));
        }
    }
    Ok(())
}

/// The scenarios to run: the built-in library when asked (`--library`),
/// then those of `paths` (files, directories of *.toml files, or the
/// library's where a path is not on the disk). Each file that does not
/// parse is reported here and the others run; [`Unreadable`] then ends
/// the command with exit status 2.
pub(crate) fn load_scenarios(
    paths: &[PathBuf],
    library: bool,
) -> Result<(Vec<Scenario>, Unreadable), CliError> {
    let mut scenarios = if library {
        crate::library::load_library()?
    } else {
        Vec::new()
    };
    let (found, mut bad) = crate::library::load(paths)?;
    scenarios.extend(found);
    if scenarios.is_empty() {
        return Err(match bad.len() {
            1 => bad.remove(0).1,
            0 => CliError("error: no scenario files (*.toml) found in the given paths".into()),
            _ => {
                let unreadable = Unreadable::reported(bad);
                unreadable.error()
            }
        });
    }
    Ok((scenarios, Unreadable::reported(bad)))
}

/// The scenario files given to a command that could not be read, each
/// reported as it was found: the command runs the others, then fails.
#[derive(Debug, Clone)]
pub(crate) struct Unreadable(pub Vec<(PathBuf, String)>);

impl Unreadable {
    /// Report each file's error on standard error.
    fn reported(bad: crate::library::Unparsed) -> Unreadable {
        for (_, e) in &bad {
            eprintln!("{}\n", sim::echo::escape_controls(&e.0));
        }
        Unreadable(bad.into_iter().map(|(path, e)| (path, e.0)).collect())
    }

    fn error(&self) -> CliError {
        CliError(format!(
            "error: {} scenario file{} could not be read (above)",
            self.0.len(),
            if self.0.len() == 1 { "" } else { "s" }
        ))
    }

    /// The files as records, for JSON and JUnit outputs.
    pub(crate) fn records(&self, shard: Option<(u64, u64)>) -> Vec<output::UnreadableRecord> {
        self.0
            .iter()
            .map(|(path, error)| output::UnreadableRecord::new(path, error, shard))
            .collect()
    }

    /// The command's result once the readable scenarios have run.
    pub(crate) fn after(&self, ran: Result<bool, CliError>) -> Result<bool, CliError> {
        match self.0.len() {
            0 => ran,
            _ => ran.and(Err(self.error())),
        }
    }
}

pub fn run(
    paths: &[PathBuf],
    library: bool,
    ov: &Overrides,
    format: Format,
    junit_file: Option<&Path>,
    trace: Option<&Path>,
    views: &ViewArgs,
) -> Result<bool, CliError> {
    let toggles = parse_toggles(&ov.patches)?;
    apply_overrides(Explore::default(), ov)?;
    timeout(ov)?;
    set_memory_limit(memory_limit(ov));
    let (scenarios, unreadable) = load_scenarios(paths, library)?;
    check_kernels(&scenarios, ov)?;
    let mut all = Vec::new();
    for sc in &scenarios {
        all.extend(plans(sc, ov, &toggles)?.into_iter().map(|p| (sc, p)));
    }
    let single = all.len() == 1;
    let jobs = all.first().map_or(1, |(_, plan)| plan.jobs);
    let mut cases = Vec::new();
    for record in unreadable.records(ov.shard) {
        output::print_unreadable(&record, format);
        cases.push(record.junit_case());
    }
    let mut emit = |slot: Slot| match slot {
        Slot::Skipped(skipped) => {
            output::print_skipped(&skipped, format);
            cases.push(skipped.junit_case());
        }
        Slot::Ran(record) => {
            output::print_record(&record.record, format);
            cases.push(record.junit_case());
        }
    };
    // Runs on one thread go side by side, the others one at a time.
    let mut rest = all.as_slice();
    while !rest.is_empty() {
        let beside = rest
            .iter()
            .take_while(|(sc, plan)| !uses_many_threads(sc, plan))
            .count();
        let (now, after) = rest.split_at(beside.max(1));
        let work = |i: usize, alone: bool| {
            let (sc, plan) = &now[i];
            let outputs = Outputs {
                views,
                trace: trace_path(trace, sc, &plan.label, single),
                json: format == Format::Json,
            };
            make_slot(sc, plan, &outputs, alone)
        };
        side_by_side::in_order(now.len(), jobs, &work, &mut emit)?;
        rest = after;
    }
    unreadable.after(output::finish(&cases, format, junit_file))
}

/// What a run prints: its record, or that another shard makes it.
enum Slot {
    Skipped(Box<output::SkippedRecord>),
    Ran(Box<RunRecord>),
}

/// Whether `plan` runs its executions on several threads (`--jobs`), and
/// so runs beside no other run.
fn uses_many_threads(sc: &Scenario, plan: &Plan) -> bool {
    let one_thread = matches!(
        plan.explore.strategy,
        StrategyName::Dfs | StrategyName::Fair
    ) || plan.explore.iterations < 2;
    plan.jobs > 1 && !one_thread && in_shard(sc, plan)
}

fn in_shard(sc: &Scenario, plan: &Plan) -> bool {
    plan_patches(sc, plan).is_ok_and(|patches| run_spec(sc, plan, &patches).explore.runs_in_shard())
}

/// Make one run's slot: skipped when another shard makes it. `alone`: no
/// other run goes beside it (it may show a progress bar).
fn make_slot(
    sc: &Scenario,
    plan: &Plan,
    outputs: &Outputs<'_>,
    alone: bool,
) -> Result<side_by_side::Done<Slot>, CliError> {
    let patches = plan_patches(sc, plan)?;
    if !run_spec(sc, plan, &patches).explore.runs_in_shard() {
        let skipped = output::SkippedRecord::new(sc, &plan.label, plan.shard, plan.origin(sc));
        return Ok(side_by_side::Done {
            value: Slot::Skipped(Box::new(skipped)),
            again_alone: false,
        });
    }
    let (record, process_limit) = execute(sc, plan, outputs, alone)?;
    Ok(side_by_side::Done {
        value: Slot::Ran(Box::new(record)),
        again_alone: process_limit && !alone,
    })
}

fn plan_patches(sc: &Scenario, plan: &Plan) -> Result<ActivePatches, CliError> {
    resolve_patches(&plan.profile, &plan.toggles)
        .map_err(|m| CliError(format!("error: {}: {m}", shown(&sc.path))))
}

/// What the kernel crate runs for `plan` of `sc`.
fn run_spec<'a>(sc: &'a Scenario, plan: &Plan, patches: &'a ActivePatches) -> RunSpec<'a> {
    RunSpec {
        setup: &sc.setup,
        patches,
        invariants: &sc.invariants,
        explore: ExploreConfig {
            strategy: nssim_cli::strategy_spec(&plan.explore),
            seed: plan.explore.seed,
            iterations: plan.explore.iterations,
            exec: exec_config(sc, &plan.explore),
            shrink: plan.shrink,
            jobs: plan.jobs,
            shard: plan.shard,
            progress: Default::default(),
            reduction: plan.reduction,
            split: sim::Split::DEFAULT,
            state_cache: plan.state_cache,
        },
    }
}

/// What to write about a reported execution besides the summary: views and
/// the trace file.
pub struct Outputs<'a> {
    pub views: &'a ViewArgs,
    pub trace: Option<PathBuf>,
    /// Standard output carries JSON records.
    pub json: bool,
}

impl Outputs<'_> {
    fn wanted(&self) -> bool {
        self.views.any() || self.trace.is_some()
    }

    fn emit(
        &self,
        sc: &Scenario,
        kernel: &str,
        patches: &ActivePatches,
        token: &Token,
        recorded: &sim::ExecReport,
        deadline: Option<std::time::Instant>,
    ) -> Result<Option<&'static str>, CliError> {
        let text = token.encode();
        if self.views.any() {
            views::emit(
                self.views,
                &ViewContext {
                    scenario: sc,
                    kernel,
                    patches,
                    report: recorded,
                    token: &text,
                    replay_command: replay_command(sc, &text),
                    json_output: self.json,
                },
            )?;
        }
        if let Some(path) = &self.trace {
            match tracefile::render(sc, kernel, token, recorded, deadline) {
                Some(text) => tracefile::write(path, &text)?,
                None => return Ok(Some("the --timeout deadline passed while the trace file was rendered: it was not written")),
            }
        }
        Ok(None)
    }
}

/// `--trace FILE` of `run`: the file itself for a single run, else one file
/// per run with the scenario and kernel in its name.
fn trace_path(base: Option<&Path>, sc: &Scenario, label: &str, single: bool) -> Option<PathBuf> {
    let base = base?;
    if single {
        return Some(base.to_path_buf());
    }
    let stem = base
        .file_stem()
        .map_or("trace".into(), |s| s.to_string_lossy().into_owned());
    let ext = base
        .extension()
        .map_or("json".into(), |s| s.to_string_lossy().into_owned());
    Some(base.with_file_name(format!("{stem}-{}-{label}.{ext}", sc.name)))
}

/// Every `[[kernel]]` run of `sc` in the model, as `nssim run` runs it
/// with no override: each run's label and whether it went as expected,
/// with the printed record of those that did not.
pub fn check_model(sc: &Scenario) -> Result<Vec<(String, bool, String)>, CliError> {
    let ov = Overrides::default();
    let views = ViewArgs::default();
    let mut out = Vec::new();
    for plan in plans(sc, &ov, &[])? {
        let outputs = Outputs {
            views: &views,
            trace: None,
            json: false,
        };
        let (record, _) = execute(sc, &plan, &outputs, true)?;
        out.push((
            plan.label.clone(),
            record.as_expected,
            record.text().to_string(),
        ));
    }
    Ok(out)
}

/// Every run of `sc` under `ov`, one after the other with no progress bar
/// and no views: its label and record (what `nssim gen`'s campaigns
/// judge).
pub fn run_quietly(sc: &Scenario, ov: &Overrides) -> Result<Vec<(String, RunRecord)>, CliError> {
    let views = ViewArgs::default();
    let outputs = Outputs {
        views: &views,
        trace: None,
        json: false,
    };
    plans(sc, ov, &[])?
        .iter()
        .map(|plan| Ok((plan.label.clone(), execute(sc, plan, &outputs, false)?.0)))
        .collect()
}

/// Run `plan` of `sc`: its record, and whether a limit of the whole
/// process (memory, stacks) stopped the execution it reports. `alone`: no
/// other run goes beside it, so it may show a progress bar.
fn execute(
    sc: &Scenario,
    plan: &Plan,
    outputs: &Outputs<'_>,
    alone: bool,
) -> Result<(RunRecord, bool), CliError> {
    let patches = plan_patches(sc, plan)?;
    let mut spec = run_spec(sc, plan, &patches);
    // The search and its shrinking stop at half of --timeout, the replays
    // that report the execution (its results, the events of its views) at
    // seven tenths: the rest is for writing them out, in time proportional
    // to what those replays had time for, and a trace file still being
    // rendered at nine tenths is not written.
    let start = std::time::Instant::now();
    let overdue = overdue_record(sc, plan, &patches);
    let format = if outputs.json {
        Format::Json
    } else {
        Format::Text
    };
    let _watched = crate::watchdog::arm(start + plan.timeout, move || {
        output::print_record(&overdue.record, format);
        output::print_summary_so_far(format);
    });
    spec.explore.exec.deadline = Some(start + plan.timeout.mul_f64(0.5));
    spec.explore.exec.report_deadline = Some(start + plan.timeout.mul_f64(0.7));
    if let Some(size) = plan.stack_size {
        spec.explore.exec.stack_size = size;
    }
    if !alone {
        // Beside other runs, one thread: `--jobs` is what they share (the
        // result does not depend on it).
        spec.explore.jobs = 1;
    }
    let bar = alone
        .then(|| progress::bar(sc, plan.label.as_str(), &spec.explore))
        .flatten();
    if let Some(bar) = &bar {
        spec.explore.progress = bar.reporter();
    }
    let out = explore_run(&spec);
    drop(bar);
    pin_resource_limit(&mut spec.explore.exec, &out.explore.report);
    let exec = spec.explore.exec.clone();
    let token = Token {
        scenario: scenario_hash(sc),
        content: Some(sc.content_hash()),
        context: token_context(&plan.label, &plan.cli_patches),
        cpus: exec.cpus,
        max_steps: exec.max_steps,
        max_virtual_ns: exec.max_virtual_ns,
        schedule: out.explore.schedule.clone(),
    };
    let mut notes = Vec::new();
    if out.explore.unnamed_at_deadline {
        notes.push("the --timeout deadline passed before the failure could be run again to be shrunk and named: the token is the schedule the search found".to_string());
    }
    if !out.results_complete {
        notes.push("the --timeout deadline passed while the results were collected: they are those of the steps replayed by then".to_string());
    }
    if outputs.wanted() {
        // Exploration keeps only hashes; record the reported execution again.
        let (recorded, _) = replay_run(&spec, &out.explore.schedule, true);
        if !kernel::cut_by_deadline(&recorded, &out.explore.report) {
            let deadline = Some(start + plan.timeout.mul_f64(0.9));
            let cut = outputs.emit(sc, &plan.label, &patches, &token, &recorded, deadline)?;
            notes.extend(cut.map(str::to_string));
        } else {
            notes.push("the --timeout deadline passed while the execution was recorded: no view or trace file was written".to_string());
        }
    }
    let process_limit = out.explore.report.outcome.is_shared_resource_limit();
    let mut record = RunRecord::new(
        sc,
        &plan.label,
        &patches,
        plan.explore.strategy.as_str(),
        plan.explore.seed,
        plan.expect.as_ref(),
        out.explore.executions,
        out.explore.exhausted,
        out.explore.shrink,
        &out.explore.report,
        token.encode(),
        &out.results,
        output::Place {
            shard: plan.shard,
            iteration: out.explore.iteration,
            origin: plan.origin(sc),
        },
    )
    .with_notes(notes)
    .with_states(out.explore.states)
    .with_strategy(&spec.explore.strategy)
    .with_exercised(plan.expect.as_ref(), out.exercised);
    if let Some(part) = &out.explore.dfs_shard {
        let part = dfs_shard_record(sc, plan, &spec, &token, part);
        record.record = record.record.with_dfs_shard(part);
    } else if spec.explore.split_over_shards() {
        record.record.judge_as_shard_part();
    }
    record.as_expected = record.record.as_expected;
    record.record.wall_ms = elapsed_ms(start);
    Ok((record, process_limit))
}

/// Wall-clock milliseconds since `start`.
fn elapsed_ms(start: std::time::Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The record of `plan` should the watchdog end it: outcome `limit`
/// (wall-time), with no token (its schedule never came back).
fn overdue_record(sc: &Scenario, plan: &Plan, patches: &ActivePatches) -> RunRecord {
    let report = sim::ExecReport::ended(sim::Outcome::Limit {
        which: "wall-time".into(),
        value: sim::Outcome::INSIDE_A_STEP,
    });
    let mut record = RunRecord::new(
        sc,
        &plan.label,
        patches,
        plan.explore.strategy.as_str(),
        plan.explore.seed,
        plan.expect.as_ref(),
        0,
        false,
        None,
        &report,
        String::new(),
        &kernel::Results::new(),
        output::Place {
            shard: plan.shard,
            iteration: 0,
            origin: plan.origin(sc),
        },
    )
    .with_notes(vec![
        "a step did not return by the --timeout deadline: the watchdog ended the run from outside its thread (no token: its schedule never came back)".to_string(),
    ]);
    record.record.wall_ms = u64::try_from(plan.timeout.as_millis()).unwrap_or(u64::MAX);
    record
}

/// A dfs shard's part of the search, for `nssim merge`: shard 1 adds the
/// record of the search's first execution as the unsharded run reports it
/// when the budget runs out (after every execution of the budget).
fn dfs_shard_record(
    sc: &Scenario,
    plan: &Plan,
    spec: &RunSpec<'_>,
    token: &Token,
    part: &sim::DfsShard,
) -> output::DfsShardRecord {
    let iterations = spec.explore.iterations.max(1);
    let first = plan.shard.is_some_and(|(k, _)| k == 1).then(|| {
        let (report, schedule) = &*part.first;
        let (_, results) = replay_run(spec, schedule, false);
        let token = Token {
            schedule: schedule.clone(),
            ..token.clone()
        };
        let record = RunRecord::new(
            sc,
            &plan.label,
            spec.patches,
            plan.explore.strategy.as_str(),
            plan.explore.seed,
            plan.expect.as_ref(),
            iterations,
            false,
            None,
            report,
            token.encode(),
            &results,
            output::Place {
                shard: None,
                iteration: 0,
                origin: plan.origin(sc),
            },
        )
        .with_strategy(&spec.explore.strategy);
        Box::new(record.record)
    });
    output::DfsShardRecord {
        iterations,
        expect_exhausted: plan.expect.as_ref().is_some_and(|e| e.exhausted),
        subtrees: part.subtrees.clone(),
        first,
    }
}

/// What a token carries besides its schedule: the kernel run's label, then
/// the patch toggles given on the command line (`+ipc-batch-free`).
fn token_context(label: &str, toggles: &[String]) -> Vec<String> {
    std::iter::once(label.to_string())
        .chain(toggles.iter().cloned())
        .collect()
}

/// The kernel run and the patch toggles a token's context names.
fn token_kernel(token: &Token) -> Result<(&str, &[String]), CliError> {
    match token.context.split_first() {
        Some((label, toggles)) => Ok((label, toggles)),
        None => Err(CliError("error: the token names no kernel run".into())),
    }
}

/// The command line that replays `token` of `sc`.
pub fn replay_command(sc: &Scenario, token: &str) -> String {
    format!("nssim replay {} {token}", sc.path.display())
}

/// A token, or the path of a trace file holding one (with what the file
/// says of its execution).
fn resolve_token(arg: &str) -> Result<(String, Option<tracefile::Loaded>), CliError> {
    let path = Path::new(arg);
    if !arg.starts_with("nss1_") && path.is_file() {
        let loaded = tracefile::load(path)?;
        return Ok((loaded.token.clone(), Some(loaded)));
    }
    Ok((arg.to_string(), None))
}

/// How `replay` treats a token made for another version of the scenario.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayMode {
    /// Finish a run that no longer fits the token in non-preemptive order.
    pub continue_after_divergence: bool,
    /// A scenario changed since the token was made is an error.
    pub strict: bool,
    /// Wall-clock time the replay may take (`--timeout`).
    pub timeout: std::time::Duration,
}

/// Whether `sc` is the scenario `token` was made for: `Err` with the
/// reason when it cannot be told to be.
fn same_content(sc: &Scenario, path: &Path, token: &Token) -> Result<(), String> {
    match token.content {
        Some(c) if c == sc.content_hash() => Ok(()),
        Some(sim::ContentHash::Fnv32(_)) => Err(format!(
            "the token is of format 3, whose 32-bit hash of the scenario's content another scenario can be made to match: nssim cannot tell whether `{}` ({}) changed since",
            sc.name,
            shown(path)
        )),
        Some(_) => Err(format!(
            "`{}` ({}) changed since the token was made (its set-up, invariants, costs or kernel runs differ)",
            sc.name,
            shown(path)
        )),
        None => Err(format!(
            "the token is of format 2, made before tokens carried the scenario's content: nssim cannot tell whether `{}` ({}) changed since",
            sc.name,
            shown(path)
        )),
    }
}

pub fn replay(
    path: &Path,
    token_arg: &str,
    format: Format,
    mode: ReplayMode,
    outputs: &Outputs<'_>,
) -> Result<bool, CliError> {
    let continue_after_divergence = mode.continue_after_divergence;
    set_memory_limit(default_memory_limit());
    let sc = crate::library::load_one(path)?;
    let (token_text, from_file) = resolve_token(token_arg)?;
    let expected_hash = from_file.as_ref().and_then(|l| l.trace_hash.clone());
    let token_text = token_text.as_str();
    let token = Token::decode(token_text)
        .map_err(|e| CliError(format!("error: bad token `{}`: {e}", echo(token_text))))?;
    if token.scenario != scenario_hash(&sc) {
        return Err(CliError(format!(
            "error: the token was made for another scenario, not `{}` ({})",
            sc.name,
            shown(path)
        )));
    }
    let changed = same_content(&sc, path, &token).err();
    if let Some(why) = &changed {
        if mode.strict {
            return Err(CliError(format!(
                "error: {why}; without --strict the token is replayed as far as its named steps still fit"
            )));
        }
        eprintln!("warning: {why}; replaying as far as the token's named steps still fit");
    }
    let (kernel, cli_patches) = token_kernel(&token)?;
    let ov = Overrides {
        kernels: vec![kernel.to_string()],
        patches: cli_patches.to_vec(),
        ..Overrides::default()
    };
    let toggles = parse_toggles(cli_patches)?;
    if !sc.runs.iter().any(|r| kernel_matches(r, kernel)) && catalog::profile(kernel).is_none() {
        return Err(CliError(format!(
            "error: the token names kernel `{}`, which `{}` no longer lists",
            echo(kernel),
            shown(path)
        )));
    }
    let mut plan = plans(&sc, &ov, &toggles)?
        .into_iter()
        .find(|p| p.label == kernel)
        .ok_or_else(|| CliError(format!("error: kernel `{}` not found", echo(kernel))))?;
    plan.explore.cpus = token.cpus;
    plan.explore.max_steps = token.max_steps;
    plan.explore.max_virtual_ns = token.max_virtual_ns;
    let patches = plan_patches(&sc, &plan)?;
    let mut spec = run_spec(&sc, &plan, &patches);
    spec.explore.exec.stop_on_divergence = !continue_after_divergence;
    // The replay stops itself at nine tenths of --timeout (its outcome
    // `limit`, wall-time); a step that never returns is the watchdog's.
    let start = std::time::Instant::now();
    spec.explore.exec.report_deadline = Some(start + mode.timeout.mul_f64(0.9));
    let overdue = overdue_record(&sc, &plan, &patches);
    let _watched = crate::watchdog::arm(start + mode.timeout, move || {
        output::print_record(&overdue.record, format);
    });
    let record_events = format == Format::Text || outputs.wanted();
    let (report, results) = replay_run(&spec, &token.schedule, record_events);
    if let (Some(step), false) = (report.diverged_at, continue_after_divergence) {
        if format == Format::Text && changed.is_some() {
            // What still fitted, then where it stopped.
            crate::views::print_steps(&report);
        }
        return Err(divergence_error(&token.schedule, step as u64));
    }
    let hash = format!("{:016x}", report.trace_hash);
    if expected_hash.is_some_and(|h| h != hash) {
        eprintln!("warning: this execution's trace hash {hash} differs from the trace file's: the scenario or nssim changed since it was written");
    }
    if let Some(loaded) = &from_file {
        for d in tracefile::disagreements(loaded, &sc.name, &plan.label, &report) {
            eprintln!("warning: {d}");
        }
    }
    if outputs.wanted() {
        outputs.emit(&sc, &plan.label, &patches, &token, &report, None)?;
    }
    let (strategy, seed, iteration) = match &token.schedule {
        Schedule::Random { seed, iteration } => ("random", *seed, *iteration),
        Schedule::Pct {
            seed, iteration, ..
        } => ("pct", *seed, *iteration),
        Schedule::Fair => ("fair", plan.explore.seed, 0),
        Schedule::Choices(_) | Schedule::Segments(_) => {
            (plan.explore.strategy.as_str(), plan.explore.seed, 0)
        }
    };
    let mut record = RunRecord::new(
        &sc,
        &plan.label,
        &patches,
        strategy,
        seed,
        plan.expect.as_ref(),
        1,
        false,
        None,
        &report,
        token.encode(),
        &results,
        output::Place {
            shard: None,
            iteration,
            origin: plan.origin(&sc),
        },
    );
    record.record.wall_ms = elapsed_ms(start);
    if format == Format::Text && !outputs.views.timeline {
        crate::views::print_steps(&report);
    }
    if let Some(at) = report.diverged_at {
        eprintln!(
            "warning: the execution diverged from the token at step {at} and was finished in non-preemptive order: the scenario or nssim changed since the token was made"
        );
    }
    output::print_record(&record.record, format);
    Ok(record.as_expected)
}

/// Say where a named schedule stopped fitting, and what it expected there.
fn divergence_error(schedule: &Schedule, step: u64) -> CliError {
    let expected = match schedule {
        Schedule::Segments(segments) => {
            // Saturating: a token's step counts may add up past u64::MAX.
            let mut start: u64 = 1;
            segments
                .iter()
                .find(|s| {
                    let end = start.saturating_add(s.steps);
                    let inside = step < end;
                    start = end;
                    inside
                })
                .map(|s| format!(" (the token expects {})", echo(&s.to_string())))
                .unwrap_or_default()
        }
        _ => String::new(),
    };
    CliError(format!(
        "error: the execution diverges from the token at step {step}{expected}: the scenario or nssim changed since the token was made; --continue-after-divergence finishes the run in non-preemptive order"
    ))
}
