//! The bodies of the fuzz targets (`fuzz/`), callable from ordinary tests
//! too: the mutation tests feed them thousands of mutated inputs in CI,
//! and `cargo fuzz` feeds them libFuzzer's. Each either returns or panics;
//! a panic is the bug they look for.

use kernel::{explore_run, replay_run, resolve_patches, RunSpec};
use scenario::Scenario;
use sim::{CostTable, ExecConfig, ExploreConfig, StrategySpec, Token};
use std::time::{Duration, Instant};

/// How much of a parsed scenario [`scenario_run`] runs.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Most executions per kernel run.
    pub iterations: u64,
    /// Most steps per execution.
    pub max_steps: u64,
    /// Wall-clock time per kernel run, shrinking and reporting included.
    pub timeout: Duration,
    /// Shrink a failure (within the timeout).
    pub shrink: bool,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            iterations: 2,
            max_steps: 5_000,
            timeout: Duration::from_secs(2),
            shrink: false,
        }
    }
}

/// Any bytes as a scenario file: a scenario or a located error.
pub fn scenario_parse(data: &[u8]) -> Option<Scenario> {
    match scenario::parse_bytes("fuzz.toml", data) {
        Ok(sc) => Some(sc),
        Err(e) => {
            let _ = e.to_string();
            None
        }
    }
}

/// Every kernel run of `sc`, explored within `budget`, as `nssim run`
/// explores it (a bad patch toggle is an error, not a run).
pub fn run_scenario(sc: &Scenario, budget: Budget) {
    let mut costs = CostTable::new();
    for (name, ns) in &sc.costs {
        costs.set(name, *ns);
    }
    for r in &sc.runs {
        let Ok(patches) = resolve_patches(&r.profile, &r.toggles()) else {
            continue;
        };
        let start = Instant::now();
        let exec = ExecConfig {
            cpus: r.explore.cpus,
            max_steps: r.explore.max_steps.min(budget.max_steps),
            max_virtual_ns: r.explore.max_virtual_ns,
            costs: costs.clone(),
            deadline: Some(start + budget.timeout.mul_f64(0.5)),
            report_deadline: Some(start + budget.timeout.mul_f64(0.7)),
            ..ExecConfig::default()
        };
        let mut explore = ExploreConfig::new(
            crate::strategy_spec(&r.explore),
            r.explore.seed,
            r.explore.iterations.min(budget.iterations),
            exec,
        );
        explore.shrink = budget.shrink;
        let spec = RunSpec {
            setup: &sc.setup,
            patches: &patches,
            invariants: &sc.invariants,
            explore,
        };
        let out = explore_run(&spec);
        let _ = out.explore.report.outcome.to_string();
    }
}

/// Any bytes as a scenario file, and the run after parsing.
pub fn scenario_run(data: &[u8], budget: Budget) {
    if let Some(sc) = scenario_parse(data) {
        run_scenario(&sc, budget);
    }
}

/// Any text as a schedule token: a token that encodes back to a token
/// that decodes the same, or an error.
pub fn token_decode(data: &[u8]) -> Option<Token> {
    let text = std::str::from_utf8(data).ok()?;
    match Token::decode(text) {
        Ok(token) => {
            assert_eq!(Token::decode(&token.encode()), Ok(token.clone()));
            Some(token)
        }
        Err(e) => {
            let _ = e.to_string();
            None
        }
    }
}

/// Any text as a token of the first kernel run of `sc`, replayed within
/// `budget` as `nssim replay` replays it.
pub fn token_replay(sc: &Scenario, data: &[u8], budget: Budget) {
    let Some(token) = token_decode(data) else {
        return;
    };
    let Some(r) = sc.runs.first() else { return };
    let Ok(patches) = resolve_patches(&r.profile, &[]) else {
        return;
    };
    let start = Instant::now();
    let exec = ExecConfig {
        cpus: token.cpus,
        max_steps: token.max_steps.min(budget.max_steps),
        max_virtual_ns: token.max_virtual_ns,
        stop_on_divergence: true,
        deadline: Some(start + budget.timeout),
        ..ExecConfig::default()
    };
    let spec = RunSpec {
        setup: &sc.setup,
        patches: &patches,
        invariants: &sc.invariants,
        explore: ExploreConfig::new(StrategySpec::Fair, 0, 1, exec),
    };
    let (report, _) = replay_run(&spec, &token.schedule, true);
    let _ = report.outcome.to_string();
}
