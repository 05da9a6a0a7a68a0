//! Tasks and the syscalls that tie the subsystems together; kernel
//! profiles and patches.
//!
//! Models kernel/nsproxy.c (`create_new_namespaces`,
//! `unshare_nsproxy_namespaces`, `switch_task_namespaces`,
//! `exit_task_namespaces`), kernel/fork.c (`ksys_unshare`,
//! `unshare_userns`, `copy_process`), kernel/cred.c and kernel/sys.c (the
//! credential paths of [`process`]), kernel/exit.c (`release_task`) and
//! kernel/ucount.c's sysctl table (`max_*` writes).
//!
//! Layers, each file importing only those below it (a test holds them):
//! * declarations: [`clone_flags`], [`costs`], [`invariants`], [`ops`],
//!   [`setup`], [`catalog`] (patches, profiles, what a scenario may name),
//!   [`profile`] (the patches in force);
//! * the models a task holds: [`pidns`] (a pid namespace) and [`signal`]
//!   (its signals pending);
//! * the model: [`task`], [`process`] (credentials and RLIMIT_NPROC),
//!   [`net`] (uevent sockets), and [`world`] with its syscall paths
//!   (`nsproxy.rs`, `fork.rs`, `userns_ops.rs`, `pidns_ops.rs`,
//!   `signal_ops.rs`, `denials.rs`, ...) and the invariants' checkers
//!   (`checks.rs`), and the [`directed`] search for one outcome of a run.

pub mod catalog;
pub mod clone_flags;
pub mod costs;
pub mod directed;
pub mod errno;
pub mod invariants;
pub mod known;
pub mod net;
pub mod ops;
pub mod pidns;
pub mod process;
pub mod profile;
pub mod setup;
pub mod signal;
pub mod task;
pub mod world;

pub use world::mqueue;

pub use errno::Errno;
pub use profile::{resolve_patches, ActivePatches};
pub use world::{
    cut_by_deadline, explore_outcomes, explore_profile, explore_run, explore_steps,
    number_namespaces, replay_run, results_summary, Exercised, OutcomeOf, Results, RunOutput,
    RunSpec, Succeeded, SyscallStats,
};
