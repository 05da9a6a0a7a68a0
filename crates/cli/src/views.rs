//! Views of one execution for people: the terminal timeline, Perfetto
//! trace-event JSON and the self-contained HTML report.

use crate::run::CliError;
use kernel::ActivePatches;
use scenario::Scenario;
use sim::ExecReport;
use std::path::PathBuf;

/// The view options shared by `run` and `replay`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ViewArgs {
    /// Draw the execution as a timeline: one column per task, a row per step.
    #[arg(long)]
    pub timeline: bool,
    /// Write the execution as Chrome trace-event JSON (opens in ui.perfetto.dev).
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// Write a self-contained HTML report of the execution.
    #[arg(long = "report", value_name = "FILE.html")]
    pub html: Option<PathBuf>,
}

impl ViewArgs {
    /// True when any view is asked for (the execution is then recorded).
    pub fn any(&self) -> bool {
        self.timeline || self.perfetto.is_some() || self.html.is_some()
    }
}

/// Everything a view shows about one execution.
#[allow(dead_code)] // read by the views as they are written
pub struct ViewContext<'a> {
    pub scenario: &'a Scenario,
    /// The kernel run's label (e.g. `v6.2`, `v6.3-wait-only`).
    pub kernel: &'a str,
    pub patches: &'a ActivePatches,
    /// The execution, recorded (its `events` are present).
    pub report: &'a ExecReport,
    pub token: &'a str,
    /// The command that replays it.
    pub replay_command: String,
}

/// Produce the views asked for.
pub fn emit(args: &ViewArgs, ctx: &ViewContext<'_>) -> Result<(), CliError> {
    let _ = (args, ctx);
    Ok(())
}
