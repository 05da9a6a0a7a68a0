//! The command-line tool's tests, one binary (each file of this
//! directory is a module of it): built and linked once, and their tests
//! share the harness's threads, so that those that wait on a child
//! process or on their turn on the kernel leave the cores to the others.
//! `cargo test -p nssim-cli --test integration MODULE::` runs one file.
//! `timeout.rs` is a binary of its own (Cargo.toml says why).

mod book;
mod ci_recipes;
mod cli;
mod conformance;
mod export_c;
mod first_hour;
mod hardening;
mod help;
mod idmap;
mod lab;
mod layers;
mod lessons;
mod library;
mod max_memory;
mod merge;
mod mutants;
mod no_hang;
mod on_kernel;
mod support;
mod views_html;
mod views_perfetto;
mod views_timeline;
