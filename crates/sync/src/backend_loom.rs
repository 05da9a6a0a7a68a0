//! The loom backend (`RUSTFLAGS="--cfg loom"`): being written.
