//! `nssim bench`: nssim's own side of the benchmark workloads, printed as
//! markdown tables. The side-by-side comparison with shuttle and loom
//! (which are dev-dependencies of `crates/bench` only) is
//! `cargo bench -p nssim-bench --features compare --bench compare`.

use bench::nssim::{
    bare_points_build, count_steps, executions_run, ipc, lone_task_build, mutex_build,
    pct_depth_build, pct_depth_tasks, pct_found, pct_probe, scale_run, small, Loopers,
};
use bench::{
    coroutine_random_successor, coroutine_round_trip, dur, median, ratio, secs, si, timed, Table,
};
use sim::{ExploreConfig, Outcome, StrategySpec};

/// How much work each workload does.
pub struct BenchPlan {
    /// Executions of workload (a) per strategy.
    pub executions: u64,
    /// Seeds of workload (b), 1..=seeds.
    pub seeds: u64,
    /// Threads for the parallel row.
    pub jobs: usize,
    /// Rounds of the parallel rows (1 and `jobs` threads, interleaved);
    /// each row keeps its best: a busy neighbour on a shared machine then
    /// spoils one round, not the ratio.
    pub rounds: u32,
    /// Tasks of the scale row.
    pub tasks: usize,
    /// PCT executions per row of the depth table.
    pub pct_executions: u64,
    /// The parallel exhaustive search: its preemption bound and budget.
    pub dfs_bound: u32,
    pub dfs_executions: u64,
    /// Random executions per kernel scenario of the step-cost table.
    pub kernel_executions: u64,
}

impl BenchPlan {
    pub fn new(quick: bool, jobs: usize) -> Self {
        if quick {
            BenchPlan {
                executions: 20,
                seeds: 5,
                jobs,
                rounds: 1,
                tasks: 1000,
                pct_executions: 2000,
                dfs_bound: 2,
                dfs_executions: 2000,
                kernel_executions: 200,
            }
        } else {
            BenchPlan {
                executions: 500,
                seeds: 20,
                jobs,
                rounds: 3,
                tasks: 10_000,
                pct_executions: 100_000,
                dfs_bound: 3,
                dfs_executions: 250_000,
                kernel_executions: 5000,
            }
        }
    }
}

const TASKS: usize = 4;
const OPS: usize = 1000;

pub fn bench(plan: &BenchPlan) {
    println!("# nssim bench\n");
    println!(
        "plan: (a) {TASKS}x{OPS} lock ops, {} executions per strategy; (b) seeds 1..={}; (c) exhausted once; parallel rows with --jobs 1 and --jobs {}, best of {} interleaved round(s); scale: {} tasks alive at once, up to ten times as many in one execution\n",
        plan.executions, plan.seeds, plan.jobs, plan.rounds, plan.tasks
    );
    mutex_table(plan);
    kernel_step_table(plan);
    ipc_table(plan);
    exhaustive_table();
    pct_table(plan);
    jobs_table(plan);
    dfs_jobs_table(plan);
    scale_table(plan);
    println!(
        "The same workloads against shuttle and loom, side by side: `cargo bench -p nssim-bench --features compare --bench compare`."
    );
}

fn explore_cfg(strategy: StrategySpec, seed: u64, n: u64, jobs: usize) -> ExploreConfig {
    let mut cfg = bench::nssim::config(strategy, seed, n);
    cfg.jobs = jobs;
    cfg
}

