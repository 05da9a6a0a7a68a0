//! Views of one execution for people: the terminal timeline, Perfetto
//! trace-event JSON and the self-contained HTML report.

use crate::error::CliError;
use kernel::{catalog, ActivePatches, Errno};
use report::{html, perfetto, timeline, Lexicon, Model};
use scenario::Scenario;
use sim::{Event, ExecReport};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The view options shared by `run` and `replay`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ViewArgs {
    /// Draw the execution as a timeline: one column per task, a row per step
    /// (colours on a terminal unless NO_COLOR is set).
    #[arg(long)]
    pub timeline: bool,
    /// The widest line of `--timeline`, in columns (at least 60): columns
    /// narrow, counters go, then the tasks share one column to fit it. By
    /// default COLUMNS, else the terminal's width, else as wide as the
    /// tasks' texts.
    #[arg(long, value_name = "COLUMNS", value_parser = clap::value_parser!(u16).range(60..))]
    pub width: Option<u16>,
    /// Write the execution as Chrome trace-event JSON (opens in ui.perfetto.dev).
    /// `{scenario}` and `{kernel}` in FILE are replaced by the run's names.
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// Write a self-contained HTML report of the execution.
    /// `{scenario}` and `{kernel}` in FILE are replaced by the run's names.
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
    /// Standard output carries JSON records: the timeline goes to standard
    /// error instead.
    pub json_output: bool,
}

/// Produce the views asked for.
pub fn emit(args: &ViewArgs, ctx: &ViewContext<'_>) -> Result<(), CliError> {
    let lexicon = Lexicon {
        describe: &describe,
        is_syscall: &is_syscall,
        is_limit: &is_limit,
        sums: &[ipcns::oracle::COUNTER_CHARGED],
        errno: &errno_name,
    };
    let model = Model::build(ctx.report, &lexicon);
    if args.timeline {
        let options = timeline::Options {
            color: color_wanted() && !ctx.json_output,
            width: args
                .width
                .map(usize::from)
                .or_else(|| timeline_width(ctx.json_output)),
        };
        let text = timeline::render(&model, &options);
        if ctx.json_output {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    }
    if let Some(path) = &args.perfetto {
        let json = perfetto::render(&model, &perfetto_meta(ctx));
        write_view(
            path,
            ctx,
            "Perfetto trace (open it in ui.perfetto.dev)",
            &json,
        )?;
    }
    if let Some(path) = &args.html {
        let page = html::render(&model, &page_meta(ctx));
        write_view(path, ctx, "HTML report", &page)?;
    }
    Ok(())
}

/// How a note's value reads: syscall results as errno names.
fn describe(e: &Event) -> Option<String> {
    if is_syscall(e.label) {
        return Some(match e.value {
            0 => "ok".into(),
            v => errno_name(v).map_or(v.to_string(), str::to_string),
        });
    }
    match e.label {
        "free_ipc: batch" => Some(format!("{} namespaces", e.value)),
        // A counter's value is what it says, zero included.
        l if l.starts_with("counter:") => Some(e.value.to_string()),
        // A kernel function's failure (`create_user_ns` returning -28).
        _ if e.value < 0 => errno_name(e.value).map(str::to_string),
        _ => None,
    }
}

/// The step-by-step listing of a recorded execution (`nssim replay`
/// without a view), its notes read as the views read them.
pub fn print_steps(report: &ExecReport) {
    print!("{}", report::steps::render(report, &describe));
}

/// The errno a kernel function's negative return is (`ENOSPC` for -28).
fn errno_name(v: i64) -> Option<&'static str> {
    Errno::from_return(v).map(Errno::name)
}

/// The operations of scenario files are the model's syscalls.
fn is_syscall(label: &str) -> bool {
    catalog::OPS.iter().any(|op| op.name == label)
}

/// Counters named after a sysctl limit (`max_ipc_namespaces`).
fn is_limit(name: &str) -> bool {
    name.starts_with("max_")
}

/// The width `--timeline` fits when `--width` is not given: COLUMNS (a
/// number of at least 60), else the width of the terminal it is drawn on
/// (standard error when standard output carries JSON).
fn timeline_width(on_stderr: bool) -> Option<usize> {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok());
    if let Some(c) = columns.filter(|c| *c >= timeline::MIN_WIDTH) {
        return Some(c);
    }
    let fd = if on_stderr {
        libc::STDERR_FILENO
    } else {
        libc::STDOUT_FILENO
    };
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which
    // points at one; on a descriptor that is not a terminal it fails and
    // writes nothing.
    let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// Colours when standard output is a terminal and NO_COLOR is unset or empty.
fn color_wanted() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    !no_color && std::io::stdout().is_terminal()
}

fn perfetto_meta<'a>(ctx: &'a ViewContext<'a>) -> perfetto::Meta<'a> {
    perfetto::Meta {
        scenario: &ctx.scenario.name,
        kernel: ctx.kernel,
        token: ctx.token,
        replay_command: &ctx.replay_command,
    }
}

fn page_meta<'a>(ctx: &'a ViewContext<'a>) -> html::Page<'a> {
    let bearing = ctx.patches.names_bearing_on(&ctx.scenario.setup);
    html::Page {
        scenario: &ctx.scenario.name,
        summary: &ctx.scenario.summary,
        file: ctx.scenario.path.display().to_string(),
        kernel: ctx.kernel,
        profile: &ctx.patches.profile,
        patches: bearing.0,
        other_patches: bearing.1,
        token: ctx.token,
        replay_command: &ctx.replay_command,
        describe: &describe,
    }
}

/// Files written by this process: a second execution asking for the same
/// file gets one named after its scenario and kernel instead.
static WRITTEN: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn write_view(path: &Path, ctx: &ViewContext<'_>, what: &str, text: &str) -> Result<(), CliError> {
    let path = target_path(path, ctx);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            CliError(format!(
                "error: cannot make {} for the {what}: {e}",
                crate::error::shown(dir)
            ))
        })?;
    }
    std::fs::write(&path, text).map_err(|e| {
        CliError(format!(
            "error: cannot write the {what} to {}: {e}",
            crate::error::shown(&path)
        ))
    })?;
    eprintln!("wrote the {what}: {}", crate::error::shown(&path));
    Ok(())
}

/// `path` with `{scenario}` and `{kernel}` replaced; if an earlier execution
/// of this process wrote it, `NAME-SCENARIO-KERNEL.EXT` beside it.
fn target_path(path: &Path, ctx: &ViewContext<'_>) -> PathBuf {
    let text = path.to_string_lossy();
    let mut target = PathBuf::from(
        text.replace("{scenario}", &ctx.scenario.name)
            .replace("{kernel}", ctx.kernel),
    );
    let mut written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
    if written.contains(&target) {
        let stem = target
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let name = match target.extension() {
            Some(ext) => format!(
                "{stem}-{}-{}.{}",
                ctx.scenario.name,
                ctx.kernel,
                ext.to_string_lossy()
            ),
            None => format!("{stem}-{}-{}", ctx.scenario.name, ctx.kernel),
        };
        target.set_file_name(name);
    }
    written.push(target.clone());
    target
}
