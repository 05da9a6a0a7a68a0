//! Rendering of nssim traces for people: the step-by-step listing of a
//! replayed execution.

pub mod steps;
