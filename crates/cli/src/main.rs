//! `nssim`: run scenarios of kernel namespace races, replay one execution
//! from its token, and list the kernel profiles and patches.

mod bench;
mod conformance;
mod error;
mod export;
mod gen;
mod history;
mod history_lab;
mod idmap;
mod junit;
mod kernel_lab;
mod library;
mod merge;
mod onkernel;
mod options;
mod output;
mod progress;
mod run;
mod side_by_side;
mod tracefile;
mod views;
mod watchdog;

use clap::{Parser, Subcommand};
use options::{Format, Overrides};
use sim::echo::escape_controls;
use sim::limits;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "nssim",
    version,
    about = "Deterministic simulator of Linux kernel namespace subsystems",
    long_about = "Deterministic simulator of Linux kernel namespace subsystems. It explores the \
interleavings of a scenario's tasks under a kernel profile, checks invariants at every step, and \
replays any execution exactly from its schedule token. Modelled: the ipc-namespace free queue, \
user namespaces and their uid/gid maps, ucounts and RLIMIT_NPROC, and network namespaces' uevent \
sockets (`nssim kernels` lists profiles and patches; `nssim conformance` checks the model against \
the running kernel; `nssim export --c` writes a scenario as a C program for it; `nssim idmap \
check` judges a map write).\n\nExit \
status: 0 when every run's outcome is what its scenario expects, 1 when one is not, 2 for bad \
input or usage.\n\nShell completions: `nssim completions bash > \
~/.local/share/bash-completion/completions/nssim` (or zsh, fish, elvish, powershell); the \
manual page: `nssim man > ~/.local/share/man/man1/nssim.1`."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `nssim run` with neither a path nor `--library`.
const NOTHING_TO_RUN: &str = "error: `nssim run` needs something to run: a scenario file, a directory of them, or a built-in scenario's name (`nssim scenarios` lists them)
  = help: `nssim run --library` runs the whole built-in library";

