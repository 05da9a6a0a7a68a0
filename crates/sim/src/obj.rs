//! Tasks and modelled objects: their numbers, and objects' lifetimes.

/// Index of a task in its execution, in spawn order.
pub type TaskId = usize;

/// A modelled object (or a wait queue), numbered per execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjId(pub u32);

impl ObjId {
    /// Placeholder for steps that concern no object.
    pub const NONE: ObjId = ObjId(u32::MAX);
}

/// Lifetime of a modelled object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjState {
    Live,
    /// Released by its users but not yet freed; the model names what it
    /// waits in (see [`park_object`](crate::park_object)).
    Parked(&'static str),
    /// Freed by `by` at step `step`.
    Freed {
        by: TaskId,
        step: u64,
    },
}
