//! Optimal dynamic partial-order reduction for `dfs`: source sets and
//! wakeup trees (Abdulla, Aronis, Jonsson and Sagonas, "Optimal dynamic
//! partial order reduction", POPL 2014; "Source sets: a foundation for
//! optimal dynamic partial order reduction", JACM 2017).
//!
//! Two executions are equivalent when one is the other with adjacent
//! independent steps swapped (the same Mazurkiewicz trace); steps are
//! dependent when their [footprints](crate::footprint) conflict. The
//! search runs one execution per trace: after each execution it finds the
//! races (two dependent steps of different tasks, the first ordered
//! directly before the second), and for each race whose reversal no
//! explored or planned execution covers, it plans the shortest execution
//! that reverses it, in the wakeup tree of the state before the first of
//! the two. A step's conflicts are looked up per object (its last write,
//! and the reads since when the step writes it), not among every step
//! before it. Sleep sets keep it from starting an execution equivalent to
//! one already explored. Executions are run from the start each time (the
//! scheduler keeps no states): a plan is the task to run at each step.
//!
//! Task identity is the task id, and a step is identified by its task and
//! its index among that task's steps. A step that wakes a task, or spawns
//! one, is ordered before that task's next step and is not in a race with
//! it: the woken step could not run first.
//!
//! The preemption bound applies on top: a planned execution whose first new
//! step would exceed it is dropped, and one that would exceed it later
//! continues without preemptions from there. Bounding loses the guarantee
//! that every trace is covered (a trace whose only representatives the
//! search would plan exceed the bound is not explored, although another of
//! its interleavings may fit the bound); with the bound unlimited the
//! search is complete and explores each trace once.

use crate::exec::ExecReport;
use crate::footprint::Footprint;
use crate::search::{trimmed_choices, DfsShard, ExploreReport, Split, SubtreeCount, SubtreeEnd};
use crate::strategy::dpor::{asleep_after, Plan};
use crate::strategy::RunLog;
use crate::token::Schedule;
use crate::TaskId;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A step of the current execution.
#[derive(Clone)]
struct Event {
    task: TaskId,
    fp: Footprint,
    /// Its index among its task's steps.
    local: u32,
    /// Its task's step before it.
    previous: Option<usize>,
    /// For each task, how many of its steps happen before this one or are
    /// it (a vector clock).
    clock: Vec<u32>,
    /// The step that woke or spawned this task since its previous step.
    enabler: Option<usize>,
}

/// Steps of the current execution to plan, in order. The last, `moved`,
/// is the second step of the race the sequence reverses: run before the
/// first step, it reads what that step had not written yet, so it may
/// touch other objects than it did here. Its footprint is taken to
/// conflict with everything, and no step is taken to commute with it or
/// to be free of it: the search then never takes a sequence for covered
/// that it is not sure of, and a run it plans that repeats an explored
/// one is cut short by the sleep sets that execution follows.
#[derive(Debug, Clone)]
struct Wakeup {
    steps: Vec<usize>,
    moved: usize,
}

/// A node of a wakeup tree: a step to run, with the footprint it had when
/// it was planned, and the steps planned after it.
#[derive(Debug, Clone)]
struct Node {
    task: TaskId,
    fp: Footprint,
    children: Vec<Node>,
}

/// The state before a step of the current execution.
#[derive(Clone)]
struct Level {
    runnable: Vec<TaskId>,
    last: Option<TaskId>,
    /// Tasks whose next step need not be tried here, with its footprint.
    sleep: Vec<(TaskId, Footprint)>,
    /// Planned branches not explored yet, after the one being explored.
    wut: Vec<Node>,
    preemptions_before: u32,
    /// Choice points (states with more than one runnable task) before it.
    choices_before: u32,
    /// In the top of the tree (see [`Split`]).
    top: bool,
}

impl Level {
    fn preempts(&self, t: TaskId) -> u32 {
        self.last.is_some_and(|l| l != t) as u32
    }

    fn is_choice(&self) -> bool {
        self.runnable.len() > 1
    }

    /// A top state tries every runnable task not asleep, after `taken`:
    /// the subtrees below it then need nothing from one another. Their
    /// first steps' footprints are not known yet: they conflict with
    /// everything, so that nothing planned later is taken for one of them
    /// (nothing is planned into a top state; see [`Search::insert`]).
    fn plan_every_task_but(&mut self, taken: TaskId, bound: u32) -> usize {
        let before = self.wut.len();
        for &t in &self.runnable {
            let planned = self.wut.iter().any(|n| n.task == t);
            let asleep = self.sleep.iter().any(|(q, _)| *q == t);
            let within = self.preemptions_before.saturating_add(self.preempts(t)) <= bound;
            if t != taken && !planned && !asleep && within {
                self.wut.push(Node {
                    task: t,
                    fp: Footprint::EVERYTHING,
                    children: Vec::new(),
                });
            }
        }
        self.wut.len() - before
    }
}

/// Where the next execution starts anew, and what it follows there.
#[derive(Clone)]
struct Resume {
    at: usize,
    level: Level,
    branch: Node,
}

/// The current execution, with the states before its steps.
#[derive(Default, Clone)]
struct Search {
    events: Vec<Event>,
    levels: Vec<Level>,
    accesses: Accesses,
    /// Where the top of the tree ends: every runnable task not asleep is
    /// tried there, so that the subtrees below it are searched apart.
    split: Split,
    /// Branches planned in the top so far, the current one included.
    planned: usize,
    /// The preemption bound (the top plans no branch past it).
    bound: u32,
    /// The states before this step are the top of the subtree being
    /// searched: fixed, never planned into, never backtracked to.
    floor: usize,
}

/// Which steps of the current execution touched each object: the steps a
/// new step conflicts with are found among the few that can matter, not
/// among every step before it.
#[derive(Default, Clone)]
struct Accesses {
    /// Per object, by id, the steps that touched it, ascending.
    by_object: Vec<Vec<usize>>,
    /// The same for the few objects with ids past `DENSE_IDS` (the
    /// scheduler's own, such as the table of objects).
    sparse: Vec<(u32, Vec<usize>)>,
    /// The steps that touched everything, ascending.
    everything: Vec<usize>,
}

