//! Thin wrappers over the syscalls the executor makes: each returns the
//! kernel's errno as a number, so that results are recorded exactly as
//! the kernel gave them.

use std::ffi::CString;

/// An errno as the kernel returned it.
pub type Errno = i32;

pub type SysResult<T> = Result<T, Errno>;

/// The calling thread's errno now.
pub fn errno() -> Errno {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn check(ret: libc::c_long) -> SysResult<libc::c_long> {
    if ret < 0 {
        Err(errno())
    } else {
        Ok(ret)
    }
}

fn check_int(ret: libc::c_int) -> SysResult<libc::c_int> {
    check(ret as libc::c_long).map(|r| r as libc::c_int)
}

/// The kernel's name for an errno, `E<n>` for one without a name here.
pub fn errno_name(e: Errno) -> String {
    if let Some(known) = kernel::Errno::ALL.iter().find(|k| **k as i32 == e) {
        return known.name().to_string();
    }
    let name = match e {
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOSYS => "ENOSYS",
        libc::EMSGSIZE => "EMSGSIZE",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ERANGE => "ERANGE",
        libc::E2BIG => "E2BIG",
        libc::ENOEXEC => "ENOEXEC",
        libc::ETXTBSY => "ETXTBSY",
        _ => return format!("E{e}"),
    };
    name.to_string()
}

pub fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).expect("no NUL left")
}

pub fn unshare(flags: u64) -> SysResult<()> {
    check_int(unsafe { libc::unshare(flags as libc::c_int) }).map(drop)
}

pub fn setns(fd: i32, nstype: libc::c_int) -> SysResult<()> {
    check_int(unsafe { libc::setns(fd, nstype) }).map(drop)
}

/// `clone(flags | SIGCHLD)` without a new stack: a fork that may also
/// make new namespaces. 0 in the child, the child's pid in the parent.
pub fn clone_process(flags: u64) -> SysResult<i32> {
    let flags = flags as libc::c_ulong | libc::SIGCHLD as libc::c_ulong;
    let ret = unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_void>(),
            0 as libc::c_ulong,
        )
    };
    check(ret).map(|pid| pid as i32)
}

pub fn fork() -> SysResult<i32> {
    clone_process(0)
}

/// Wait for `pid` (or any child for -1): its pid and wait status.
pub fn waitpid(pid: i32, flags: libc::c_int) -> SysResult<(i32, i32)> {
    let mut status = 0;
    loop {
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        match check_int(r) {
            Err(libc::EINTR) => continue,
            Err(e) => return Err(e),
            Ok(p) => return Ok((p, status)),
        }
    }
}

pub fn kill(pid: i32, sig: libc::c_int) {
    unsafe {
        libc::kill(pid, sig);
    }
}

pub fn setresuid(r: u32, e: u32, s: u32) -> SysResult<()> {
    check_int(unsafe { libc::setresuid(r, e, s) }).map(drop)
}

/// The real, effective and saved uids, as the caller's namespace sees them
/// (getresuid(2) cannot fail with valid pointers).
pub fn getresuid() -> [u32; 3] {
    let (mut r, mut e, mut s) = (0, 0, 0);
    unsafe { libc::getresuid(&mut r, &mut e, &mut s) };
    [r, e, s]
}

/// The real, effective and saved gids, as [`getresuid`].
pub fn getresgid() -> [u32; 3] {
    let (mut r, mut e, mut s) = (0, 0, 0);
    unsafe { libc::getresgid(&mut r, &mut e, &mut s) };
    [r, e, s]
}

pub fn setresgid(r: u32, e: u32, s: u32) -> SysResult<()> {
    check_int(unsafe { libc::setresgid(r, e, s) }).map(drop)
}

pub fn setuid(uid: u32) -> SysResult<()> {
    check_int(unsafe { libc::setuid(uid) }).map(drop)
}

pub fn setgid(gid: u32) -> SysResult<()> {
    check_int(unsafe { libc::setgid(gid) }).map(drop)
}

