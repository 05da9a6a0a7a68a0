//! The tests of `nssim-kernel`, one binary: each file of this directory
//! is a module of it, built and linked once.
//! `cargo test -p nssim-kernel --test integration MODULE::` runs one file.

mod ipc_race;
mod layers;
mod nproc;
mod uevent_world;
mod userns;
mod wait_pending_free;
