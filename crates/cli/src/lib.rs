//! nssim as a library: explore the interleavings of your own model code
//! from a Rust test, with the kernel primitives of [`sync`].
//!
//! [`check`] runs the closure as the first task of many executions under
//! a strategy; the closure spawns further tasks with [`thread::spawn`].
//! A panic in any task (a failed assertion), a deadlock, a use of a freed
//! object or a limit ends the search: `check` then panics with the outcome,
//! the shrunk schedule's token and the step-by-step trace. [`replay`] runs
//! exactly that execution again.
//!
//! ```
//! use nssim::sync::{Arc, AtomicI64, Ordering};
//! use nssim::{check_report, replay, thread, Config, Pct};
//!
//! // Two tasks increment a counter with a load and a store: a lost update.
//! fn model() {
//!     let counter = Arc::new(AtomicI64::new("counter", 0));
//!     let handles: Vec<_> = (0..2)
//!         .map(|i| {
//!             let c = Arc::clone(&counter);
//!             thread::spawn(&format!("inc{i}"), move || {
//!                 let v = c.load(Ordering::SeqCst);
//!                 c.store(v + 1, Ordering::SeqCst);
//!             })
//!         })
//!         .collect();
//!     for h in handles {
//!         h.join();
//!     }
//!     assert_eq!(counter.load(Ordering::SeqCst), 2, "lost update");
//! }
//!
//! let report = check_report(Config::default().strategy(Pct { depth: 3 }).iterations(1000), model);
//! assert!(report.outcome.is_failure());
//! assert!(report.message().contains("lost update"));
//! // The token replays the same execution, bit for bit.
//! let again = replay(&report.token, model).expect("a token of this API");
//! assert_eq!(again.trace_hash, report.trace_hash);
//! ```
//!
//! `check(config, model)` is the same search, panicking with the report
//! when it finds a failure, which is what a `#[test]` wants.

pub mod fuzz;

pub use sim::StrategySpec::{Dfs, Fair, Pct, Random};
pub use sim::{Outcome, ShrinkReport, StrategySpec as Strategy};
pub use sync;

use sim::{ExecConfig, Execution, ExploreConfig, Schedule, Token};
use std::fmt;
use std::sync::Arc;

/// How to search. Defaults: random strategy, seed 1, 1000 executions,
/// two virtual CPUs, shrinking on.
#[derive(Debug, Clone)]
pub struct Config {
    explore: ExploreConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            explore: ExploreConfig {
                strategy: Strategy::Random,
                seed: 1,
                iterations: 1000,
                exec: ExecConfig::default(),
                shrink: true,
                jobs: 1,
                shard: None,
                progress: Default::default(),
                reduction: true,
            },
        }
    }
}

impl Config {
    pub fn strategy(mut self, s: Strategy) -> Self {
        self.explore.strategy = s;
        self
    }
    pub fn iterations(mut self, n: u64) -> Self {
        self.explore.iterations = n;
        self
    }
    pub fn seed(mut self, s: u64) -> Self {
        self.explore.seed = s;
        self
    }
    pub fn cpus(mut self, n: u32) -> Self {
        self.explore.exec.cpus = n.max(1);
        self
    }
    pub fn max_steps(mut self, n: u64) -> Self {
        self.explore.exec.max_steps = n;
        self
    }
    /// Threads running executions at once; the result does not change.
    pub fn jobs(mut self, n: usize) -> Self {
        self.explore.jobs = n.clamp(1, sim::limits::JOBS.max as usize);
        self
    }
    pub fn shrink(mut self, on: bool) -> Self {
        self.explore.shrink = on;
        self
    }
}

/// The result of a search: the reported execution (the first failure, or
/// the last execution run).
#[derive(Debug, Clone)]
pub struct Report {
    pub outcome: Outcome,
    pub executions: u64,
    pub steps: u64,
    pub trace_hash: u64,
    pub shrink: Option<ShrinkReport>,
    /// Replays the execution with [`replay`].
    pub token: String,
    /// The execution step by step.
    pub trace: String,
}