// Parsed once per process: the size of the `run` variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Explore scenario files (or directories of them) under their kernel profiles.
    Run {
        /// Scenario files or directories (every *.toml inside). A path that is not on
        /// the disk but names a built-in scenario (`sim-scenarios/NAME.toml`, `NAME`, or
        /// `sim-scenarios/` for all) runs the one built in (`nssim scenarios`).
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Run the built-in scenario library (before any PATH), from any directory.
        #[arg(long)]
        library: bool,
        #[command(flatten)]
        overrides: Overrides,
        /// Output format: `json` prints a line per (scenario, kernel) run, its record
        /// (a run of another shard as skipped), and the summary line on standard error.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Also write the results as JUnit XML (a test case per scenario and kernel).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Write the reported execution of each run as a trace file (JSON); with
        /// several runs, the scenario and kernel are added to the file name.
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
        #[command(flatten)]
        views: views::ViewArgs,
        /// Run each scenario on the running kernel (as root, with user namespaces) and
        /// check that every outcome the kernel shows is one the model reaches under
        /// the profile matching the kernel's release, with --patch toggles on top
        /// (exit status 1 when not). --timeout bounds each scenario whole: its
        /// kernel side (15 s at most), then the model's search in what is left;
        /// other exploration options do not apply.
        #[arg(long)]
        on_kernel: bool,
        /// --on-kernel: runs of each scenario on the kernel (bounded by 15 s of
        /// wall-clock time per scenario, or --timeout if shorter).
        #[arg(long, value_name = "N", requires = "on_kernel",
              value_parser = clap::value_parser!(u32).range(1..=1000))]
        repeat: Option<u32>,
        /// --on-kernel: take the kernel's side from FILE, what a program written by `nssim
        /// export --c` printed (here or on another machine), instead of running the
        /// scenario (one) here; the model runs under the profile of the kernel release
        /// the program printed.
        #[arg(
            long,
            value_name = "FILE",
            requires = "on_kernel",
            conflicts_with = "repeat"
        )]
        kernel_output: Option<PathBuf>,
        /// --on-kernel: run on the lab's kernels instead of this machine's, each booted
        /// in a disposable VM and held to the profile of its release: `all`, or kernel
        /// names or releases as `nssim lab list` shows them (comma-separated or
        /// repeated).
        #[arg(
            long,
            value_name = "NAMES",
            requires = "on_kernel",
            conflicts_with = "kernel_output",
            value_delimiter = ','
        )]
        lab: Vec<String>,
    },
    /// Write a scenario as a standalone C program that performs its ops on the
    /// running kernel, as `run --on-kernel` does, and prints each call's result.
    ///
    /// The program needs only libc (and the kernel's uapi headers) and root; its
    /// opening comment names the scenario file, its expectation and the kernel
    /// functions its ops run through. `nssim run --on-kernel --kernel-output FILE
    /// SCENARIO` checks what it printed against the model. A scenario with an op
    /// the program cannot perform is refused (exit status 2).
    Export {
        /// The scenario: a file, or a built-in scenario's name (`ipc-alloc-vs-free`),
        /// as `nssim run` takes it.
        scenario: PathBuf,
        /// Write C (the one language there is; required).
        #[arg(long = "c", required = true)]
        c: bool,
        /// Write the program to FILE instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// The [[kernel]] entry whose expectation the opening comment gives: its label,
        /// or the first entry of that profile (default: the first entry).
        #[arg(long, value_name = "LABEL")]
        kernel: Option<String>,
    },
    /// Replay exactly the execution a token names, step by step.
    Replay {
        /// The scenario file the token came from.
        scenario: PathBuf,
        /// The schedule token printed by `nssim run`, or a trace file written by `--trace`.
        #[arg(value_name = "TOKEN|TRACE_FILE")]
        token: String,
        /// Output format: `text` prints every step; `json` one line, the run's record
        /// with the same fields as `run`'s.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// When the scenario or nssim changed and the token no longer fits, finish
        /// the run in non-preemptive order instead of stopping at the divergence.
        #[arg(long)]
        continue_after_divergence: bool,
        /// Refuse (exit status 2) a token made for another version of the scenario
        /// (its content hash differs) or one too old to carry the hash; by default
        /// such a token is replayed with a warning.
        #[arg(long)]
        strict: bool,
        /// Write the execution as a trace file (JSON).
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
        /// Wall-clock time the replay may take, e.g. `30s`, `10m`; past it the replay
        /// ends with outcome `limit` (wall-time). Default: 10m.
        #[arg(long, value_name = "DURATION")]
        timeout: Option<String>,
        #[command(flatten)]
        views: views::ViewArgs,
    },
    /// Combine the JSON outputs of the N shards of one run (`run --shard K/N
    /// --format json`) into exactly what the unsharded run prints.
    ///
    /// The failure reported is the one of lowest iteration, as the unsharded
    /// run finds it; executions add up; expectations are judged once. Exit
    /// status 1 when a merged run is not as expected, 2 when the files are
    /// not the outputs of all N shards of one run.
    Merge {
        /// The shards' JSON-lines outputs, one file per shard, in any order.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Output format, as `run` prints it: `json` a line per (scenario, kernel) run.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Also write the merged results as JUnit XML.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
    },
    /// List the built-in scenario library, or print one scenario to copy and edit.
    ///
    /// The scenarios are those of the checkout's `sim-scenarios/`, built into the
    /// binary: `nssim run --library` runs them all and `nssim run NAME` one, from any
    /// directory.
    Scenarios {
        #[command(subcommand)]
        command: Option<ScenariosCommand>,
        /// Also list the conformance cases (`sim-scenarios/conformance/`).
        #[arg(long)]
        all: bool,
        /// Output format: `json` prints a line per scenario: its name, path and summary.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Print a shell completion script for nssim, generated from its options:
    /// `nssim completions bash > ~/.local/share/bash-completion/completions/nssim`.
    Completions {
        /// The shell the script is for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print nssim's manual page (roff), generated from its options:
    /// `nssim man > ~/.local/share/man/man1/nssim.1`, then `man nssim`.
    Man,
    /// List the operations a scenario's tasks can run: each op's arguments, what it
    /// does, and the kernel functions it goes through.
    Ops {
        /// Output format: `json` prints a line per op: `name`, `signature`, `summary`,
        /// `kernel` (the functions, each `function (file)`).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// List the real kernel bugs the scenario library reproduces: for each patch
    /// that is a fixing commit, the scenarios that fail on a kernel without it and
    /// pass on one with it.
    History {
        /// Output format: `json` prints a line per bug: `fix` (the commit's
        /// subject), `fixed_in`, `patch`, `scenario`, `fails` (each `kernel` and
        /// `expect`) and `passes`.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Run each bug's scenarios on the lab's kernels (`all`, or names or releases
        /// as `nssim lab list` shows them) and show, for each kernel, whether it has
        /// the fix, the model's verdict on its profile, and what the kernel did. With
        /// --format json, a line per bug and scenario with a `kernels` list.
        #[arg(long, value_name = "NAMES", value_delimiter = ',')]
        lab: Vec<String>,
        /// --lab: runs of each scenario on each kernel (default 3).
        #[arg(long, value_name = "N", requires = "lab",
              value_parser = clap::value_parser!(u32).range(1..=1000))]
        repeat: Option<u32>,
    },
    /// List kernel profiles, patches, invariants and cost-table entries.
    Kernels {
        /// Output format: `json` prints a line per profile, patch, invariant and
        /// cost-table entry, its `kind` saying which.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Measure nssim's scheduler on the benchmark workloads and print tables:
    /// lock operations per second, time to the first failure, executions to
    /// exhaust a small model, the speed-up of --jobs, and many tasks at once.
    ///
    /// The same workloads against shuttle and loom, side by side, are
    /// `cargo bench -p nssim-bench --features compare --bench compare`. Run on a quiet machine
    /// and read the ratios, not the absolute figures.
    Bench {
        /// A small run (under a second) instead of the full one (about a minute and a half).
        #[arg(long)]
        quick: bool,
        /// Threads for the parallel-exploration row (default: the number of cores).
        #[arg(long, value_name = "N", value_parser = |s: &str| limits::JOBS.parse_u32(s).map(|j| j as usize))]
        jobs: Option<usize>,
    },
    /// Ask the model and the running kernel the same questions (namespace
    /// limits, idmap writes, RLIMIT_NPROC, uevents) and print whether they agree.
    ///
    /// The model runs under the kernel profile matching the running kernel's
    /// release. Kernel probes run in child user namespaces (`unshare -U -r`), so
    /// limits are lowered only there; cases this host cannot run are listed as
    /// skipped with the reason. Exit status 1 when any case disagrees.
    Conformance {
        /// Only cases of this subsystem (repeatable): idmap, ipc, mqueue, netns, nproc,
        /// pidns, shm, signal, uevent or userns.
        #[arg(long, value_name = "NAME")]
        subsystem: Vec<String>,
        /// Only cases whose name contains this text (repeatable).
        #[arg(long, value_name = "TEXT")]
        case: Vec<String>,
        /// List the cases and their questions without running them.
        #[arg(long)]
        list: bool,
        /// Output format: `json` prints one line, the profile, the kernel's release and
        /// every case; with --list a line per case (subsystem, case, question).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Ask the lab's kernels instead of this machine's, each booted in a disposable
        /// VM with full root and held to the profile of its release: `all`, or kernel
        /// names or releases as `nssim lab list` shows them (comma-separated or
        /// repeated). With --format json, a line per kernel.
        #[arg(long, value_name = "NAMES", value_delimiter = ',')]
        lab: Vec<String>,
        /// Runs of each case on the kernel (default 5; fewer for a quick gate, as CI's
        /// lab step).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
        repeat: Option<u32>,
    },
    /// The kernel lab: real kernels of several eras, each run in a disposable VM
    /// (`--lab` of `run --on-kernel` and `conformance`).
    #[command(subcommand)]
    Lab(kernel_lab::LabCommand),
    /// uid/gid maps: check a map write against a kernel profile's rules.
    #[command(subcommand)]
    Idmap(idmap::IdmapCommand),
    /// Generate scenarios from the ops' declarations, and hold them against the
    /// invariants or the running kernel.
    ///
    /// Each seed gives one scenario (the same on every machine): a tree of user
    /// namespaces with maps and low max_* limits, and 2-5 tasks of 1-6 ops with
    /// arguments that make sense for the op, on the newest profile under PCT and
    /// dfs (preemption bound 2). Without --check they are printed, or written to
    /// --out as gen-SEED.toml. --check model runs them and sorts every violation
    /// into a known kernel behaviour (`nssim kernels` lists them) or an
    /// unexplained one, which is shrunk and written to --out; --check kernel runs
    /// them on the running kernel and looks for each outcome in the model. Exit
    /// status 1 when anything is unexplained or the model misses a kernel outcome.
    Gen {
        /// The first seed.
        #[arg(long, default_value_t = 0, value_parser = |s: &str| limits::SEED.parse(s))]
        seed: u64,
        /// How many scenarios (seeds SEED, SEED+1, ...).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        count: u64,
        /// Write the scenarios (or, with --check, the shrunk unexplained ones) to
        /// this directory.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Run a campaign instead of printing the scenarios.
        #[arg(long, value_enum)]
        check: Option<gen::Check>,
        /// --check model: scenarios explored at once (default: every core).
        #[arg(long, value_name = "N", value_parser = |s: &str| limits::JOBS.parse_u32(s).map(|j| j as usize))]
        jobs: Option<usize>,
        /// Wall-clock time one run may take (--check model, default 20s), or the
        /// kernel side of one scenario (--check kernel, default 3s).
        #[arg(long, value_name = "DURATION")]
        timeout: Option<String>,
        /// Report what a campaign finds as found, without shrinking the scenario.
        #[arg(long)]
        no_shrink: bool,
    },
}

#[derive(Subcommand)]
enum ScenariosCommand {
    /// Print one built-in scenario file as it is.
    Show {
        /// Its name as `nssim scenarios` lists it (`ipc-alloc-vs-free`), with or
        /// without `.toml`, or its path (`sim-scenarios/ipc-alloc-vs-free.toml`).
        name: PathBuf,
    },
}

/// The executor's own processes (`kexec`): started by `run --on-kernel`,
/// and by a task's execve, never by hand.
fn kernel_executor() -> Option<u8> {
    let mut args = std::env::args();
    let code = match args.nth(1)?.as_str() {
        kexec::EXEC_COMMAND => kexec::exec_main(),
        kexec::state::RESUME_COMMAND => kexec::resume_main(&args.next().unwrap_or_default()),
        ::lab::initramfs::GUEST_COMMAND => ::lab::guest::guest_main(),
        _ => return None,
    };
    Some(code.clamp(0, 255) as u8)
}

/// Like other command-line tools, end quietly when the reader of our
/// output goes away (`nssim run ... | head`), instead of failing to print.
fn restore_sigpipe() {
    // SAFETY: setting a signal's action to its default at start-up, before
    // any thread exists.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Counts the heap in use, so that `--max-memory` can end a run cleanly.
/// Over mimalloc: an exhaustive search makes and drops many small vectors
/// per execution (its steps, clocks and footprints), where the system
/// allocator spent a third of the run (see docs/performance.md).
#[global_allocator]
static ALLOC: sim::mem::CountingAlloc<mimalloc::MiMalloc> =
    sim::mem::CountingAlloc(mimalloc::MiMalloc);

fn main() -> ExitCode {
    restore_sigpipe();
    if let Some(code) = kernel_executor() {
        return ExitCode::from(code);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if e.use_stderr() => {
            // clap quotes arguments as given: print its message without
            // styles and with control characters escaped.
            eprint!("{}", escape_controls(&e.render().to_string()));
            return ExitCode::from(2);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    if let Command::Run {
        paths,
        library: false,
        ..
    } = &cli.command
    {
        if paths.is_empty() {
            eprintln!("{NOTHING_TO_RUN}");
            return ExitCode::from(2);
        }
    }
    let result = match cli.command {
        Command::Run {
            paths,
            library,
            overrides,
            format,
            on_kernel: true,
            repeat,
            kernel_output,
            lab,
            ..
        } => onkernel::run(
            &paths,
            library,
            format,
            repeat.unwrap_or(onkernel::DEFAULT_REPEAT),
            &overrides,
            kernel_output.as_deref(),
            &lab,
        ),
        Command::Run {
            paths,
            library,
            overrides,
            format,
            junit,
            trace,
            views,
            ..
        } => run::run(
            &paths,
            library,
            &overrides,
            format,
            junit.as_deref(),
            trace.as_deref(),
            &views,
        ),
        Command::Export {
            scenario,
            c: _,
            output,
            kernel,
        } => export::export_c(&scenario, output.as_deref(), kernel.as_deref()),
        Command::Merge {
            files,
            format,
            junit,
        } => merge::merge(&files, format, junit.as_deref()),
        Command::Replay {
            scenario,
            token,
            format,
            continue_after_divergence,
            strict,
            trace,
            timeout,
            views,
        } => run::replay(
            &scenario,
            &token,
            format,
            run::ReplayMode {
                continue_after_divergence,
                strict,
                timeout: match run::timeout(&Overrides {
                    timeout,
                    ..Overrides::default()
                }) {
                    Ok(t) => t,
                    Err(e) => {
                        eprintln!("{}", escape_controls(&e.to_string()));
                        return ExitCode::from(2);
                    }
                },
            },
            &run::Outputs {
                views: &views,
                trace,
                json: format == Format::Json,
            },
        ),
        Command::Scenarios {
            command: Some(ScenariosCommand::Show { name }),
            ..
        } => library::show(&name),
        Command::Scenarios {
            command: None,
            all,
            format,
        } => library::list(all, format),
        Command::Kernels { format } => {
            output::print_kernels(format);
            Ok(true)
        }
        Command::History {
            format,
            lab,
            repeat,
        } => match lab.is_empty() {
            true => history::print(format),
            false => history_lab::print(&lab, repeat.unwrap_or(3), format),
        },
        Command::Ops { format } => {
            output::print_ops(format);
            Ok(true)
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut out = std::io::stdout().lock();
            clap_complete::generate(shell, &mut Cli::command(), "nssim", &mut out);
            Ok(true)
        }
        Command::Man => {
            use clap::CommandFactory;
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(Cli::command())
                .render(&mut out)
                .map(|()| true)
                .map_err(|e| error::CliError(format!("error: cannot write the manual page: {e}")))
        }
        Command::Bench { quick, jobs } => {
            let jobs = jobs
                .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
                .unwrap_or(1)
                .max(1);
            bench::bench(&bench::BenchPlan::new(quick, jobs));
            Ok(true)
        }
        Command::Conformance {
            subsystem,
            case,
            list,
            format,
            lab,
            repeat,
        } => conformance::conformance(
            &conformance::Filter {
                subsystems: subsystem,
                names: case,
            },
            format,
            list,
            &lab,
            repeat.unwrap_or(conformance::REPEAT),
        ),
        Command::Lab(command) => kernel_lab::run(&command),
        // The idmap checker's messages are the rest of the tool's errors.
        Command::Idmap(command) => {
            idmap::run(&command).map_err(|m| error::CliError(format!("error: {m}")))
        }
        Command::Gen {
            seed,
            count,
            out,
            check,
            jobs,
            timeout,
            no_shrink,
        } => gen::gen(&gen::GenPlan {
            seed,
            count,
            out: out.as_deref(),
            check,
            jobs: jobs
                .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
                .unwrap_or(1),
            timeout: timeout.as_deref(),
            shrink: !no_shrink,
        }),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            // Values are quoted with `echo` where the message is made;
            // this catches what the system adds (error texts, paths).
            eprintln!("{}", escape_controls(&e.to_string()));
            ExitCode::from(2)
        }
    }
}
