//! Rendering of nssim traces for people: the step-by-step listing of a
//! replayed execution ([`steps`]), the terminal timeline ([`timeline`]),
//! Chrome trace-event JSON for Perfetto ([`perfetto`]) and the
//! self-contained HTML report ([`html`]).
//!
//! The three views share one reading of the trace, the [`Model`]: spans
//! (syscalls, lock holds, RCU grace periods and read-side sections, work
//! item runs), marks (results, frees), work flows and counter series, built
//! from the conventions the model code follows when it records notes. The
//! crate knows nothing of the kernel: the caller passes what it knows (how a
//! note's value reads, which operations are syscalls) as a [`Lexicon`].

pub mod html;
mod model;
pub mod perfetto;
pub mod steps;
pub mod timeline;

pub use model::{nest, Flow, Lexicon, Mark, MarkKind, Model, Place, Series, Span, SpanKind};
