//! The kernel executor: a scenario's world and ops run as real processes
//! and syscalls on the running kernel, with results recorded in the shape
//! of the model's ([`kernel::Results`]), so that what the kernel shows can
//! be held against what the model reaches.
//!
//! Each op of `kernel::ops` has its second implementation in [`ops`];
//! [`world`] builds the scenario's namespaces, sysctls and credentials and
//! starts one process per task instance behind a barrier; [`task`] gives
//! an instance its credentials, and [`ops`] runs its ops. The executor
//! runs in a process of its own (the `nssim` binary started with
//! [`EXEC_COMMAND`]), single-threaded, so that it may fork freely:
//! [`execute`] starts it, hands it the scenario, and bounds it in
//! wall-clock time. Every process of a run lives in a pid namespace of
//! the run's own and dies with it; limits are lowered only in user
//! namespaces the run made.
//!
//! The files are layered, each importing only files below it
//! (`tests/layers.rs` holds the order): the leaves (`sys`: the syscalls;
//! `files`: the set-up's files; `instance`: the instances and the fds
//! they share); what the processes of a run pass each other (`netlink`:
//! uevent sockets; `lines`: the results pipe's lines and the run they
//! make; `state`: a task's context and state, and its resume argument);
//! the ops (`ops`: each op's syscalls and the loop that runs a task's;
//! `outcome`: results as one string); the run (`task`: an instance's
//! start; `world`: the world root that starts them); `export_c`, the run
//! as a C program; and this file, the executor's process and its entry
//! points.

pub mod export_c;
pub mod fault;
pub mod files;
pub mod instance;
pub mod lines;
pub mod machine;
pub mod netlink;
pub mod ops;
pub mod outcome;
pub mod state;
pub mod sys;
pub mod task;
pub mod world;

use kernel::setup::Setup;
use kernel::{Results, SyscallStats};
use machine::Machine;
use serde_json::{json, Value};
use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// The hidden command that runs the executor (`nssim __kernel-exec`).
pub const EXEC_COMMAND: &str = "__kernel-exec";

/// Why a scenario does not run on this machine's kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip(pub String);

/// What the kernel showed over the repeats of one scenario.
#[derive(Debug, Default)]
pub struct KernelRuns {
    /// One entry per repeat that ran to its end.
    pub runs: Vec<Results>,
    /// Repeats cut off by the wall-clock bound (not counted in `runs`).
    pub timed_out: u32,
    /// Wall-clock time of all repeats.
    pub wall: Duration,
}

/// The first op of the scenario that this executor cannot run, or set-up
/// it cannot make, with why, on any machine.
pub fn unsupported_in(setup: &Setup) -> Option<String> {
    let op = setup.ops_by_name().find_map(|(name, ops)| {
        ops.iter().find_map(|op| {
            ops::unsupported(op).map(|why| format!("task {name} runs {}: {why}", op.name()))
        })
    });
    op.or_else(|| world::unsupported_pid_ns_depth(setup))
}

/// Why the machine the executor runs on cannot run the scenario, if it
/// cannot: checked by the executor itself, where the run happens.
fn machine_refuses(setup: &Setup, machine: Machine) -> Option<String> {
    machine_can_run()
        .err()
        .map(|Skip(why)| why)
        .or_else(|| unnested_here(setup))
        .or_else(|| faults_refused(setup, machine))
}

/// Why the scenario's `fail_alloc` ops cannot run on `machine`.
fn faults_refused(setup: &Setup, machine: Machine) -> Option<String> {
    match (fault::injects_faults(setup), machine) {
        (false, _) => None,
        (true, Machine::Shared) => Some(
            "fail_alloc sets the kernel's own failslab, which every process shares: it runs only in a disposable VM (--lab)".into(),
        ),
        (true, Machine::Disposable) => fault::refuses(setup),
    }
}

/// Nested pid namespaces need the executor to start from the initial pid
/// namespace, as /proc shows it, for their depth to be counted.
fn unnested_here(setup: &Setup) -> Option<String> {
    let nests = setup.processes.pid_ns_depth.values().any(|d| *d > 0);
    (nests && !sys::proc_is_initial_pid_ns()).then(|| {
        "a task starts in nested pid namespaces, and this executor is not in the initial pid namespace with its /proc, so their depth cannot be counted".to_string()
    })
}