fn mutex_table(plan: &BenchPlan) {
    println!("## (a) {TASKS} tasks x {OPS} lock/increment/unlock on one mutex\n");
    let mut t = Table::new(&[
        "strategy",
        "executions",
        "wall time",
        "executions/s",
        "sched. points/execution",
        "sched. points/s",
        "lock ops/s",
        "time/sched. point",
        "÷ coroutine round trip",
    ]);
    let build = mutex_build(TASKS, OPS);
    // Steps are counted in an untimed pass: runs are deterministic, so
    // the timed passes have the same steps per execution.
    let per_exec = strategies().map(|(_, strategy)| {
        let (counted, steps) = count_steps(strategy, 1, 5, &build);
        steps as f64 / executions_run(strategy, &counted) as f64
    });
    // Rounds take turns (round trip, then each strategy) and every row
    // keeps its best, the reference too: a busy neighbour on a shared
    // machine spoils a round, not the ratio.
    let rounds = plan.rounds.max(1);
    let mut trip = f64::MAX;
    let mut floors = Floors::new();
    let mut best = strategies().map(|_| (0.0, f64::MAX));
    for _ in 0..rounds {
        trip = trip.min(coroutine_round_trip(ROUND_TRIPS, 1));
        floors.measure();
        for (i, (_, strategy)) in strategies().into_iter().enumerate() {
            let cfg = explore_cfg(strategy, 1, plan.executions, 1);
            let (r, d) = timed(|| sim::explore(&cfg, &build));
            let n = executions_run(strategy, &r) as f64;
            if d.as_secs_f64() < best[i].1 {
                best[i] = (n, d.as_secs_f64());
            }
        }
    }
    for (i, (name, _)) in strategies().into_iter().enumerate() {
        let ((n, s), per_exec) = (best[i], per_exec[i]);
        t.row(vec![
            name.into(),
            format!("{n}"),
            secs(s),
            si(n / s),
            format!("{per_exec:.0}"),
            si(n * per_exec / s),
            si(n * (TASKS * OPS) as f64 / s),
            secs(s / (n * per_exec)),
            ratio(s / (n * per_exec), trip),
        ]);
    }
    println!("{}", t.render());
    println!(
        "A bare coroutine round trip (corosensei `resume` and `suspend`, the best of {} batches of {ROUND_TRIPS}, taking turns with the rows) takes {}: the reference for a scheduling point on stackful coroutines (nssim's switch from one task straight to another is about one of its halves). Each row is its best of {} rounds.\n",
        rounds,
        secs(trip),
        rounds
    );
    floors.print(trip);
}

/// Points per batch of the bare random scheduler, of the lone task, and
/// of each of the tasks of bare points.
const FLOOR_POINTS: u64 = 2_000_000;
const LONE_POINTS: usize = 200_000;
const BARE_POINTS: usize = 50_000;

/// What table (a)'s random row is made of, each part measured at its
/// barest, taking turns with the rows: switching among the tasks at random
/// on bare corosensei coroutines, nssim's own work at a point that
/// switches nothing, and nssim's random point with no lock work. Each
/// keeps its best round.
struct Floors {
    random_successor: f64,
    lone_point: f64,
    lone_steps: u64,
    bare_point: f64,
    bare_steps: u64,
}

impl Floors {
    fn new() -> Self {
        let steps = |build: &(dyn Fn(&mut sim::Execution) + Sync)| {
            count_steps(StrategySpec::Random, 1, 1, build).1
        };
        Floors {
            random_successor: f64::MAX,
            lone_point: f64::MAX,
            lone_steps: steps(&lone_task_build(LONE_POINTS)),
            bare_point: f64::MAX,
            bare_steps: steps(&bare_points_build(TASKS, BARE_POINTS)),
        }
    }

    fn measure(&mut self) {
        let bare = coroutine_random_successor(TASKS, FLOOR_POINTS, 1);
        self.random_successor = self.random_successor.min(bare);
        let per_point = |build: &(dyn Fn(&mut sim::Execution) + Sync), steps: u64| {
            let cfg = explore_cfg(StrategySpec::Random, 1, 1, 1);
            let (_, d) = timed(|| sim::explore(&cfg, build));
            d.as_secs_f64() / steps as f64
        };
        let lone = per_point(&lone_task_build(LONE_POINTS), self.lone_steps);
        self.lone_point = self.lone_point.min(lone);
        let bare = per_point(&bare_points_build(TASKS, BARE_POINTS), self.bare_steps);
        self.bare_point = self.bare_point.min(bare);
    }