/// `setgroups(2)` of `gids`.
pub fn setgroups(gids: &[u32]) -> SysResult<()> {
    check_int(unsafe { libc::setgroups(gids.len(), gids.as_ptr()) }).map(drop)
}

pub fn clear_groups() -> SysResult<()> {
    check_int(unsafe { libc::setgroups(0, std::ptr::null()) }).map(drop)
}

/// `setrlimit(resource, limit)`, soft and hard.
pub fn set_rlimit(resource: kernel::ops::RlimitType, limit: u64) -> SysResult<()> {
    let value = if limit == u64::MAX {
        libc::RLIM_INFINITY
    } else {
        limit as libc::rlim_t
    };
    let rl = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    let which = match resource {
        kernel::ops::RlimitType::Nproc => libc::RLIMIT_NPROC,
        kernel::ops::RlimitType::Msgqueue => libc::RLIMIT_MSGQUEUE,
        kernel::ops::RlimitType::Sigpending => libc::RLIMIT_SIGPENDING,
        kernel::ops::RlimitType::Memlock => libc::RLIMIT_MEMLOCK,
    };
    check_int(unsafe { libc::setrlimit(which, &rl) }).map(drop)
}

/// The signal the `sigqueue` and `sigtimedwait` ops use: SIGRTMIN as the
/// C library numbers it.
fn queued_signal() -> libc::c_int {
    libc::SIGRTMIN()
}

/// The set of the queued signal alone.
fn queued_signal_set() -> libc::sigset_t {
    // SAFETY: a zeroed sigset_t is valid storage for sigemptyset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, queued_signal());
        set
    }
}

/// Block the queued signal, so that what is sent stays pending (a task's
/// process does this before its first op).
pub fn block_queued_signal() {
    let set = queued_signal_set();
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// `sigqueue(3)` of SIGRTMIN to the process whose `/proc` directory is
/// `proc_dir`: an `SI_QUEUE` signal sent through the directory as a pidfd
/// (`pidfd_send_signal`), since the tasks run in a pid namespace of their
/// own, where the `/proc` pids mean nothing. The kernel checks and queues
/// it as it does `rt_sigqueueinfo`'s; a process already reaped is ESRCH,
/// as `sigqueue` by pid says.
pub fn sigqueue(proc_dir: &str) -> SysResult<()> {
    let fd = match open(proc_dir, libc::O_RDONLY | libc::O_DIRECTORY) {
        Err(libc::ENOENT) => return Err(libc::ESRCH),
        other => other?,
    };
    // SAFETY: a zeroed siginfo is valid; the first three ints are
    // si_signo, si_errno and si_code on every Linux ABI.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let words = (&raw mut info).cast::<libc::c_int>();
    unsafe {
        *words = queued_signal();
        *words.add(2) = libc::SI_QUEUE;
    }
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd,
            queued_signal(),
            &raw const info,
            0,
        )
    };
    close(fd);
    check_int(r as libc::c_int).map(drop)
}

/// `mq_open("/NAME", O_CREAT | O_EXCL | O_RDWR, 0600, attr)`; the
/// descriptor stays open until the process exits.
pub fn mq_open_kept(name: &str, maxmsg: u64, msgsize: u64) -> SysResult<()> {
    let name = std::ffi::CString::new(name).map_err(|_| libc::EINVAL)?;
    // SAFETY: a zeroed mq_attr is valid; the kernel reads its sizes.
    let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
    attr.mq_maxmsg = maxmsg as libc::c_long;
    attr.mq_msgsize = msgsize as libc::c_long;
    // The raw syscall takes the name without the C library's leading `/`.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_mq_open,
            name.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
            0o600 as libc::mode_t,
            &raw const attr,
        )
    };
    check_int(fd as libc::c_int).map(drop)
}

/// `mq_open("/NAME", O_RDWR)` of an existing queue; the descriptor stays
/// open until the process exits.
pub fn mq_open_existing_kept(name: &str) -> SysResult<()> {
    let name = std::ffi::CString::new(name).map_err(|_| libc::EINVAL)?;
    // The raw syscall takes the name without the C library's leading `/`.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_mq_open,
            name.as_ptr(),
            libc::O_RDWR,
            0 as libc::mode_t,
            std::ptr::null::<libc::mq_attr>(),
        )
    };
    check_int(fd as libc::c_int).map(drop)
}