/// Whether the scenario sends untagged device uevents, which the kernel
/// broadcasts to every network namespace owned by the initial user
/// namespace, the machine's own included.
fn sends_untagged_uevents(setup: &Setup) -> bool {
    setup
        .every_op()
        .any(|op| matches!(op, kernel::setup::Op::UeventDeviceEvent { .. }))
}

/// Whether this machine can run the executor at all.
pub fn machine_can_run() -> Result<(), Skip> {
    if unsafe { libc::geteuid() } != 0 {
        return Err(Skip(
            "the executor needs root (it makes namespaces and sets uids)".into(),
        ));
    }
    let max = std::fs::read_to_string("/proc/sys/user/max_user_namespaces").unwrap_or_default();
    if max.trim().parse::<u64>().unwrap_or(0) == 0 {
        return Err(Skip(
            "user namespaces are not available (user.max_user_namespaces is 0)".into(),
        ));
    }
    Ok(())
}

/// Run the scenario `source` (from `file`) on the kernel up to `repeat`
/// times, within `budget` of wall-clock time (at least one repeat is
/// tried), with `program` as the executor binary.
pub fn execute(
    program: &Path,
    file: &str,
    source: &str,
    setup: &Setup,
    repeat: u32,
    budget: Duration,
) -> Result<KernelRuns, Skip> {
    machine_can_run()?;
    if let Some(why) = unsupported_in(setup) {
        return Err(Skip(why));
    }
    if sends_untagged_uevents(setup) {
        let listeners = netlink::machine_listeners();
        if listeners > 0 {
            return Err(Skip(format!(
                "an untagged device uevent would reach the machine's own {listeners} uevent listener(s)"
            )));
        }
    }
    let request = Request {
        file,
        source,
        repeat,
        budget,
        machine: Machine::Shared,
    };
    let started = Instant::now();
    let lines = run_executor(
        program,
        &request.to_json(),
        budget + Duration::from_secs(10),
    )?;
    let mut out = runs_from_lines(&lines)?;
    out.wall = started.elapsed();
    Ok(out)
}

/// What the executor (`nssim __kernel-exec`) is asked to run.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The scenario's file, for messages.
    pub file: &'a str,
    /// The scenario's text.
    pub source: &'a str,
    pub repeat: u32,
    /// Wall time of all repeats (at least one is tried).
    pub budget: Duration,
    pub machine: Machine,
}

impl Request<'_> {
    /// The request as the executor reads it on standard input: one line.
    pub fn to_json(&self) -> String {
        json!({
            "file": self.file,
            "source": self.source,
            "repeat": self.repeat,
            "budget_ms": self.budget.as_millis() as u64,
            "machine": self.machine.name(),
        })
        .to_string()
    }
}

/// The runs of the executor's lines, or the skip one of them reports.
pub fn runs_from_lines(lines: &[String]) -> Result<KernelRuns, Skip> {
    let mut out = KernelRuns::default();
    for line in lines {
        let v: Value = serde_json::from_str(line)
            .map_err(|e| Skip(format!("the executor printed `{line}`: {e}")))?;
        if let Some(skip) = v.get("skip").and_then(Value::as_str) {
            return Err(Skip(skip.to_string()));
        }
        if v.get("timed_out").and_then(Value::as_bool) == Some(true) {
            out.timed_out += 1;
            continue;
        }
        out.runs.push(results_from_json(&v["results"]));
    }
    Ok(out)
}

/// The runs an exported program (`nssim export --c`) printed, filed as
/// [`execute`] files the executor's: the kernel's release, if printed,
/// and the runs. A run that could not be built is the whole output's
/// skip, as it is for the executor.
pub fn printed_runs(setup: &Setup, text: &str) -> Result<(Option<String>, KernelRuns), Skip> {
    let printed = lines::parse_printed(text);
    let mut out = KernelRuns::default();
    for run in &printed.runs {
        if let Some(err) = &run.error {
            return Err(Skip(format!(
                "the world could not be built on that kernel: {err}"
            )));
        }
        if run.timed_out {
            out.timed_out += 1;
        } else {
            out.runs.push(results_of(setup, run));
        }
    }
    Ok((printed.release, out))
}