    fn print(&self, trip: f64) {
        let mut t = Table::new(&["floor", "time/point", "÷ coroutine round trip"]);
        let rows = [
            ("coroutine round trip (`resume` + `suspend`)".to_string(), trip),
            (
                format!("{TASKS} bare corosensei coroutines, each point drawing its successor at random and suspending to a loop that resumes it (nothing else)"),
                self.random_successor,
            ),
            (
                "an nssim point of a lone task (no draw, no switch: pending operation, pick, clock, trace)".to_string(),
                self.lone_point,
            ),
            (
                format!("an nssim point of {TASKS} tasks of bare points under random (a draw and mostly a switch, no lock work)"),
                self.bare_point,
            ),
        ];
        for (name, time) in rows {
            t.row(vec![name, secs(time), ratio(time, trip)]);
        }
        println!("{}", t.render());
        println!(
            "A random point of table (a) switches tasks at about three points of four. A scheduler that switches at random through a loop on corosensei coroutines spends several round trips a point with nothing around it (the second row); nssim switches from task to task directly, and spends most of a point on its own bookkeeping (the third). The fourth row is both, with every task on the same code; table (a)'s random row adds the lock work and returns that differ from task to task.\n"
        );
    }
}

/// A kernel scenario of the step-cost table.
struct KernelWorkload {
    name: &'static str,
    profile: &'static str,
    patches: &'static [&'static str],
    loopers: Loopers,
    invariants: &'static [&'static str],
}

impl KernelWorkload {
    fn run(&self, executions: u64, count_steps: bool) -> Option<u64> {
        let toggles: Vec<(String, bool)> =
            self.patches.iter().map(|p| (p.to_string(), true)).collect();
        let patches = kernel::resolve_patches(self.profile, &toggles)
            .expect("a catalogued profile and patches");
        let explore = explore_cfg(StrategySpec::Random, 1, executions, 1);
        self.loopers
            .explore(&patches, self.invariants, explore, count_steps)
            .1
    }
}

/// The kernel scenarios of the step-cost table: the ipc race and user
/// namespaces.
fn kernel_workloads() -> [KernelWorkload; 2] {
    use kernel::setup::clone_flags::{CLONE_NEWIPC, CLONE_NEWUSER};
    [
        KernelWorkload {
            name: "the ipc race: `ipc-v6.3-window-loopers` under `v6.3+fix` (2 tasks, 2 `unshare(CLONE_NEWIPC)` each)",
            profile: "v6.3",
            patches: &["ipc-retry-after-free", "ipc-pending-at-release"],
            loopers: Loopers { flags: CLONE_NEWIPC, instances: 2, limit: 3, rounds: 2 },
            invariants: &["ipc.no_false_enospc", "ucounts.balanced", "ipc.freed_eventually"],
        },
        KernelWorkload {
            name: "user namespaces: 2 tasks, 2 `unshare(CLONE_NEWUSER)` each, under `v6.16`",
            profile: "v6.16",
            patches: &[],
            loopers: Loopers { flags: CLONE_NEWUSER, instances: 2, limit: 3, rounds: 2 },
            invariants: &["ucounts.balanced", "userns.depth", "userns.no_false_enospc"],
        },
    ]
}

