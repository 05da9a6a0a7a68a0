//! nssim against shuttle and loom on identical workloads, one after the
//! other in this process, printed as markdown tables with the ratios.
//!
//! ```text
//! cargo bench -p nssim-bench --features compare --bench compare              # the full run
//! cargo bench -p nssim-bench --features compare --bench compare -- --quick   # a smoke run
//! ```

#[cfg(not(loom))]
#[path = "../models/loom_models.rs"]
mod loom_models;
#[cfg(not(loom))]
#[path = "../models/shuttle_models.rs"]
mod shuttle_models;

#[cfg(loom)]
fn main() {}

#[cfg(not(loom))]
fn main() {
    imp::main();
}

#[cfg(not(loom))]
mod imp {
    use crate::{loom_models, shuttle_models as sh};
    use bench::*;
    use sim::StrategySpec;
    use std::cell::Cell;
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// Iteration counts, printed with the results.
    struct Plan {
        /// (a): executions per nssim strategy and per shuttle strategy.
        mutex_nssim: u64,
        mutex_shuttle: u64,
        /// (a): executions whose scheduling points are counted (the first
        /// ones of seed 1, in an untimed pass that is also a warm-up).
        mutex_step_sample: u64,
        /// (a): the executions of each row run in this many rounds (seeds
        /// 1..=rounds), the rows' rounds interleaved.
        mutex_rounds: u64,
        /// (b): seeds 1..=seeds, at most `ipc_budget` executions each.
        ipc_seeds: u64,
        ipc_budget: u64,
        /// (a-tiny), (b) and (c): repetitions of each exhaustive search and
        /// of each seed's search for a failure (the median time is kept).
        repeats: usize,
    }

    const FULL: Plan = Plan {
        mutex_nssim: 2_000,
        mutex_shuttle: 2_000,
        mutex_step_sample: 50,
        mutex_rounds: 10,
        ipc_seeds: 20,
        ipc_budget: 10_000,
        repeats: 5,
    };

    const QUICK: Plan = Plan {
        mutex_nssim: 50,
        mutex_shuttle: 5,
        mutex_step_sample: 5,
        mutex_rounds: 1,
        ipc_seeds: 5,
        ipc_budget: 1_000,
        repeats: 1,
    };

    thread_local! {
        static QUIET: Cell<bool> = const { Cell::new(false) };
    }

