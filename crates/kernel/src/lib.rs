//! Processes, credentials and nsproxy; the syscalls that tie the subsystems
//! together (`unshare`, sysctl writes); kernel profiles and patches.
//!
//! Models kernel/nsproxy.c (`unshare_nsproxy_namespaces`,
//! `switch_task_namespaces`) and kernel/fork.c (`ksys_unshare`).

pub mod catalog;
pub mod setup;
