//! The runnable tasks of an execution, ascending by id.
//!
//! Most strategies read the whole list at every choice point (PCT looks
//! at every runnable task's priority, `fair` at every clock, the replays
//! and the search look tasks up in it), and for them it is a sorted
//! vector. The random strategy only needs its length and its k-th task:
//! once many tasks are runnable, its queue keeps them in a Fenwick tree
//! over task ids instead, so that a task blocking, waking or exiting
//! costs O(log n) rather than moving every id after it, and one step's
//! time does not grow with the number of tasks. Either way the k-th task
//! is the same, and so is every schedule.

use crate::TaskId;

/// Below this length a list is updated without data-dependent branches:
/// which task blocks or wakes is as random as the schedule, and a
/// mispredicted branch costs more than touching a few ids.
const SHORT_LIST: usize = 32;

/// From this length an indexable queue moves to its tree.
const TREE_FROM: usize = 1024;

pub(crate) struct RunQueue {
    /// The runnable ids, ascending (empty once `tree` holds them).
    list: Vec<TaskId>,
    /// The length from which the ids move to a tree: [`TREE_FROM`] when
    /// the strategy reads only the length and the k-th task, else never.
    tree_from: usize,
    tree: Option<IdTree>,
    /// How many tasks are runnable, kept beside the list or tree: a pick
    /// reads it two or three times, a change of state writes it once.
    len: usize,
    /// Counts the changes to the queue: a strategy may keep what it worked
    /// out from the queue while the count stays the same.
    version: u64,
}

impl RunQueue {
    pub(crate) fn new(indexable: bool) -> RunQueue {
        RunQueue {
            list: Vec::new(),
            tree_from: tree_from(indexable),
            tree: None,
            len: 0,
            version: 0,
        }
    }

    /// The count of changes so far: equal counts, the same tasks.
    #[inline]
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Keep `len` after a change, and count the change.
    #[inline(always)]
    fn recount(&mut self) {
        self.version += 1;
        self.len = match &self.tree {
            None => self.list.len(),
            Some(t) => t.len,
        };
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `k`-th runnable task (from 0, ascending); `k < len()`.
    #[inline]
    pub(crate) fn select(&self, k: usize) -> TaskId {
        match &self.tree {
            None => self.list[k],
            Some(t) => t.select(k),
        }
    }

    /// The whole list, for a strategy that reads it: one whose queue is
    /// not indexable, so the list is never in a tree.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[TaskId] {
        debug_assert!(self.tree.is_none(), "the list of an indexable queue");
        &self.list
    }

    /// A strategy that reads the whole list takes over (the search's, set
    /// up after the execution's first strategy).
    pub(crate) fn set_indexable(&mut self, indexable: bool) {
        self.tree_from = tree_from(indexable);
        if let (false, Some(t)) = (indexable, self.tree.take()) {
            self.list = t.members().collect();
        }
    }

    /// Add `t`, absent from the queue.
    #[inline]
    pub(crate) fn insert(&mut self, t: TaskId) {
        match &mut self.tree {
            Some(tree) => tree.insert(t),
            None => {
                insert_sorted(&mut self.list, t);
                self.grow_tree();
            }
        }
        self.recount();
    }

    /// Add `t`, a new task, greater than every id in the queue.
    #[inline]
    pub(crate) fn push_new(&mut self, t: TaskId) {
        match &mut self.tree {
            Some(tree) => tree.insert(t),
            None => {
                debug_assert!(self.list.last().is_none_or(|&l| l < t));
                self.list.push(t);
                self.grow_tree();
            }
        }
        self.recount();
    }

    /// Remove `t`, if it is in the queue.
    #[inline]
    pub(crate) fn remove(&mut self, t: TaskId) {
        match &mut self.tree {
            Some(tree) => tree.remove(t),
            None => remove_sorted(&mut self.list, t),
        }
        self.recount();
    }

    /// Move to the tree once the list is long enough: the test inline,
    /// the move (once an execution) out of the way.
    #[inline(always)]
    fn grow_tree(&mut self) {
        if self.list.len() >= self.tree_from {
            self.move_to_tree();
        }
    }

    #[cold]
    #[inline(never)]
    fn move_to_tree(&mut self) {
        self.tree = Some(IdTree::of(&std::mem::take(&mut self.list)));
    }
}

fn tree_from(indexable: bool) -> usize {
    if indexable {
        TREE_FROM
    } else {
        usize::MAX
    }
}

/// Insert `t` into the ascending list `v` (absent from it).
#[inline]
fn insert_sorted(v: &mut Vec<TaskId>, t: TaskId) {
    if v.len() >= SHORT_LIST {
        let i = v.binary_search(&t).unwrap_or_else(|i| i);
        v.insert(i, t);
        return;
    }
    // One compare-exchange pass from the end carries `t` to its place.
    v.push(t);
    let ids = v.as_mut_slice();
    for i in (1..ids.len()).rev() {
        let (a, b) = (ids[i - 1], ids[i]);
        ids[i - 1] = a.min(b);
        ids[i] = a.max(b);
    }
}