    /// Silence the panic messages of failures provoked on purpose (shuttle
    /// reports a failure by panicking). Called once both shuttle's and
    /// nssim's hooks are installed, so this one wraps them.
    fn install_quiet_hook() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                previous(info);
            }
        }));
    }

    fn quietly<R>(f: impl FnOnce() -> R) -> R {
        QUIET.with(|q| q.set(true));
        let r = f();
        QUIET.with(|q| q.set(false));
        r
    }

    pub fn main() {
        let quick = std::env::args().any(|a| a == "--quick");
        let plan = if quick { QUICK } else { FULL };
        let pct = StrategySpec::Pct { depth: PCT_DEPTH };
        // Install both tools' panic hooks, then wrap them.
        let _ = nssim::mutex(StrategySpec::Random, 0, 1, 2, 1);
        sh::run(sh::RandomScheduler::new_from_seed(0, 1), sh::mutex(2, 1));
        install_quiet_hook();

        println!("# nssim vs shuttle vs loom\n");
        println!(
            "plan: (a) {}x{} lock ops, {} executions per nssim strategy, {} per shuttle \
             strategy, in {} interleaved rounds (seeds 1..={}), scheduling points counted \
             over the first {} of seed 1; (a-tiny) {}x{} and (c) \
             exhausted {} time(s) each and (b) each seed searched as often, median time; (b) limits {} and {}, {} rounds, seeds \
             1..={}, at most {} executions per seed; PCT depth {}{}\n",
            MUTEX_TASKS,
            MUTEX_OPS,
            plan.mutex_nssim,
            plan.mutex_shuttle,
            plan.mutex_rounds,
            plan.mutex_rounds,
            plan.mutex_step_sample,
            MUTEX_TINY_TASKS,
            MUTEX_TINY_OPS,
            plan.repeats,
            IPC_LIMIT,
            IPC_LIMIT_HARD,
            IPC_ROUNDS,
            plan.ipc_seeds,
            plan.ipc_budget,
            PCT_DEPTH,
            if quick { " (--quick)" } else { "" },
        );

        mutex_table(&plan);
        mutex_tiny_table(&plan);
        ipc_table(&plan, pct, IPC_LIMIT, true);
        ipc_table(&plan, pct, IPC_LIMIT_HARD, false);
        ipc_notes();
        small_table(&plan);
    }

    struct Throughput {
        executions: u64,
        time: Duration,
        steps_per_exec: f64,
    }

    impl Throughput {
        fn exec_rate(&self) -> f64 {
            self.executions as f64 / self.time.as_secs_f64()
        }
        fn step_rate(&self) -> f64 {
            self.steps_per_exec * self.exec_rate()
        }
        fn op_rate(&self) -> f64 {
            self.exec_rate() * (MUTEX_TASKS * MUTEX_OPS) as f64
        }
    }

    /// The four rows of (a), in table order.
    const MUTEX_ROWS: [(&str, &str); 4] = [
        ("nssim", "random"),
        ("nssim", "pct"),
        ("shuttle", "random"),
        ("shuttle", "pct"),
    ];

    /// Scheduling points per execution of row `row`, over the first
    /// executions of seed 1 (an untimed pass that is also a warm-up).
    fn mutex_steps(plan: &Plan, row: usize) -> f64 {
        let (t, m, n) = (MUTEX_TASKS, MUTEX_OPS, plan.mutex_step_sample);
        let d = PCT_DEPTH as usize;
        let strategy = nssim_strategy(row);
        let (executions, steps) = match row {
            0 | 1 => {
                let build = nssim::mutex_build(t, m);
                let (r, steps) = nssim::count_steps(strategy, 1, n, &build);
                (nssim::executions_run(strategy, &r), steps)
            }
            2 => {
                let s = sh::RandomScheduler::new_from_seed(1, n as usize);
                let (e, steps) = sh::count_steps(s, sh::mutex(t, m));
                (e as u64, steps)
            }
            _ => {
                let s = sh::PctScheduler::new_from_seed(1, d, n as usize);
                let (e, steps) = sh::count_steps(s, sh::mutex(t, m));
                (e as u64, steps)
            }
        };
        steps as f64 / executions as f64
    }

    /// The strategy of row `row` (rows alternate random and pct).
    fn nssim_strategy(row: usize) -> StrategySpec {
        match MUTEX_ROWS[row].1 {
            "random" => StrategySpec::Random,
            _ => StrategySpec::Pct { depth: PCT_DEPTH },
        }
    }

    /// One round of row `row`: `n` executions of seed `seed`; the
    /// executions run and the time.
    fn mutex_round(row: usize, seed: u64, n: u64) -> (u64, Duration) {
        let (t, m) = (MUTEX_TASKS, MUTEX_OPS);
        let d = PCT_DEPTH as usize;
        timed(|| match row {
            0 | 1 => {
                let strategy = nssim_strategy(row);
                let r = nssim::mutex(strategy, seed, n, t, m);
                assert_eq!(r.report.outcome, sim::Outcome::Pass, "{}", r.report.outcome);
                nssim::executions_run(strategy, &r)
            }
            2 => sh::run(
                sh::RandomScheduler::new_from_seed(seed, n as usize),
                sh::mutex(t, m),
            ) as u64,
            _ => sh::run(
                sh::PctScheduler::new_from_seed(seed, d, n as usize),
                sh::mutex(t, m),
            ) as u64,
        })
    }

    /// Every row of (a), the rows' rounds interleaved so that a change of
    /// the machine's load during the run falls on all of them alike.
    fn mutex_rows(plan: &Plan) -> Vec<Throughput> {
        let mut rows: Vec<Throughput> = (0..MUTEX_ROWS.len())
            .map(|row| Throughput {
                executions: 0,
                time: Duration::ZERO,
                steps_per_exec: mutex_steps(plan, row),
            })
            .collect();
        for round in 0..plan.mutex_rounds {
            for (row, th) in rows.iter_mut().enumerate() {
                let n = if row < 2 {
                    plan.mutex_nssim
                } else {
                    plan.mutex_shuttle
                } / plan.mutex_rounds;
                let (executions, time) = mutex_round(row, round + 1, n);
                th.executions += executions;
                th.time += time;
            }
        }
        rows
    }

    fn mutex_table(plan: &Plan) {
        println!("## (a) {MUTEX_TASKS} tasks x {MUTEX_OPS} lock/increment/unlock on one mutex\n");
        let rows: Vec<_> = MUTEX_ROWS
            .iter()
            .zip(mutex_rows(plan))
            .map(|(&(tool, strategy), th)| (tool, strategy, th))
            .collect();
        let mut t = Table::new(&[
            "tool",
            "strategy",
            "executions",
            "wall time",
            "executions/s",
            "sched. points/execution",
            "sched. points/s",
            "lock ops/s",
            "time/lock op",
            "nssim ÷ shuttle (executions/s)",
        ]);
        for (i, (tool, strategy, th)) in rows.iter().enumerate() {
            let vs = if *tool == "nssim" {
                ratio(th.exec_rate(), rows[i + 2].2.exec_rate())
            } else {
                "1×".to_string()
            };
            t.row(vec![
                tool.to_string(),
                strategy.to_string(),
                th.executions.to_string(),
                dur(th.time),
                si(th.exec_rate()),
                format!("{:.0}", th.steps_per_exec),
                si(th.step_rate()),
                si(th.op_rate()),
                secs(1.0 / th.op_rate()),
                vs,
            ]);
        }
        t.row(vec![
            "loom".into(),
            "exhaustive".into(),
            "n/a: 4x1000 cannot be exhausted; see (a-tiny)".into(),
            "".into(),
            "".into(),
            "".into(),
            "".into(),
            "".into(),
            "".into(),
            "".into(),
        ]);
        println!("{}", t.render());
        println!(
            "nssim pct runs one probe execution per round before its iterations; it is \
             counted. \
             Scheduling points are each tool's own: nssim counts every step of a task \
             (start, lock, unlock, a wake-up after blocking), shuttle every call of its \
             scheduler.\n"
        );
    }

    fn median_time<R>(repeats: usize, mut f: impl FnMut() -> R) -> (R, Duration) {
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..repeats.max(1) {
            let (r, t) = timed(&mut f);
            times.push(t.as_secs_f64());
            last = Some(r);
        }
        (
            last.expect("at least one run"),
            Duration::from_secs_f64(median(&times)),
        )
    }

    fn mutex_tiny_table(plan: &Plan) {
        let (t, m) = (MUTEX_TINY_TASKS, MUTEX_TINY_OPS);
        println!("## (a-tiny) {t} tasks x {m} lock/increment/unlock, exhausted\n");
        let (nssim_r, nssim_t) = median_time(plan.repeats, || {
            let unbounded = StrategySpec::Dfs {
                preemption_bound: DFS_UNBOUNDED,
            };
            sim::explore(
                &nssim::config(unbounded, 0, 10_000_000),
                &nssim::mutex_build(t, m),
            )
        });
        assert!(nssim_r.exhausted && !nssim_r.report.outcome.is_failure());
        let (loom_n, loom_t) = median_time(plan.repeats, || {
            loom_models::exhaust(loom_models::mutex(t, m))
        });
        let (sh_n, sh_t) = median_time(plan.repeats, || {
            sh::run(sh::DfsScheduler::new(None, false), sh::mutex(t, m))
        });
        let mut tb = Table::new(&[
            "tool",
            "search",
            "executions to exhaust",
            "wall time (median)",
            "executions/s",
            "time ÷ loom's",
        ]);
        let rows = [
            ("nssim", "dfs, unbounded", nssim_r.executions, nssim_t),
            ("loom", "DPOR", loom_n, loom_t),
            ("shuttle", "dfs", sh_n as u64, sh_t),
        ];
        for (tool, search, n, time) in rows {
            tb.row(vec![
                tool.into(),
                search.into(),
                n.to_string(),
                dur(time),
                si(n as f64 / time.as_secs_f64()),
                ratio(time.as_secs_f64(), loom_t.as_secs_f64()),
            ]);
        }
        println!("{}", tb.render());
    }

    /// One seed's search for the first failure.
    struct Search {
        /// The execution that failed (1-based), if one did.
        found: Option<u64>,
        /// Executions run, a `pct` probe included.
        run: u64,
        /// Median wall time over the repetitions.
        secs: f64,
    }

    /// Run one seed's search `repeats` times (it is deterministic) and keep
    /// the median time.
    fn search(repeats: usize, mut f: impl FnMut() -> (Option<u64>, u64)) -> Search {
        let ((found, run), t) = median_time(repeats, &mut f);
        Search {
            found,
            run,
            secs: t.as_secs_f64(),
        }
    }

    /// Every seed's search of one tool and strategy.
    struct FirstFailure(Vec<Search>);

    impl FirstFailure {
        fn found(&self) -> usize {
            self.0.iter().filter(|s| s.found.is_some()).count()
        }
        /// Median over every seed; a miss counts as its whole budget (a
        /// lower bound of its time to failure).
        fn median_time(&self) -> f64 {
            median(&self.0.iter().map(|s| s.secs).collect::<Vec<_>>())
        }
        fn median_executions(&self) -> f64 {
            median(
                &self
                    .0
                    .iter()
                    .map(|s| s.found.unwrap_or(s.run) as f64)
                    .collect::<Vec<_>>(),
            )
        }
        fn max_executions(&self) -> u64 {
            self.0.iter().filter_map(|s| s.found).max().unwrap_or(0)
        }
        /// Total time over every execution run.
        fn time_per_execution(&self) -> f64 {
            let time: f64 = self.0.iter().map(|s| s.secs).sum();
            let n: u64 = self.0.iter().map(|s| s.run).sum();
            time / n as f64
        }
    }

    fn nssim_ipc(
        plan: &Plan,
        strategy: StrategySpec,
        run: impl Fn(StrategySpec, u64, u64) -> sim::ExploreReport,
        invariant: &str,
    ) -> FirstFailure {
        let searches = (1..=plan.ipc_seeds).map(|seed| {
            search(plan.repeats, || {
                let r = run(strategy, seed, plan.ipc_budget);
                let found = r.report.outcome.invariant() == Some(invariant);
                assert!(
                    found || r.report.outcome == sim::Outcome::Pass,
                    "seed {seed}: {}",
                    r.report.outcome
                );
                (
                    found.then_some(r.executions),
                    nssim::executions_run(strategy, &r),
                )
            })
        });
        FirstFailure(searches.collect())
    }

    fn shuttle_ipc(plan: &Plan, pct: bool, limit: i64) -> FirstFailure {
        let budget = plan.ipc_budget as usize;
        let searches = (1..=plan.ipc_seeds).map(|seed| {
            search(plan.repeats, || {
                let model = sh::ipc(limit, IPC_ROUNDS);
                let found = quietly(|| {
                    if pct {
                        let s = sh::PctScheduler::new_from_seed(seed, PCT_DEPTH as usize, budget);
                        sh::first_failure(s, model)
                    } else {
                        sh::first_failure(sh::RandomScheduler::new_from_seed(seed, budget), model)
                    }
                });
                (found, found.unwrap_or(plan.ipc_budget))
            })
        });
        FirstFailure(searches.collect())
    }

    fn ipc_table(plan: &Plan, pct: StrategySpec, limit: i64, with_kernel: bool) {
        println!(
            "## (b) the ipc free-queue race: time to the first false ENOSPC \
             (limit {limit}, {IPC_ROUNDS} rounds, seeds 1..={}, budget {} executions)\n",
            plan.ipc_seeds, plan.ipc_budget
        );
        let small = |s, seed, budget| nssim::ipc(s, seed, budget, limit);
        let kernel = |s, seed, budget| nssim::ipc_kernel(s, seed, budget, limit, IPC_ROUNDS as u64);
        let enospc = "ipc.no_false_enospc";
        let mut rows = vec![
            (
                "nssim (sync model)",
                "random",
                nssim_ipc(plan, StrategySpec::Random, small, FALSE_ENOSPC),
            ),
            (
                "nssim (sync model)",
                "pct",
                nssim_ipc(plan, pct, small, FALSE_ENOSPC),
            ),
            ("shuttle", "random", shuttle_ipc(plan, false, limit)),
            ("shuttle", "pct", shuttle_ipc(plan, true, limit)),
        ];
        if with_kernel {
            rows.push((
                "nssim (kernel crate, v6.2)",
                "random",
                nssim_ipc(plan, StrategySpec::Random, kernel, enospc),
            ));
            rows.push((
                "nssim (kernel crate, v6.2)",
                "pct",
                nssim_ipc(plan, pct, kernel, enospc),
            ));
        }
        let mut t = Table::new(&[
            "tool (model)",
            "strategy",
            "seeds that found it",
            "median executions to failure",
            "max executions",
            "median time to failure",
            "mean time per execution",
            "shuttle ÷ this (median time, same strategy)",
        ]);
        for (tool, strategy, ff) in &rows {
            let shuttle = if *strategy == "random" {
                &rows[2].2
            } else {
                &rows[3].2
            };
            t.row(vec![
                tool.to_string(),
                strategy.to_string(),
                format!("{}/{}", ff.found(), plan.ipc_seeds),
                format!("{}", ff.median_executions()),
                ff.max_executions().to_string(),
                secs(ff.median_time()),
                secs(ff.time_per_execution()),
                ratio(shuttle.median_time(), ff.median_time()),
            ]);
        }
        println!("{}", t.render());
    }

    fn ipc_notes() {
        println!(
            "Each seed's search is repeated and its median time kept. A seed that found \
             nothing within the budget counts as the whole budget in the medians. nssim \
             pct runs a probe execution before its iterations: it is in the times and in \
             the time per execution, not in the executions to failure. Executions to failure \
             depend on the model's shape as much as on the strategy: each tool's \
             primitives put their own scheduling points (shuttle's version needs a \
             condition variable and a shutdown where nssim's has a kworker). The kernel \
             crate rows run the full model (ucounts, ipc namespaces, mqueue mounts, RCU, \
             the oracle, every invariant after every step) and are not the same model \
             as the other rows. Shuttle prints each failure it finds on stderr.\n"
        );
    }

    fn small_table(plan: &Plan) {
        println!(
            "## (c) exhaustive: a: lock; push 1; unlock; flag=1 | b: lock; push 2; unlock | \
             c: read flag; lock; read; unlock\n"
        );
        let ((nssim_r, nssim_states), nssim_t) =
            median_time(plan.repeats, || nssim::small(DFS_UNBOUNDED));
        assert!(nssim_r.exhausted, "nssim's dfs exhausted (c)");
        assert_eq!(nssim_r.report.outcome, sim::Outcome::Pass);
        let ((loom_n, loom_states), loom_t) = median_time(plan.repeats, || {
            let states = Arc::new(Mutex::new(BTreeSet::new()));
            let n = loom_models::exhaust(loom_models::small(Arc::clone(&states)));
            let s = states.lock().unwrap().clone();
            (n, s)
        });
        let ((sh_n, sh_states), sh_t) = median_time(plan.repeats, || {
            let states = Arc::new(Mutex::new(BTreeSet::new()));
            let n = sh::run(
                sh::DfsScheduler::new(None, false),
                sh::small(Arc::clone(&states)),
            );
            let s = states.lock().unwrap().clone();
            (n as u64, s)
        });
        let mut t = Table::new(&[
            "tool",
            "search",
            "executions to exhaust",
            "wall time (median)",
            "distinct final states",
            "executions ÷ loom's",
            "time ÷ loom's",
        ]);
        let rows = [
            (
                "nssim",
                "dfs, unbounded",
                nssim_r.executions,
                nssim_t,
                &nssim_states,
            ),
            ("loom", "DPOR", loom_n, loom_t, &loom_states),
            ("shuttle", "dfs", sh_n, sh_t, &sh_states),
        ];
        for (tool, search, n, time, states) in rows {
            t.row(vec![
                tool.into(),
                search.into(),
                n.to_string(),
                dur(time),
                states.len().to_string(),
                ratio(n as f64, loom_n as f64),
                ratio(time.as_secs_f64(), loom_t.as_secs_f64()),
            ]);
        }
        println!("{}", t.render());
        println!("final states found by loom:  {}", show_states(&loom_states));
        println!(
            "final states found by nssim: {}",
            show_states(&nssim_states)
        );
        let missing: BTreeSet<_> = loom_states.difference(&nssim_states).collect();
        assert!(
            missing.is_empty(),
            "nssim missed final states that loom found: {missing:?}"
        );
        let extra: BTreeSet<_> = nssim_states.difference(&loom_states).collect();
        println!(
            "check: every final state loom found, nssim found too ({} of {}){}",
            loom_states.len(),
            loom_states.len(),
            if extra.is_empty() {
                "; the sets are equal".to_string()
            } else {
                format!("; nssim found {} more: {extra:?}", extra.len())
            }
        );
        assert_eq!(
            sh_states, loom_states,
            "shuttle's dfs and loom agree on the final states"
        );
    }
}