/// Object ids below this are kept by index; models make objects in order
/// from 0, so those are all of them but the scheduler's own.
const DENSE_IDS: u32 = 1 << 20;

impl Accesses {
    fn steps(&self, obj: u32) -> &[usize] {
        if obj < DENSE_IDS {
            return self.by_object.get(obj as usize).map_or(&[], Vec::as_slice);
        }
        self.sparse
            .iter()
            .find(|(o, _)| *o == obj)
            .map_or(&[], |(_, steps)| steps.as_slice())
    }

    fn steps_mut(&mut self, obj: u32) -> &mut Vec<usize> {
        if obj < DENSE_IDS {
            let i = obj as usize;
            if self.by_object.len() <= i {
                self.by_object.resize_with(i + 1, Vec::new);
            }
            return &mut self.by_object[i];
        }
        let at = match self.sparse.iter().position(|(o, _)| *o == obj) {
            Some(at) => at,
            None => {
                self.sparse.push((obj, Vec::new()));
                self.sparse.len() - 1
            }
        };
        &mut self.sparse[at].1
    }

    fn push(&mut self, i: usize, fp: &Footprint) {
        if fp.everything {
            self.everything.push(i);
            return;
        }
        for &(obj, _) in &fp.objects {
            self.steps_mut(obj).push(i);
        }
    }

    /// Forget step `i`, the last one pushed.
    fn pop(&mut self, i: usize, fp: &Footprint) {
        if fp.everything {
            let popped = self.everything.pop();
            debug_assert_eq!(popped, Some(i));
            return;
        }
        for &(obj, _) in &fp.objects {
            let popped = self.steps_mut(obj).pop();
            debug_assert_eq!(popped, Some(i));
        }
    }

    /// The steps before `before` that a step with footprint `fp` may
    /// conflict with, latest first, such that every step before `before`
    /// it conflicts with is one of them or happens before one of them. Per
    /// object: its last write, and when `fp` writes it the reads since
    /// (an earlier access conflicts with that write, so it happens before
    /// it); the last step that touched everything (an earlier one conflicts
    /// with it). A step that touches everything may conflict with any.
    fn conflict_candidates<'a>(
        &self,
        fp: &Footprint,
        before: usize,
        events: &[Event],
        found: &'a mut Vec<usize>,
    ) -> Candidates<'a> {
        if fp.everything {
            return Candidates::All((0..before).rev());
        }
        // While an execution is added, every step listed is before.
        let earlier = |steps: &[usize]| match steps.last() {
            Some(&last) if last >= before => steps.partition_point(|&k| k < before),
            _ => steps.len(),
        };
        found.clear();
        found.extend(self.everything[..earlier(&self.everything)].last());
        for &(obj, writes) in &fp.objects {
            let steps = self.steps(obj);
            for &k in steps[..earlier(steps)].iter().rev() {
                let k_writes = events[k].fp.writes(obj);
                if writes || k_writes {
                    found.push(k);
                }
                if k_writes {
                    break;
                }
            }
        }
        found.sort_unstable_by(|a, b| b.cmp(a));
        found.dedup();
        Candidates::Some(found.iter())
    }
}

/// Steps to look at for conflicts, latest first.
enum Candidates<'a> {
    All(std::iter::Rev<std::ops::Range<usize>>),
    Some(std::slice::Iter<'a, usize>),
}

impl Iterator for Candidates<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            Candidates::All(steps) => steps.next(),
            Candidates::Some(steps) => steps.next().copied(),
        }
    }
}

impl Search {
    fn happens_before(&self, i: usize, j: usize) -> bool {
        let e = &self.events[i];
        i < j && self.events[j].clock.get(e.task).copied().unwrap_or(0) > e.local
    }

    /// Add the steps of a finished execution from `from` on (the steps
    /// before it are those of the previous execution).
    fn extend(
        &mut self,
        log: &RunLog,
        footprints: &[(TaskId, Footprint)],
        resume: Option<Resume>,
    ) -> usize {
        let from = resume.as_ref().map_or(0, |r| r.at);
        let end = log.blocked.unwrap_or(log.steps.len()).min(log.steps.len());
        let mut locals: Vec<u32> = Vec::new();
        let mut last_of: Vec<Option<usize>> = Vec::new();
        for (i, e) in self.events.iter().enumerate() {
            grow(&mut locals, e.task + 1, 0);
            grow(&mut last_of, e.task + 1, None);
            locals[e.task] += 1;
            last_of[e.task] = Some(i);
        }
        let mut path: Option<Node> = None;
        let mut resume = resume;
        let mut scratch = Vec::new();
        for m in from..end {
            let seen = &log.steps[m];
            let t = seen.task;
            let fp = footprints
                .get(m)
                .map(|(task, f)| {
                    debug_assert_eq!(*task, t);
                    f.clone()
                })
                .unwrap_or_else(|| Footprint::of_point(crate::ObjId::NONE, false, false));
            grow(&mut locals, t + 1, 0);
            grow(&mut last_of, t + 1, None);
            let previous = last_of[t];
            // The last step before which the task was not runnable woke
            // or spawned it.
            let enabler = (previous.map_or(0, |p| p + 1)..m)
                .rev()
                .find(|&k| log.steps[k].runnable.binary_search(&t).is_err());
            let mut clock = previous.map_or_else(Vec::new, |p| self.events[p].clock.clone());
            if let Some(k) = enabler {
                join(&mut clock, &self.events[k].clock);
            }
            // Latest first: a step the clock already covers happens before
            // one joined already, so its own clock adds nothing.
            for k in self
                .accesses
                .conflict_candidates(&fp, m, &self.events, &mut scratch)
            {
                let e = &self.events[k];
                if e.task != t && !covers(&clock, e) && e.fp.conflicts(&fp) {
                    join(&mut clock, &e.clock);
                }
            }
            grow(&mut clock, t + 1, 0);
            clock[t] = locals[t] + 1;
            let level = match resume.take() {
                Some(r) => {
                    path = Some(r.branch);
                    r.level
                }
                None => {
                    let (sleep, preemptions_before, choices_before, top) = match m.checked_sub(1) {
                        Some(p) => {
                            let (prev, ev) = (&self.levels[p], &self.events[p]);
                            (
                                asleep_after(&prev.sleep, ev.task, &ev.fp),
                                prev.preemptions_before + prev.preempts(ev.task),
                                prev.choices_before + prev.is_choice() as u32,
                                prev.top,
                            )
                        }
                        None => (Vec::new(), 0, 0, true),
                    };
                    let top = top
                        && choices_before < self.split.choices
                        && self.planned < self.split.subtrees;
                    // The planned branches below the one being explored.
                    let mut wut = Vec::new();
                    if let Some(node) = path.take() {
                        if m < log.followed && !node.children.is_empty() {
                            let mut children = node.children;
                            let first = children.remove(0);
                            wut = children;
                            path = Some(first);
                        } else if m == log.followed {
                            wut = node.children;
                        }
                    }
                    let mut level = Level {
                        runnable: seen.runnable.clone(),
                        last: seen.last,
                        sleep,
                        wut,
                        preemptions_before,
                        choices_before,
                        top,
                    };
                    if top && level.is_choice() {
                        self.planned += level.plan_every_task_but(t, self.bound);
                    }
                    level
                }
            };
            self.levels.push(level);
            self.accesses.push(m, &fp);
            self.events.push(Event {
                task: t,
                fp,
                local: locals[t],
                previous,
                clock,
                enabler,
            });
            locals[t] += 1;
            last_of[t] = Some(m);
        }
        from
    }