/// `shmget(key, size, flags)`: the segment's id.
pub fn shmget(key: u64, size: u64, flags: u64) -> SysResult<i32> {
    let r = unsafe {
        libc::shmget(
            key as libc::key_t,
            size as libc::size_t,
            flags as libc::c_int,
        )
    };
    check_int(r)
}

/// `shmat(id, NULL, 0)`: the address it attached at.
pub fn shmat(id: i32) -> SysResult<usize> {
    let addr = unsafe { libc::shmat(id, std::ptr::null(), 0) };
    if addr as isize == -1 {
        return Err(errno());
    }
    Ok(addr as usize)
}

/// `shmdt(addr)`.
pub fn shmdt(addr: usize) -> SysResult<()> {
    check_int(unsafe { libc::shmdt(addr as *const libc::c_void) }).map(drop)
}

/// `shmctl(id, cmd)` with a buffer: IPC_STAT's shm_segsz and shm_nattch;
/// nothing for IPC_RMID.
pub fn shmctl_stat(id: i32, cmd: u64) -> SysResult<Vec<u64>> {
    let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
    check_int(unsafe { libc::shmctl(id, cmd as libc::c_int, &mut ds) })?;
    Ok(if cmd as libc::c_int == libc::IPC_STAT {
        vec![ds.shm_segsz as u64, ds.shm_nattch as u64]
    } else {
        Vec::new()
    })
}

/// `shmctl(id, cmd)` without a buffer (`SHM_LOCK`, `SHM_UNLOCK`).
pub fn shmctl(id: i32, cmd: libc::c_int) -> SysResult<()> {
    check_int(unsafe { libc::shmctl(id, cmd, std::ptr::null_mut()) }).map(drop)
}

/// `msgget(key, flags)`: the queue's id.
pub fn msgget(key: u64, flags: u64) -> SysResult<i32> {
    check_int(unsafe { libc::msgget(key as libc::key_t, flags as libc::c_int) })
}

/// The most bytes a message buffer is given: more than any
/// `kernel.msgmax` an executor's namespace has (8192), which the kernel
/// checks a size against before it copies.
const MSG_BUF_MAX: u64 = 1 << 20;

/// `msgsnd` of `size` bytes of type 1 with IPC_NOWAIT.
pub fn msgsnd(id: i32, size: u64) -> SysResult<()> {
    let len = std::mem::size_of::<libc::c_long>() + size.min(MSG_BUF_MAX) as usize;
    let mut buf = vec![0u8; len];
    buf[..std::mem::size_of::<libc::c_long>()].copy_from_slice(&(1 as libc::c_long).to_ne_bytes());
    let r = unsafe {
        libc::msgsnd(
            id,
            buf.as_ptr().cast(),
            size as libc::size_t,
            libc::IPC_NOWAIT,
        )
    };
    check_int(r).map(drop)
}

/// `msgrcv` of the oldest message with IPC_NOWAIT into `size` bytes: the
/// message's size.
pub fn msgrcv(id: i32, size: u64) -> SysResult<u64> {
    let len = std::mem::size_of::<libc::c_long>() + size.min(MSG_BUF_MAX) as usize;
    let mut buf = vec![0u8; len];
    let r = unsafe {
        libc::msgrcv(
            id,
            buf.as_mut_ptr().cast(),
            size as libc::size_t,
            0,
            libc::IPC_NOWAIT,
        )
    };
    check(r as libc::c_long).map(|n| n as u64)
}

/// `msgctl(id, cmd)`: IPC_STAT's msg_qnum, msg_cbytes and msg_qbytes;
/// nothing for IPC_RMID.
pub fn msgctl(id: i32, cmd: u64) -> SysResult<Vec<u64>> {
    let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
    check_int(unsafe { libc::msgctl(id, cmd as libc::c_int, &mut ds) })?;
    Ok(if cmd as libc::c_int == libc::IPC_STAT {
        vec![ds.msg_qnum, ds.__msg_cbytes, ds.msg_qbytes]
    } else {
        Vec::new()
    })
}

