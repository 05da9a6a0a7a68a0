//! `struct uid_gid_map` in the three layouts of kernel history, and the
//! lock-free lookups (`map_id_range_down`, `map_id_down`, `map_id_up`).
//!
//! Models kernel/user_namespace.c and include/linux/user_namespace.h.
//!
//! * [`Layout::Inline5`]: before v4.15, `nr_extents` and five extents
//!   inline in one cache line; linear scan.
//! * [`Layout::Sorted340`]: v4.15 (`idmap-340-extents`), five inline
//!   extents, or up to 340 in a heap `forward` array sorted by `first` and
//!   a `reverse` copy sorted by `lower_first`; binary search above five.
//! * [`Layout::Proposal2017`]: the 2017 proposal (never merged): three
//!   inline extents, then a direct block of five, an indirect block of
//!   eight blocks and a double-indirect block of eight indirect blocks;
//!   368 extents at most, linear scan through the blocks.
//!
//! Publication: the writer fills the extents, then stores `nr_extents`
//! with release ordering (the kernel's `smp_wmb`); readers load
//! `nr_extents` with acquire ordering (`smp_rmb`) and read no further than
//! it. The extent words are plain memory in the kernel; here they are
//! [`DataCell`]s: real atomics under loom (so loom sees what a reader may
//! observe) and free of scheduling points otherwise (the store of
//! `nr_extents` is the one linearisation point the simulator schedules).

use sync::{AtomicU32, Ordering};

#[cfg(loom)]
use loom::sync::atomic::AtomicU32 as DataCell;
#[cfg(not(loom))]
use std::sync::atomic::AtomicU32 as DataCell;

/// `UID_GID_MAP_MAX_BASE_EXTENTS`: extents kept inline.
pub const MAX_BASE_EXTENTS: usize = 5;
/// `UID_GID_MAP_MAX_EXTENTS` from v4.15.
pub const MAX_EXTENTS_340: usize = 340;
/// Extents the 2017 proposal could hold: 3 + 5 + 8·5 + 8·8·5.
pub const MAX_EXTENTS_2017: usize = 3 + 5 + 8 * 5 + 8 * 8 * 5;
/// What lookups return for an unmapped id (`(u32) -1`).
pub const UNMAPPED: u32 = u32::MAX;

/// How a map stores its extents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layout {
    /// Before v4.15: five inline extents.
    Inline5,
    /// The 2017 proposal: 3 inline, direct, indirect, double indirect.
    Proposal2017,
    /// v4.15: five inline, else sorted forward and reverse arrays of 340.
    Sorted340,
}

impl Layout {
    pub const ALL: [Layout; 3] = [Layout::Inline5, Layout::Proposal2017, Layout::Sorted340];

    /// `UID_GID_MAP_MAX_EXTENTS` of this layout.
    pub fn max_extents(self) -> usize {
        match self {
            Layout::Inline5 => MAX_BASE_EXTENTS,
            Layout::Proposal2017 => MAX_EXTENTS_2017,
            Layout::Sorted340 => MAX_EXTENTS_340,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Layout::Inline5 => "5 inline extents (before v4.15)",
            Layout::Proposal2017 => {
                "2017 proposal (3 inline + direct/indirect/double-indirect blocks, 368)"
            }
            Layout::Sorted340 => "v4.15 (5 inline, else 340 sorted forward/reverse, binary search)",
        }
    }
}

/// `struct uid_gid_extent`: ids `[first, first+count)` inside the
/// namespace map to `[lower_first, lower_first+count)`. Once published,
/// `lower_first` is a kernel (initial-namespace) id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Extent {
    pub first: u32,
    pub lower_first: u32,
    pub count: u32,
}

impl Extent {
    pub const fn new(first: u32, lower_first: u32, count: u32) -> Self {
        Extent {
            first,
            lower_first,
            count,
        }
    }

    /// The last id of the upper range (the caller has checked it does not
    /// wrap).
    pub fn last(&self) -> u32 {
        self.first.wrapping_add(self.count).wrapping_sub(1)
    }