impl Report {
    /// What went wrong, with the token and the trace.
    pub fn message(&self) -> String {
        format!(
            "nssim: {} after {} execution(s)\ntoken: {}\n{}",
            self.outcome, self.executions, self.token, self.trace
        )
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

/// The token context that names the library API instead of a scenario
/// file (whose tokens name a kernel run first).
const API_KERNEL: &str = "api";

fn spawn_main(e: &mut Execution, model: &Arc<dyn Fn() + Send + Sync>) {
    let m = Arc::clone(model);
    e.setup(|| sim::spawn("main", false, move || m()));
}

fn no_describe(_: &sim::Event) -> Option<String> {
    None
}

fn run_once(
    exec: &ExecConfig,
    schedule: &Schedule,
    model: &Arc<dyn Fn() + Send + Sync>,
) -> sim::ExecReport {
    let mut cfg = exec.clone();
    cfg.record = true;
    let mut e = Execution::new(cfg, schedule);
    spawn_main(&mut e, model);
    e.run()
}

/// Explore `model` and return the report, failing or not.
pub fn check_report(config: Config, model: impl Fn() + Send + Sync + 'static) -> Report {
    let model: Arc<dyn Fn() + Send + Sync> = Arc::new(model);
    let found = sim::explore(&config.explore, &|e| spawn_main(e, &model));
    let exec = &config.explore.exec;
    let token = Token {
        scenario: 0,
        content: Some(0),
        context: vec![API_KERNEL.into()],
        cpus: exec.cpus,
        max_steps: exec.max_steps,
        max_virtual_ns: exec.max_virtual_ns,
        schedule: found.schedule.clone(),
    };
    let recorded = run_once(exec, &found.schedule, &model);
    Report {
        outcome: found.report.outcome.clone(),
        executions: found.executions,
        steps: found.report.steps,
        trace_hash: found.report.trace_hash,
        shrink: found.shrink,
        token: token.encode(),
        trace: report::steps::render(&recorded, &no_describe),
    }
}

/// Explore `model`; panic with the report when an execution fails.
pub fn check(config: Config, model: impl Fn() + Send + Sync + 'static) {
    let report = check_report(config, model);
    if report.outcome.is_failure() {
        panic!("{report}");
    }
}

/// Why [`replay`] could not run a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// Not a token, or a corrupted one, or one with fields out of range.
    #[error("nssim::replay: bad token `{}`: {error}", sim::echo::echo(.token))]
    Token {
        token: String,
        error: sim::TokenError,
    },
    /// A token of `nssim run`, which names a scenario file's kernel run.
    #[error(
        "nssim::replay: this token names a scenario file's run; use `nssim replay SCENARIO TOKEN`"
    )]
    NotFromTheApi,
}

/// Run exactly the execution `token` names (as printed by [`check`]); an
/// error when the token is malformed or was not made by this API.
pub fn replay(
    token: &str,
    model: impl Fn() + Send + Sync + 'static,
) -> Result<Report, ReplayError> {
    let t = Token::decode(token).map_err(|error| ReplayError::Token {
        token: token.to_string(),
        error,
    })?;
    if t.context != [API_KERNEL] {
        return Err(ReplayError::NotFromTheApi);
    }
    let exec = ExecConfig {
        cpus: t.cpus,
        max_steps: t.max_steps,
        max_virtual_ns: t.max_virtual_ns,
        ..ExecConfig::default()
    };
    let model: Arc<dyn Fn() + Send + Sync> = Arc::new(model);
    let r = run_once(&exec, &t.schedule, &model);
    Ok(Report {
        outcome: r.outcome.clone(),
        executions: 1,
        steps: r.steps,
        trace_hash: r.trace_hash,
        shrink: None,
        token: token.to_string(),
        trace: report::steps::render(&r, &no_describe),
    })
}

/// Tasks of the model.
pub mod thread {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Waits for a spawned task.
    pub struct JoinHandle {
        done: Arc<AtomicBool>,
        obj: sim::ObjId,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    /// Start a task named `name` (a real thread outside a simulation).
    pub fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> JoinHandle {
        let done = Arc::new(AtomicBool::new(false));
        let obj = sim::new_object("task");
        let d = Arc::clone(&done);
        let body = move || {
            f();
            d.store(true, Ordering::SeqCst);
            sim::wake_all(obj, 0);
        };
        if sim::active() {
            let mut body = Some(body);
            sim::spawn(name, false, move || (body.take().expect("runs once"))());
            JoinHandle {
                done,
                obj,
                thread: None,
            }
        } else {
            JoinHandle {
                done,
                obj,
                thread: Some(std::thread::spawn(body)),
            }
        }
    }

    impl JoinHandle {
        /// Block until the task has finished.
        pub fn join(self) {
            if let Some(t) = self.thread {
                let _ = t.join();
                return;
            }
            let done = self.done;
            sim::wait_until("join", self.obj, || done.load(Ordering::SeqCst));
        }
    }
}

/// The strategy a scenario's `[explore]` names.
pub fn strategy_spec(e: &scenario::Explore) -> sim::StrategySpec {
    match e.strategy {
        scenario::StrategyName::Random => sim::StrategySpec::Random,
        scenario::StrategyName::Pct => sim::StrategySpec::Pct { depth: e.pct_depth },
        scenario::StrategyName::Dfs => sim::StrategySpec::Dfs {
            preemption_bound: e.preemption_bound,
        },
        scenario::StrategyName::Fair => sim::StrategySpec::Fair,
    }
}