/// What a step of the kernel model costs against a bare scheduling point,
/// measured side by side (the rounds interleaved, each row its best).
fn kernel_step_table(plan: &BenchPlan) {
    let n = plan.kernel_executions;
    println!(
        "## (k) the kernel model's step against a bare scheduling point ({n} random executions per scenario, best of {} interleaved round(s))\n",
        plan.rounds
    );
    let bare_build = bare_points_build(TASKS, BARE_POINTS);
    let bare_steps = count_steps(StrategySpec::Random, 1, 1, &bare_build).1;
    let workloads = kernel_workloads();
    let steps: Vec<u64> = workloads
        .iter()
        .map(|w| w.run(n, true).expect("counted"))
        .collect();
    let mut bare = f64::MAX;
    let mut per_step = vec![f64::MAX; workloads.len()];
    for _ in 0..plan.rounds {
        let cfg = explore_cfg(StrategySpec::Random, 1, 1, 1);
        let (_, d) = timed(|| sim::explore(&cfg, &bare_build));
        bare = bare.min(d.as_secs_f64() / bare_steps as f64);
        for (i, w) in workloads.iter().enumerate() {
            let (_, d) = timed(|| w.run(n, false));
            per_step[i] = per_step[i].min(d.as_secs_f64() / steps[i] as f64);
        }
    }
    let mut t = Table::new(&["workload", "steps", "time/step", "÷ bare point"]);
    t.row(vec![
        format!("a bare point: {TASKS} tasks of bare points under random"),
        bare_steps.to_string(),
        secs(bare),
        ratio(bare, bare),
    ]);
    for (i, w) in workloads.iter().enumerate() {
        let name = w.name;
        t.row(vec![
            name.to_string(),
            steps[i].to_string(),
            secs(per_step[i]),
            ratio(per_step[i], bare),
        ]);
    }
    println!("{}", t.render());
    println!(
        "A kernel step is a scheduling point of the model's own code (a lock, an atomic, a refcount) with what the model does up to its next one, and the invariants checked after it; its time includes building each execution's world. The ratio is the model's cost over the scheduler's.\n"
    );
}

/// Round trips per batch of the coroutine reference.
const ROUND_TRIPS: u64 = 2_000_000;

