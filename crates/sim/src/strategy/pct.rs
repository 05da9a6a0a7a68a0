//! `pct`: probabilistic concurrency testing (Burckhardt, Kothari,
//! Musuvathi, Nagarakatte, "A randomized scheduler with probabilistic
//! guarantees of finding bugs", ASPLOS 2010). Every task gets a random
//! priority and the highest runnable one runs; at d - 1 change points,
//! drawn over the choice points of a typical execution, the task about to
//! run drops below every other.

use super::pick::{PickCtx, Strategy};
use super::random::rng_for;
use crate::runq::RunQueue;
use crate::token::Schedule;
use crate::TaskId;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

pub(crate) struct Pct {
    rng: ChaCha8Rng,
    /// Priority per task id; higher runs first.
    priority: Vec<u64>,
    /// Choice points (scheduling points with two or more runnable tasks)
    /// where the task about to run drops, with the low priority it gets.
    change_points: Vec<(u64, u64)>,
    /// The earliest change point still to come (`u64::MAX`: none): the
    /// common choice point compares with it alone.
    next_change: u64,
    choice_step: u64,
    depth: u32,
    /// Change points reached so far.
    fired: u32,
    /// The runnable task of highest priority, and the run queue's version
    /// it was found at: while neither the queue nor a priority changes,
    /// the choice is the same, and a choice point looks at no priority.
    best: TaskId,
    best_at: u64,
}

impl Strategy for Pct {
    /// A yielding task drops below every other (as shuttle's PCT does),
    /// so that a spinner of high priority lets the task it waits for run.
    fn yielded(&mut self, task: TaskId) {
        self.prioritise_up_to(task);
        self.priority[task] = 0;
        self.best_at = NEVER;
    }

    fn new_execution(schedule: &Schedule, _lenient: bool) -> Option<Self> {
        let Schedule::Pct {
            seed,
            iteration,
            depth,
            steps_hint,
        } = schedule
        else {
            return None;
        };
        let mut rng = rng_for(*seed, *iteration);
        let depth = (*depth).max(1);
        let k = (*steps_hint).max(1);
        let change_points: Vec<(u64, u64)> = (1..depth as u64)
            .map(|j| (rng.random_range(1..=k), j))
            .collect();
        Some(Pct {
            rng,
            priority: Vec::new(),
            next_change: next_change_after(&change_points, 0),
            change_points,
            choice_step: 0,
            depth,
            fired: 0,
            best: 0,
            best_at: NEVER,
        })
    }

    /// Sees the runnable list alone, and only at choice points.
    #[inline]
    fn next_task<'a>(&mut self, runnable: &RunQueue, _ctx: impl FnOnce() -> PickCtx<'a>) -> TaskId {
        self.pick(runnable.as_slice(), runnable.version())
    }
}

impl Pct {
    /// Give every task up to `top` its priority. Tasks are met in id order
    /// (the runnable list ascends), so each draws when first seen, in id
    /// order.
    fn prioritise_up_to(&mut self, top: TaskId) {
        while self.priority.len() <= top {
            // New tasks get a random priority above every change-point level.
            let p = self.depth as u64 + 1 + self.rng.random_range(0..1u64 << 40);
            self.priority.push(p);
        }
    }

    /// PCT's step: the runnable task of highest priority runs. At the
    /// i-th change point (counted in choice points, the only steps PCT
    /// sees) the task that would run drops to priority i first, so every
    /// change point an execution reaches takes effect, as the algorithm
    /// requires for its bound; change points drawn at the same step apply
    /// one after another.
    ///
    /// `version` counts the changes to the runnable list: the same count,
    /// the same list.
    #[inline]
    fn pick(&mut self, runnable: &[TaskId], version: u64) -> TaskId {
        self.choice_step += 1;
        if version != self.best_at {
            self.best = self.highest_of_new(runnable);
            self.best_at = version;
        }
        if self.choice_step == self.next_change {
            self.best = self.change(runnable, self.best);
        }
        self.best
    }