    /// Find the races whose second step is at `from` or later, and plan
    /// their reversals; under a finite preemption bound, also the second
    /// step's task where the first step's task was switched to.
    fn races(&mut self, from: usize, bounded: bool) {
        let n = self.events.len();
        for j in from..n {
            for i in self.direct_races(j) {
                self.reverse(i, j, bounded);
                if bounded {
                    self.switch_earlier(i, j);
                }
            }
        }
    }

    /// The steps in a race with step `j`, ascending: dependent steps of
    /// other tasks that happen before no other step `j` depends on (nor
    /// before the step of its task before it, nor before the step that
    /// enabled it). Walked latest first: a step the steps found so far
    /// cover happens before one of them, so it is not in a direct race.
    fn direct_races(&self, j: usize) -> Vec<usize> {
        let ev = &self.events[j];
        let t = ev.task;
        let mut covered: Vec<u32> = Vec::new();
        for d in ev.previous.into_iter().chain(ev.enabler) {
            join(&mut covered, &self.events[d].clock);
        }
        let mut found = Vec::new();
        let mut scratch = Vec::new();
        for i in self
            .accesses
            .conflict_candidates(&ev.fp, j, &self.events, &mut scratch)
        {
            let e = &self.events[i];
            if e.task == t || Some(i) == ev.enabler || covers(&covered, e) {
                continue;
            }
            if e.fp.conflicts(&ev.fp) {
                found.push(i);
                join(&mut covered, &e.clock);
            }
        }
        found.reverse();
        found
    }

    /// Plan `notdep(i).j` from the state before step `i`, unless a task
    /// asleep there is a weak initial of it (an equivalent execution was
    /// explored). Bounded, only the steps of `notdep(i)` before `j`: the
    /// later ones would be followed in their order, each switch between
    /// tasks a preemption more, where a free continuation needs none.
    fn reverse(&mut self, i: usize, j: usize, bounded: bool) {
        let end = if bounded { j } else { self.events.len() };
        let mut v: Vec<usize> = (i + 1..end)
            .filter(|&k| !self.happens_before(i, k))
            .collect();
        v.push(j);
        let v = Wakeup { steps: v, moved: j };
        let covered = self.levels[i]
            .sleep
            .iter()
            .any(|(q, f)| self.weak_initial(&v, *q, f).is_some());
        if !covered {
            self.insert(i, v);
        }
    }

    /// Bounded search (after Coons, Musuvathi and McKinley, "Bounded
    /// partial-order reduction", OOPSLA 2013): the reversal of a race
    /// often needs a preemption before step `i`; running `j`'s task
    /// instead where `i`'s task was switched to costs none more than the
    /// current execution. Plan that one step there, if its task was
    /// runnable, is not asleep and not planned.
    fn switch_earlier(&mut self, i: usize, j: usize) {
        let ti = self.events[i].task;
        let q = self.events[j].task;
        let c = (0..=i)
            .rev()
            .find(|&c| self.levels[c].last != Some(ti))
            .unwrap_or(0);
        if c < self.floor
            || self.events[c].task == q
            || self.levels[c].runnable.binary_search(&q).is_err()
        {
            return;
        }
        let Some(k) = (c..self.events.len()).find(|&k| self.events[k].task == q) else {
            return;
        };
        let w = Wakeup {
            steps: vec![k],
            moved: k,
        };
        let covered = self.levels[c]
            .sleep
            .iter()
            .any(|(p, f)| self.weak_initial(&w, *p, f).is_some());
        if !covered {
            let mut wut = std::mem::take(&mut self.levels[c].wut);
            self.insert_into(&mut wut, w);
            self.levels[c].wut = wut;
        }
    }

    /// If task `p`, whose next step has footprint `fp`, is a weak initial
    /// of `w` (`w` can start with `p`'s step, or `p`'s step commutes with
    /// all of `w`), what is left of `w` after that step.
    fn weak_initial(&self, w: &Wakeup, p: TaskId, fp: &Footprint) -> Option<Wakeup> {
        let steps = &w.steps;
        match steps.iter().position(|&k| self.events[k].task == p) {
            Some(x) => {
                let first = steps[x];
                let free = if first == w.moved {
                    x == 0
                } else {
                    !steps[..x].iter().any(|&k| self.happens_before(k, first))
                };
                free.then(|| {
                    let mut rest = w.clone();
                    rest.steps.remove(x);
                    rest
                })
            }
            None => steps
                .iter()
                .all(|&k| k != w.moved && !fp.conflicts(&self.events[k].fp))
                .then(|| w.clone()),
        }
    }

