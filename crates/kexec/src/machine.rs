//! Where the executor runs, which decides what a run must protect.
//!
//! On this machine (shared with everything else running on it) a run never
//! changes the machine's own limits: its tasks of the initial user
//! namespace lack CAP_SYS_RESOURCE, it takes network and ipc namespaces of
//! its own as stand-ins for the initial ones, and a scenario that writes
//! the initial namespace's sysctls runs in a stand-in initial user
//! namespace. In a disposable VM booted for the run alone (the lab's),
//! none of that is needed: tasks have every capability root has, and the
//! initial namespaces are the kernel's own.

/// Capabilities no task of the initial user namespace holds in a run on a
/// shared machine, or in an exported program: CAP_SYS_RESOURCE, so that a
/// run never writes the machine's own `user.max_*` limits (a write to them
/// needs it over the initial namespace) nor raises a hard limit past the
/// machine's.
pub const WITHHELD_IN_INIT: &[u32] = &[userns::caps::CAP_SYS_RESOURCE];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Machine {
    /// This machine, shared with whatever else runs on it.
    Shared,
    /// A VM that exists for this run and is thrown away after it.
    Disposable,
}

impl Machine {
    pub fn name(self) -> &'static str {
        match self {
            Machine::Shared => "shared",
            Machine::Disposable => "disposable",
        }
    }

    pub fn from_name(name: &str) -> Option<Machine> {
        [Machine::Shared, Machine::Disposable]
            .into_iter()
            .find(|m| m.name() == name)
    }

    /// What the run withholds from the initial namespace's tasks.
    pub fn withheld_in_init(self) -> &'static [u32] {
        match self {
            Machine::Shared => WITHHELD_IN_INIT,
            Machine::Disposable => &[],
        }
    }

    /// Whether the run stands in for the initial namespaces (see the
    /// module's doc).
    pub fn stand_ins(self) -> bool {
        self == Machine::Shared
    }

    /// Whether the run takes a pid namespace of its own, so that nothing
    /// of it outlives its world root. In a VM thrown away after the run
    /// the tasks stay in the initial pid namespace, as the model's do: a
    /// pid namespace of the run's would be charged to root's count of pid
    /// namespaces in the initial user namespace, which a scenario's
    /// `user.max_pid_namespaces` limits.
    pub fn own_pid_namespace(self) -> bool {
        self == Machine::Shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_is_named_as_it_is_read_back() {
        for m in [Machine::Shared, Machine::Disposable] {
            assert_eq!(Machine::from_name(m.name()), Some(m));
        }
        assert_eq!(Machine::from_name("host"), None);
        assert!(Machine::Disposable.withheld_in_init().is_empty());
        assert!(Machine::Shared
            .withheld_in_init()
            .contains(&userns::caps::CAP_SYS_RESOURCE));
    }
}
