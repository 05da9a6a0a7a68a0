//! The tests of `nssim-ucounts`, one binary: each file of this directory
//! is a module of it, built and linked once.
//! `cargo test -p nssim-ucounts --test integration MODULE::` runs one file.
//! `loom_ucounts.rs` is a binary of its own (Cargo.toml says why).

mod limits;
mod rlimits;
mod sim_put_race;