    /// Insert `w` (steps of the current execution) into the wakeup tree of
    /// the state before step `at`: follow the branch being explored while
    /// it can start `w`, then the planned ones.
    fn insert(&mut self, at: usize, w: Wakeup) {
        let mut w = w;
        let mut m = at;
        while m < self.events.len() && !w.steps.is_empty() {
            let e = &self.events[m];
            match self.weak_initial(&w, e.task, &e.fp) {
                Some(rest) => {
                    w = rest;
                    m += 1;
                }
                None => {
                    // A top state already tries every task (a sequence
                    // starting with one tried or asleep there is covered).
                    if m < self.floor {
                        return;
                    }
                    let mut wut = std::mem::take(&mut self.levels[m].wut);
                    self.insert_into(&mut wut, w);
                    self.levels[m].wut = wut;
                    return;
                }
            }
        }
    }

    fn insert_into(&self, nodes: &mut Vec<Node>, w: Wakeup) {
        for node in nodes.iter_mut() {
            if let Some(rest) = self.weak_initial(&w, node.task, &node.fp) {
                if node.children.is_empty() || rest.steps.is_empty() {
                    return;
                }
                return self.insert_into(&mut node.children, rest);
            }
        }
        let mut chain: Option<Node> = None;
        for &k in w.steps.iter().rev() {
            let e = &self.events[k];
            let fp = if k == w.moved {
                Footprint::EVERYTHING
            } else {
                e.fp.clone()
            };
            chain = Some(Node {
                task: e.task,
                fp,
                children: chain.into_iter().collect(),
            });
        }
        nodes.extend(chain);
    }

    /// The next planned branch within the bound, from the deepest state
    /// that has one, above the floor and before step `skip_from` (the
    /// branches planned from there on are left); the current execution's
    /// steps after it are dropped.
    fn backtrack(&mut self, bound: u32, skip_from: usize) -> Option<Resume> {
        while self.levels.len() > self.floor {
            let mut level = self.levels.pop().expect("above the floor");
            let ev = self.events.pop().expect("a step per level");
            self.accesses.pop(self.events.len(), &ev.fp);
            if self.levels.len() >= skip_from {
                continue;
            }
            // The step explored here is asleep for every branch after it
            // (a branch of its task, planned where the execution left its
            // plan, repeats it).
            level.sleep.push((ev.task, ev.fp));
            while !level.wut.is_empty() {
                let branch = level.wut.remove(0);
                let asleep = level.sleep.iter().any(|(q, _)| *q == branch.task);
                let within = level
                    .preemptions_before
                    .saturating_add(level.preempts(branch.task))
                    <= bound;
                if asleep || !within {
                    continue;
                }
                return Some(Resume {
                    at: self.levels.len(),
                    level,
                    branch,
                });
            }
        }
        None
    }
}

fn grow<T: Clone>(v: &mut Vec<T>, len: usize, fill: T) {
    if v.len() < len {
        v.resize(len, fill);
    }
}

/// Whether the step `e` happens before (or is) one whose clock is `clock`.
fn covers(clock: &[u32], e: &Event) -> bool {
    clock.get(e.task).copied().unwrap_or(0) > e.local
}

fn join(into: &mut Vec<u32>, other: &[u32]) {
    grow(into, other.len(), 0);
    for (a, b) in into.iter_mut().zip(other) {
        *a = (*a).max(*b);
    }
}

/// Runs one execution of a plan, from any of the search's threads.
pub(crate) type DporRunFn<'a> = dyn Fn(Plan) -> ExecReport + Sync + 'a;

/// Which execution the unsharded search reports, as
/// [`merge_dfs_shards`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reported {
    /// The failure of this subtree: its shard's execution.
    Failure { subtree: u64 },
    /// The budget ran out: the search's first execution.
    First,
    /// The search was exhausted: the last execution of this subtree, its
    /// shard's execution.
    LastOf { subtree: u64 },
}

/// The unsharded search, from its shards' subtrees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Merged {
    pub executions: u64,
    pub exhausted: bool,
    /// The reported execution's index in the search.
    pub iteration: u64,
    pub reported: Reported,
}

/// What the unsharded search of at most `iterations` executions reports,
/// from the subtrees of all its shards: the subtrees are taken in order,
/// each with what the ones before it left of the budget, as one thread
/// searches them. Every subtree up to the one that ends the search must
/// be there once.
pub fn merge_dfs_shards(
    iterations: u64,
    subtrees: impl IntoIterator<Item = SubtreeCount>,
) -> Result<Merged, String> {
    let mut subtrees: Vec<SubtreeCount> = subtrees.into_iter().collect();
    subtrees.sort_by_key(|s| s.index);
    let iterations = iterations.max(1);
    let (mut before, mut last) = (0u64, None);
    for (i, s) in subtrees.iter().enumerate() {
        if s.index != i as u64 {
            return Err(if s.index < i as u64 {
                format!("subtree {} of the search was searched twice", s.index)
            } else {
                format!("subtree {i} of the search was searched by no shard")
            });
        }
        if s.end == SubtreeEnd::Failed && s.executions == 0 {
            return Err(format!("subtree {i} failed without an execution"));
        }
        let left = iterations.saturating_sub(before);
        let spent = match s.end {
            SubtreeEnd::Failed if s.executions <= left => {
                return Ok(Merged {
                    executions: before + s.executions,
                    exhausted: false,
                    iteration: before + s.executions - 1,
                    reported: Reported::Failure { subtree: s.index },
                })
            }
            SubtreeEnd::Failed | SubtreeEnd::Budget => true,
            SubtreeEnd::Searched => s.executions >= left,
        };
        if spent {
            return Ok(Merged {
                executions: iterations,
                exhausted: false,
                iteration: 0,
                reported: Reported::First,
            });
        }
        // Below the budget (else it was spent), so no overflow.
        before += s.executions;
        if s.executions > 0 {
            last = Some(s.index);
        }
    }
    let Some(subtree) = last else {
        return Err("no shard ran an execution of the search".into());
    };
    Ok(Merged {
        executions: before,
        exhausted: true,
        iteration: before - 1,
        reported: Reported::LastOf { subtree },
    })
}