/// Start the executor, hand it `request`, and read its lines; kill its
/// process group if it outlives `bound`.
fn run_executor(program: &Path, request: &str, bound: Duration) -> Result<Vec<String>, Skip> {
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new(program)
        .arg(EXEC_COMMAND)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| {
            Skip(format!(
                "cannot start the executor {}: {e}",
                program.display()
            ))
        })?;
    let pgid = child.id() as i32;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let _ = stdin.write_all(request.as_bytes());
    drop(stdin);
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stderr_pipe = child.stderr.take().expect("piped stderr");
    // Standard error is drained beside standard output, so that neither
    // fills its pipe while the other is read.
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let lines: Vec<String> = std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect();
        let _ = tx.send(lines);
    });
    let lines = match rx.recv_timeout(bound) {
        Ok(lines) => lines,
        Err(_) => {
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
            let _ = child.wait();
            let _ = reader.join();
            let _ = errors.join();
            return Err(Skip(format!(
                "the executor did not finish within {} s and was killed",
                bound.as_secs()
            )));
        }
    };
    let _ = reader.join();
    let stderr = errors.join().unwrap_or_default();
    let status = child.wait().map_err(|e| Skip(format!("executor: {e}")))?;
    if !status.success() && lines.is_empty() {
        return Err(Skip(format!(
            "the executor failed ({status}): {}",
            stderr.trim()
        )));
    }
    Ok(lines)
}

fn results_to_json(results: &Results) -> Value {
    let tasks: serde_json::Map<String, Value> = results
        .iter()
        .map(|(task, ops)| {
            let ops: serde_json::Map<String, Value> = ops
                .iter()
                .map(|(label, s)| {
                    (
                        label.clone(),
                        json!({
                            "calls": s.calls,
                            "results": s.results,
                            "first_failure": s.first_failure,
                            "values": s.values,
                            "first_results": s.first_results,
                            "texts": s.texts,
                        }),
                    )
                })
                .collect();
            (task.clone(), Value::Object(ops))
        })
        .collect();
    Value::Object(tasks)
}

/// The strings of a JSON array (none for anything else).
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect()
}

