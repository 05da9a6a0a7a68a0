//! Strategies: at every scheduling point, which runnable task goes next.
//! Each is a pure function of its seed and iteration (and, for explicit
//! choices, of the recorded prefix), so shards and replays agree.

use crate::dpor::{DporRun, RunLog};
use crate::footprint::Footprint;
use crate::rt::TaskState;
use crate::token::{Schedule, Segment};
use crate::TaskId;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What a strategy sees at one scheduling point.
pub(crate) struct PickCtx<'a> {
    /// Runnable tasks, ascending by id; never empty.
    pub runnable: &'a [TaskId],
    /// The task that ran the previous step, if it is still runnable.
    pub last: Option<TaskId>,
    /// Every task, indexed by id (names, clocks, pending operations).
    pub tasks: &'a [TaskState],
    /// Steps taken so far.
    pub step: u64,
    /// The footprint of the step before, when footprints are kept.
    pub previous: Option<&'a Footprint>,
}

/// One recorded decision among two or more runnable tasks.
#[derive(Debug, Clone)]
pub struct ChoicePoint {
    pub runnable: Vec<TaskId>,
    pub last: Option<TaskId>,
    pub chosen: TaskId,
}

impl ChoicePoint {
    /// The task a non-preemptive scheduler would pick here.
    pub fn default_choice(&self) -> TaskId {
        default_choice(&self.runnable, self.last)
    }

    pub fn is_preemption(&self, t: TaskId) -> bool {
        matches!(self.last, Some(l) if l != t)
    }
}

pub(crate) fn default_choice(runnable: &[TaskId], last: Option<TaskId>) -> TaskId {
    last.unwrap_or(runnable[0])
}

pub(crate) enum Chooser {
    Random(ChaCha8Rng),
    Pct(Pct),
    Fair,
    Choices(Explicit),
    Segments(Segments),
    /// Exhaustive search with partial-order reduction (see `dpor`).
    Dpor(Box<DporRun>),
}

/// Explicit choices at the points with a choice, then non-preemptive order.
pub(crate) struct Explicit {
    prefix: Vec<u32>,
    pos: usize,
    log: Vec<ChoicePoint>,
    diverged: Option<usize>,
}

impl Explicit {
    fn pick(&mut self, ctx: &PickCtx<'_>) -> TaskId {
        if ctx.runnable.len() == 1 {
            ctx.runnable[0]
        } else if self.pos < self.prefix.len() {
            self.replay(ctx)
        } else {
            let chosen = default_choice(ctx.runnable, ctx.last);
            self.record(ctx, chosen);
            chosen
        }
    }

    fn replay(&mut self, ctx: &PickCtx<'_>) -> TaskId {
        let wanted = self.prefix[self.pos] as TaskId;
        let chosen = if ctx.runnable.binary_search(&wanted).is_ok() {
            wanted
        } else {
            self.diverged.get_or_insert(self.pos);
            default_choice(ctx.runnable, ctx.last)
        };
        self.record(ctx, chosen);
        self.pos += 1;
        chosen
    }

    fn record(&mut self, ctx: &PickCtx<'_>, chosen: TaskId) {
        self.log.push(ChoicePoint {
            runnable: ctx.runnable.to_vec(),
            last: ctx.last,
            chosen,
        });
    }
}

/// Replaying named segments.
pub(crate) struct Segments {
    segments: Vec<Segment>,
    index: usize,
    /// The task of the current segment and the steps it has left.
    current: Option<(TaskId, u64)>,
    /// The step at which the schedule stopped fitting.
    pub diverged: Option<u64>,
    /// Shrinking: a segment whose task is not runnable, or is elsewhere
    /// than recorded, is skipped or taken as it is instead of diverging.
    lenient: bool,
    /// The ids of the tasks of each name, ascending, for the first
    /// `indexed` tasks: a segment finds its task without a scan of every
    /// runnable one (a lenient replay may skip many segments in one step).
    by_name: std::collections::BTreeMap<String, Vec<TaskId>>,
    indexed: usize,
}