impl Search {
    fn new(split: Split, bound: u32) -> Search {
        Search {
            split,
            bound,
            planned: 1,
            ..Search::default()
        }
    }

    /// The search with only the steps before `end` of the current
    /// execution.
    fn top_part(&self, end: usize) -> Search {
        let mut top = Search {
            events: self.events[..end].to_vec(),
            levels: self.levels[..end].to_vec(),
            accesses: Accesses::default(),
            split: self.split,
            planned: self.planned,
            bound: self.bound,
            floor: self.floor,
        };
        for (i, e) in top.events.iter().enumerate() {
            top.accesses.push(i, &e.fp);
        }
        top
    }

    /// The first state after the top of the current execution.
    fn top_end(&self) -> usize {
        self.levels
            .iter()
            .position(|l| !l.top)
            .unwrap_or(self.levels.len())
    }

    /// The plan of the next execution: the steps kept of the current one,
    /// then the branch planned where it resumes.
    fn plan(&self, resume: Option<&Resume>, bound: u32) -> Plan {
        let Some(r) = resume else {
            return Plan {
                tasks: Vec::new(),
                sleep_from: 0,
                sleep: Vec::new(),
                bound,
            };
        };
        let mut tasks: Vec<TaskId> = self.events.iter().map(|e| e.task).collect();
        let mut node = Some(&r.branch);
        while let Some(n) = node {
            tasks.push(n.task);
            node = n.children.first();
        }
        Plan {
            tasks,
            sleep_from: r.at,
            sleep: r.level.sleep.clone(),
            bound,
        }
    }
}

/// One execution of the search, run.
struct Ran {
    report: ExecReport,
    schedule: Schedule,
    log: RunLog,
    footprints: Vec<(TaskId, Footprint)>,
}

impl Ran {
    fn of(run: &DporRunFn<'_>, plan: Plan) -> Ran {
        let mut report = run(plan);
        let log = report.dpor.take().unwrap_or_default();
        let footprints = std::mem::take(&mut report.footprints);
        let schedule = Schedule::Choices(trimmed_choices(&report.choices));
        Ran {
            report,
            schedule,
            log,
            footprints,
        }
    }

    /// Every runnable task was asleep at one of its steps: from there it
    /// repeats explored executions, so it is not one of the search's (a
    /// failure still counts).
    fn cut_short(&self) -> bool {
        self.log.blocked.is_some() && !self.report.outcome.is_failure()
    }
}

/// The first execution below one path through the top of the tree, and
/// the search's state once it was added.
struct Subtree {
    search: Search,
    /// Where its first execution left the one before it.
    from: usize,
    first: (ExecReport, Schedule, bool),
}

impl Subtree {
    /// A subtree whose first execution ends the search.
    fn ended(first: (ExecReport, Schedule, bool)) -> Subtree {
        Subtree {
            search: Search::default(),
            from: 0,
            first,
        }
    }
}

/// What the search of one subtree (or of all of them) found.
#[derive(Default)]
struct Found {
    executions: u64,
    cut_short: u64,
    /// For each run cut short, the executions counted before it.
    cut_short_at: Vec<u64>,
    /// The failing execution, or the last one run.
    last: Option<(ExecReport, Schedule)>,
    failed: bool,
    /// It stopped at its budget without a failure.
    capped: bool,
}

impl Found {
    /// Count an execution (unless sleep sets cut it short); true when the
    /// search ends with it: a failure, or `cap` executions run.
    fn add(&mut self, report: ExecReport, schedule: Schedule, cut_short: bool, cap: u64) -> bool {
        if cut_short {
            self.cut_short += 1;
            self.cut_short_at.push(self.executions);
            return false;
        }
        self.executions += 1;
        self.failed = report.outcome.is_failure();
        self.capped = !self.failed && self.executions >= cap;
        self.last = Some((report, schedule));
        self.failed || self.capped
    }

    /// What the search would have found with at most `cap` executions: a
    /// search with more runs the same executions first, and one that ran
    /// past `cap` spent that budget (its last execution is not the one
    /// reported: a search whose budget runs out reports its first).
    fn within(mut self, cap: u64) -> Found {
        if self.executions <= cap {
            return self;
        }
        self.executions = cap;
        self.cut_short_at.retain(|&before| before < cap);
        self.cut_short = self.cut_short_at.len() as u64;
        self.failed = false;
        self.capped = true;
        self.last = None;
        self
    }

    /// How the search of this subtree ended, for a shard's report.
    fn end(&self) -> SubtreeEnd {
        if self.failed {
            SubtreeEnd::Failed
        } else if self.capped {
            SubtreeEnd::Budget
        } else {
            SubtreeEnd::Searched
        }
    }

    /// The memory limit was passed after the last execution.
    fn stop_at(&mut self, limit: crate::Outcome) {
        if let Some((report, _)) = &mut self.last {
            report.outcome = limit;
            self.failed = true;
        }
    }

    fn is_shared_resource_limit(&self) -> bool {
        self.last
            .as_ref()
            .is_some_and(|(r, _)| r.outcome.is_shared_resource_limit())
    }

    fn ended(self, exhausted: bool) -> ExploreReport {
        let (report, schedule) = self.last.expect("the first execution is counted");
        let mut r = ExploreReport::ended(self.executions, report, schedule, exhausted);
        r.cut_short = self.cut_short;
        r
    }
}

/// The top of the tree, enumerated in depth-first order one path at a
/// time: each path's first execution is the first of its subtree. Its
/// search holds only the top's states, so that a copy is small.
struct Top {
    search: Search,
    resume: Option<Resume>,
    /// Subtrees handed out so far.
    made: usize,
    /// Their first executions that count.
    counted: u64,
    done: bool,
}