/// `semget(key, nsems, flags)`: the set's id.
pub fn semget(key: u64, nsems: u64, flags: u64) -> SysResult<i32> {
    let nsems = libc::c_int::try_from(nsems).unwrap_or(libc::c_int::MAX);
    check_int(unsafe { libc::semget(key as libc::key_t, nsems, flags as libc::c_int) })
}

/// `semop` of one operation with IPC_NOWAIT.
pub fn semop(id: i32, num: u64, op: i64) -> SysResult<()> {
    let mut sop = libc::sembuf {
        sem_num: libc::c_ushort::try_from(num).unwrap_or(libc::c_ushort::MAX),
        sem_op: op as libc::c_short,
        sem_flg: libc::IPC_NOWAIT as libc::c_short,
    };
    check_int(unsafe { libc::semop(id, &mut sop, 1) }).map(drop)
}

/// `semctl(id, num, cmd)`: GETVAL's value, IPC_STAT's sem_nsems; nothing
/// for IPC_RMID.
pub fn semctl(id: i32, num: u64, cmd: u64) -> SysResult<Vec<u64>> {
    let num = libc::c_int::try_from(num).unwrap_or(libc::c_int::MAX);
    let cmd = cmd as libc::c_int;
    let mut ds: libc::semid_ds = unsafe { std::mem::zeroed() };
    let r = check_int(unsafe { libc::semctl(id, num, cmd, &mut ds as *mut libc::semid_ds) })?;
    Ok(match cmd {
        libc::GETVAL => vec![r as u64],
        libc::IPC_STAT => vec![ds.sem_nsems as u64],
        _ => Vec::new(),
    })
}

/// `semctl(id, num, SETVAL, value)`.
pub fn semctl_setval(id: i32, num: u64, value: u64) -> SysResult<()> {
    let num = libc::c_int::try_from(num).unwrap_or(libc::c_int::MAX);
    let value = libc::c_int::try_from(value).unwrap_or(libc::c_int::MAX);
    check_int(unsafe { libc::semctl(id, num, libc::SETVAL, value) }).map(drop)
}

/// `mq_unlink("/NAME")`.
pub fn mq_unlink(name: &str) -> SysResult<()> {
    let name = std::ffi::CString::new(name).map_err(|_| libc::EINVAL)?;
    let r = unsafe { libc::syscall(libc::SYS_mq_unlink, name.as_ptr()) };
    check_int(r as libc::c_int).map(drop)
}

/// `sigtimedwait` for the queued signal with a zero timeout.
pub fn sigtimedwait_now() -> SysResult<()> {
    let set = queued_signal_set();
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    check_int(unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) }).map(drop)
}

pub fn set_nproc_limit(limit: u64) -> SysResult<()> {
    set_rlimit(kernel::ops::RlimitType::Nproc, limit)
}

/// RLIMIT_NPROC as high as this process may set it: unlimited, or else
/// its hard limit.
pub fn raise_nproc_limit() -> SysResult<()> {
    if set_nproc_limit(u64::MAX).is_ok() {
        return Ok(());
    }
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    check_int(unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut rl) })?;
    rl.rlim_cur = rl.rlim_max;
    check_int(unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &rl) }).map(drop)
}

pub fn drop_bounding(cap: u32) -> SysResult<()> {
    check_int(unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) })
        .map(drop)
}

/// The calling process adopts the orphans among its descendants.
pub fn become_subreaper() -> SysResult<()> {
    check_int(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) })
        .map(drop)
}

pub fn die_with_parent() {
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
    }
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

fn capget_raw() -> SysResult<(CapHeader, [CapData; 2])> {
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    check(unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) })?;
    Ok((header, data))
}

/// Read the process's capability sets, change them with `edit`, set them.
fn edit_capabilities(edit: impl FnOnce(&mut [CapData; 2])) -> SysResult<()> {
    let (mut header, mut data) = capget_raw()?;
    edit(&mut data);
    check(unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) }).map(drop)
}

