//! One QEMU process: a kernel and the lab's initramfs, no network, bounded
//! memory, two serial ports (the console, into a file; the data channel,
//! a socket), the human monitor on a socket. The process runs in its own
//! process group and is killed with it when the [`Vm`] is dropped, so no
//! VM outlives its runner, whatever ends the run.

use crate::error::LabError;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const QEMU: &str = "qemu-system-x86_64";

/// The guest's memory: enough for the executor's processes, small enough
/// that a snapshot of it is quick to write and load.
pub const MEMORY_MIB: u32 = 512;
/// Virtual CPUs: two, so that tasks of a scenario can run at once.
pub const CPUS: u32 = 2;

/// How the VM's CPU is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// QEMU's own translator: works everywhere, slower.
    Tcg,
    /// The host's KVM.
    Kvm,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Tcg => "tcg",
            Accel::Kvm => "kvm",
        }
    }

    /// `NSSIM_LAB_ACCEL` when set (`tcg` or `kvm`), else KVM where the
    /// host's module runs ordinary kernels, TCG elsewhere; with the reason.
    pub fn choose() -> (Accel, String) {
        match std::env::var("NSSIM_LAB_ACCEL").as_deref() {
            Ok("kvm") => return (Accel::Kvm, "NSSIM_LAB_ACCEL=kvm".into()),
            Ok("tcg") => return (Accel::Tcg, "NSSIM_LAB_ACCEL=tcg".into()),
            _ => {}
        }
        let module = |m: &str| Path::new("/sys/module").join(m).exists();
        if !Path::new("/dev/kvm").exists() {
            (Accel::Tcg, "no /dev/kvm".into())
        } else if module("kvm_pvm") {
            (
                Accel::Tcg,
                "/dev/kvm is a paravirtual KVM that runs only kernels built for it".into(),
            )
        } else if module("kvm_intel") || module("kvm_amd") {
            (Accel::Kvm, "/dev/kvm".into())
        } else {
            (Accel::Tcg, "no KVM module for this CPU".into())
        }
    }
}

/// What a VM boots, and how.
#[derive(Debug, Clone)]
pub struct Machine {
    pub image: PathBuf,
    pub initramfs: PathBuf,
    pub accel: Accel,
    /// The kernel's name, for messages.
    pub name: String,
}

impl Machine {
    /// QEMU's arguments with the VM's sockets and console in `dir`; the
    /// same for a boot and for a restore of it (as a snapshot needs).
    fn args(&self, dir: &Path) -> Vec<String> {
        let d = dir.display();
        // Without CMPXCHG16B under emulation: Debian's 6.12 takes a double
        // fault in SLUB's per-cpu fast path (cmpxchg16b on a %gs address)
        // under QEMU 7.2's multi-threaded TCG, in most runs of a loop of
        // unshare(CLONE_NEWIPC); without the instruction the kernel takes
        // its other path, and 23 of 23 such runs ended cleanly.
        let cpu = match self.accel {
            Accel::Tcg => ["-accel", "tcg", "-cpu", "max,cx16=off"],
            Accel::Kvm => ["-accel", "kvm", "-cpu", "host"],
        };
        let mut args: Vec<String> = cpu.iter().map(|s| s.to_string()).collect();
        args.extend(
            [
                "-m",
                &MEMORY_MIB.to_string(),
                "-smp",
                &CPUS.to_string(),
                "-nodefaults",
                "-no-user-config",
                "-nic",
                "none",
                "-display",
                "none",
                "-no-reboot",
                "-serial",
                &format!("file:{d}/console.log"),
                "-chardev",
                &format!("socket,id=data,path={d}/data.sock,server=on,wait=off"),
                "-serial",
                "chardev:data",
                "-monitor",
                &format!("unix:{d}/monitor.sock,server=on,wait=off"),
                "-kernel",
                &self.image.to_string_lossy(),
                "-initrd",
                &self.initramfs.to_string_lossy(),
                "-append",
                "console=ttyS0 panic=-1 quiet",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        args
    }
}

/// A running QEMU; killed, with its folder removed, when dropped.
pub struct Vm {
    child: Child,
    pub dir: PathBuf,
    pub name: String,
}

impl Vm {
    /// Start `machine` in `dir` (a fresh folder this VM owns), loading
    /// its memory from `state` when given.
    pub fn start(machine: &Machine, dir: PathBuf, state: Option<&Path>) -> Result<Vm, LabError> {
        let mut cmd = Command::new(QEMU);
        cmd.args(machine.args(&dir));
        if let Some(state) = state {
            cmd.arg("-incoming")
                .arg(format!("exec:cat {}", state.display()));
        }
        let log =
            std::fs::File::create(dir.join("qemu.log")).map_err(|e| LabError::cache(&dir, e))?;
        let log2 = log.try_clone().map_err(|e| LabError::cache(&dir, e))?;
        // The VM dies with the process that started it, also when that
        // process is killed and its Drop never runs.
        // SAFETY: prctl is async-signal-safe; nothing else runs between
        // fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .process_group(0)
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => LabError::MissingTool {
                    tool: QEMU,
                    why: "the lab boots its kernels in it".into(),
                    hint: "apt-get install qemu-system-x86",
                },
                _ => LabError::vm(&machine.name, format!("cannot start {QEMU}: {e}")),
            })?;
        Ok(Vm {
            child,
            dir,
            name: machine.name.clone(),
        })
    }

