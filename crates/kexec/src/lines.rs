//! The results pipe: each task instance writes one line per call, read by
//! the executor until every writer is gone or the run's deadline passes.
//!
//! `R <instance> <op index> <result> <values, comma-separated, or ->
//! [<words, comma-separated>]` for a call (the words field only when it
//! reported some: a received uevent's ACTION),
//! `E <instance or -> <message>` when the world or an instance could not
//! be set up, `B <seqnum>` for the machine's uevent sequence number when
//! the run's tasks started.
//!
//! A program written by `nssim export --c` prints the same lines on its
//! standard output, and three more: `K <release>` first (the kernel's),
//! `N <repeat>` before each run's lines, and `T <repeat>` after a run cut
//! off at its time limit. [`parse_printed`] reads them back.
//!
//! The lines are read into a [`WorldRun`], the record of one run that the
//! executor files as the model's results; the writers of the lines (the
//! world root, the tasks) and their readers all sit above this file.

use crate::sys;
use std::time::Instant;

/// One call of a run: `(instance, op index, result, values, words)`.
pub type Call = (usize, usize, String, Vec<u64>, Vec<String>);

/// What one world run gave: every call's result, by instance, in order.
#[derive(Debug, Default)]
pub struct WorldRun {
    /// Every call, in the order they arrived.
    pub calls: Vec<Call>,
    /// Why the world could not be built or a task could not start.
    pub error: Option<String>,
    pub timed_out: bool,
    /// The machine's uevent sequence number when the run started: the
    /// kernel numbers uevents with one counter for the whole machine,
    /// the model from 0 in each run.
    pub seqnum_base: u64,
}

/// An `E` line: the run could not be built (or an instance not started).
pub fn report_error(results: i32, instance: Option<usize>, msg: &str) {
    let who = instance.map_or("-".to_string(), |i| i.to_string());
    let line = format!("E\t{who}\t{}\n", msg.replace(['\n', '\t'], " "));
    let _ = sys::write(results, line.as_bytes());
}

/// A call's line. Lines are shorter than PIPE_BUF (a map read back has
/// at most 340 lines of three numbers), so concurrent writers never
/// interleave within one.
pub fn call_line(
    instance: usize,
    op: usize,
    result: &str,
    values: &[u64],
    texts: &[String],
) -> String {
    let values = if values.is_empty() {
        "-".to_string()
    } else {
        let text: Vec<String> = values.iter().map(u64::to_string).collect();
        text.join(",")
    };
    // Words are kept to what a field may hold.
    let words: Vec<String> = texts
        .iter()
        .map(|t| t.replace(['\t', '\n', ','], " "))
        .collect();
    match words.is_empty() {
        true => format!("R\t{instance}\t{op}\t{result}\t{values}\n"),
        false => format!(
            "R\t{instance}\t{op}\t{result}\t{values}\t{}\n",
            words.join(",")
        ),
    }
}

pub fn parse_line(line: &str, run: &mut WorldRun) {
    let fields: Vec<&str> = line.splitn(6, '\t').collect();
    let (fields, words) = match fields.as_slice() {
        [head @ .., words] if fields.len() == 6 => (head.to_vec(), words.split(',').collect()),
        _ => (fields.clone(), Vec::new()),
    };
    match fields.as_slice() {
        ["R", instance, op, result, value] => {
            if let (Ok(i), Ok(o)) = (instance.parse(), op.parse()) {
                let values = value.split(',').filter_map(|v| v.parse().ok()).collect();
                let words = words.iter().map(|w: &&str| w.to_string()).collect();
                run.calls.push((i, o, result.to_string(), values, words));
            }
        }
        ["B", base] => run.seqnum_base = base.parse().unwrap_or(0),
        ["E", who, msg] => {
            let who = if *who == "-" {
                String::new()
            } else {
                format!("instance {who}: ")
            };
            run.error.get_or_insert_with(|| format!("{who}{msg}"));
        }
        _ => {}
    }
}

/// What an exported program printed.
#[derive(Debug, Default)]
pub struct Printed {
    /// The kernel's release (`K`), when it said.
    pub release: Option<String>,
    /// One entry per run (`N`), with its calls as the executor reads them.
    pub runs: Vec<WorldRun>,
}

/// An exported program's output: a run per `N` line, each read as the
/// executor reads its results pipe.
pub fn parse_printed(text: &str) -> Printed {
    let mut printed = Printed::default();
    for line in text.lines() {
        let fields: Vec<&str> = line.splitn(2, '\t').collect();
        match fields.as_slice() {
            ["K", release] => printed.release = Some(release.trim().to_string()),
            ["N", _] => printed.runs.push(WorldRun::default()),
            ["T", _] => {
                if let Some(run) = printed.runs.last_mut() {
                    run.timed_out = true;
                }
            }
            _ => {
                if let Some(run) = printed.runs.last_mut() {
                    parse_line(line, run);
                }
            }
        }
    }
    printed
}

/// Read `fd` line by line until end of file (true) or `deadline` (false).
pub fn read_lines(fd: i32, deadline: Instant, mut each: impl FnMut(&str)) -> bool {
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r <= 0 {
            continue;
        }
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            if sys::errno() == libc::EINTR {
                continue;
            }
            return true;
        }
        if n == 0 {
            return true;
        }
        pending.extend_from_slice(&buf[..n as usize]);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            each(String::from_utf8_lossy(&line[..line.len() - 1]).as_ref());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_printed_output_is_read_run_by_run() {
        let text = "K\t6.18.0\nN\t0\nB\t100\nR\t0\t1\tok\t-\nR\t1\t0\tENOSPC\t-\nN\t1\nR\t0\t0\tok\t3,4\nR\t0\t2\tok\t7\tadd\nT\t1\n";
        let p = parse_printed(text);
        assert_eq!(p.release.as_deref(), Some("6.18.0"));
        assert_eq!(p.runs.len(), 2);
        assert_eq!(p.runs[0].seqnum_base, 100);
        assert_eq!(
            p.runs[0].calls,
            vec![
                (0, 1, "ok".to_string(), vec![], vec![]),
                (1, 0, "ENOSPC".to_string(), vec![], vec![])
            ]
        );
        assert!(!p.runs[0].timed_out && p.runs[1].timed_out);
        assert_eq!(
            p.runs[1].calls,
            vec![
                (0, 0, "ok".to_string(), vec![3, 4], vec![]),
                (0, 2, "ok".to_string(), vec![7], vec!["add".to_string()])
            ]
        );
        assert_eq!(call_line(0, 0, "ok", &[3, 4], &[]), "R\t0\t0\tok\t3,4\n");
        assert_eq!(
            call_line(0, 2, "ok", &[7], &["add".to_string()]),
            "R\t0\t2\tok\t7\tadd\n"
        );
    }
}