impl Segments {
    fn pick(&mut self, ctx: &PickCtx<'_>) -> TaskId {
        let fallback = default_choice(ctx.runnable, ctx.last);
        if self.diverged.is_some() {
            return fallback;
        }
        for (id, task) in ctx.tasks.iter().enumerate().skip(self.indexed) {
            self.by_name.entry(task.name.clone()).or_default().push(id);
        }
        self.indexed = ctx.tasks.len();
        loop {
            if let Some((t, left)) = self.current {
                if ctx.runnable.binary_search(&t).is_err() {
                    if self.lenient {
                        self.current = None;
                        continue;
                    }
                    return self.diverge(ctx, fallback);
                }
                self.current = (left > 1).then_some((t, left - 1));
                return t;
            }
            let Some(seg) = self.segments.get(self.index) else {
                return fallback;
            };
            self.index += 1;
            if seg.steps == 0 {
                continue;
            }
            let lenient = self.lenient;
            // The first runnable task, by id, of the segment's name (and
            // point).
            let found = self.by_name.get(&seg.task).and_then(|ids| {
                ids.iter().copied().find(|&t| {
                    ctx.runnable.binary_search(&t).is_ok()
                        && (lenient || ctx.tasks[t].pending.label == seg.at)
                })
            });
            match found {
                Some(t) => self.current = Some((t, seg.steps)),
                None if lenient => continue,
                None => return self.diverge(ctx, fallback),
            }
        }
    }

    fn diverge(&mut self, ctx: &PickCtx<'_>, fallback: TaskId) -> TaskId {
        self.diverged = Some(ctx.step + 1);
        fallback
    }
}

pub(crate) struct Pct {
    rng: ChaCha8Rng,
    /// Priority per task id; higher runs first.
    priority: Vec<u64>,
    /// Choice points (scheduling points with two or more runnable tasks)
    /// where the task about to run drops, with the low priority it gets.
    change_points: Vec<(u64, u64)>,
    choice_step: u64,
    depth: u32,
    /// Change points reached so far.
    fired: u32,
}

fn rng_for(seed: u64, iteration: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(iteration);
    rng
}

impl Chooser {
    pub(crate) fn new(schedule: &Schedule, lenient: bool) -> Chooser {
        match schedule {
            Schedule::Random { seed, iteration } => Chooser::Random(rng_for(*seed, *iteration)),
            Schedule::Pct {
                seed,
                iteration,
                depth,
                steps_hint,
            } => {
                let mut rng = rng_for(*seed, *iteration);
                let depth = (*depth).max(1);
                let k = (*steps_hint).max(1);
                let change_points = (1..depth as u64)
                    .map(|j| (rng.random_range(1..=k), j))
                    .collect();
                Chooser::Pct(Pct {
                    rng,
                    priority: Vec::new(),
                    change_points,
                    choice_step: 0,
                    depth,
                    fired: 0,
                })
            }
            Schedule::Fair => Chooser::Fair,
            Schedule::Choices(prefix) => Chooser::Choices(Explicit {
                prefix: prefix.clone(),
                pos: 0,
                log: Vec::new(),
                diverged: None,
            }),
            Schedule::Segments(segments) => Chooser::Segments(Segments {
                segments: segments.clone(),
                index: 0,
                current: None,
                diverged: None,
                lenient,
                by_name: Default::default(),
                indexed: 0,
            }),
        }
    }

    /// The step where an explicit schedule stopped fitting, if it did.
    pub(crate) fn diverged_step(&self) -> Option<u64> {
        match self {
            Chooser::Segments(s) => s.diverged,
            _ => None,
        }
    }

    /// The task to run next. The random strategy needs only the runnable
    /// list; the others get the whole context, built for them alone (the
    /// common step then builds none).
    #[inline]
    pub(crate) fn pick<'a>(
        &mut self,
        ctx: impl FnOnce() -> PickCtx<'a>,
        runnable: &[TaskId],
    ) -> TaskId {
        if runnable.len() == 1 && self.skips_forced_steps() {
            return runnable[0];
        }
        match self {
            Chooser::Random(rng) => runnable[index_below(rng, runnable.len())],
            Chooser::Pct(p) => p.pick(runnable),
            Chooser::Fair => fair_pick(&ctx()),
            // Segments and explicit choices see every step, even those
            // without a choice.
            Chooser::Segments(s) => s.pick(&ctx()),
            Chooser::Choices(e) => e.pick(&ctx()),
            Chooser::Dpor(d) => d.pick(&ctx()),
        }
    }

    /// Whether a step with one runnable task is decided without asking the
    /// strategy (it draws nothing and counts nothing there).
    #[inline]
    fn skips_forced_steps(&self) -> bool {
        matches!(self, Chooser::Random(_) | Chooser::Pct(_) | Chooser::Fair)
    }

    /// The recorded choice points of an explicit-choice run.
    /// Also what a search execution saw of its steps.
    pub(crate) fn take_log(&mut self) -> (Vec<ChoicePoint>, Option<usize>, Option<RunLog>) {
        match self {
            Chooser::Choices(e) => (std::mem::take(&mut e.log), e.diverged, None),
            Chooser::Dpor(d) => {
                let (choices, log) = d.take_log();
                (choices, None, Some(log))
            }
            _ => (Vec::new(), None, None),
        }
    }
}

