//! A kernel with fault injection, built here: Debian's kernels have none
//! (`CONFIG_FAULT_INJECTION` is off), so the lab builds a small one from
//! Debian's kernel source package of one era. The era is 6.12: failslab's
//! stack-trace filter, which lets a scenario fail an allocation under the
//! function it names, is built for x86-64 only from v6.2 on. It is `tinyconfig` with what
//! the lab's VM and the executor need and the fault injection the
//! `fail_alloc` op drives ([`OPTIONS`], each with why), about 2 MB; it
//! takes about five minutes on two cores and is kept in the cache as any
//! other kernel.

use crate::apt::{run, Archives, SuiteApt};
use crate::error::LabError;
use crate::store::{Kernel, KernelMeta, Lab, Origin};
use std::path::Path;
use std::process::Command;

/// The kernel's name in the lab.
pub const NAME: &str = "6.12-fault";
/// The era whose source it is built from, and that suite's source package.
const SUITE: &str = "bookworm-backports";
const SOURCE_PACKAGE: &str = "linux-source-6.12";
/// Its release says it was built here.
const LOCALVERSION: &str = "-nssim-fault";

/// What `tinyconfig` lacks and the lab needs, each option with why.
pub const OPTIONS: &[(&str, &str)] = &[
    ("64BIT", "the executor is an x86-64 program"),
    ("SMP", "two virtual CPUs: a scenario's tasks run at once"),
    ("PRINTK", "the console says why a boot failed"),
    ("TTY", "the serial ports"),
    ("SERIAL_8250", "the console and the lab's data channel"),
    (
        "SERIAL_8250_CONSOLE",
        "the console on the first serial port",
    ),
    ("BINFMT_ELF", "the executor and busybox"),
    ("BINFMT_SCRIPT", "/init is a script"),
    ("BLK_DEV_INITRD", "the initramfs is the root file system"),
    ("DEVTMPFS", "/dev"),
    ("PROC_FS", "/proc: the tasks' ns links, maps and limits"),
    ("PROC_SYSCTL", "the user.max_* limits"),
    ("SYSFS", "/sys, and the uevent sequence number"),
    ("TMPFS", "/tmp, and memfd_create for the executor's plan"),
    ("SHMEM", "SysV shared memory and memfds"),
    ("MULTIUSER", "uids, gids and capabilities"),
    ("FUTEX", "the C library's locks"),
    ("EPOLL", "the C library"),
    ("SIGNALFD", "the C library"),
    ("TIMERFD", "the C library"),
    ("EVENTFD", "the C library"),
    ("FILE_LOCKING", "the C library"),
    ("POSIX_TIMERS", "sleeps and clocks"),
    ("SYSVIPC", "SysV shared memory, semaphores and messages"),
    ("POSIX_MQUEUE", "message queues"),
    ("NAMESPACES", "the subject of the lab"),
    ("UTS_NS", "unshare(CLONE_NEWUTS)"),
    ("IPC_NS", "ipc namespaces"),
    ("USER_NS", "user namespaces"),
    ("PID_NS", "pid namespaces, and the run's own"),
    ("NET_NS", "network namespaces"),
    ("NET", "netlink uevent sockets"),
    ("UNIX", "local sockets"),
    ("INET", "the ioctls that rename a network device"),
    (
        "NETDEVICES",
        "the loopback device of each network namespace",
    ),
    (
        "KALLSYMS",
        "the address of the function a fault is injected under",
    ),
    ("SLUB", "failslab needs SLUB or SLAB"),
    (
        "KERNEL_GZIP",
        "an image that decompresses quickly under emulation",
    ),
    (
        "DEBUG_KERNEL",
        "fault injection is a kernel debugging option",
    ),
    ("DEBUG_FS", "failslab's settings live in debugfs"),
    ("FAULT_INJECTION", "fault injection"),
    ("FAILSLAB", "slab allocations that fail on demand"),
    ("FAIL_PAGE_ALLOC", "page allocations that fail on demand"),
    (
        "FAULT_INJECTION_DEBUG_FS",
        "the failslab settings and fail-nth",
    ),
    (
        "STACKTRACE",
        "the stack-trace filter walks the allocating task's stack",
    ),
    ("FRAME_POINTER", "a stack walk that sees only real callers"),
    (
        "UNWINDER_FRAME_POINTER",
        "the frame-pointer walk, not a guess from every word on the stack",
    ),
    (
        "FAULT_INJECTION_STACKTRACE_FILTER",
        "failures only under the allocating function a scenario names",
    ),
];

/// Options `tinyconfig` sets that would keep one of [`OPTIONS`] out.
const OFF: &[&str] = &[
    "SLOB",
    "UNWINDER_GUESS",
    "KERNEL_XZ",
    "KERNEL_LZMA",
    "KERNEL_BZIP2",
    "KERNEL_LZO",
    "KERNEL_LZ4",
    "KERNEL_ZSTD",
];

