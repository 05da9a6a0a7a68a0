//! Trace events and the trace hash.

use crate::rt::ObjId;
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
}

const SEED: u64 = 0xcbf2_9ce4_8422_2325;
const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// Fold one word into the hash: multiply-rotate, word at a time (a byte
/// at a time cost a third of every step).
#[inline]
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
        }
    }

    #[inline]
    pub fn push(&mut self, e: Event) {
        let mut h = self.hash;
        h = mix(h, e.step);
        h = mix(h, (e.task as u64) << 8 | e.kind as u64);
        h = mix(h, e.time);
        h = mix_str(h, e.label);
        h = mix(h, e.obj.0 as u64);
        h = mix(h, e.value as u64);
        self.hash = h;
        if let Some(events) = &mut self.events {
            events.push(e);
        }
    }
}
