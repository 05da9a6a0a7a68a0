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

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

#[inline]
fn mix(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, b| (h ^ *b as u64).wrapping_mul(FNV_PRIME))
}

impl Trace {
    pub fn new(record: bool) -> Self {
        Trace {
            hash: FNV_OFFSET,
            events: record.then(Vec::new),
        }
    }

    #[inline]
    pub fn push(&mut self, e: Event) {
        let mut h = self.hash;
        h = mix(h, &e.step.to_le_bytes());
        h = mix(h, &(e.task as u32).to_le_bytes());
        h = mix(h, &e.time.to_le_bytes());
        h = mix(h, &[e.kind as u8]);
        h = mix(h, e.label.as_bytes());
        h = mix(h, &e.obj.0.to_le_bytes());
        h = mix(h, &e.value.to_le_bytes());
        self.hash = h;
        if let Some(events) = &mut self.events {
            events.push(e);
        }
    }
}
