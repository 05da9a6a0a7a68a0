//! The kernel lab: real kernels of several eras, each run in a disposable
//! VM, as the oracle the model is held to.
//!
//! Kernels come from Debian's archive by package name ([`apt`], through a
//! private apt configuration) or are built here with fault injection, and
//! are kept in the lab's cache ([`store`]); [`eras`] names the default
//! ones. A run boots a kernel once in QEMU ([`qemu`]) with an initramfs
//! holding the `nssim` binary ([`initramfs`]), saves the booted VM, and
//! restores it for every repeat of every scenario ([`booted`]): each
//! starts from the same freshly booted kernel, with full root (no
//! capability withheld, the initial namespace's own limits written), no
//! network, bounded memory and a bounded time. Inside, [`guest`] runs the
//! executor of `--on-kernel` and passes its lines back on a serial port.

pub mod apt;
pub mod booted;
pub mod eras;
pub mod error;
pub mod fault;
pub mod guest;
pub mod initramfs;
pub mod qemu;
pub mod store;

pub use booted::Booted;
pub use error::LabError;
pub use store::{Kernel, Lab};

use kernel::setup::Setup;
use kexec::{KernelRuns, Skip};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Wall time a VM may take beyond the run's own budget: restoring the
/// saved kernel, and the executor's start.
const VM_MARGIN: Duration = Duration::from_secs(30);

/// The lab at work for one command: the initramfs of this binary, and the
/// kernels booted so far.
pub struct Session {
    pub lab: Lab,
    pub accel: qemu::Accel,
    initramfs: PathBuf,
    scratch: PathBuf,
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

impl Session {
    /// Build the initramfs of the running binary.
    pub fn new(lab: Lab) -> Result<Session, LabError> {
        let (accel, _) = qemu::Accel::choose();
        let scratch = lab.scratch("session")?;
        let initramfs = scratch.join("initramfs.cpio");
        let me = std::env::current_exe().map_err(|e| LabError::cache("the nssim binary", e))?;
        initramfs::build(&me, &initramfs)?;
        Ok(Session {
            lab,
            accel,
            initramfs,
            scratch,
        })
    }

    /// Boot `kernel` once, ready for runs.
    pub fn boot(&self, kernel: &Kernel) -> Result<Booted, LabError> {
        Booted::boot(&self.lab, kernel, &self.initramfs, self.accel)
    }
}

/// Run the scenario `source` (from `file`) `repeat` times on `booted`,
/// each repeat in a fresh restore of the booted kernel, each within
/// `budget` of the VM's wall time.
pub fn execute(
    booted: &Booted,
    file: &str,
    source: &str,
    setup: &Setup,
    repeat: u32,
    budget: Duration,
) -> Result<KernelRuns, Skip> {
    if let Some(why) = kexec::unsupported_in(setup) {
        return Err(Skip(why));
    }
    let started = Instant::now();
    let request = kexec::Request {
        file,
        source,
        repeat: 1,
        budget,
        machine: kexec::machine::Machine::Disposable,
    }
    .to_json();
    let mut all = KernelRuns::default();
    for _ in 0..repeat.max(1) {
        let lines = booted
            .run(&request, budget + VM_MARGIN)
            .map_err(|e| Skip(e.to_string()))?;
        let runs = kexec::runs_from_lines(&lines)?;
        all.runs.extend(runs.runs);
        all.timed_out += runs.timed_out;
    }
    all.wall = started.elapsed();
    Ok(all)
}
