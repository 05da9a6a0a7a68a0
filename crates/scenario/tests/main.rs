//! The tests of `nssim-scenario`, one binary: each file of this directory
//! is a module of it, built and linked once.
//! `cargo test -p nssim-scenario --test integration MODULE::` runs one file.

mod docs;
mod durations;
mod good;
mod limits;
mod malformed;
mod props;
mod state_cache;
