//! What a step touched: the dependency relation of exhaustive search.
//!
//! A step is everything a task does from one scheduling point to the next.
//! Its footprint is the object its scheduling point names, plus what the
//! scheduler and the primitives saw it touch on the way: the objects whose
//! waiters it woke, the locks it took or released, objects it freed or
//! looked up ([`crate::touch`]), objects a primitive declared with
//! [`crate::access`], the table of objects and tasks when it made one, and
//! the singletons woken when a task exits, when it was its task's last
//! step. Two steps of different tasks are dependent when their footprints
//! conflict: they touch a common object and at least one of them writes
//! it. A scheduling point that names no object ([`crate::ObjId::NONE`])
//! touches everything; a task's `start` touches nothing by itself.
//!
//! The relation is sound for models whose steps touch shared state only
//! through these: through the primitives, through the objects their
//! scheduling points name, or under a lock they hold (a lock's steps order
//! every critical section on it).

use crate::obj::ObjId;

/// The table of objects and tasks: making either numbers it (the ids of
/// later objects and tasks depend on the order), so every creation while
/// tasks run writes it.
pub(crate) const OBJECT_TABLE: u32 = u32::MAX - 1;
/// The list of singletons woken when a task exits: an exit reads it, and
/// making such a singleton writes it.
pub(crate) const EXIT_WAKES: u32 = u32::MAX - 2;

/// The objects one step touched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Footprint {
    /// The step's scheduling point named no object: it touches everything.
    pub everything: bool,
    /// Objects touched, ascending by id, each with whether the step wrote
    /// it (false: it only read it).
    pub objects: Vec<(u32, bool)>,
}

impl Footprint {
    /// A step that may touch anything: it conflicts with every step.
    pub(crate) const EVERYTHING: Footprint = Footprint {
        everything: true,
        objects: Vec::new(),
    };

    /// The footprint a step starts with: its scheduling point's object
    /// (`reads`: only read), nothing for a `local` step.
    pub(crate) fn of_point(obj: ObjId, local: bool, reads: bool) -> Footprint {
        let mut f = Footprint::default();
        if local {
        } else if obj == ObjId::NONE {
            f.everything = true;
        } else {
            f.objects.push((obj.0, !reads));
        }
        f
    }

    /// Record that the step touched `obj` (`write`: and changed it).
    pub(crate) fn add(&mut self, obj: u32, write: bool) {
        match self.objects.binary_search_by_key(&obj, |(o, _)| *o) {
            Ok(i) => self.objects[i].1 |= write,
            Err(i) => self.objects.insert(i, (obj, write)),
        }
    }

    /// Whether the step wrote `obj` (not only read it).
    pub(crate) fn writes(&self, obj: u32) -> bool {
        self.objects
            .binary_search_by_key(&obj, |(o, _)| *o)
            .is_ok_and(|i| self.objects[i].1)
    }

    /// Touches nothing shared: commutes with every step.
    pub fn is_empty(&self) -> bool {
        !self.everything && self.objects.is_empty()
    }

    /// Whether two steps with these footprints may not be reordered: they
    /// touch a common object and one of them writes it (a step that
    /// touches everything conflicts with any step that touches anything).
    pub fn conflicts(&self, other: &Footprint) -> bool {
        if self.is_empty() || other.is_empty() {
            return false;
        }
        if self.everything || other.everything {
            return true;
        }
        let (mut a, mut b) = (self.objects.iter(), other.objects.iter());
        let (mut x, mut y) = (a.next(), b.next());
        while let (Some(&(oa, wa)), Some(&(ob, wb))) = (x, y) {
            match oa.cmp(&ob) {
                std::cmp::Ordering::Less => x = a.next(),
                std::cmp::Ordering::Greater => y = b.next(),
                std::cmp::Ordering::Equal => {
                    if wa || wb {
                        return true;
                    }
                    x = a.next();
                    y = b.next();
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(objects: &[(u32, bool)]) -> Footprint {
        let mut f = Footprint::default();
        for &(o, w) in objects {
            f.add(o, w);
        }
        f
    }

    #[test]
    fn footprints_conflict_on_a_common_object_written_by_one() {
        assert!(fp(&[(1, true)]).conflicts(&fp(&[(1, false)])));
        assert!(!fp(&[(1, false)]).conflicts(&fp(&[(1, false)])));
        assert!(!fp(&[(1, true), (3, true)]).conflicts(&fp(&[(2, true), (4, true)])));
        assert!(fp(&[(1, true), (3, false)]).conflicts(&fp(&[(2, true), (3, true)])));
        let everything = Footprint::of_point(ObjId::NONE, false, false);
        assert!(everything.conflicts(&fp(&[(7, false)])));
        assert!(everything.conflicts(&everything));
        let start = Footprint::of_point(ObjId::NONE, true, false);
        assert!(!everything.conflicts(&start));
        assert!(!start.conflicts(&start));
    }

    #[test]
    fn a_write_after_a_read_of_one_object_is_a_write() {
        let f = fp(&[(5, false), (2, true), (5, true), (2, false)]);
        assert_eq!(f.objects, vec![(2, true), (5, true)]);
    }
}
