//! Trace events and the trace hash.

use crate::obj::ObjId;
use crate::TaskId;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A scheduling point: the task was chosen and performed `label`.
    Step,
    /// A result or fact recorded by model code, without a scheduling point.
    Note,
}

/// One entry of an execution's trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub step: u64,
    pub task: TaskId,
    pub time: u64,
    pub kind: EventKind,
    pub label: &'static str,
    pub obj: ObjId,
    pub value: i64,
}

/// The running hash of every event, and the events themselves when asked.
#[derive(Debug)]
pub(crate) struct Trace {
    pub hash: u64,
    pub events: Option<Vec<Event>>,
    labels: LabelHashes,
}

/// Slots of the label-hash cache: more than the labels one workload uses.
const LABEL_SLOTS: usize = 64;

/// The hashes of recently seen labels, so that a label's text is folded
/// once rather than at every event. Labels are `&'static str`: the cache is
/// keyed by address and length, but the hash is of the text, so it is the
/// same on every machine and build.
#[derive(Debug)]
struct LabelHashes {
    slots: [(usize, usize, u64); LABEL_SLOTS],
}

impl LabelHashes {
    fn new() -> Self {
        LabelHashes {
            slots: [(0, 0, 0); LABEL_SLOTS],
        }
    }

    #[inline(always)]
    fn get(&mut self, label: &'static str) -> u64 {
        let (ptr, len) = (label.as_ptr() as usize, label.len());
        let slot = &mut self.slots[(ptr >> 3 ^ len) % LABEL_SLOTS];
        if slot.0 != ptr || slot.1 != len {
            *slot = (ptr, len, mix_str(SEED, label));
        }
        slot.2
    }
}

const SEED: u64 = 0xcbf2_9ce4_8422_2325;
const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// Fold one word into the hash: multiply-rotate, word at a time (a byte
/// at a time cost a third of every step).
#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(K).rotate_left(29)
}

/// Fold a string, eight bytes at a time, then its length.
#[inline]
fn mix_str(mut h: u64, s: &str) -> u64 {
    let bytes = s.as_bytes();
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        h = mix(h, u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    // The tail, zero-padded little-endian, assembled a byte at a time
    // (a variable-length copy would call memcpy on every event).
    let tail = chunks
        .remainder()
        .iter()
        .enumerate()
        .fold(0u64, |w, (i, b)| w | u64::from(*b) << (8 * i));
    h = mix(h, tail);
    mix(h, bytes.len() as u64)
}

impl Trace {
    pub fn new(record: bool) -> Self {
        Trace {
            hash: SEED,
            events: record.then(Vec::new),
            labels: LabelHashes::new(),
        }
    }

    /// Keep an event when events are kept, without folding it into the
    /// hash (an event the hashed ones imply).
    #[inline]
    pub fn record_only(&mut self, e: Event) {
        if let Some(events) = &mut self.events {
            events.push(e);
        }
    }

    /// Fold an event into the hash. Its step number is not folded: it is
    /// the count of step events before it, which the hash already orders.
    #[inline(always)]
    pub fn push(&mut self, e: Event) {
        let mut h = self.hash;
        h = mix(
            h,
            (e.task as u64) << 40 | (e.kind as u64) << 32 | u64::from(e.obj.0),
        );
        h = mix(h, e.time);
        h = mix(h, self.labels.get(e.label));
        h = mix(h, e.value as u64);
        self.hash = h;
        if let Some(events) = &mut self.events {
            events.push(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(label: &'static str, value: i64) -> Event {
        Event {
            step: 1,
            task: 2,
            time: 30,
            kind: EventKind::Note,
            label,
            obj: ObjId(4),
            value,
        }
    }

    fn hash_of(events: &[Event]) -> u64 {
        let mut t = Trace::new(false);
        for e in events {
            t.push(e.clone());
        }
        t.hash
    }

    #[test]
    fn the_hash_depends_on_label_text_not_address() {
        let leaked: &'static str = Box::leak(String::from("mutex_lock").into_boxed_str());
        assert_ne!(leaked.as_ptr(), "mutex_lock".as_ptr());
        assert_eq!(
            hash_of(&[event("mutex_lock", 0)]),
            hash_of(&[event(leaked, 0)])
        );
        assert_ne!(
            hash_of(&[event("mutex_lock", 0)]),
            hash_of(&[event("mutex_unlock", 0)])
        );
    }

    #[test]
    fn every_field_and_the_order_count() {
        let base = hash_of(&[event("a", 1), event("b", 2)]);
        assert_ne!(base, hash_of(&[event("b", 2), event("a", 1)]));
        assert_ne!(base, hash_of(&[event("a", 1), event("b", 3)]));
        let mut other_task = event("b", 2);
        other_task.task = 3;
        assert_ne!(base, hash_of(&[event("a", 1), other_task]));
        let mut other_time = event("b", 2);
        other_time.time = 31;
        assert_ne!(base, hash_of(&[event("a", 1), other_time]));
        let mut other_kind = event("b", 2);
        other_kind.kind = EventKind::Step;
        assert_ne!(base, hash_of(&[event("a", 1), other_kind]));
    }

    #[test]
    fn labels_that_share_a_cache_slot_keep_their_own_hashes() {
        // Many distinct labels force slot reuse; each still hashes by text.
        let labels: Vec<&'static str> = (0..300)
            .map(|i| &*Box::leak(format!("label{i}").into_boxed_str()))
            .collect();
        let mut cache = LabelHashes::new();
        for _ in 0..2 {
            for l in &labels {
                assert_eq!(cache.get(l), mix_str(SEED, l));
            }
        }
    }
}
