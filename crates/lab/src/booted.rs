//! A kernel booted once and saved, then restored for each run: every run
//! starts from the same freshly booted kernel, bit for bit, so nothing one
//! run leaves behind (a namespace waiting for its free work, a charge, a
//! sysctl, a pending signal) can reach the next. Booting costs seconds
//! under emulation; restoring the saved memory costs a fraction of one.
//!
//! The guest's side of the data channel is [`crate::guest`]: it says
//! `READY RELEASE` once booted and then waits for one `EXEC REQUEST` line;
//! the lab saves the VM while it waits. Each restore sends the request,
//! reads the executor's lines (`L LINE`) up to `END STATUS`, and kills the
//! VM.

use crate::error::LabError;
use crate::qemu::{Accel, Channel, Machine, Vm};
use crate::store::{Kernel, Lab};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a kernel may take to boot to the guest's prompt under
/// emulation (they take 2 to 5 s here).
const BOOT_BOUND: Duration = Duration::from_secs(180);
/// How long saving or loading the VM's memory may take.
const SNAPSHOT_BOUND: Duration = Duration::from_secs(120);

pub struct Booted {
    pub machine: Machine,
    /// What the guest's `uname -r` says.
    pub release: String,
    /// Wall time from starting QEMU to the saved state.
    pub boot_time: Duration,
    state: PathBuf,
    dir: PathBuf,
    lab: Lab,
}

impl Drop for Booted {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Booted {
    /// Boot `kernel` with `initramfs` to the guest's prompt and save it.
    pub fn boot(
        lab: &Lab,
        kernel: &Kernel,
        initramfs: &Path,
        accel: Accel,
    ) -> Result<Booted, LabError> {
        let started = Instant::now();
        let machine = Machine {
            image: kernel.image(),
            initramfs: initramfs.to_path_buf(),
            accel,
            name: kernel.name().to_string(),
        };
        let dir = lab.scratch(&format!("boot-{}", kernel.name()))?;
        let state = dir.join("state");
        let release = match save(lab, &machine, &state, Instant::now() + BOOT_BOUND) {
            Err(first @ LabError::KernelPanic { .. }) => {
                // Under emulation a boot now and then panics early on (seen
                // with 6.12 on a loaded machine: a different fault each
                // time, and the next boot is clean); one more boot tells a
                // kernel that cannot boot here from one that did not once.
                eprintln!(
                    "lab kernel {}: {first}; booting it once more",
                    kernel.name()
                );
                save(lab, &machine, &state, Instant::now() + BOOT_BOUND)?
            }
            other => other?,
        };
        Ok(Booted {
            machine,
            release,
            boot_time: started.elapsed(),
            state,
            dir,
            lab: lab.clone(),
        })
    }

    /// Restore the fresh kernel, run the executor's `request` in it, and
    /// return the executor's lines; the VM is killed after `bound`.
    pub fn run(&self, request: &str, bound: Duration) -> Result<Vec<String>, LabError> {
        let deadline = Instant::now() + bound;
        let mut vm = Vm::start(&self.machine, self.lab.scratch("run")?, Some(&self.state))?;
        let mut monitor = vm.monitor(deadline)?;
        let mut data = vm.data(deadline)?;
        monitor
            .wait_for(
                "status",
                "VM status: running",
                "failed",
                Instant::now() + SNAPSHOT_BOUND,
            )
            .map_err(|e| LabError::vm(&vm.name, format!("restoring the booted kernel: {e}")))?;
        data.send_line(&format!("EXEC {request}"))
            .map_err(|e| LabError::vm(&vm.name, format!("sending the request: {e}")))?;
        let mut lines = Vec::new();
        loop {
            let Some(line) = next_line(&mut vm, &mut data, deadline, "during the run")? else {
                return Err(LabError::vm(
                    &vm.name,
                    format!("no end of the run within {} s", bound.as_secs()),
                ));
            };
            if let Some(l) = line.strip_prefix("L ") {
                lines.push(l.to_string());
            } else if line.starts_with("END") {
                return Ok(lines);
            }
        }
    }
}

/// The VM's next line on its data channel, or `None` at `deadline`;
/// looked for a second at a time, so that a kernel that panicked
/// (`when`: while booting, during the run) is told at once rather than
/// waited for until the deadline.
fn next_line(
    vm: &mut Vm,
    data: &mut Channel,
    deadline: Instant,
    when: &'static str,
) -> Result<Option<String>, LabError> {
    loop {
        let second = deadline.min(Instant::now() + Duration::from_secs(1));
        if let Some(line) = data.read_line(second) {
            return Ok(Some(line));
        }
        vm.check_alive()?;
        if vm.panicked() {
            return Err(LabError::KernelPanic {
                kernel: vm.name.clone(),
                when,
                console: vm.log_tail(),
            });
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
    }
}

/// Boot to the guest's `READY`, save the VM's state into `state`; the release.
fn save(lab: &Lab, machine: &Machine, state: &Path, deadline: Instant) -> Result<String, LabError> {
    let mut vm = Vm::start(machine, lab.scratch("snapshot")?, None)?;
    let mut data = vm.data(deadline)?;
    let release = loop {
        let Some(line) = next_line(&mut vm, &mut data, deadline, "while booting")? else {
            return Err(LabError::vm(
                &machine.name,
                format!("did not boot to the guest: {}", vm.log_tail()),
            ));
        };
        if let Some(r) = line.strip_prefix("READY ") {
            break r.trim().to_string();
        }
    };
    let mut monitor = vm.monitor(deadline)?;
    let until = Instant::now() + SNAPSHOT_BOUND;
    let saved = monitor
        .command(
            &format!("migrate \"exec:cat > '{}'\"", state.display()),
            until,
        )
        .and_then(|_| {
            monitor.wait_for(
                "migrate",
                "Migration status: completed",
                "Migration status: failed",
                until,
            )
        });
    saved.map_err(|e| LabError::vm(&machine.name, format!("saving the booted kernel: {e}")))?;
    Ok(release)
}
