//! A progress bar for long explorations, on a terminal only: piped output
//! and CI logs stay silent.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use scenario::Scenario;
use sim::{ExploreConfig, Progress, StrategySpec};
use std::io::IsTerminal;
use std::time::Duration;

/// Shown while it lives; cleared when dropped.
pub struct Bar(ProgressBar);

/// A bar for exploring `label` of `sc`, when standard error is a terminal
/// and the run has more than one execution.
pub fn bar(sc: &Scenario, label: &str, cfg: &ExploreConfig) -> Option<Bar> {
    if !std::io::stderr().is_terminal() || cfg.strategy == StrategySpec::Fair || cfg.iterations < 2
    {
        return None;
    }
    let pb = ProgressBar::with_draw_target(Some(cfg.iterations), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} executions ({per_sec}, {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_message(format!("{} [{label}]", sc.name));
    pb.enable_steady_tick(Duration::from_millis(200));
    Some(Bar(pb))
}

impl Bar {
    /// The callback the exploration reports to.
    pub fn reporter(&self) -> Progress {
        let pb = self.0.clone();
        Progress::new(move |done| pb.set_position(done))
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