impl Top {
    fn new(split: Split, bound: u32) -> Top {
        Top {
            search: Search::new(split, bound),
            resume: None,
            made: 0,
            counted: 0,
            done: false,
        }
    }

    /// The next subtree, with its index and the counted first executions
    /// before it; `None` once the top is enumerated, or once a first
    /// execution failed or the budget is spent by first executions alone.
    fn next(
        &mut self,
        iterations: u64,
        bound: u32,
        run: &DporRunFn<'_>,
    ) -> Option<(usize, Subtree, u64)> {
        if self.done {
            return None;
        }
        let ran = Ran::of(run, self.search.plan(self.resume.as_ref(), bound));
        let cut_short = ran.cut_short();
        let before = self.counted;
        self.counted += !cut_short as u64;
        let index = self.made;
        self.made += 1;
        if ran.report.outcome.is_failure() || self.counted >= iterations {
            // The search ends with this execution: its tree is not grown
            // from it (one stopped by a resource limit must not grow it
            // past the limit).
            self.done = true;
            let first = (ran.report, ran.schedule, cut_short);
            return Some((index, Subtree::ended(first), before));
        }
        let from = self
            .search
            .extend(&ran.log, &ran.footprints, self.resume.take());
        let top_end = self.search.top_end();
        // The subtree takes the execution; the top keeps its own states.
        let top = self.search.top_part(top_end);
        let mut below = std::mem::replace(&mut self.search, top);
        below.floor = top_end;
        // Below the top, no state is part of it.
        below.split.subtrees = 0;
        // The tree grows between executions, where no execution looks.
        if let Some(limit) = crate::search::memory_limit() {
            self.done = true;
            let mut report = ran.report;
            report.outcome = limit;
            return Some((index, Subtree::ended((report, ran.schedule, false)), before));
        }
        self.resume = self.search.backtrack(bound, top_end);
        self.done = self.resume.is_none();
        let subtree = Subtree {
            search: below,
            from,
            first: (ran.report, ran.schedule, cut_short),
        };
        Some((index, subtree, before))
    }
}

/// Search one subtree, with at most `cap` executions (lowered, from
/// another thread, once the subtrees before it are searched).
fn search_subtree(sub: Subtree, cap: &AtomicU64, bound: u32, run: &DporRunFn<'_>) -> Found {
    let Subtree {
        mut search,
        mut from,
        first: (report, schedule, cut_short),
    } = sub;
    let mut found = Found::default();
    if found.add(report, schedule, cut_short, cap.load(Ordering::Relaxed)) {
        return found;
    }
    let bounded = bound != u32::MAX;
    loop {
        // The search's tree grows between executions, where no execution
        // looks.
        if let Some(limit) = crate::search::memory_limit() {
            found.stop_at(limit);
            return found;
        }
        search.races(from, bounded);
        let Some(resume) = search.backtrack(bound, usize::MAX) else {
            return found;
        };
        let ran = Ran::of(run, search.plan(Some(&resume), bound));
        let cut_short = ran.cut_short();
        if found.add(
            ran.report,
            ran.schedule,
            cut_short,
            cap.load(Ordering::Relaxed),
        ) {
            return found;
        }
        from = search.extend(&ran.log, &ran.footprints, Some(resume));
    }
}

/// Explore every trace (within `bound` preemptions) with at most
/// `iterations` executions, on up to `jobs` threads.
///
/// The top of the tree ([`Split`]) is enumerated in full, with sleep
/// sets; below each path through it the search is optimal, and the
/// subtrees need nothing from one another, so that threads can search
/// them at once. What is reported is what a search of the subtrees one
/// after another, in depth-first order, finds: the failure of the first
/// subtree that fails, after the executions of the subtrees before it;
/// with the budget spent, the search's first execution (a subtree that
/// ran past what was left is cut there: its first executions are those a
/// search with the exact budget runs). The executions
/// are the same whatever the top's shape, one per trace when the bound is
/// unlimited (the test `crates/bench/tests/traces.rs` counts them at
/// several shapes).
pub(crate) fn search(
    iterations: u64,
    bound: u32,
    jobs: usize,
    split: Split,
    shard: Option<(u64, u64)>,
    run: &DporRunFn<'_>,
) -> ExploreReport {
    let mut searched = search_subtrees(iterations, bound, jobs, split, shard, run);
    if shard.is_some() {
        // A subtree stopped by a resource of the process that others held
        // is searched again alone, with the whole budget (a shard's budgets
        // need only be at least the unsharded ones).
        let beside = searched.beside;
        return shard_report(searched, &|index, found| {
            standing(Some(found), beside, || {
                search_again(index, iterations, iterations, bound, split, run)
            })
        });
    }
    let mut all = Found::default();
    for (i, slot) in searched.found.into_iter().enumerate() {
        let cap = iterations - all.executions;
        let found = standing(slot, searched.beside, || {
            search_again(i, cap, iterations, bound, split, run)
        })
        .within(cap);
        all.executions += found.executions;
        all.cut_short += found.cut_short;
        if found.last.is_some() {
            all.last = found.last;
        }
        if found.failed {
            return all.ended(false);
        }
        if all.executions >= iterations {
            let first = searched.first.take().expect("the first subtree is made");
            let mut r = ExploreReport::budget_spent(all.executions, first);
            r.cut_short = all.cut_short;
            return r;
        }
    }
    all.ended(true)
}

/// A subtree's search as it stands, or made `again` alone when it was not
/// searched, or a resource of the process that other threads held (they
/// ran `beside` it) stopped it.
fn standing(slot: Option<Found>, beside: bool, again: impl FnOnce() -> Found) -> Found {
    match slot {
        Some(f) if !(beside && f.is_shared_resource_limit()) => f,
        _ => again(),
    }
}

