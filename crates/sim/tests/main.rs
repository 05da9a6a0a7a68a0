//! The tests of `nssim-sim`, one binary: each file of this directory
//! is a module of it, built and linked once.
//! `cargo test -p nssim-sim --test integration MODULE::` runs one file.
//! `memory.rs` and `tasks.rs` are binaries of their own (Cargo.toml says
//! why).

mod keys;
mod layers;
mod limits;
mod state_cache;
mod switches;
mod teardown;
mod token_props;
