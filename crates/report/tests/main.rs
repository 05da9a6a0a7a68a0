//! The tests of `nssim-report`, one binary: each file of this directory
//! is a module of it, built and linked once.
//! `cargo test -p nssim-report --test integration MODULE::` runs one file.

mod html;
mod model;
mod perfetto;
mod support;
mod timeline;