/// The inode of `/proc/self/ns/<ns>`: which namespace of that type the
/// process is in.
pub fn ns_inode(ns: &str) -> SysResult<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/self/ns/{ns}"))
        .map(|m| m.ino())
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
}

/// The process's effective, permitted and inheritable sets, each as one
/// number whose bit N is capability N.
pub fn capget() -> SysResult<[u64; 3]> {
    let (_, [low, high]) = capget_raw()?;
    let join = |l: u32, h: u32| u64::from(l) | (u64::from(h) << 32);
    Ok([
        join(low.effective, high.effective),
        join(low.permitted, high.permitted),
        join(low.inheritable, high.inheritable),
    ])
}

/// The word and the mask that clears `cap` in it.
fn cap_bit(cap: u32) -> Option<(usize, u32)> {
    let word = (cap / 32) as usize;
    (word < 2).then(|| (word, !(1u32 << (cap % 32))))
}

/// Clear `caps` from the effective set (what `capsh --drop` leaves).
pub fn drop_effective(caps: &[u32]) -> SysResult<()> {
    edit_capabilities(|data| {
        for (word, mask) in caps.iter().filter_map(|c| cap_bit(*c)) {
            data[word].effective &= mask;
        }
    })
}

/// Clear `caps` from the effective, permitted and inheritable sets.
pub fn drop_held(caps: &[u32]) -> SysResult<()> {
    if caps.is_empty() {
        return Ok(());
    }
    edit_capabilities(|data| {
        for (word, mask) in caps.iter().filter_map(|c| cap_bit(*c)) {
            data[word].effective &= mask;
            data[word].permitted &= mask;
            data[word].inheritable &= mask;
        }
    })
}

/// Clear every capability (effective, permitted, inheritable).
pub fn clear_capabilities() -> SysResult<()> {
    edit_capabilities(|data| *data = [CapData::default(); 2])
}

/// Become `uid`/`gid` in the current namespace and keep every capability
/// in the effective set (to join a user namespace as that uid next).
pub fn become_keeping_caps(uid: u32, gid: u32) -> SysResult<()> {
    check_int(unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, 1 as libc::c_ulong, 0, 0, 0) })?;
    setresgid(gid, gid, gid)?;
    setresuid(uid, uid, uid)?;
    edit_capabilities(|data| {
        for d in data.iter_mut() {
            d.effective = d.permitted;
        }
    })
}

pub fn open(path: &str, flags: libc::c_int) -> SysResult<i32> {
    let p = cstring(path);
    check_int(unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC) })
}

/// `open(path, access)` then `close`: whether the open was allowed.
pub fn open_and_close(path: &str, access: libc::c_int) -> SysResult<()> {
    open(path, access).map(close)
}

/// `open` of a file the task keeps across `execve`, as the model's task
/// keeps its files.
pub fn open_kept(path: &str, flags: libc::c_int) -> SysResult<i32> {
    let p = cstring(path);
    check_int(unsafe { libc::open(p.as_ptr(), flags) })
}

pub fn close(fd: i32) {
    unsafe {
        libc::close(fd);
    }
}

pub fn write(fd: i32, bytes: &[u8]) -> SysResult<usize> {
    check(unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) as libc::c_long })
        .map(|n| n as usize)
}

/// One read(2), retried when interrupted.
pub fn read_once(fd: i32, buf: &mut [u8]) -> SysResult<usize> {
    loop {
        let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        match check(r as libc::c_long) {
            Err(libc::EINTR) => continue,
            other => return other.map(|n| n as usize),
        }
    }
}

/// Read until `buf` is full or end of file.
pub fn read_full(fd: i32, buf: &mut [u8]) -> SysResult<usize> {
    let mut got = 0;
    while got < buf.len() {
        let r = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        match check(r as libc::c_long) {
            Err(libc::EINTR) => continue,
            Err(e) => return Err(e),
            Ok(0) => break,
            Ok(n) => got += n as usize,
        }
    }
    Ok(got)
}