fn strategies() -> [(&'static str, StrategySpec); 2] {
    [
        ("random", StrategySpec::Random),
        ("pct", StrategySpec::Pct { depth: 3 }),
    ]
}

fn ipc_table(plan: &BenchPlan) {
    const BUDGET: u64 = 10_000;
    println!(
        "## (b) the ipc free-queue race: time to the first false ENOSPC (seeds 1..={}, at most {BUDGET} executions each)\n",
        plan.seeds
    );
    let mut t = Table::new(&[
        "limit",
        "strategy",
        "seeds that found it",
        "median executions to failure",
        "median time to failure",
    ]);
    for limit in [3, 6] {
        for (name, strategy) in strategies() {
            let (mut execs, mut times, mut found) = (Vec::new(), Vec::new(), 0);
            for seed in 1..=plan.seeds {
                let (r, d) = timed(|| ipc(strategy, seed, BUDGET, limit));
                found += u64::from(r.report.outcome.is_failure());
                execs.push(r.executions as f64);
                times.push(d.as_secs_f64());
            }
            t.row(vec![
                limit.to_string(),
                name.into(),
                format!("{found}/{}", plan.seeds),
                format!("{:.0}", median(&execs)),
                secs(median(&times)),
            ]);
        }
    }
    println!("{}", t.render());
}

fn exhaustive_table() {
    println!("## (c) exhaustive: a: lock; push 1; unlock; flag=1 | b: lock; push 2; unlock | c: read flag; lock; read; unlock\n");
    let mut t = Table::new(&[
        "search",
        "executions to exhaust",
        "wall time",
        "distinct final states",
    ]);
    let ((r, states), d) = timed(|| small(u32::MAX));
    t.row(vec![
        "dfs with partial-order reduction, unbounded".into(),
        r.executions.to_string(),
        dur(d),
        states.len().to_string(),
    ]);
    println!("{}", t.render());
}

/// PCT's found-per-execution rate on bugs of depth 2 and 3 beside its
/// bound 1/(n k^(d-1)), with the change points spread over the probe's
/// choice points (as `pct` does) and, for comparison, over all its steps.
fn pct_table(plan: &BenchPlan) {
    const PADDING: usize = 4;
    const PREFIX: usize = 200;
    println!(
        "## PCT on bugs of depth 2 and 3: found per execution ({} executions per row; each task takes {PADDING} steps of its own, a set-up task {PREFIX} steps alone first)\n",
        plan.pct_executions
    );
    let mut t = Table::new(&[
        "bug depth",
        "tasks n (set-up included)",
        "steps",
        "choice points k",
        "bound 1/(n k^(d-1))",
        "found/execution, over k",
        "found/execution, over steps",
    ]);
    for depth in [2, 3] {
        let tasks = pct_depth_tasks(depth);
        let build = pct_depth_build(depth, PADDING, PREFIX);
        let probe = pct_probe(&build);
        let (steps, k) = (probe.steps, probe.choice_points);
        let n = plan.pct_executions;
        let rate = |hint| pct_found(&build, depth, hint, n) as f64 / n as f64;
        let bound = 1.0 / (f64::from(tasks) * (k as f64).powi(depth as i32 - 1));
        t.row(vec![
            format!("d = {depth}"),
            tasks.to_string(),
            steps.to_string(),
            k.to_string(),
            format!("{bound:.5}"),
            format!("{:.5}", rate(sim::pct_hint(&probe))),
            format!("{:.5}", rate(steps)),
        ]);
    }
    println!("{}", t.render());
}

fn jobs_table(plan: &BenchPlan) {
    println!(
        "## Parallel exploration: workload (a), random, the same executions on 1 and {} threads (best of {} round(s))\n",
        plan.jobs, plan.rounds
    );
    let mut t = Table::new(&[
        "jobs",
        "executions",
        "wall time",
        "executions/s",
        "speed-up",
        "same result",
    ]);
    let build = mutex_build(TASKS, OPS);
    let n = plan.executions.max(2 * plan.jobs as u64);
    let run = |jobs| timed(|| sim::explore(&explore_cfg(StrategySpec::Random, 7, n, jobs), &build));
    let (one, mut d1) = run(1);
    let (many, mut dn) = run(plan.jobs);
    for _ in 1..plan.rounds {
        d1 = d1.min(run(1).1);
        dn = dn.min(run(plan.jobs).1);
    }
    let same = one.report.trace_hash == many.report.trace_hash && one.executions == many.executions;
    for (jobs, r, d) in [(1, &one, d1), (plan.jobs, &many, dn)] {
        t.row(vec![
            jobs.to_string(),
            r.executions.to_string(),
            dur(d),
            si(r.executions as f64 / d.as_secs_f64()),
            ratio(d1.as_secs_f64(), d.as_secs_f64()),
            if same { "yes" } else { "NO" }.into(),
        ]);
    }
    println!("{}", t.render());
}

/// One exhaustive search on 1 and `plan.jobs` threads: the subtrees below
/// the top of its tree are searched apart, and the result is the same.
fn dfs_jobs_table(plan: &BenchPlan) {
    println!(
        "## Parallel exhaustive search: `ipc-v6.3-window-loopers` under `v6.3+fix`, dfs within {} preemptions, at most {} executions, on 1 and {} threads (best of {} interleaved round(s))\n",
        plan.dfs_bound, plan.dfs_executions, plan.jobs, plan.rounds
    );
    let mut t = Table::new(&[
        "jobs",
        "executions",
        "cut short by sleep sets",
        "wall time",
        "executions/s",
        "speed-up",
        "same result",
    ]);
    let strategy = StrategySpec::Dfs {
        preemption_bound: plan.dfs_bound,
    };
    let run = |jobs| {
        let mut cfg = explore_cfg(strategy, 1, plan.dfs_executions, jobs);
        cfg.shrink = false;
        timed(|| bench::nssim::ipc_loopers_fixed(cfg))
    };
    let (one, mut d1) = run(1);
    let (many, mut dn) = run(plan.jobs);
    for _ in 1..plan.rounds {
        d1 = d1.min(run(1).1);
        dn = dn.min(run(plan.jobs).1);
    }
    let same = one.report.trace_hash == many.report.trace_hash
        && one.executions == many.executions
        && one.cut_short == many.cut_short
        && one.exhausted == many.exhausted
        && one.report.outcome == many.report.outcome;
    for (jobs, r, d) in [(1, &one, d1), (plan.jobs, &many, dn)] {
        t.row(vec![
            jobs.to_string(),
            r.executions.to_string(),
            r.cut_short.to_string(),
            dur(d),
            si(r.executions as f64 / d.as_secs_f64()),
            ratio(d1.as_secs_f64(), d.as_secs_f64()),
            if same { "yes" } else { "NO" }.into(),
        ]);
    }
    println!("{}", t.render());
}

/// One execution of `plan.tasks`, three times and ten times as many
/// tasks, at most `plan.tasks` alive at once: time per step must not grow
/// with the tasks. Memory is the peak resident set the run added.
fn scale_table(plan: &BenchPlan) {
    let alive = plan.tasks;
    println!(
        "## Scale: tasks of three steps each in one execution, at most {alive} alive at once (each starts its successor)\n"
    );
    let mut t = Table::new(&[
        "tasks",
        "steps",
        "wall time",
        "time/step",
        "time ÷ first row's",
        "peak memory added (first run)",
        "per task alive",
        "per task started",
        "outcome",
    ]);
    let totals = [alive, 3 * alive, 10 * alive];
    // The first run of each row maps the stacks (they are kept for the
    // next execution) and is the one whose memory is measured; the timed
    // runs then go round the rows, and each row keeps its best (a busy
    // neighbour spoils one round, not the ratio).
    let added: Vec<Option<u64>> = totals
        .iter()
        .map(|&total| {
            let before = peak_rss_reset();
            scale_run(total, alive);
            peak_rss_kib().zip(before).map(|(p, b)| p.saturating_sub(b))
        })
        .collect();
    let mut best: Vec<Option<(sim::ExecReport, std::time::Duration)>> =
        totals.iter().map(|_| None).collect();
    for _ in 0..SCALE_ROUNDS {
        for (row, &total) in best.iter_mut().zip(&totals) {
            let (r, d) = scale_run(total, alive);
            if row.as_ref().is_none_or(|(_, b)| d < *b) {
                *row = Some((r, d));
            }
        }
    }
    let mut first = None;
    for ((&total, added), row) in totals.iter().zip(added).zip(best) {
        let (r, d) = row.expect("SCALE_ROUNDS is at least one");
        let kib =
            |n: usize| added.map_or("n/a".into(), |a| format!("{:.2} KiB", a as f64 / n as f64));
        let base = *first.get_or_insert(d.as_secs_f64());
        t.row(vec![
            total.to_string(),
            r.steps.to_string(),
            dur(d),
            secs(d.as_secs_f64() / r.steps as f64),
            ratio(d.as_secs_f64(), base),
            added.map_or("n/a".into(), |a| format!("{:.1} MiB", a as f64 / 1024.0)),
            kib(alive),
            kib(total),
            if r.outcome == Outcome::Pass {
                "pass".into()
            } else {
                r.outcome.to_string()
            },
        ]);
    }
    println!("{}", t.render());
    println!(
        "Each row runs once for its memory (the peak resident set that run added; in the first row it includes the stacks, {} KiB reserved per task and kept for later executions), then {} times, the rows taking turns; the time is each row's best, set-up included.\n",
        32, SCALE_ROUNDS
    );
}

/// Timed runs of each scale row.
const SCALE_ROUNDS: usize = 7;

/// Reset the process's peak resident set to its current size (Linux:
/// `/proc/self/clear_refs`) and return that size in KiB.
fn peak_rss_reset() -> Option<u64> {
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    peak_rss_kib()
}

/// The peak resident set since the last reset, in KiB (`VmHWM`).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}
