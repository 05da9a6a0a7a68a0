//! The lab's side inside the VM (`/nssim __lab-guest`, started by
//! `/init`): it says `READY RELEASE` on the data channel (the second
//! serial port), reads one `EXEC REQUEST` line, runs the executor
//! (`nssim __kernel-exec`, as `--on-kernel` runs it on the host) with the
//! request, passes each line it prints on as `L LINE`, and ends with
//! `END STATUS`. It is no process 1 (`/init` is), so the executor's
//! death-with-parent check holds as on the host.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

/// The guest's end of the data channel.
const PORT: &str = "/dev/ttyS1";

/// `nssim __lab-guest`: serve one request, then return (and `/init`
/// powers the VM off).
pub fn guest_main() -> i32 {
    let Ok(port) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(PORT)
    else {
        eprintln!("nssim: the lab's guest cannot open {PORT}");
        return 2;
    };
    raw_mode(port.as_raw_fd());
    let mut out = &port;
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let _ = writeln!(out, "READY {}", release.trim());
    let Some(request) = read_request(&port) else {
        return 2;
    };
    let status = run_executor(&request, &port);
    let _ = writeln!(out, "END {status}");
    0
}

/// No echo, no line editing, no newline translation: the channel carries
/// bytes as they are.
fn raw_mode(fd: i32) {
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut t) == 0 {
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(fd, libc::TCSANOW, &t);
        }
    }
}

/// The request of the `EXEC` line (other lines are skipped).
fn read_request(port: &std::fs::File) -> Option<String> {
    let mut reader = BufReader::new(port);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(req) = line.trim_end().strip_prefix("EXEC ") {
            return Some(req.to_string());
        }
    }
}

/// Run the executor with `request`; each line it prints goes out as `L
/// LINE`. Its exit status.
fn run_executor(request: &str, port: &std::fs::File) -> i32 {
    let me = std::env::current_exe().unwrap_or_else(|_| "/nssim".into());
    let child = Command::new(me)
        .arg(kexec::EXEC_COMMAND)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return 127;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(request.as_bytes());
    }
    let mut out = port;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = writeln!(out, "L {line}");
        }
    }
    child.wait().ok().and_then(|s| s.code()).unwrap_or(128)
}
