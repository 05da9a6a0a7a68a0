//! Processes, credentials and nsproxy; the syscalls that tie the subsystems
//! together (`unshare`, sysctl writes); kernel profiles and patches.
//!
//! Models kernel/nsproxy.c (`unshare_nsproxy_namespaces`,
//! `switch_task_namespaces`, `exit_task_namespaces`), kernel/fork.c
//! (`ksys_unshare`) and kernel/ucount.c's sysctl table (`max_*` writes).

pub mod catalog;
pub mod conformance_ipc;
pub mod conformance_nproc;
pub mod conformance_nsproxy;
pub mod errno;
pub mod invariants;
pub mod net;
pub mod ops;
pub mod process;
pub mod profile;
pub mod setup;
pub mod task;
pub mod world;

pub use errno::Errno;
pub use profile::{resolve_patches, ActivePatches};
pub use world::{
    explore_profile, explore_run, replay_run, Results, RunOutput, RunSpec, SyscallStats,
};