    /// The runnable task of highest priority in a list not seen before.
    fn highest_of_new(&mut self, runnable: &[TaskId]) -> TaskId {
        self.prioritise_up_to(*runnable.last().expect("never empty"));
        self.highest(runnable)
    }

    /// The change points of this choice point, in the order drawn.
    #[cold]
    fn change(&mut self, runnable: &[TaskId], mut best: TaskId) -> TaskId {
        for i in 0..self.change_points.len() {
            let (at, level) = self.change_points[i];
            if at == self.choice_step {
                self.priority[best] = level;
                self.fired += 1;
                best = self.highest(runnable);
            }
        }
        self.next_change = next_change_after(&self.change_points, self.choice_step);
        best
    }

    /// The runnable task of highest priority (every one has its priority).
    #[inline]
    fn highest(&self, runnable: &[TaskId]) -> TaskId {
        let mut best = runnable[0];
        let mut best_p = self.priority[best];
        for &t in &runnable[1..] {
            let p = self.priority[t];
            if p > best_p {
                best = t;
                best_p = p;
            }
        }
        best
    }
}

/// A run queue version never reached: no choice is kept yet.
const NEVER: u64 = u64::MAX;

/// The earliest change point after choice point `step` (`u64::MAX`: none).
fn next_change_after(change_points: &[(u64, u64)], step: u64) -> u64 {
    change_points
        .iter()
        .map(|&(at, _)| at)
        .filter(|&at| at > step)
        .min()
        .unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PCT's bound needs every change point an execution reaches to take
    /// effect: drawn over `hint` choice points, all `depth - 1` fire in an
    /// execution of that many choice points, whoever ran the step before.
    #[test]
    fn every_pct_change_point_fires() {
        for seed in 0..50u64 {
            for depth in 1..=6u32 {
                for hint in [1u64, 2, 7, 40] {
                    let schedule = Schedule::Pct {
                        seed,
                        iteration: seed * 3 + hint,
                        depth,
                        steps_hint: hint,
                    };
                    let mut pct = Pct::new_execution(&schedule, false).expect("a PCT schedule");
                    // Three tasks, the runnable set changing as tasks
                    // block and come back.
                    for step in 0..hint {
                        let runnable: &[TaskId] = match step % 3 {
                            0 => &[0, 1, 2],
                            1 => &[1, 2],
                            _ => &[0, 2],
                        };
                        let t = pct.pick(runnable, step);
                        assert!(runnable.contains(&t));
                    }
                    assert_eq!(
                        pct.fired,
                        depth - 1,
                        "seed {seed} depth {depth} hint {hint}"
                    );
                }
            }
        }
    }

    /// A choice kept while the runnable list stays the same is the choice
    /// worked out afresh: one PCT sees a list's version repeat while the
    /// list does, a second sees every list as new, and they agree.
    #[test]
    fn a_kept_choice_is_the_fresh_one() {
        use rand::{Rng, SeedableRng};
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for seed in 0..40u64 {
            let schedule = Schedule::Pct {
                seed,
                iteration: seed,
                depth: 1 + (seed % 4) as u32,
                steps_hint: 30,
            };
            let mut kept = Pct::new_execution(&schedule, false).expect("a PCT schedule");
            let mut fresh = Pct::new_execution(&schedule, false).expect("a PCT schedule");
            let (mut runnable, mut version, mut top) = (vec![0usize, 1], 0u64, 1usize);
            for step in 0..200u64 {
                // Now and then a task blocks, wakes or starts.
                if rng.random_bool(0.3) {
                    version += 1;
                    if rng.random_bool(0.3) {
                        top += 1;
                        runnable.push(top);
                    } else if runnable.len() > 2 {
                        runnable.remove(rng.random_range(0..runnable.len()));
                    } else if let Some(t) = (0..=top).find(|t| !runnable.contains(t)) {
                        runnable.push(t);
                        runnable.sort_unstable();
                    }
                }
                assert_eq!(
                    kept.pick(&runnable, version),
                    fresh.pick(&runnable, NEVER - 1 - step),
                    "seed {seed} step {step}"
                );
            }
            assert_eq!(kept.fired, fresh.fired);
        }
    }
}
