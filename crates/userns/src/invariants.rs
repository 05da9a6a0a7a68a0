//! Invariants over every live user namespace of a run, checked without
//! scheduling points (they run between steps):
//!
//! * `idmap.published_whole`: a published map is empty or exactly what its
//!   writer installed (never a count ahead of its extents);
//! * `idmap.roundtrip`: for every mapped id, `map_id_up(map_id_down(id)) == id`;
//! * `idmap.confined`: every lower range lies inside one extent of the
//!   parent's map (in kernel ids);
//! * `userns.depth`: levels are the parent's plus one, at most 33.

use crate::idmap::{show_extents, Extent};
use crate::{MapKind, UserNamespace, Userns, MAX_PARENT_LEVEL};
use std::sync::Arc;

const KINDS: [MapKind; 2] = [MapKind::Uid, MapKind::Gid];

fn live(sys: &Userns) -> impl Iterator<Item = Arc<UserNamespace>> {
    sys.namespaces().into_iter().filter(|ns| !ns.peek_freed())
}

/// `idmap.published_whole`.
pub fn published_whole(sys: &Userns) -> Option<String> {
    for ns in live(sys) {
        for kind in KINDS {
            let map = ns.map(kind);
            let seen = map.peek_extents();
            if !seen.is_empty() && seen != map.peek_committed() {
                return Some(format!(
                    "{} of user namespace {} publishes {} extents but a reader sees {}, not the {} written",
                    kind.file(),
                    ns.name,
                    seen.len(),
                    show_extents(&seen),
                    show_extents(&map.peek_committed())
                ));
            }
        }
    }
    None
}

/// `idmap.roundtrip`.
pub fn roundtrip(sys: &Userns) -> Option<String> {
    for ns in live(sys) {
        for kind in KINDS {
            let map = ns.map(kind);
            for e in map.peek_extents() {
                for id in [e.first, e.last()] {
                    let kid = map.peek_map_id_down(id);
                    let back = map.peek_map_id_up(kid);
                    if back != id {
                        return Some(format!(
                            "{} of user namespace {}: id {id} maps down to kernel id {kid}, which maps up to {}",
                            kind.file(),
                            ns.name,
                            show(back)
                        ));
                    }
                }
            }
        }
    }
    None
}

fn show(id: u32) -> String {
    if id == crate::UNMAPPED {
        "nothing (unmapped)".into()
    } else {
        id.to_string()
    }
}

fn inside(e: &Extent, parent: &[Extent]) -> bool {
    parent
        .iter()
        .any(|p| p.lower_first <= e.lower_first && e.lower_last() <= p.lower_last())
}

/// `idmap.confined`.
pub fn confined(sys: &Userns) -> Option<String> {
    for ns in live(sys) {
        let Some(parent) = &ns.parent else { continue };
        for kind in KINDS {
            let parent_extents = parent.map(kind).peek_extents();
            if let Some(e) = ns
                .map(kind)
                .peek_extents()
                .into_iter()
                .find(|e| !inside(e, &parent_extents))
            {
                return Some(format!(
                    "{} of user namespace {} maps {}..={} (kernel ids) outside its parent {}'s map",
                    kind.file(),
                    ns.name,
                    e.lower_first,
                    e.lower_last(),
                    parent.name
                ));
            }
        }
    }
    None
}

/// `userns.depth`.
pub fn depth(sys: &Userns) -> Option<String> {
    for ns in live(sys) {
        let expected = ns.parent.as_ref().map_or(0, |p| p.level + 1);
        if ns.level != expected || ns.level > MAX_PARENT_LEVEL + 1 {
            return Some(format!(
                "user namespace {} has level {} (parent's plus one: {expected}; at most {})",
                ns.name,
                ns.level,
                MAX_PARENT_LEVEL + 1
            ));
        }
    }
    None
}