    pub fn lower_last(&self) -> u32 {
        self.lower_first.wrapping_add(self.count).wrapping_sub(1)
    }
}

impl std::fmt::Display for Extent {
    /// As a line of `/proc/PID/uid_map` reads, without the padding.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.first, self.lower_first, self.count)
    }
}

/// The extents as map lines joined by `; `.
pub fn show_extents(extents: &[Extent]) -> String {
    let lines: Vec<String> = extents.iter().map(Extent::to_string).collect();
    format!("[{}]", lines.join("; "))
}

/// One extent slot: three words written by the map writer before
/// publication.
struct ExtentCell {
    first: DataCell,
    lower_first: DataCell,
    count: DataCell,
}

impl ExtentCell {
    fn new() -> Self {
        ExtentCell {
            first: DataCell::new(0),
            lower_first: DataCell::new(0),
            count: DataCell::new(0),
        }
    }

    fn set(&self, e: &Extent) {
        self.first.store(e.first, Ordering::Relaxed);
        self.lower_first.store(e.lower_first, Ordering::Relaxed);
        self.count.store(e.count, Ordering::Relaxed);
    }

    fn get(&self) -> Extent {
        Extent {
            first: self.first.load(Ordering::Relaxed),
            lower_first: self.lower_first.load(Ordering::Relaxed),
            count: self.count.load(Ordering::Relaxed),
        }
    }
}

fn cells(n: usize) -> Box<[ExtentCell]> {
    (0..n).map(|_| ExtentCell::new()).collect()
}

/// A block of five extents (60 bytes in the proposal).
type Block = Box<[ExtentCell]>;
/// Eight pointers to blocks.
type IndirectBlock = Box<[Block]>;

/// The 2017 proposal's blocks beyond its three inline extents.
struct Blocks2017 {
    direct: Block,
    indirect: IndirectBlock,
    double_indirect: Box<[IndirectBlock]>,
}

const BLOCK: usize = 5;
const FANOUT: usize = 8;
const INLINE_2017: usize = 3;

impl Blocks2017 {
    fn new() -> Self {
        Blocks2017 {
            direct: cells(BLOCK),
            indirect: (0..FANOUT).map(|_| cells(BLOCK)).collect(),
            double_indirect: (0..FANOUT)
                .map(|_| (0..FANOUT).map(|_| cells(BLOCK)).collect())
                .collect(),
        }
    }

    /// The slot of extent `idx` (counted from the first non-inline one).
    fn slot(&self, idx: usize) -> &ExtentCell {
        if idx < BLOCK {
            return &self.direct[idx];
        }
        let idx = idx - BLOCK;
        if idx < FANOUT * BLOCK {
            return &self.indirect[idx / BLOCK][idx % BLOCK];
        }
        let idx = idx - FANOUT * BLOCK;
        let (outer, rest) = (idx / (FANOUT * BLOCK), idx % (FANOUT * BLOCK));
        &self.double_indirect[outer][rest / BLOCK][rest % BLOCK]
    }
}

/// How readers load `nr_extents` and the writer stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Publication {
    pub store: Ordering,
    pub load: Ordering,
}

impl Publication {
    /// The kernel's: `smp_wmb` before the store, `smp_rmb` after the load.
    pub const KERNEL: Publication = Publication {
        store: Ordering::Release,
        load: Ordering::Acquire,
    };
    /// Deliberately broken: no barriers.
    pub const RELAXED: Publication = Publication {
        store: Ordering::Relaxed,
        load: Ordering::Relaxed,
    };
}

/// `struct uid_gid_map`.
pub struct IdMap {
    layout: Layout,
    publication: Publication,
    nr_extents: AtomicU32,
    inline: [ExtentCell; MAX_BASE_EXTENTS],
    /// v4.15 layout: `forward` (by `first`) and `reverse` (by
    /// `lower_first`). Allocated with the map (the model has no allocation
    /// failure), published by `nr_extents` as the kernel's pointers are.
    forward: Box<[ExtentCell]>,
    reverse: Box<[ExtentCell]>,
    blocks: Option<Blocks2017>,
    /// What the writer meant to publish (for `idmap.published_whole`).
    committed: sim::HostMutex<Vec<Extent>>,
}