/// Remove `t` from the ascending list `v`, if it is there.
#[inline]
fn remove_sorted(v: &mut Vec<TaskId>, t: TaskId) {
    if v.len() >= SHORT_LIST {
        if let Ok(i) = v.binary_search(&t) {
            v.remove(i);
        }
        return;
    }
    // Keep every id but `t`, in order.
    let ids = v.as_mut_slice();
    let mut kept = 0;
    for i in 0..ids.len() {
        let x = ids[i];
        ids[kept.min(i)] = x;
        kept += usize::from(x != t);
    }
    v.truncate(kept);
}

/// A set of task ids as a Fenwick tree of counts (and a bitmap of
/// members): insert, remove and the k-th smallest in O(log n).
struct IdTree {
    /// `counts[i]` (1-based) counts the members among the ids
    /// `i - lowbit(i) .. i` (id = index - 1).
    counts: Vec<u32>,
    member: Vec<u64>,
    /// A power of two: the ids below it fit.
    cap: usize,
    len: usize,
}

impl IdTree {
    fn of(ids: &[TaskId]) -> IdTree {
        let top = ids.last().map_or(0, |&t| t + 1);
        let mut tree = IdTree::with_capacity(top);
        for &t in ids {
            tree.insert(t);
        }
        tree
    }

    fn with_capacity(ids: usize) -> IdTree {
        let cap = ids.max(64).next_power_of_two();
        IdTree {
            counts: vec![0; cap + 1],
            member: vec![0; cap / 64],
            cap,
            len: 0,
        }
    }

    fn contains(&self, t: TaskId) -> bool {
        t < self.cap && self.member[t / 64] & (1 << (t % 64)) != 0
    }

    fn insert(&mut self, t: TaskId) {
        if t >= self.cap {
            // Rebuilt twice as large, or more: amortised O(1) per task.
            let mut bigger = IdTree::with_capacity(t + 1);
            for m in self.members() {
                bigger.insert(m);
            }
            *self = bigger;
        }
        if self.contains(t) {
            return;
        }
        self.member[t / 64] |= 1 << (t % 64);
        self.len += 1;
        let mut i = t + 1;
        while i <= self.cap {
            self.counts[i] += 1;
            i += i & i.wrapping_neg();
        }
    }

    fn remove(&mut self, t: TaskId) {
        if !self.contains(t) {
            return;
        }
        self.member[t / 64] &= !(1 << (t % 64));
        self.len -= 1;
        let mut i = t + 1;
        while i <= self.cap {
            self.counts[i] -= 1;
            i += i & i.wrapping_neg();
        }
    }

    /// The `k`-th smallest member (from 0): descend the tree, skipping
    /// every subtree with too few members.
    fn select(&self, k: usize) -> TaskId {
        debug_assert!(k < self.len);
        let (mut pos, mut left) = (0, k as u32 + 1);
        let mut step = self.cap;
        while step > 0 {
            let next = pos + step;
            if next <= self.cap && self.counts[next] < left {
                pos = next;
                left -= self.counts[next];
            }
            step >>= 1;
        }
        // `pos` members' ids are below the answer: index pos + 1, id pos.
        pos
    }

    fn members(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.member.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| w * 64 + b)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The tree answers as the sorted list does, through inserts, removes
    /// and growth, for any length.
    #[test]
    fn the_tree_selects_what_the_sorted_list_holds() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (mut list, mut tree) = (RunQueue::new(false), RunQueue::new(true));
        let mut next = 0;
        for round in 0..20_000 {
            if rng.random_bool(0.55) || list.is_empty() {
                if rng.random_bool(0.5) || next == 0 {
                    list.push_new(next);
                    tree.push_new(next);
                    next += 1 + rng.random_range(0..3);
                } else {
                    let t = rng.random_range(0..next);
                    let present = (0..list.len()).any(|k| list.select(k) == t);
                    if !present {
                        list.insert(t);
                        tree.insert(t);
                    }
                }
            } else {
                let t = list.select(rng.random_range(0..list.len()));
                list.remove(t);
                tree.remove(t);
                // Removing an absent task changes nothing.
                tree.remove(t);
            }
            assert_eq!(tree.len(), list.len(), "round {round}");
            if round % 97 == 0 || list.len() < 3 {
                for k in 0..list.len() {
                    assert_eq!(tree.select(k), list.select(k), "round {round}, k {k}");
                }
            }
        }
        assert!(tree.tree.is_some(), "the test reached the tree");
        tree.set_indexable(false);
        assert_eq!(tree.as_slice(), list.as_slice());
    }
}
