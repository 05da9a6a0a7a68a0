//! Runs of one command side by side. A run whose executions go on one
//! thread whatever `--jobs` says (`dfs`, `fair`, a single execution) takes
//! one of `--jobs` threads, beside other such runs; each run's result is
//! handed on in the runs' order, as soon as it and those before it are
//! done, so what is printed is what the runs one after another print.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// The stack of a thread that makes runs: what Linux gives the main thread
/// by default.
const MAIN_STACK: usize = 8 << 20;

/// What one run made, and whether it must be made again alone: a limit of
/// the whole process (memory, stacks) stopped it while others ran.
pub(crate) struct Done<T> {
    pub value: T,
    pub again_alone: bool,
}

/// `work(i, alone)` for every `i` in `0..n`, on up to `jobs` threads, with
/// `emit` given the results in order of `i`; `alone` says no other run goes
/// beside this one. From the first result that must be made again alone
/// (or the first error), nothing new is started; once the runs in flight
/// are done, that one is made again alone (an error is returned), and the
/// runs after it not made yet are made one after another on this thread.
pub(crate) fn in_order<T: Send, E: Send>(
    n: usize,
    jobs: usize,
    work: &(dyn Fn(usize, bool) -> Result<Done<T>, E> + Sync),
    emit: &mut dyn FnMut(T),
) -> Result<(), E> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut printed = 0;
    let mut waiting = BTreeMap::new();
    // One run, or one thread: all on this thread, after the scope below.
    let threads = if n < 2 || jobs < 2 { 0 } else { jobs.min(n) };
    std::thread::scope(|scope| {
        let (send, receive) = mpsc::channel();
        for t in 0..threads {
            let send = send.clone();
            let (next, stop) = (&next, &stop);
            let worker = move || {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n || send.send((i, work(i, false))).is_err() {
                        break;
                    }
                }
            };
            // A run's reports and views are made on its thread: give it
            // the main thread's stack. One that cannot start leaves its
            // runs to the others, or to this thread below.
            let _ = std::thread::Builder::new()
                .name(format!("nssim-run-{t}"))
                .stack_size(MAIN_STACK)
                .spawn_scoped(scope, worker);
        }
        drop(send);
        for (i, result) in receive {
            waiting.insert(i, result);
            while !stop.load(Ordering::Relaxed) {
                match waiting.remove(&printed) {
                    Some(Ok(done)) if !done.again_alone => {
                        emit(done.value);
                        printed += 1;
                    }
                    Some(other) => {
                        // Left for this thread once the others are done.
                        stop.store(true, Ordering::Relaxed);
                        waiting.insert(printed, other);
                    }
                    None => break,
                }
            }
        }
    });
    // What is left, in order: results made beside others that stand, the
    // rest made here, alone.
    for i in printed..n {
        let value = match waiting.remove(&i) {
            Some(Ok(done)) if !done.again_alone => done.value,
            Some(Err(e)) => return Err(e),
            _ => work(i, true)?.value,
        };
        emit(value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(n: usize, jobs: usize, again: &[usize]) -> (Vec<usize>, Vec<usize>) {
        let made = std::sync::Mutex::new(Vec::new());
        let mut out = Vec::new();
        // A run in `again` is stopped whenever it runs beside others.
        let work = |i: usize, alone: bool| -> Result<Done<usize>, ()> {
            made.lock().unwrap().push(i);
            Ok(Done {
                value: i,
                again_alone: again.contains(&i) && !alone,
            })
        };
        in_order(n, jobs, &work, &mut |v| out.push(v)).unwrap();
        let mut made = made.into_inner().unwrap();
        made.sort_unstable();
        (out, made)
    }

    #[test]
    fn results_come_in_order_whatever_the_threads() {
        for jobs in [1, 2, 5] {
            assert_eq!(collect(20, jobs, &[]).0, (0..20).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_run_stopped_by_the_process_is_made_again_and_handed_on_in_its_place() {
        let (out, made) = collect(10, 3, &[4]);
        assert_eq!(out, (0..10).collect::<Vec<_>>());
        assert_eq!(made.iter().filter(|&&m| m == 4).count(), 2, "{made:?}");
        // The others are made once: those done beside it stand.
        for i in (0..10).filter(|&i| i != 4) {
            assert_eq!(made.iter().filter(|&&m| m == i).count(), 1, "{made:?}");
        }
    }

    #[test]
    fn an_error_stops_the_runs_after_it() {
        let mut out = Vec::new();
        let work = |i: usize, _alone: bool| {
            if i == 3 {
                Err(i)
            } else {
                Ok(Done {
                    value: i,
                    again_alone: false,
                })
            }
        };
        assert_eq!(in_order(8, 2, &work, &mut |v| out.push(v)), Err(3));
        assert_eq!(out, vec![0, 1, 2]);
    }
}
