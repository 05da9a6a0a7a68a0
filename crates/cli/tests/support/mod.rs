//! What the command-line tests share: the checkout's root and the binary
//! run from it, without colour.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn nssim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("nssim runs")
}

/// `nssim args` run from `dir`, a directory that is not the checkout.
pub fn nssim_elsewhere(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("nssim runs")
}

/// An empty directory of this test run's, named `name`.
pub fn empty_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nssim-library-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A test that cannot run here says so where its reader sees it: on the
/// test run's own standard error, which the harness does not capture
/// (it captures `print!` and `eprint!` only), as `skipped: <test>: <why>`.
///
/// `required` names an environment variable that makes the skip a
/// failure: `.ci/run` sets it where it installed what the test needs.
pub fn skip(test: &str, why: &str, required: Option<&str>) {
    if let Some(var) = required.filter(|v| std::env::var_os(v).is_some()) {
        panic!("{test} cannot run ({why}) but {var} says it must");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
}

/// Held while a test runs processes on the real kernel: such tests see
/// each other (a uevent one test's namespaces raise reaches another's
/// listener), so they take turns, within a test binary and across the
/// binaries that run at once (an advisory lock on a file).
pub struct KernelTurn(std::fs::File);

pub fn kernel_turn() -> KernelTurn {
    turn("nssim-tests-kernel.lock")
}

/// Held while a test runs the lab's VMs: under emulation a VM is slow
/// enough already without others beside it on the same cores.
pub fn lab_turn() -> KernelTurn {
    turn("nssim-tests-lab.lock")
}

fn turn(name: &str) -> KernelTurn {
    use std::os::fd::AsRawFd;
    let path = std::env::temp_dir().join(name);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .expect("the lock file");
    // SAFETY: flock on a descriptor this function owns; the lock is
    // released when the file is closed (the turn is dropped).
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(rc, 0, "flock {}", path.display());
    KernelTurn(file)
}

/// Run `nssim args`, check it ends as a run does (0, 1 or 2, no signal)
/// within `guard` (a hang guard, not a measure of speed), and return its
/// standard output.
#[track_caller]
pub fn ends_within(args: &[&str], guard: std::time::Duration) -> String {
    let start = std::time::Instant::now();
    let o = nssim(args);
    let took = start.elapsed();
    assert!(
        matches!(o.status.code(), Some(0..=2)),
        "{args:?}: {:?}\n{}",
        o.status,
        stderr(&o)
    );
    assert!(took < guard, "{args:?} took {took:?}\n{}", stdout(&o));
    stdout(&o)
}

/// JSON-lines output without each record's `wall_ms`, the one field that
/// differs between two runs of the same command.
pub fn timeless(json_lines: &str) -> String {
    json_lines
        .lines()
        .map(
            |line| match serde_json::from_str::<serde_json::Value>(line) {
                Ok(serde_json::Value::Object(mut record)) => {
                    record.remove("wall_ms");
                    serde_json::Value::Object(record).to_string()
                }
                _ => line.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
}

/// JUnit XML without its `time` attributes.
pub fn timeless_junit(xml: &str) -> String {
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml;
    while let Some(at) = rest.find(" time=\"") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 7..];
        rest = &after[after.find('"').map_or(after.len(), |end| end + 1)..];
    }
    out.push_str(rest);
    out
}