    /// Connect to one of the VM's sockets, waiting for QEMU to make it.
    fn connect(&mut self, socket: &str, deadline: Instant) -> Result<UnixStream, LabError> {
        let path = self.dir.join(socket);
        loop {
            if let Ok(s) = UnixStream::connect(&path) {
                return Ok(s);
            }
            self.check_alive()?;
            if Instant::now() >= deadline {
                return Err(LabError::vm(&self.name, format!("{socket} did not appear")));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn data(&mut self, deadline: Instant) -> Result<Channel, LabError> {
        let stream = self.connect("data.sock", deadline)?;
        Ok(Channel {
            stream,
            pending: Vec::new(),
        })
    }

    pub fn monitor(&mut self, deadline: Instant) -> Result<Monitor, LabError> {
        let stream = self.connect("monitor.sock", deadline)?;
        let mut m = Monitor { stream };
        m.read_prompt(deadline)
            .map_err(|e| LabError::vm(&self.name, format!("monitor: {e}")))?;
        Ok(m)
    }

    /// An error when QEMU has ended, with the end of its log.
    pub fn check_alive(&mut self) -> Result<(), LabError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(LabError::vm(
                &self.name,
                format!("QEMU ended ({status}): {}", self.log_tail()),
            )),
            Err(e) => Err(LabError::vm(&self.name, e.to_string())),
        }
    }

    /// Whether the guest's console says its kernel panicked.
    pub fn panicked(&self) -> bool {
        std::fs::read_to_string(self.dir.join("console.log"))
            .is_ok_and(|text| text.contains("Kernel panic"))
    }

    /// The last lines QEMU and the guest's console wrote.
    pub fn log_tail(&self) -> String {
        let mut out = Vec::new();
        for file in ["qemu.log", "console.log"] {
            let text = std::fs::read_to_string(self.dir.join(file)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            out.extend(
                lines[lines.len().saturating_sub(4)..]
                    .iter()
                    .map(|l| l.to_string()),
            );
        }
        out.join(" | ")
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The guest's data channel: lines each way.
pub struct Channel {
    stream: UnixStream,
    pending: Vec<u8>,
}

impl Channel {
    pub fn send_line(&mut self, line: &str) -> std::io::Result<()> {
        self.stream.write_all(line.as_bytes())?;
        self.stream.write_all(b"\n")
    }

    /// The next line, or `None` at the deadline or when the VM closed it.
    pub fn read_line(&mut self, deadline: Instant) -> Option<String> {
        loop {
            if let Some(at) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=at).collect();
                let text = String::from_utf8_lossy(&line[..line.len() - 1]);
                return Some(text.trim_end_matches('\r').to_string());
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            let _ = self
                .stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))));
            let mut buf = [0u8; 8192];
            match self.stream.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
    }
}

/// QEMU's human monitor.
pub struct Monitor {
    stream: UnixStream,
}

impl Monitor {
    fn read_prompt(&mut self, deadline: Instant) -> Result<String, String> {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while !out.ends_with(b"(qemu) ") {
            let left = deadline
                .checked_duration_since(Instant::now())
                .ok_or("no prompt in time")?;
            let _ = self
                .stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))));
            match self.stream.read(&mut buf) {
                Ok(0) => return Err("closed".into()),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Run one monitor command; what it printed.
    pub fn command(&mut self, cmd: &str, deadline: Instant) -> Result<String, String> {
        self.stream
            .write_all(format!("{cmd}\n").as_bytes())
            .map_err(|e| e.to_string())?;
        self.read_prompt(deadline)
    }

    /// Wait until `info what` prints `want`, failing early on `fail`.
    pub fn wait_for(
        &mut self,
        what: &str,
        want: &str,
        fail: &str,
        deadline: Instant,
    ) -> Result<(), String> {
        loop {
            let out = self.command(&format!("info {what}"), deadline)?;
            if out.contains(want) {
                return Ok(());
            }
            if out.contains(fail) {
                return Err(out
                    .lines()
                    .filter(|l| l.contains(fail))
                    .collect::<Vec<_>>()
                    .join(" "));
            }
            if Instant::now() >= deadline {
                return Err(format!("`info {what}` did not say `{want}` in time"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
