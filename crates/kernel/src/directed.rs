//! Directed search: an execution of a run whose results are one wanted
//! outcome, for an outcome the running kernel showed and neither sampling
//! nor bounded exhaustive search reached.
//!
//! Such an outcome is usually a combination of narrow windows: two loopers
//! where the kworker frees one namespace just before the next charge, then
//! the other looper charges just after a second free, each window rare on
//! its own. The search runs explicit schedules ([`Schedule::Choices`]: the
//! task chosen at a prefix of the choice points, then non-preemptive order)
//! and stops every try at the first step after which its results can no
//! longer become the wanted ones ([`directed_run`]), so that a try costs
//! only the steps up to where it went wrong. It then branches at the choice
//! points before that place (the last one, then one half-way back, then the
//! quarters, ...: the choice that matters is often far back, in another
//! task's window), and takes first the branches of the tries that went
//! furthest (the most calls returned as the wanted outcome allows), then
//! those fewest choices away from non-preemptive order: a best-first search
//! over schedules, guided by distance
//! to a goal as in directed model checking (Edelkamp, Leue and
//! Lluch-Lafuente, "Directed explicit-state model checking in the
//! validation of communication protocols", STTT 2004), here stateless and
//! over schedules rather than states.
//!
//! A found execution is a real one of the model: its results are compared
//! with the wanted outcome in full. Not finding one within the budget proves
//! nothing.

use crate::world::{directed_run, MayBecome, Results, RunSpec};
use sim::{Outcome, Schedule};
use std::cmp::Reverse;
use std::collections::BTreeMap;

/// Choice points of a try, counted back from where it stopped, at which
/// the search branches: a wrong result comes from a choice not long before
/// it far more often than from one at the start.
const BRANCH_WINDOW: usize = 512;

/// Most tries with branches left kept at once; the least promising are
/// dropped past it.
const OPEN_TRIES: usize = 4096;

/// What the search looks for.
pub struct Wanted {
    /// Whether results so far can still become the wanted ones (a test that
    /// may answer yes wrongly, never no wrongly, or the search misses).
    pub may_become: MayBecome,
    /// Whether the results of a finished execution are the wanted ones.
    pub is: Box<dyn Fn(&Results) -> bool>,
}

/// What a directed search did.
#[derive(Debug, Default)]
pub struct Directed {
    pub executions: u64,
    pub steps: u64,
    /// The schedule of an execution with the wanted outcome, if found.
    pub found: Option<Schedule>,
    /// The results of every try that ran to its end (passing), found or
    /// not: outcomes of the model as any search's.
    pub finished: Vec<Results>,
    /// The search stopped at the wall-clock limit (`--timeout`).
    pub timed_out: bool,
}

/// One try: the task chosen at each of its choice points, and the tasks
/// runnable at those it may branch at (from `first` on).
struct Try {
    chosen: Vec<u32>,
    runnable: Vec<Vec<u32>>,
    first: usize,
}

impl Try {
    /// The alternatives to its choice at point `j`.
    fn alternatives(&self, j: usize) -> impl Iterator<Item = u32> + '_ {
        let chosen = self.chosen[j];
        self.runnable[j - self.first]
            .iter()
            .copied()
            .filter(move |&t| t != chosen)
    }

    /// The choice point of branch slot `slot`, if it names one: the slots
    /// visit the try's window from its end in bit-reversed order (the last
    /// point, then the one half-way back, then the quarters, ...), so that
    /// a choice far back from where the try went wrong is tried early too.
    fn point(&self, slot: u64) -> Option<usize> {
        let window = self.runnable.len() as u64;
        let bits = u64::BITS - (window - 1).leading_zeros();
        let back = slot
            .reverse_bits()
            .checked_shr(u64::BITS - bits)
            .unwrap_or(0);
        (back < window).then(|| self.first + (window - 1 - back) as usize)
    }

    /// Branch slots: the window's length rounded up to a power of two.
    fn slots(&self) -> u64 {
        (self.runnable.len() as u64).next_power_of_two()
    }
}

