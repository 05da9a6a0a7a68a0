//! `dfs` without reduction: every interleaving within the preemption
//! bound, or, with the state cache, every state the model names within
//! it, each explored once (see `statecache`).

use crate::exec::ExecReport;
use crate::search::{memory_limit, trimmed_choices, ExploreReport};
use crate::statecache::{Probe, StateCache};
use crate::strategy::ChoicePoint;
use crate::token::Schedule;
use crate::TaskId;
use std::cell::RefCell;
use std::rc::Rc;

struct Frame {
    point: ChoicePoint,
    /// Non-preemptive choice first, then the others by id.
    alternatives: Vec<TaskId>,
    /// Alternatives already explored from this point.
    done: Vec<TaskId>,
    preemptions_before: u32,
}

fn frame(point: ChoicePoint, preemptions_before: u32) -> Frame {
    let default = point.default_choice();
    let mut alternatives = vec![default];
    alternatives.extend(point.runnable.iter().copied().filter(|t| *t != default));
    Frame {
        done: vec![point.chosen],
        point,
        alternatives,
        preemptions_before,
    }
}

fn preemptions(point: &ChoicePoint) -> u32 {
    point.is_preemption(point.chosen) as u32
}

/// Runs one execution of an explicit schedule, with the probe of a
/// stateful search.
pub(crate) type DfsRun<'a> = dyn FnMut(&Schedule, Option<Probe>) -> ExecReport + 'a;

/// Every interleaving within the bound, without reduction; with a state
/// cache, every state the model names within the bound, each explored
/// once (see `statecache`).
pub(crate) fn dfs(
    iterations: u64,
    bound: u32,
    cache: Option<&Rc<RefCell<StateCache>>>,
    run: &mut DfsRun<'_>,
) -> ExploreReport {
    let mut stack: Vec<Frame> = Vec::new();
    let mut prefix: Vec<u32> = Vec::new();
    let mut executions = 0;
    let mut first = None;
    let mut last_whole: Option<(ExecReport, Schedule)> = None;
    loop {
        let probe = cache.map(|cache| Probe {
            cache: Rc::clone(cache),
            prefix_len: prefix.len() as u64,
            bounded: bound != u32::MAX,
        });
        let cut_before = cache.map_or(0, |c| c.borrow().cut());
        let mut report = run(&Schedule::Choices(prefix.clone()), probe);
        executions += 1;
        // An execution that ended at a state seen before is no whole run
        // to report: the last whole one is.
        let whole = cache.is_none_or(|c| c.borrow().cut() == cut_before);
        let schedule = Schedule::Choices(trimmed_choices(&report.choices));
        // The choice points are the search's memory: moved into its frames
        // when it goes on, dropped at once when it ends.
        let choices = std::mem::take(&mut report.choices);
        if report.outcome.is_failure() {
            return ExploreReport::ended(executions, report, schedule, false);
        }
        let first = first.get_or_insert_with(|| (report.clone(), schedule.clone()));
        if whole {
            last_whole = Some((report, schedule));
        }
        if executions >= iterations {
            return ExploreReport::budget_spent(executions, first.clone());
        }
        for point in choices.into_iter().skip(stack.len()) {
            let before = stack
                .last()
                .map_or(0, |f| f.preemptions_before + preemptions(&f.point));
            stack.push(frame(point, before));
        }
        let (report, schedule) = last_whole.as_ref().unwrap_or(first);
        // The frames grow between executions, where no execution looks.
        if let Some(limit) = memory_limit() {
            let mut report = report.clone();
            report.outcome = limit;
            return ExploreReport::ended(executions, report, schedule.clone(), false);
        }
        match backtrack(&mut stack, bound) {
            Some(()) => {}
            None => {
                return ExploreReport::ended(executions, report.clone(), schedule.clone(), true)
            }
        }
        prefix = stack.iter().map(|f| f.point.chosen as u32).collect();
    }
}

/// Move to the next unexplored alternative within the preemption bound;
/// `None` when the space is exhausted.
fn backtrack(stack: &mut Vec<Frame>, bound: u32) -> Option<()> {
    while let Some(top) = stack.last_mut() {
        let next = top.alternatives.iter().copied().find(|alt| {
            !top.done.contains(alt)
                && top.preemptions_before + top.point.is_preemption(*alt) as u32 <= bound
        });
        if let Some(alt) = next {
            top.done.push(alt);
            top.point.chosen = alt;
            return Some(());
        }
        stack.pop();
    }
    None
}
