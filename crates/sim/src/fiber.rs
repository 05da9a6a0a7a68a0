//! The tasks' stacks and the switches between them.
//!
//! A task at a scheduling point that picks another task hands the thread
//! to it. Where this module has its own switch (x86_64, System V), it
//! does so directly, from one task's stack to the other's: a *symmetric*
//! switch saves the callee-saved registers on the stack it leaves and
//! loads them from the one it enters, both with the ordinary `call` and
//! `ret`. The processor predicts a `ret` from the calls made before it, so
//! a task resumed on the same path of calls as the one that suspended
//! (tasks of one model mostly run the same code) returns out of its
//! scheduling point without a mispredicted return. A switch through a
//! run loop, the other way (the task suspends to the loop, which resumes
//! the next), costs two switches, and the resumed task then returns
//! through frames the processor has no record of: on workload (a) of
//! `crates/bench`, such a pass cost 20-37 ns where a bare round trip of
//! resume and suspend costs 1.2-2.0 ns.
//!
//! The switch keeps the registers the System V ABI has a callee keep,
//! not the floating-point control words (MXCSR, x87): nothing in a model
//! changes them, and they are the thread's, shared by all its tasks, as
//! they are with corosensei.
//!
//! Elsewhere (and on x32) every task is a [`corosensei`] coroutine that suspends to the
//! run loop, which resumes the task picked ([`SYMMETRIC`] is false); the
//! `nssim_coroutines` cfg chooses it on x86_64 too, so that it is tested
//! here (`.ci/run` runs this crate's tests with it).
//!
//! Either way the run loop starts tasks, ends them and unwinds the ones
//! still suspended when an execution ends; a task hands the thread back
//! to it for anything a pick cannot do on the task's own stack.

mod stack;
pub(crate) use stack::*;

// One predicate chooses the switch: the direct one on 64-bit x86_64,
// System V (unless `nssim_coroutines`), corosensei through the run loop
// everywhere else.
cfg_if::cfg_if! {
    if #[cfg(all(
        target_arch = "x86_64",
        target_pointer_width = "64",
        unix,
        not(nssim_coroutines)
    ))] {
        mod symmetric;
        use symmetric as imp;
    } else {
        mod coroutine;
        use coroutine as imp;
    }
}

pub(crate) use imp::*;