/// A uniform index below `n`: the very value `rng.random_range(0..n)`
/// draws (rand 0.9's single-sample method for ranges that fit 32 bits:
/// one widening multiply, and a second word only in the rare biased case),
/// written out because a step cannot afford the generic path. The test
/// `index_below_draws_what_random_range_draws` holds the two together.
#[inline]
pub(crate) fn index_below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    debug_assert!(n > 0 && n <= u32::MAX as usize);
    let range = n as u32;
    let wide = u64::from(rng.next_u32()) * u64::from(range);
    let (mut index, low) = ((wide >> 32) as u32, wide as u32);
    if low > range.wrapping_neg() {
        let carry = (u64::from(rng.next_u32()) * u64::from(range)) >> 32;
        index += low.checked_add(carry as u32).is_none() as u32;
    }
    index as usize
}

/// The discrete-event order: earliest clock first; on a tie keep running
/// the same task, else the lowest id.
fn fair_pick(ctx: &PickCtx<'_>) -> TaskId {
    let mut best = ctx.runnable[0];
    for &t in ctx.runnable {
        let (ct, cb) = (ctx.tasks[t].clock, ctx.tasks[best].clock);
        if ct < cb || (ct == cb && Some(t) == ctx.last) {
            best = t;
        }
    }
    best
}

impl Pct {
    fn priority_of(&mut self, t: TaskId) -> u64 {
        while self.priority.len() <= t {
            // New tasks get a random priority above every change-point level.
            let p = self.depth as u64 + 1 + self.rng.random_range(0..1u64 << 40);
            self.priority.push(p);
        }
        self.priority[t]
    }

    /// PCT's step: the runnable task of highest priority runs. At the
    /// i-th change point (counted in choice points, the only steps PCT
    /// sees) the task that would run drops to priority i first, so every
    /// change point an execution reaches takes effect, as the algorithm
    /// requires for its bound; change points drawn at the same step apply
    /// one after another.
    fn pick(&mut self, runnable: &[TaskId]) -> TaskId {
        self.choice_step += 1;
        let mut best = self.highest(runnable);
        for i in 0..self.change_points.len() {
            let (at, level) = self.change_points[i];
            if at == self.choice_step {
                self.priority[best] = level;
                self.fired += 1;
                best = self.highest(runnable);
            }
        }
        best
    }

    fn highest(&mut self, runnable: &[TaskId]) -> TaskId {
        let mut best = runnable[0];
        let mut best_p = self.priority_of(best);
        for &t in &runnable[1..] {
            let p = self.priority_of(t);
            if p > best_p {
                best = t;
                best_p = p;
            }
        }
        best
    }
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
                    let Chooser::Pct(mut pct) = Chooser::new(&schedule, false) else {
                        unreachable!("a PCT schedule makes a PCT chooser");
                    };
                    // Three tasks, the runnable set changing as tasks
                    // block and come back.
                    for step in 0..hint {
                        let runnable: &[TaskId] = match step % 3 {
                            0 => &[0, 1, 2],
                            1 => &[1, 2],
                            _ => &[0, 2],
                        };
                        let t = pct.pick(runnable);
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

    #[test]
    fn index_below_draws_what_random_range_draws() {
        for seed in 0..64u64 {
            let (mut ours, mut theirs) = (rng_for(seed, seed / 3), rng_for(seed, seed / 3));
            for i in 0..2000usize {
                // Small ranges, as runnable sets are, and a few huge ones,
                // where the second word is drawn often.
                let n = if i % 97 == 0 {
                    u32::MAX as usize - i
                } else {
                    1 + i % 9
                };
                assert_eq!(index_below(&mut ours, n), theirs.random_range(0..n));
            }
        }
    }
}