/// Tools the build runs, each with the package that has it.
const TOOLS: &[(&str, &str)] = &[
    ("make", "make"),
    ("gcc", "gcc"),
    ("flex", "flex"),
    ("bison", "bison"),
    ("bc", "bc"),
    ("tar", "tar"),
    ("xz", "xz-utils"),
];

fn check_tools() -> Result<(), LabError> {
    let on_path = |tool: &str| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
    };
    let missing: Vec<&str> = TOOLS
        .iter()
        .filter(|(t, _)| !on_path(t))
        .map(|(_, p)| *p)
        .collect();
    let libelf = Path::new("/usr/include/gelf.h").is_file();
    if missing.is_empty() && libelf {
        return Ok(());
    }
    let mut packages = missing;
    if !libelf {
        packages.push("libelf-dev");
    }
    Err(LabError::MissingTool {
        tool: "the kernel's build tools",
        why: format!("missing: {}", packages.join(", ")),
        hint: "apt-get install make gcc flex bison bc xz-utils libelf-dev",
    })
}

/// Build the fault-injection kernel with `jobs` compilers at once; the
/// build's output goes to `log`.
pub fn build(lab: &Lab, archives: &Archives, jobs: usize, log: &Path) -> Result<Kernel, LabError> {
    check_tools()?;
    let scratch = lab.scratch("build")?;
    let result = build_in(lab, archives, jobs, log, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn build_in(
    lab: &Lab,
    archives: &Archives,
    jobs: usize,
    log: &Path,
    scratch: &Path,
) -> Result<Kernel, LabError> {
    let apt = SuiteApt::new(lab, archives, SUITE)?;
    apt.update()?;
    let deb = apt.download(SOURCE_PACKAGE, scratch)?;
    let version = run(Command::new("dpkg-deb").arg("-f").arg(&deb).arg("Version"))?;
    let tree = scratch.join("pkg");
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tree))?;
    let tarball = tree.join(format!("usr/src/{SOURCE_PACKAGE}.tar.xz"));
    run(Command::new("tar")
        .arg("-xf")
        .arg(&tarball)
        .arg("-C")
        .arg(scratch))?;
    let src = scratch.join(SOURCE_PACKAGE);
    configure(&src, log)?;
    make(&src, log, &["-j", &jobs.max(1).to_string(), "bzImage"])?;
    let release = run(Command::new("make")
        .args(["-s", "ARCH=x86_64", "kernelrelease"])
        .current_dir(&src))?;
    let meta = KernelMeta {
        name: NAME.into(),
        release: release.trim().to_string(),
        package: SOURCE_PACKAGE.into(),
        version: version.trim().to_string(),
        suite: SUITE.into(),
        origin: Origin::Built,
    };
    lab.store(
        &meta,
        &src.join("arch/x86/boot/bzImage"),
        &src.join(".config"),
    )
}

/// `tinyconfig` and [`OPTIONS`]; an error naming any option the
/// configuration did not keep.
fn configure(src: &Path, log: &Path) -> Result<(), LabError> {
    make(src, log, &["tinyconfig"])?;
    let mut config = Command::new("scripts/config");
    config.current_dir(src).args(["--file", ".config"]);
    for (option, _) in OPTIONS {
        config.args(["--enable", option]);
    }
    for option in OFF {
        config.args(["--disable", option]);
    }
    config.args(["--set-str", "LOCALVERSION", LOCALVERSION]);
    run(&mut config)?;
    make(src, log, &["olddefconfig"])?;
    let text = std::fs::read_to_string(src.join(".config")).map_err(|e| LabError::cache(src, e))?;
    let lost: Vec<&str> = OPTIONS
        .iter()
        .map(|(o, _)| *o)
        .filter(|o| !text.lines().any(|l| l == format!("CONFIG_{o}=y")))
        .collect();
    match lost.is_empty() {
        true => Ok(()),
        false => Err(LabError::Command {
            command: "make olddefconfig".into(),
            detail: format!("the configuration dropped {}", lost.join(", ")),
        }),
    }
}

fn make(src: &Path, log: &Path, args: &[&str]) -> Result<(), LabError> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| LabError::cache(log, e))?;
    let err = out.try_clone().map_err(|e| LabError::cache(log, e))?;
    let status = Command::new("make")
        .arg("ARCH=x86_64")
        .args(args)
        .current_dir(src)
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| LabError::Command {
            command: "make".into(),
            detail: e.to_string(),
        })?;
    if status.success() {
        return Ok(());
    }
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    Err(LabError::Command {
        command: format!("make {}", args.join(" ")),
        detail: format!(
            "{status}; the end of {}: {}",
            log.display(),
            lines[lines.len().saturating_sub(5)..].join(" | ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_option_is_named_once_and_none_is_also_turned_off() {
        let mut names: Vec<&str> = OPTIONS.iter().map(|(o, _)| *o).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
        assert!(OFF.iter().all(|o| !names.contains(o)));
        assert!(OPTIONS.iter().all(|(_, why)| !why.is_empty()));
    }
}
