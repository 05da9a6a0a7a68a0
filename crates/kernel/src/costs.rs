//! The model's entries of the virtual-time cost table that no subsystem
//! crate owns: syscall entry, nsproxy switches, and the process paths.
//! [`crate::catalog::costs`] lists them with every crate's entries.

use sim::CostKey;

pub static SYSCALL: CostKey = CostKey::new("syscall", 150, "entering and leaving a syscall");
pub static SWITCH_NS: CostKey = CostKey::new(
    "switch_task_namespaces",
    200,
    "installing a new nsproxy and dropping the old one",
);
pub static COPY_PROCESS: CostKey = CostKey::new(
    "copy_process",
    19_000,
    "fork besides credentials: dup_task_struct, copy_mm, copy_files, wake_up_new_task",
);
pub static EXIT_AND_REAP: CostKey = CostKey::new(
    "exit_and_reap",
    20_000,
    "a child's do_exit, the parent's wait4 and release_task, besides credentials",
);
pub static PROC_PID_WALK: CostKey = CostKey::new(
    "proc_pid_walk",
    3_000,
    "the path walk to another task's /proc/PID file (its open and close together take 4 us on 6.18)",
);
pub static PROC_FILE_OPEN: CostKey = CostKey::new(
    "proc_file_open",
    500,
    "a /proc/PID id file's own open, which finds the task again",
);
pub static CRED: CostKey = CostKey::new(
    "cred",
    150,
    "prepare_creds or commit_creds: copying or installing a struct cred",
);
pub static EXECVE: CostKey = CostKey::new(
    "execve",
    50_000,
    "execve besides the PF_NPROC_EXCEEDED check: loading the new image",
);

/// The entries of this module, in table order.
pub static ALL: &[&CostKey] = &[
    &SYSCALL,
    &SWITCH_NS,
    &COPY_PROCESS,
    &EXIT_AND_REAP,
    &PROC_PID_WALK,
    &PROC_FILE_OPEN,
    &CRED,
    &EXECVE,
];