impl IdMap {
    pub fn new(layout: Layout, publication: Publication) -> Self {
        let heap = if layout == Layout::Sorted340 {
            MAX_EXTENTS_340
        } else {
            0
        };
        IdMap {
            layout,
            publication,
            nr_extents: AtomicU32::new("nr_extents", 0),
            inline: std::array::from_fn(|_| ExtentCell::new()),
            forward: cells(heap),
            reverse: cells(heap),
            blocks: (layout == Layout::Proposal2017).then(Blocks2017::new),
            committed: sim::HostMutex::new("an idmap's committed extents", Vec::new()),
        }
    }

    /// The initial namespace's map, `0 0 4294967295`.
    pub fn identity(layout: Layout) -> Self {
        let m = IdMap::new(layout, Publication::KERNEL);
        m.install(
            &[Extent::new(0, 0, u32::MAX)],
            &[Extent::new(0, 0, u32::MAX)],
        );
        m
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// `READ_ONCE(map->nr_extents)` followed by `smp_rmb()`.
    pub fn nr_extents(&self) -> u32 {
        self.nr_extents.load(self.publication.load)
    }

    /// `nr_extents` without a scheduling point (checkers, reports).
    pub fn peek_nr_extents(&self) -> u32 {
        self.nr_extents.peek()
    }

    /// Write the extents, then publish their number. `forward` is in the
    /// order lookups scan (sorted by `first` above five extents in the
    /// v4.15 layout); `reverse` is used by that layout above five only.
    /// The caller holds `userns_state_mutex` and has checked the map is
    /// empty.
    pub fn install(&self, forward: &[Extent], reverse: &[Extent]) {
        let n = forward.len();
        debug_assert!(n <= self.layout.max_extents());
        *self.committed.lock() = forward.to_vec();
        if self.publication == Publication::RELAXED && cfg!(not(loom)) {
            // Without barriers a weakly ordered CPU may make the count
            // visible before the extents; the simulator has no weak
            // memory, so it plays that order out, with a scheduling point
            // between the count and the extents.
            self.nr_extents.store(n as u32, Ordering::Relaxed);
            sim::point(
                "idmap: extents after the count",
                self.nr_extents.obj(),
                &sim::costs::STEP,
            );
            self.write_extents(forward, reverse);
            return;
        }
        self.write_extents(forward, reverse);
        self.nr_extents.store(n as u32, self.publication.store);
    }

    fn write_extents(&self, forward: &[Extent], reverse: &[Extent]) {
        let n = forward.len();
        match self.layout {
            Layout::Sorted340 if n > MAX_BASE_EXTENTS => {
                for (cell, e) in self.forward.iter().zip(forward) {
                    cell.set(e);
                }
                for (cell, e) in self.reverse.iter().zip(reverse) {
                    cell.set(e);
                }
            }
            _ => {
                for (i, e) in forward.iter().enumerate() {
                    self.slot(i).set(e);
                }
            }
        }
    }

    /// What the last writer meant to publish (empty before any write).
    pub fn peek_committed(&self) -> Vec<Extent> {
        self.committed.lock().clone()
    }

    /// The published extents without a scheduling point (checkers).
    pub fn peek_extents(&self) -> Vec<Extent> {
        self.extents_upto(self.peek_nr_extents() as usize)
    }

    /// [`IdMap::map_id_down`] without a scheduling point (checkers).
    pub fn peek_map_id_down(&self, id: u32) -> u32 {
        self.down_with(self.peek_nr_extents() as usize, id, 1)
    }

    /// [`IdMap::map_id_up`] without a scheduling point (checkers).
    pub fn peek_map_id_up(&self, kid: u32) -> u32 {
        self.up_with(self.peek_nr_extents() as usize, kid)
    }

    /// Slot `i` in scan order for the inline and 2017 layouts.
    fn slot(&self, i: usize) -> &ExtentCell {
        match (&self.blocks, self.layout) {
            (Some(b), Layout::Proposal2017) if i >= INLINE_2017 => b.slot(i - INLINE_2017),
            _ => &self.inline[i],
        }
    }

    /// Whether lookups of a map of `nr` extents use the heap arrays.
    fn uses_arrays(&self, nr: usize) -> bool {
        self.layout == Layout::Sorted340 && nr > MAX_BASE_EXTENTS
    }

    /// The published extents in scan (`forward`) order, as a reader sees
    /// them.
    pub fn extents(&self) -> Vec<Extent> {
        let nr = self.nr_extents() as usize;
        self.extents_upto(nr)
    }

    fn extents_upto(&self, nr: usize) -> Vec<Extent> {
        if self.uses_arrays(nr) {
            self.forward[..nr].iter().map(ExtentCell::get).collect()
        } else {
            (0..nr).map(|i| self.slot(i).get()).collect()
        }
    }

    /// The `reverse` array as a reader sees it (the forward order when
    /// the map has no reverse array).
    pub fn reverse_extents(&self) -> Vec<Extent> {
        let nr = self.nr_extents() as usize;
        if self.uses_arrays(nr) {
            self.reverse[..nr].iter().map(ExtentCell::get).collect()
        } else {
            self.extents_upto(nr)
        }
    }

    /// `map_id_range_down`: the kernel id of `[id, id+count)` if the
    /// whole range lies in one extent, else [`UNMAPPED`].
    pub fn map_id_range_down(&self, id: u32, count: u32) -> u32 {
        self.down_with(self.nr_extents() as usize, id, count)
    }

    fn down_with(&self, nr: usize, id: u32, count: u32) -> u32 {
        let last = id.wrapping_add(count).wrapping_sub(1);
        let found = if self.uses_arrays(nr) {
            bsearch(&self.forward[..nr], |e| {
                range_cmp(id, last, e.first, e.count)
            })
        } else {
            self.scan(nr, |e| id >= e.first && last <= e.last() && last >= id)
        };
        found.map_or(UNMAPPED, |e| id - e.first + e.lower_first)
    }

    /// `map_id_down`: one id.
    pub fn map_id_down(&self, id: u32) -> u32 {
        self.map_id_range_down(id, 1)
    }

    /// `map_id_up`: the namespace id of kernel id `kid`, or [`UNMAPPED`].
    pub fn map_id_up(&self, kid: u32) -> u32 {
        self.up_with(self.nr_extents() as usize, kid)
    }

    fn up_with(&self, nr: usize, kid: u32) -> u32 {
        let found = if self.uses_arrays(nr) {
            bsearch(&self.reverse[..nr], |e| {
                range_cmp(kid, kid, e.lower_first, e.count)
            })
        } else {
            self.scan(nr, |e| kid >= e.lower_first && kid <= e.lower_last())
        };
        found.map_or(UNMAPPED, |e| kid - e.lower_first + e.first)
    }

    /// Linear scan of the first `nr` slots.
    fn scan(&self, nr: usize, hit: impl Fn(&Extent) -> bool) -> Option<Extent> {
        (0..nr).map(|i| self.slot(i).get()).find(|e| hit(e))
    }
}

/// The bsearch comparator of the kernel: equal when `[id, last]` lies
/// inside `[first, first+count)`, less when it starts below, else greater.
fn range_cmp(id: u32, last: u32, first: u32, count: u32) -> std::cmp::Ordering {
    let extent_last = first.wrapping_add(count).wrapping_sub(1);
    if id >= first && last <= extent_last && last >= id {
        std::cmp::Ordering::Equal
    } else if id < first {
        std::cmp::Ordering::Less
    } else {
        std::cmp::Ordering::Greater
    }
}

/// Binary search where `key_vs(e)` compares the key with extent `e`.
fn bsearch(cells: &[ExtentCell], key_vs: impl Fn(&Extent) -> std::cmp::Ordering) -> Option<Extent> {
    let (mut lo, mut hi) = (0usize, cells.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let e = cells[mid].get();
        match key_vs(&e) {
            std::cmp::Ordering::Equal => return Some(e),
            std::cmp::Ordering::Less => hi = mid,
            std::cmp::Ordering::Greater => lo = mid + 1,
        }
    }
    None
}

#[cfg(not(loom))]
impl ExtentCell {
    fn name_state(&self, i: usize, h: &mut dyn std::hash::Hasher) {
        let e = self.get();
        // Slots never written are all zero: only the others are named.
        if e != Extent::new(0, 0, 0) {
            h.write_usize(i);
            h.write_u32(e.first);
            h.write_u32(e.lower_first);
            h.write_u32(e.count);
        }
    }
}

#[cfg(not(loom))]
impl IdMap {
    /// Name the map's state (`sim::Execution::name_state`): the published
    /// count and every slot written (a reader may see a slot beyond the
    /// count, or a slot's old words), and what the writer meant.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let IdMap {
            layout: _,
            publication: _,
            nr_extents,
            inline,
            forward,
            reverse,
            blocks,
            committed,
        } = self;
        h.write_u32(nr_extents.peek());
        let mut i = 0;
        let mut slot = |c: &ExtentCell| {
            c.name_state(i, h);
            i += 1;
        };
        inline
            .iter()
            .chain(forward.iter())
            .chain(reverse.iter())
            .for_each(&mut slot);
        if let Some(b) = blocks {
            b.direct.iter().for_each(&mut slot);
            b.indirect.iter().flatten().for_each(&mut slot);
            b.double_indirect
                .iter()
                .flatten()
                .flatten()
                .for_each(&mut slot);
        }
        let committed = committed.lock();
        h.write_usize(committed.len());
        for e in committed.iter() {
            h.write_u32(e.first);
            h.write_u32(e.lower_first);
            h.write_u32(e.count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed_map() -> Vec<Extent> {
        vec![
            Extent::new(999, 999, 1),
            Extent::new(1001, 1001, 1),
            Extent::new(0, 1_000_000, 999),
            Extent::new(1000, 1_001_000, 1),
            Extent::new(1002, 1_001_002, 999_998_998),
        ]
    }

    #[test]
    fn the_seed_map_translates_alike_in_every_layout() {
        for layout in Layout::ALL {
            let m = IdMap::new(layout, Publication::KERNEL);
            m.install(&seed_map(), &seed_map());
            assert_eq!(m.map_id_down(999), 999, "{layout:?}");
            assert_eq!(m.map_id_down(0), 1_000_000);
            assert_eq!(m.map_id_down(1000), 1_001_000);
            assert_eq!(m.map_id_up(1_001_003), 1003);
            assert_eq!(m.map_id_up(5), UNMAPPED);
            assert_eq!(m.map_id_range_down(998, 2), UNMAPPED);
        }
    }

    #[test]
    fn the_2017_layout_holds_368_extents_in_its_blocks() {
        let m = IdMap::new(Layout::Proposal2017, Publication::KERNEL);
        let all: Vec<Extent> = (0..MAX_EXTENTS_2017 as u32)
            .map(|i| Extent::new(i * 10, 50_000 + i * 10, 5))
            .collect();
        m.install(&all, &all);
        for i in 0..MAX_EXTENTS_2017 as u32 {
            assert_eq!(m.map_id_down(i * 10 + 4), 50_000 + i * 10 + 4);
            assert_eq!(m.map_id_down(i * 10 + 5), UNMAPPED);
        }
        assert_eq!(m.extents(), all);
    }

    #[test]
    fn an_empty_map_maps_nothing() {
        let m = IdMap::new(Layout::Sorted340, Publication::KERNEL);
        assert_eq!(m.map_id_down(0), UNMAPPED);
        assert_eq!(m.map_id_up(0), UNMAPPED);
        let init = IdMap::identity(Layout::Sorted340);
        assert_eq!(init.map_id_down(u32::MAX - 1), u32::MAX - 1);
        assert_eq!(init.map_id_down(u32::MAX), UNMAPPED);
    }
}
