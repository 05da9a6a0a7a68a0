//! The results pipe: each task instance writes one line per call, read by
//! the executor until every writer is gone or the run's deadline passes.
//!
//! `R <instance> <op index> <result> <values, comma-separated, or ->` for
//! a call,
//! `E <instance or -> <message>` when the world or an instance could not
//! be set up, `B <seqnum>` for the machine's uevent sequence number when
//! the run's tasks started.

use crate::sys;
use crate::world::WorldRun;
use std::time::Instant;

/// A call's line. Lines are shorter than PIPE_BUF (a map read back has
/// at most 340 lines of three numbers), so concurrent writers never
/// interleave within one.
pub fn call_line(instance: usize, op: usize, result: &str, values: &[u64]) -> String {
    let values = if values.is_empty() {
        "-".to_string()
    } else {
        let text: Vec<String> = values.iter().map(u64::to_string).collect();
        text.join(",")
    };
    format!("R\t{instance}\t{op}\t{result}\t{values}\n")
}

pub fn parse_line(line: &str, run: &mut WorldRun) {
    let fields: Vec<&str> = line.splitn(5, '\t').collect();
    match fields.as_slice() {
        ["R", instance, op, result, value] => {
            if let (Ok(i), Ok(o)) = (instance.parse(), op.parse()) {
                let values = value.split(',').filter_map(|v| v.parse().ok()).collect();
                run.calls.push((i, o, result.to_string(), values));
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
            if sys_errno() == libc::EINTR {
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

fn sys_errno() -> sys::Errno {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
