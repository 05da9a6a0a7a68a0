//! The task instances of a run, numbered as the model numbers them, and
//! the fds at fixed numbers that every process of the run finds: the pid
//! table (by instance) and the event pipes. The world that makes them,
//! the tasks that use them and an exported program's tables all need the
//! same numbers, so they are kept below all of them.

use kernel::setup::{ChildSpec, Op, Setup};

/// One task instance, in the order the model numbers them, or a child
/// that acts (`[[task.child]]`), after every instance.
#[derive(Debug, Clone)]
pub struct Instance {
    /// Index of its task in `Setup::tasks`; for a child, the number of
    /// tasks plus its index in `Setup::children`.
    pub task: usize,
    pub name: String,
}

impl Instance {
    /// The ops it runs.
    pub fn ops<'s>(&self, setup: &'s Setup) -> &'s [Op] {
        match self.child(setup) {
            Some(c) => &c.ops,
            None => &setup.tasks[self.task].ops,
        }
    }

    /// How many times it runs them (a child, once).
    pub fn repeat(&self, setup: &Setup) -> u64 {
        setup.tasks.get(self.task).map_or(1, |t| t.repeat)
    }

    /// The child block it runs, if it is a child that acts.
    pub fn child<'s>(&self, setup: &'s Setup) -> Option<&'s ChildSpec> {
        let k = self.task.checked_sub(setup.tasks.len())?;
        setup.children.get(k)
    }
}

/// Every instance of `setup`: each task's, then each child that acts.
pub fn instances(setup: &Setup) -> Vec<Instance> {
    let tasks = setup.tasks.iter().enumerate().flat_map(|(i, t)| {
        t.instance_names()
            .into_iter()
            .map(move |name| Instance { task: i, name })
    });
    let children = setup.children.iter().enumerate().map(|(k, c)| Instance {
        task: setup.tasks.len() + k,
        name: c.name.clone(),
    });
    tasks.chain(children).collect()
}

/// The instance a task op names: the task itself, or its instance 0.
pub fn instance_named(instances: &[Instance], name: &str) -> Option<usize> {
    let zero = format!("{name}.0");
    instances
        .iter()
        .position(|i| i.name == name)
        .or_else(|| instances.iter().position(|i| i.name == zero))
}

/// The first fd of the scenario's event pipes: event `i` (of
/// `kernel::setup::event_names`) is read from `EVENT_FDS + 2i` and written
/// to `EVENT_FDS + 2i + 1`. At fixed numbers and kept across fork and
/// execve, so every task finds them without being told.
pub const EVENT_FDS: i32 = 800;

/// The fd of the pid table: a memfd holding each instance's /proc pid
/// (4 bytes each, 0 for one not started yet), at a fixed number and kept
/// across fork and execve, so that every task, and every child forked
/// later, reads the pids as they are when it needs one.
pub const PID_TABLE_FD: i32 = EVENT_FDS - 1;

/// Publish instance `i`'s /proc pid.
pub fn set_pid(i: usize, pid: u32) {
    let bytes = pid.to_ne_bytes();
    let at = (i * 4) as libc::off_t;
    unsafe { libc::pwrite(PID_TABLE_FD, bytes.as_ptr().cast(), 4, at) };
}

/// Instance `i`'s /proc pid now (0 for one not started yet).
pub fn pid_of(i: usize) -> u32 {
    let mut bytes = [0u8; 4];
    let at = (i * 4) as libc::off_t;
    let n = unsafe { libc::pread(PID_TABLE_FD, bytes.as_mut_ptr().cast(), 4, at) };
    if n == 4 {
        u32::from_ne_bytes(bytes)
    } else {
        0
    }
}
