//! What the `nssim` binary shares with the fuzz targets and the tests:
//! the fuzz targets' bodies, and the strategy a scenario names. The Rust
//! API for models is the `nssim` crate.

pub mod fuzz;

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
