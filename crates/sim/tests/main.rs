//! The tests of `nssim-sim`, one binary: each file of this directory
//! is a module of it, built and linked once.
//! `cargo test -p nssim-sim --test integration MODULE::` runs one file.
//! `memory.rs` is a binary of its own (Cargo.toml says why).

mod keys;
mod limits;
mod tasks;
mod token_props;