/// A shard's report: its subtrees' counts, and as its execution the
/// failure of the first of them that failed, else the last execution of
/// the last of them (else the search's first execution).
fn shard_report(searched: Searched, standing: &dyn Fn(usize, Found) -> Found) -> ExploreReport {
    let first = searched.first.expect("the first subtree is made");
    let mut subtrees = Vec::new();
    let (mut executions, mut cut_short) = (0, 0);
    let mut reported = None;
    for (index, found) in searched.found.into_iter().enumerate() {
        let Some(found) = found.filter(|_| index <= searched.last_wanted) else {
            continue;
        };
        let found = standing(index, found);
        let end = found.end();
        subtrees.push(SubtreeCount {
            index: index as u64,
            executions: found.executions,
            end,
        });
        executions += found.executions;
        cut_short += found.cut_short;
        reported = found.last.or(reported);
        if end != SubtreeEnd::Searched {
            break;
        }
    }
    let ended_early = subtrees
        .last()
        .is_some_and(|s| s.end != SubtreeEnd::Searched);
    let (report, schedule) = reported.unwrap_or_else(|| first.clone());
    let mut r = ExploreReport::ended(executions, report, schedule, !ended_early);
    r.cut_short = cut_short;
    r.dfs_shard = Some(DfsShard {
        subtrees,
        first: Box::new(first),
    });
    r
}

/// Subtree `index` searched alone with at most `cap` executions: made
/// again from the top as it was before it, or else from the start.
fn search_again(
    index: usize,
    cap: u64,
    iterations: u64,
    bound: u32,
    split: Split,
    run: &DporRunFn<'_>,
) -> Found {
    let mut top = Top::new(split, bound);
    loop {
        let (i, sub, _) = top
            .next(iterations, bound, run)
            .expect("the subtree was made before");
        if i == index {
            return search_subtree(sub, &AtomicU64::new(cap), bound, run);
        }
    }
}

/// Every subtree's search, in order (`None` where none was made).
struct Searched {
    found: Vec<Option<Found>>,
    /// Threads searched side by side.
    beside: bool,
    /// The search's first execution (of subtree 0).
    first: Option<(ExecReport, Schedule)>,
    /// No subtree after this one was wanted.
    last_wanted: usize,
}

/// Where the subtrees' searches stand, as threads report them.
struct Board {
    found: Vec<Option<Found>>,
    /// The subtrees before this one are searched.
    prefix: usize,
    /// And these are their executions.
    prefix_executions: u64,
    /// No subtree after this one is wanted: one failed, or the budget
    /// was spent before it.
    last_wanted: usize,
    /// The subtree of the prefix whose last execution is kept.
    kept: Option<usize>,
    /// The budgets of the subtrees being searched.
    running: BTreeMap<usize, Arc<AtomicU64>>,
    /// A shard's search: a subtree that ran out of budget ends it too
    /// (the budgets of a shard are at least the unsharded ones, and the
    /// unsharded search ends there at the latest).
    sharded: bool,
}

impl Board {
    fn put(&mut self, index: usize, found: Found, iterations: u64) {
        if self.found.len() <= index {
            self.found.resize_with(index + 1, || None);
        }
        if (found.failed && !found.is_shared_resource_limit()) || (self.sharded && found.capped) {
            self.last_wanted = self.last_wanted.min(index);
        }
        self.found[index] = Some(found);
        // Advance over the searched subtrees (a failure ends the run there,
        // or is past what the budget leaves it).
        while self.prefix_executions < iterations && self.prefix <= self.last_wanted {
            let Some(Some(f)) = self.found.get(self.prefix) else {
                break;
            };
            if f.failed {
                break;
            }
            let executions = f.executions;
            self.prefix_executions += executions;
            if executions > 0 {
                // Only the run's last execution is reported: an earlier
                // subtree's last one is dropped.
                if let Some(Some(before)) =
                    self.kept.replace(self.prefix).map(|k| &mut self.found[k])
                {
                    before.last = None;
                }
            }
            self.prefix += 1;
            if self.prefix_executions >= iterations {
                self.last_wanted = self.last_wanted.min(self.prefix - 1);
            }
        }
        // The next subtree's budget is now known: what is left; a subtree
        // after the last one wanted stops at once.
        if let Some(cap) = self.running.get(&self.prefix) {
            cap.store(
                iterations.saturating_sub(self.prefix_executions),
                Ordering::Relaxed,
            );
        }
        for (_, cap) in self.running.range(self.last_wanted.saturating_add(1)..) {
            cap.store(0, Ordering::Relaxed);
        }
    }

    /// The budget of subtree `index`: what its predecessors left, when
    /// they are all searched; else what their first executions left, at
    /// least as much (its result then stands where it ran no more
    /// executions than were left).
    fn cap(&self, index: usize, counted_before: u64, iterations: u64) -> u64 {
        if self.prefix == index {
            iterations.saturating_sub(self.prefix_executions)
        } else {
            iterations.saturating_sub(counted_before)
        }
    }
}