/// A branch not yet taken: try `tried`, its branch slot `slot` (see
/// [`Try::point`]), that point's `alternative`-th other task.
#[derive(Debug, Clone, Copy)]
struct Branch {
    tried: usize,
    slot: u64,
    alternative: usize,
}

/// Best first: the most calls returned as wanted, then the fewest choices
/// away from non-preemptive order, then the earliest branch slot, then the
/// newest try.
type Priority = (u64, Reverse<u64>, Reverse<u64>, u64);

/// Search `spec` for an execution with the `wanted` outcome, spending at
/// most `step_budget` steps.
pub fn search(spec: &RunSpec<'_>, wanted: &Wanted, step_budget: u64) -> Directed {
    let mut done = Directed::default();
    let mut tries: Vec<Option<Try>> = Vec::new();
    let mut open: BTreeMap<Priority, Branch> = BTreeMap::new();
    let mut next_prefix = Some(Vec::new());
    while let Some(prefix) = next_prefix.take() {
        let start = prefix.len();
        let (report, results, progress) =
            directed_run(spec, &Schedule::Choices(prefix), wanted.may_become.clone());
        done.executions += 1;
        done.steps += report.steps.max(1);
        match &report.outcome {
            Outcome::Pass => {
                if (wanted.is)(&results) {
                    let chosen = report.choices.iter().map(|c| c.chosen as u32).collect();
                    done.found = Some(Schedule::Choices(chosen));
                    done.finished.push(results);
                    return done;
                }
                done.finished.push(results);
            }
            Outcome::Limit { which, .. } if which == "wall-time" => {
                done.timed_out = true;
                return done;
            }
            _ => {}
        }
        let points = report.choices.len();
        let deviations = report
            .choices
            .iter()
            .filter(|c| c.chosen != c.default_choice())
            .count() as u64;
        let rank = (progress, Reverse(deviations + 1));
        let first = start.max(points.saturating_sub(BRANCH_WINDOW));
        if first < points {
            let id = tries.len();
            tries.push(Some(Try {
                chosen: report.choices.iter().map(|c| c.chosen as u32).collect(),
                runnable: report.choices[first..]
                    .iter()
                    .map(|c| c.runnable.iter().map(|&t| t as u32).collect())
                    .collect(),
                first,
            }));
            let branch = Branch {
                tried: id,
                slot: 0,
                alternative: 0,
            };
            open.insert((rank.0, rank.1, Reverse(0), id as u64), branch);
            if open.len() > OPEN_TRIES {
                if let Some((_, dropped)) = open.pop_first() {
                    tries[dropped.tried] = None;
                }
            }
        }
        if done.steps >= step_budget {
            break;
        }
        next_prefix = take_branch(&mut open, &mut tries);
    }
    done
}

/// The prefix of the most promising branch not yet taken; its try's next
/// branch goes back into `open`.
fn take_branch(
    open: &mut BTreeMap<Priority, Branch>,
    tries: &mut [Option<Try>],
) -> Option<Vec<u32>> {
    while let Some(((rank, deviations, _, id), branch)) = open.pop_last() {
        let Some(tried) = tries[branch.tried].as_ref() else {
            continue;
        };
        let point = tried.point(branch.slot);
        let Some((point, alt)) =
            point.and_then(|p| Some((p, tried.alternatives(p).nth(branch.alternative)?)))
        else {
            // No (further) alternative at this slot: the next slot.
            if branch.slot + 1 < tried.slots() {
                let next = Branch {
                    slot: branch.slot + 1,
                    alternative: 0,
                    ..branch
                };
                open.insert((rank, deviations, Reverse(next.slot), id), next);
            } else {
                tries[branch.tried] = None;
            }
            continue;
        };
        let mut prefix = tried.chosen[..point].to_vec();
        prefix.push(alt);
        let next = Branch {
            alternative: branch.alternative + 1,
            ..branch
        };
        open.insert((rank, deviations, Reverse(next.slot), id), next);
        return Some(prefix);
    }
    None
}