fn results_from_json(v: &Value) -> Results {
    let mut results = Results::new();
    let Some(tasks) = v.as_object() else {
        return results;
    };
    for (task, ops) in tasks {
        let entry = results.entry(task.clone()).or_default();
        for (label, s) in ops.as_object().into_iter().flatten() {
            let stats = SyscallStats {
                calls: s["calls"].as_u64().unwrap_or(0),
                results: s["results"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
                    .collect(),
                first_failure: s["first_failure"].as_u64(),
                values: s["values"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_u64)
                    .collect(),
                first_results: strings(&s["first_results"]),
                texts: strings(&s["texts"]),
            };
            entry.insert(label.clone(), stats);
        }
    }
    results
}

/// The calls of one world run, filed as the model files them
/// (`World::record`): by instance and op label, counting each result and
/// noting the index of the first failure.
pub fn results_of(setup: &Setup, run: &lines::WorldRun) -> Results {
    let instances = instance::instances(setup);
    let mut results = Results::new();
    for (instance, op, result, values, texts) in &run.calls {
        let (Some(inst), Some(op)) = (
            instances.get(*instance),
            instances.get(*instance).and_then(|i| i.ops(setup).get(*op)),
        ) else {
            continue;
        };
        let stats = results
            .entry(inst.name.clone())
            .or_default()
            .entry(op.label())
            .or_default();
        let base = if ops::reports_seqnums(op) {
            run.seqnum_base
        } else {
            0
        };
        stats.record(
            result,
            values.iter().map(|v| v.saturating_sub(base)),
            texts.iter().cloned(),
        );
    }
    kernel::number_namespaces(&mut results);
    results
}

fn print_line(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

/// `nssim __kernel-exec`: read the request on standard input, run the
/// repeats, print one JSON line per repeat.
pub fn exec_main() -> i32 {
    sys::die_with_parent();
    if unsafe { libc::getppid() } == 1 {
        // nssim ended before the death signal was asked for.
        return 2;
    }
    let mut text = String::new();
    if std::io::stdin().read_to_string(&mut text).is_err() {
        return 2;
    }
    let Ok(request) = serde_json::from_str::<Value>(&text) else {
        eprintln!("nssim: the executor's request is not JSON");
        return 2;
    };
    let setup = match setup_of(&request) {
        Ok(s) => s,
        Err(msg) => {
            print_line(&json!({ "skip": msg }));
            return 0;
        }
    };
    if let Some(why) = machine_refuses(&setup, machine_of(&request)) {
        print_line(&json!({ "skip": why }));
        return 0;
    }
    let files = match files::SetupFiles::make(&setup) {
        Ok(f) => f,
        Err(msg) => {
            print_line(&json!({ "skip": format!("the set-up's files: {msg}") }));
            return 0;
        }
    };
    let mut request = request;
    request["files_dir"] = json!(files.dir());
    let text = request.to_string();
    let plan = match plan_memfd(&text) {
        Ok(fd) => fd,
        Err(e) => {
            print_line(&json!({ "skip": format!("memfd_create: {}", sys::errno_name(e)) }));
            return 0;
        }
    };
    let repeat = request["repeat"].as_u64().unwrap_or(1).max(1);
    let budget = Duration::from_millis(request["budget_ms"].as_u64().unwrap_or(10_000));
    let started = Instant::now();
    for r in 0..repeat {
        let elapsed = started.elapsed();
        if r > 0 && elapsed >= budget {
            break;
        }
        let deadline = started + budget.max(elapsed + Duration::from_secs(1));
        let run = world::run_world(&setup, machine_of(&request), plan, &files.dir(), deadline);
        if let Some(err) = &run.error {
            print_line(
                &json!({ "skip": format!("the world could not be built on this kernel: {err}") }),
            );
            return 0;
        }
        print_line(&json!({
            "repeat": r,
            "timed_out": run.timed_out,
            "results": results_to_json(&results_of(&setup, &run)),
        }));
    }
    0
}

fn setup_of(request: &Value) -> Result<Setup, String> {
    let file = request["file"].as_str().unwrap_or("scenario");
    let source = request["source"]
        .as_str()
        .ok_or("no scenario in the request")?;
    let sc = scenario::parse(file, source).map_err(|e| e.to_string())?;
    Ok(world::as_run(
        &sc.setup,
        machine_of(request).withheld_in_init(),
    ))
}

/// The machine the request says the run is on (a shared one when it
/// does not say).
fn machine_of(request: &Value) -> Machine {
    request["machine"]
        .as_str()
        .and_then(Machine::from_name)
        .unwrap_or(Machine::Shared)
}

/// The request in a memfd that task processes keep across execve.
fn plan_memfd(text: &str) -> sys::SysResult<i32> {
    let name = sys::cstring("nssim-plan");
    let fd = unsafe { libc::memfd_create(name.as_ptr(), 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    sys::write(fd, text.as_bytes())?;
    Ok(fd)
}

/// The whole file, read from offset 0 without moving the shared offset.
fn read_whole_at(file: &std::fs::File) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, 0).ok()?;
    String::from_utf8(buf).ok()
}

/// `nssim __kernel-resume STATE`: a task after its execve records the
/// execve's success and runs on from the next op.
pub fn resume_main(arg: &str) -> i32 {
    let Some(resume) = state::parse_resume(arg) else {
        return 2;
    };
    let open = |fd: i32| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0;
    if !open(resume.plan) || !open(resume.results) {
        return 2;
    }
    // Every task's memfd shares one file offset: read it by position, or
    // two tasks resuming at once would each read part of it.
    let file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(resume.plan) };
    let text = read_whole_at(&file);
    std::mem::forget(file);
    let Some(request) = text.and_then(|t| serde_json::from_str::<Value>(&t).ok()) else {
        lines::report_error(
            resume.results,
            Some(resume.instance),
            "the task could not read its plan back after execve",
        );
        return 2;
    };
    let Ok(setup) = setup_of(&request) else {
        return 2;
    };
    let instances = instance::instances(&setup);
    let ctx = state::TaskCtx {
        setup: &setup,
        instances: &instances,
        instance: resume.instance,
        results: resume.results,
        plan: resume.plan,
        files_dir: request["files_dir"].as_str().unwrap_or_default(),
    };
    let Some(inst) = instances.get(resume.instance) else {
        return 2;
    };
    let ops = inst.ops(&setup);
    if ops.is_empty() {
        return 2;
    }
    let index = (resume.pos % ops.len() as u64) as usize;
    ops::record(&ctx, index, &ops[index], Ok(()), Vec::new(), &[]);
    ops::run_ops(&ctx, resume.pos + 1, resume.state)
}