/// One write(2) of `text` to the file at `path`, as `echo -n text >
/// path` does: the errno of the open or of the write.
pub fn write_file_once(path: &str, text: &str) -> SysResult<()> {
    let fd = open(path, libc::O_WRONLY)?;
    let r = write(fd, text.as_bytes());
    close(fd);
    r.map(drop)
}

/// The whole text of the file at `path` (a /proc file, read to its
/// end): the errno of the open or of a read.
pub fn read_file(path: &str) -> SysResult<String> {
    let fd = open(path, libc::O_RDONLY)?;
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    let r = loop {
        match read_once(fd, &mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => text.extend_from_slice(&buf[..n]),
            Err(e) => break Err(e),
        }
    };
    close(fd);
    r.map(|()| String::from_utf8_lossy(&text).into_owned())
}

/// A pipe whose ends are closed on execve; `(read, write)`.
pub fn pipe() -> (i32, i32) {
    let mut fds = [0; 2];
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2 failed: {}", errno());
    (fds[0], fds[1])
}

/// Keep `fd` open across execve.
pub fn keep_on_exec(fd: i32) {
    unsafe {
        libc::fcntl(fd, libc::F_SETFD, 0);
    }
}

/// This process's pid as the machine's /proc names it (the executor's
/// processes live in a pid namespace of their own).
pub fn proc_pid() -> u32 {
    std::fs::read_link("/proc/self")
        .ok()
        .and_then(|p| p.to_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

/// The inode of the initial pid namespace (PROC_PID_INIT_INO).
const PROC_PID_INIT_INO: u64 = 0xEFFF_FFFC;

/// Whether this process is in the initial pid namespace and /proc shows
/// that namespace (NSpid has one entry), so that NSpid counts levels from
/// there in the processes it starts. (The executor asks before it makes
/// the run's pid namespace.)
pub fn proc_is_initial_pid_ns() -> bool {
    let initial = std::fs::read_link("/proc/self/ns/pid")
        .is_ok_and(|l| l.to_str() == Some(&format!("pid:[{PROC_PID_INIT_INO}]")));
    initial && pid_ns_level() == Some(0)
}

/// How many pid namespaces below the initial one this process is: the
/// entries of NSpid in /proc/self/status, less one (where
/// [`proc_is_initial_pid_ns`]).
pub fn pid_ns_level() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
    let entries = line.split_whitespace().count() as u32;
    entries.checked_sub(1)
}

pub fn exit_now(code: i32) -> ! {
    unsafe { libc::_exit(code) }
}

pub fn nanosleep(ns: u64) {
    std::thread::sleep(std::time::Duration::from_nanos(ns));
}

/// Block until killed.
pub fn pause_forever() -> ! {
    loop {
        unsafe {
            libc::pause();
        }
    }
}

/// Run `f` in a child process and wait for it: its exit status is the
/// errno it failed with, 0 when it succeeded.
pub fn in_child(f: impl FnOnce() -> SysResult<()>) -> SysResult<()> {
    let pid = fork()?;
    if pid == 0 {
        let code = match f() {
            Ok(()) => 0,
            Err(e) => e,
        };
        exit_now(code);
    }
    let (_, status) = waitpid(pid, 0)?;
    match libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)) {
        Some(0) => Ok(()),
        Some(e) => Err(e),
        None => Err(libc::EINTR),
    }
}

/// The /proc file of sysctl `name` (`user.max_user_namespaces`).
pub fn sysctl_path(name: &str) -> String {
    format!("/proc/sys/{}", name.replace('.', "/"))
}

/// Write sysctl `name` in one write, as `sysctl -w` does.
pub fn write_sysctl(name: &str, value: i64) -> SysResult<()> {
    write_file_once(&sysctl_path(name), &format!("{value}\n"))
}

/// Make the process dumpable again: a change of credentials clears the
/// flag, and the /proc files of a process that is not dumpable belong to
/// root, where the model lets other tasks reach them by their ids.
pub fn set_dumpable() {
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 1 as libc::c_ulong, 0, 0, 0);
    }
}