/// Each thread takes the next subtree from the top (enumerating it one
/// path further) and searches it, until the top is done or no later
/// subtree is wanted.
fn search_subtrees(
    iterations: u64,
    bound: u32,
    jobs: usize,
    split: Split,
    shard: Option<(u64, u64)>,
    run: &DporRunFn<'_>,
) -> Searched {
    let (k, n) = shard.unwrap_or((1, 1));
    let mine = |index: usize| crate::search::shard_of(index as u64, n) == k;
    use std::sync::Mutex;
    let jobs = jobs.clamp(1, crate::limits::JOBS.max as usize);
    let top = Mutex::new(Top::new(split, bound));
    let board = Mutex::new(Board {
        found: Vec::new(),
        prefix: 0,
        prefix_executions: 0,
        last_wanted: usize::MAX,
        kept: None,
        running: BTreeMap::new(),
        sharded: shard.is_some(),
    });
    let first = Mutex::new(None);
    let work = || {
        loop {
            let next = {
                let mut top = top.lock().unwrap_or_else(|e| e.into_inner());
                let last_wanted = board.lock().unwrap_or_else(|e| e.into_inner()).last_wanted;
                if top.made > last_wanted {
                    None
                } else {
                    top.next(iterations, bound, run)
                }
            };
            let Some((index, sub, counted_before)) = next else {
                break;
            };
            if index == 0 {
                let (report, schedule, _) = &sub.first;
                *first.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some((report.clone(), schedule.clone()));
            }
            if !mine(index) {
                // Another shard's: its first execution only extended the top.
                continue;
            }
            let cap = {
                let mut board = board.lock().unwrap_or_else(|e| e.into_inner());
                let cap = board.cap(index, counted_before, iterations).max(1);
                let cap = Arc::new(AtomicU64::new(cap));
                board.running.insert(index, Arc::clone(&cap));
                cap
            };
            let found = search_subtree(sub, &cap, bound, run);
            let mut board = board.lock().unwrap_or_else(|e| e.into_inner());
            board.running.remove(&index);
            board.put(index, found, iterations);
        }
    };
    let beside = crate::search::on_threads(jobs, "nssim-dfs", &work);
    let board = board.into_inner().unwrap_or_else(|e| e.into_inner());
    Searched {
        found: board.found,
        beside,
        first: first.into_inner().unwrap_or_else(|e| e.into_inner()),
        last_wanted: board.last_wanted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(index: u64, executions: u64, end: SubtreeEnd) -> SubtreeCount {
        SubtreeCount {
            index,
            executions,
            end,
        }
    }

    #[test]
    fn shards_that_are_not_one_search_do_not_merge() {
        use SubtreeEnd::*;
        let merge = |counts: &[SubtreeCount]| merge_dfs_shards(10, counts.iter().copied());
        let gap = merge(&[count(0, 1, Searched), count(2, 1, Searched)]);
        assert_eq!(
            gap.unwrap_err(),
            "subtree 1 of the search was searched by no shard"
        );
        let twice = merge(&[count(0, 1, Searched), count(0, 1, Searched)]);
        assert_eq!(
            twice.unwrap_err(),
            "subtree 0 of the search was searched twice"
        );
        let empty = merge(&[count(0, 0, Failed)]);
        assert_eq!(empty.unwrap_err(), "subtree 0 failed without an execution");
        assert!(merge(&[]).is_err());
        // A failure past what the budget leaves it is not reached.
        let late = merge(&[count(0, 6, Searched), count(1, 5, Failed)]).unwrap();
        assert_eq!(late.reported, Reported::First);
        assert_eq!((late.executions, late.exhausted), (10, false));
        let reached = merge(&[count(0, 6, Searched), count(1, 4, Failed)]).unwrap();
        assert_eq!(reached.reported, Reported::Failure { subtree: 1 });
        assert_eq!((reached.executions, reached.iteration), (10, 9));
        let whole = merge(&[count(0, 6, Searched), count(1, 0, Searched)]).unwrap();
        assert_eq!(whole.reported, Reported::LastOf { subtree: 0 });
        assert_eq!((whole.executions, whole.exhausted), (6, true));
    }
    use proptest::prelude::{any, prop_assert, prop_oneof, proptest, Just};
    use proptest::strategy::Strategy as Gen;

    /// A footprint: everything, nothing, or some of three objects and
    /// the scheduler's table, each read or written.
    fn footprint() -> impl Gen<Value = Footprint> {
        let objects = proptest::collection::vec(
            (
                prop_oneof![0u32..3, Just(crate::footprint::OBJECT_TABLE)],
                any::<bool>(),
            ),
            0..3,
        );
        prop_oneof![
            1 => Just(Footprint::of_point(crate::ObjId::NONE, false, false)),
            6 => objects.prop_map(|objects| {
                let mut f = Footprint::default();
                for (obj, write) in objects {
                    f.add(obj, write);
                }
                f
            }),
        ]
    }

    /// The clock of a step of `task` with footprint `fp` after `events`,
    /// from every step before it (the rule the candidates stand in for).
    fn clock_from_all(events: &[Event], task: TaskId, fp: &Footprint) -> Vec<u32> {
        let previous = events.iter().rposition(|e| e.task == task);
        let mut clock = previous.map_or_else(Vec::new, |p| events[p].clock.clone());
        for e in events {
            if e.task != task && e.fp.conflicts(fp) {
                join(&mut clock, &e.clock);
            }
        }
        clock
    }

    proptest! {
        /// Every step before that a new step conflicts with is a candidate
        /// or happens before one, so the clocks the search computes from
        /// the candidates are those computed from every step.
        #[test]
        fn candidates_stand_for_every_conflicting_step(
            steps in proptest::collection::vec((0usize..3, footprint()), 1..40),
        ) {
            let mut events: Vec<Event> = Vec::new();
            let mut accesses = Accesses::default();
            let mut scratch = Vec::new();
            for (m, (task, fp)) in steps.into_iter().enumerate() {
                let candidates: Vec<usize> = accesses
                    .conflict_candidates(&fp, m, &events, &mut scratch)
                    .collect();
                for (k, e) in events.iter().enumerate() {
                    if e.fp.conflicts(&fp) {
                        let stood_for = candidates
                            .iter()
                            .any(|&c| c == k || covers(&events[c].clock, e));
                        prop_assert!(stood_for, "step {k} conflicts with step {m}");
                    }
                }
                let mut clock = clock_from_all(&events, task, &fp);
                let local = events.iter().filter(|e| e.task == task).count() as u32;
                grow(&mut clock, task + 1, 0);
                clock[task] = local + 1;
                accesses.push(m, &fp);
                events.push(Event {
                    task,
                    fp,
                    local,
                    previous: events.iter().rposition(|e| e.task == task),
                    clock,
                    enabler: None,
                });
            }
            // Popped back to nothing, the lists are empty again.
            while let Some(e) = events.pop() {
                accesses.pop(events.len(), &e.fp);
            }
            prop_assert!(accesses.everything.is_empty());
            prop_assert!(accesses.by_object.iter().all(Vec::is_empty));
            prop_assert!(accesses.sparse.iter().all(|(_, steps)| steps.is_empty()));
        }
    }
}
