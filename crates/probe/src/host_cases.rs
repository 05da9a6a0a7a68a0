//! Kernel halves of conformance cases about creating, entering and
//! limiting user (and network) namespaces: each function asks the running
//! kernel one bounded question and returns its answer as a short text, or
//! [`Skip`] when this host cannot answer.
//!
//! As everywhere in this crate, the probes run in child processes only
//! (`sh`, `unshare`, `setpriv`, `nsenter`, `dd`, and `python3` where a
//! process must call unshare(2) itself and act before any execve), every
//! probe is bounded by `timeout`, limits are lowered only inside a child
//! user namespace made for the probe, loops are capped at 100 iterations
//! (20 namespaces per create loop, 40 nesting levels, 100 short polls
//! while waiting for a sleeper), and every background sleeper is killed
//! by its pid and reaped before the script ends.
//!
//! Each script prints tagged lines: `R <result>` is one operation's result
//! (`ok`, or the tool's error message, which [`errno_from_message`] names),
//! `X <why>` says the set-up was not what the question needs (the probe
//! then skips rather than answering).
//!
//! Tools: `unshare` (`-U`, `-r`, `-n`, `--fork`), `setpriv` (`--reuid`,
//! `--regid`, `--clear-groups`) and `nsenter` (`--user=`,
//! `--preserve-credentials`) from util-linux, 2.38.1 here (`unshare -r`
//! must write `setgroups` `deny` as well as both maps, as it does here);
//! coreutils `timeout`, `dd` and `id`; a POSIX `sh` (dash here); and
//! `/usr/bin/python3` with `ctypes` for the one case that must write from
//! the process that called unshare(2).

use crate::{
    errno_from_message, sh_as_host, sh_in_userns, shell_quote, KernelAnswer, ShOutput, Skip,
};

/// Switches to uid/gid 1000 with no supplementary groups (no capabilities).
const AS_1000: &str = "setpriv --reuid=1000 --regid=1000 --clear-groups";
/// Switches to uid/gid 1001 with no supplementary groups.
const AS_1001: &str = "setpriv --reuid=1001 --regid=1001 --clear-groups";
/// The Python the in-process probes run (readable by every uid).
const PYTHON: &str = "/usr/bin/python3";
/// How long a probe's background sleeper lives at most.
const SLEEP: &str = "sleep 30";

/// `r CMD...`: run CMD, print `R ok` or `R <its stderr on one line>`.
const RESULT_FN: &str = r#"r() { if e=$("$@" 2>&1 >/dev/null); then echo "R ok"; else printf 'R %s\n' "$(printf '%s' "$e" | tr '\n' ' ')"; fi; }"#;

/// Wait (at most ~3 s) until `$p` has left this shell's user namespace.
const WAIT_UNSHARED: &str = r#"i=0; while [ "$(readlink /proc/$p/ns/user)" = "$(readlink /proc/self/ns/user)" ] && [ $i -lt 100 ]; do i=$((i+1)); sleep 0.03; done"#;

/// The inode number the kernel gives the initial user namespace.
const INIT_USER_NS: &str = "user:[4026531837]";

fn need_root() -> Result<(), Skip> {
    if crate::host_is_root() {
        Ok(())
    } else {
        Err(Skip("needs root on the host to switch uids".into()))
    }
}

fn need_python() -> Result<(), Skip> {
    if std::path::Path::new(PYTHON).exists() {
        Ok(())
    } else {
        Err(Skip(format!("{PYTHON} is missing")))
    }
}

/// The uids a probe runs as: the invoking user, plus uid 1000 through
/// `setpriv` when the invoking user is root (so that both a root-owned and
/// an unprivileged namespace are asked).
fn runners() -> Vec<(&'static str, &'static str)> {
    let mut v = vec![("self", "")];
    if crate::host_is_root() {
        v.push(("uid1000", AS_1000));
    }
    v
}

/// `ok` or the errno name of one `R` payload.
fn name_result(r: &str) -> Result<String, Skip> {
    let r = r.trim();
    if r == "ok" {
        return Ok("ok".into());
    }
    errno_from_message(r)
        .map(str::to_string)
        .ok_or_else(|| Skip(format!("unrecognised failure: {r}")))
}

/// Every `R` result of a probe, named, after checking for `X` lines.
fn results(out: &ShOutput) -> Result<Vec<String>, Skip> {
    let setup: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("X "))
        .collect();
    if !setup.is_empty() {
        return Err(Skip(format!(
            "set-up not as the question needs: {}",
            setup.join("; ")
        )));
    }
    let rs: Vec<String> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("R "))
        .map(name_result)
        .collect::<Result<_, _>>()?;
    if rs.is_empty() {
        return Err(Skip(format!(
            "probe gave no answer: {} {}",
            out.stdout.trim(),
            out.stderr.trim()
        )));
    }
    Ok(rs)
}

/// The one result of a probe that prints exactly one `R` line.
fn single(out: &ShOutput) -> KernelAnswer {
    let rs = results(out)?;
    match rs.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(Skip(format!("expected one result, got {rs:?}"))),
    }
}

/// The common answer when every variant agrees, else `a=X b=Y`.
fn agree(parts: Vec<(&str, String)>) -> String {
    if parts.windows(2).all(|w| w[0].1 == w[1].1) {
        parts.into_iter().next().map(|(_, a)| a).unwrap_or_default()
    } else {
        parts
            .iter()
            .map(|(who, a)| format!("{who}={a}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Checks, inside a namespace made by `unshare -U -r` from a process with
/// outer ids `$o`/`$g`, that the maps are `0 $o 1`, `0 $g 1` and
/// setgroups is `deny`.
const CHECK_MAPPED: &str = r#"set -- $(cat /proc/self/uid_map); [ "$*" = "0 $o 1" ] || echo "X uid_map is '$*'"; set -- $(cat /proc/self/gid_map); [ "$*" = "0 $g 1" ] || echo "X gid_map is '$*'"; [ "$(cat /proc/self/setgroups)" = deny ] || echo "X setgroups is not deny""#;

/// Checks that this process's uid_map and gid_map are empty.
const CHECK_UNMAPPED: &str = r#"[ -z "$(cat /proc/self/uid_map)" ] || echo "X uid_map written"; [ -z "$(cat /proc/self/gid_map)" ] || echo "X gid_map written""#;

/// In a child user namespace whose maps were written as `unshare -U -r`
/// writes them (`setgroups` `deny`, `uid_map` `0 <outer uid> 1`, `gid_map`
/// `0 <outer gid> 1`), does a further `unshare(CLONE_NEWUSER)` by its root
/// succeed?
///
/// Answer: `ok` or the errno name (`EPERM`, `ENOSPC`, ...); asked as the
/// invoking user and, when that is root, also as uid 1000; if the two
/// differed the answer would be `self=X uid1000=Y`.
///
/// Decided by kernel/user_namespace.c `create_user_ns` (reached from
/// `ksys_unshare` in kernel/fork.c through `unshare_userns`): the nesting
/// depth must be below the cap, the parent's (and every ancestor's)
/// user-namespace count must be below its limit, and the creator's euid
/// and egid must have a mapping in the parent namespace, which they do
/// here (both map to 0). No capability is needed (an LSM's
/// `security_create_user_ns` hook could still refuse; none does here). On
/// this machine (6.18): `ok`.
pub fn unshare_user_in_mapped_ns() -> KernelAnswer {
    crate::host_allows_userns()?;
    let mut parts = Vec::new();
    for (who, prefix) in runners() {
        let inner = format!("{RESULT_FN}\n{CHECK_MAPPED}\nr unshare -U true\n");
        let script = format!(
            "o=$({prefix} id -u); g=$({prefix} id -g); export o g; \
             {prefix} unshare -U -r sh -c {}",
            shell_quote(&inner)
        );
        parts.push((who, single(&sh_as_host(&script, 30)?)?));
    }
    Ok(agree(parts))
}

/// In a child user namespace whose `uid_map` has been written once (by
/// `unshare -U -r`: `0 <outer uid> 1`), does a second write of the same,
/// otherwise valid, line to that `uid_map` fail, and with which errno?
/// Written once from inside (by the namespace's root, through
/// `/proc/self/uid_map`) and once from the parent (by the creator, through
/// `/proc/PID/uid_map` of a sleeper in the namespace); each write is one
/// write(2) by `dd`.
///
/// Answer: `EPERM` (or `ok`, or another errno name) when both writers get
/// the same result, else `inside=X parent=Y`.
///
/// Decided by kernel/user_namespace.c `map_write` (through
/// `proc_uid_map_write`): a map may be written successfully only once;
/// any later write is refused with EPERM before the capability and range
/// checks are even made. On this machine (6.18): `EPERM`.
pub fn second_uid_map_write() -> KernelAnswer {
    crate::host_allows_userns()?;
    let inside = format!(
        "{RESULT_FN}\n{CHECK_MAPPED}\n\
         echo \"0 $o 1\" | r dd of=/proc/self/uid_map bs=65536 conv=notrunc\n"
    );
    let script = format!(
        "{RESULT_FN}\n\
         o=$(id -u); g=$(id -g); export o g\n\
         unshare -U -r sh -c {}\n\
         unshare -U -r {SLEEP} & p=$!\n\
         {WAIT_UNSHARED}\n\
         i=0; while [ -z \"$(cat /proc/$p/uid_map 2>/dev/null)\" ] && [ $i -lt 100 ]; do i=$((i+1)); sleep 0.01; done\n\
         set -- $(cat /proc/$p/uid_map); [ \"$*\" = \"0 $o 1\" ] || echo \"X sleeper uid_map is '$*'\"\n\
         echo \"0 $o 1\" | r dd of=/proc/$p/uid_map bs=65536 conv=notrunc\n\
         kill $p; wait\n",
        shell_quote(&inside)
    );
    let rs = results(&sh_as_host(&script, 30)?)?;
    match rs.as_slice() {
        [inside, parent] => Ok(agree(vec![
            ("inside", inside.clone()),
            ("parent", parent.clone()),
        ])),
        _ => Err(Skip(format!("expected two results, got {rs:?}"))),
    }
}

/// Inside `unshare -U -r` with `/proc/sys/user/<sysctl>` of that child
/// namespace set to 1, run `unshare <flag> true` `n` times in a row (each
/// makes one namespace in a child process that then exits) and bucket the
/// failures: `ENOSPC at least once` or `never ENOSPC`, plus `, also
/// <errno> at least once` for any other errno seen.
fn create_exit_loop(sysctl: &str, flag: &str, n: u32) -> KernelAnswer {
    let script = format!(
        "{RESULT_FN}\n\
         echo 1 > /proc/sys/user/{sysctl} || echo 'X cannot set {sysctl}'\n\
         i=0; while [ $i -lt {n} ]; do r unshare {flag} true; i=$((i+1)); done\n"
    );
    let rs = results(&sh_in_userns(&script, 60)?)?;
    if rs.len() != n as usize {
        return Err(Skip(format!("expected {n} results, got {}", rs.len())));
    }
    let failed = |e: &str| rs.iter().filter(|r| *r == e).count();
    let mut answer = if failed("ENOSPC") > 0 {
        "ENOSPC at least once".to_string()
    } else {
        "never ENOSPC".to_string()
    };
    let mut others: Vec<&String> = rs.iter().filter(|r| *r != "ok" && *r != "ENOSPC").collect();
    others.sort_unstable();
    others.dedup();
    for e in others {
        answer.push_str(&format!(", also {e} at least once"));
    }
    Ok(answer)
}

/// Inside `unshare -U -r`, with `max_net_namespaces` of that child
/// namespace set to 1, does `unshare -n true` run 20 times in a row ever
/// fail with ENOSPC, although each network namespace's only process has
/// exited before the next one is made?
///
/// Answer: `ENOSPC at least once` or `never ENOSPC` (plus `, also <errno>
/// at least once` if some failure had another errno; none did).
///
/// Decided by net/core/net_namespace.c: `copy_net_ns` charges the new
/// namespace to the creating user namespace and its ancestors through
/// kernel/ucount.c `inc_ucount` (ENOSPC when a level is at its limit),
/// but the charge is only returned in `cleanup_net`, a work item that runs
/// some time after the last reference is dropped (`__put_net` queues the
/// namespace for it). So the next `unshare -n` usually comes before the
/// previous namespace is uncharged.
///
/// Measured here (6.18, 2 CPUs), failures of 20: this probe, five runs
/// next to the other tests: 16, 17, 17, 17, 17; five runs alone: 15, 15,
/// 15, 15, 16; the same loop without the per-iteration `$(...)`, eight
/// runs: 17 to 19. Every failure was "No space left on device" (ENOSPC),
/// the first iteration was always `ok`, so the bucket would flip only if
/// all 20 worked. Answer: `ENOSPC at least once`.
pub fn netns_create_exit_loop_enospc() -> KernelAnswer {
    create_exit_loop("max_net_namespaces", "-n", 20)
}

/// Inside `unshare -U -r`, with `max_user_namespaces` of that child
/// namespace set to 1, does `unshare -U true` run 20 times in a row ever
/// fail with ENOSPC, although each new namespace's only process has exited
/// before the next one is made?
///
/// The probe's own namespace counts against its parent's (the initial
/// namespace's) limit, not against the 1 written here: the sysctl read and
/// written inside is the child namespace's own, which limits the
/// namespaces made inside it.
///
/// Answer: `ENOSPC at least once` or `never ENOSPC` (plus `, also <errno>
/// at least once` for another errno; none was seen).
///
/// Decided by kernel/user_namespace.c: `create_user_ns` charges the new
/// namespace through `inc_user_namespaces` (kernel/ucount.c `inc_ucount`,
/// ENOSPC at the limit), and the charge is returned by `free_user_ns`,
/// which runs from a work item scheduled when the last reference is put
/// (`__put_user_ns`), so usually after the next `unshare -U` has already
/// been refused.
///
/// Measured here (6.18, 2 CPUs), failures of 20: this probe, five runs
/// next to the other tests: 17 each time; five runs alone: 16, 16, 16, 17,
/// 17; the same loop without the per-iteration `$(...)`, eight runs: 18
/// or 19. Every failure was ENOSPC, the first iteration always `ok`.
/// Answer: `ENOSPC at least once`.
pub fn userns_create_exit_loop_enospc() -> KernelAnswer {
    create_exit_loop("max_user_namespaces", "-U", 20)
}

/// How many nested user namespaces can be made below the initial one?
/// The chain is one process that repeatedly execs `unshare -U -r sh`
/// (each level maps its root to the level above, as the next level's
/// creator must be mapped), stopping at the first failure or after 40
/// levels.
///
/// Answer: `<N> ok, then <errno>` (or `<N> ok, no failure` at the cap).
/// Skips unless the probe starts in the initial user namespace.
///
/// Decided by kernel/user_namespace.c `create_user_ns`: a namespace whose
/// level (the initial one is level 0) is above 32 may not get a child, and
/// the refusal is ENOSPC (it was EUSERS before 4.9). So levels 1 to 33 are
/// made and the 34th attempt fails. On this machine (6.18): `33 ok, then
/// ENOSPC`, in every run.
pub fn userns_nesting_depth() -> KernelAnswer {
    crate::host_allows_userns()?;
    let here = std::fs::read_link("/proc/self/ns/user")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    if here != INIT_USER_NS {
        return Err(Skip(format!(
            "not in the initial user namespace ({here}), the depth would be relative"
        )));
    }
    let level = "n=$((n+1)); echo \"L $n\"; [ $n -ge 40 ] && exit 0; \
                 exec unshare -U -r sh -c \"$S\"";
    let script = format!(
        "S={}; export S; n=0; export n; exec unshare -U -r sh -c \"$S\"",
        shell_quote(level)
    );
    let out = sh_as_host(&script, 30)?;
    let depth = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("L "))
        .filter_map(|n| n.trim().parse::<u32>().ok())
        .max()
        .unwrap_or(0);
    if out.status == Some(0) {
        return Ok(format!("{depth} ok, no failure"));
    }
    // Only a refused unshare(2) answers; a failed map write (`unshare:
    // write failed ...`) would be a broken chain, not the depth limit.
    let errno = out
        .stderr
        .contains("unshare failed")
        .then(|| errno_from_message(&out.stderr))
        .flatten()
        .ok_or_else(|| Skip(format!("the chain broke: {}", out.stderr.trim())))?;
    Ok(format!("{depth} ok, then {errno}"))
}

/// A Python process (single-threaded, as unshare(2) of a user namespace
/// needs) that calls unshare(CLONE_NEWUSER) itself, writes no map, checks
/// it is now unmapped (uid 65534, empty uid_map), then writes 5 to
/// `/proc/sys/user/max_ipc_namespaces` of the new namespace and reads it
/// back: prints `R ok` (or `R <strerror>`) and `V <value read back>`.
const PY_UNSHARE_WRITE_SYSCTL: &str = r#"import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000) != 0:
    print("X unshare:", os.strerror(ctypes.get_errno())); sys.exit(0)
if os.getuid() != 65534 or open("/proc/self/uid_map").read().strip():
    print("X not unmapped: uid", os.getuid())
path = "/proc/sys/user/max_ipc_namespaces"
try:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, b"5\n")
    finally:
        os.close(fd)
    print("R ok")
except OSError as e:
    print("R", e.strerror)
print("V", open(path).read().strip())
"#;

/// A process of uid 1000 (no capabilities in the initial namespace) calls
/// unshare(CLONE_NEWUSER), writes no map (so it is the new namespace's
/// creator and owner and sees itself as the overflow uid 65534), and, in
/// the same process, with no execve in between, writes 5 to
/// `/proc/sys/user/max_ipc_namespaces` of the new namespace. Does the
/// write succeed?
///
/// Answer: `ok` (the write worked and reads back 5), `ok, reads <v>` (it
/// worked but did not stick), or the errno name (`EACCES` when the open is
/// refused). Run as uid 1000 when the host user is root, else as the
/// invoking user.
///
/// Decided by kernel/ucount.c `set_permissions`: the `user.max_*` table
/// seen in /proc/sys is that of the reader's own user namespace, and it is
/// writable only by a task with CAP_SYS_RESOURCE in that namespace (others
/// get read-only modes, so open for writing fails with EACCES). The task
/// that made the namespace was given a full capability set in it by
/// kernel/user_namespace.c `create_user_ns` (via `set_cred_user_ns`), so
/// until it execs it has CAP_SYS_RESOURCE there. On this machine (6.18):
/// `ok`.
///
/// The non-owner half: another unprivileged uid cannot reach this table
/// at all, since /proc/sys shows only the reader's own namespace and it
/// cannot enter the owner's namespace (see
/// [`setns_user_into_other_users_ns`]); and the owner itself loses the
/// capability at its first execve (see
/// [`creator_after_exec_writes_own_max_sysctl`]).
pub fn creator_writes_own_max_sysctl() -> KernelAnswer {
    need_python()?;
    crate::host_allows_userns()?;
    let prefix = if crate::host_is_root() { AS_1000 } else { "" };
    let script = format!(
        "{prefix} {PYTHON} -c {}",
        shell_quote(PY_UNSHARE_WRITE_SYSCTL)
    );
    let out = sh_as_host(&script, 30)?;
    let r = single(&out)?;
    let read_back = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("V "))
        .unwrap_or("")
        .trim()
        .to_string();
    Ok(if r == "ok" && read_back != "5" {
        format!("ok, reads {read_back}")
    } else {
        r
    })
}

/// The same write as [`creator_writes_own_max_sysctl`], but by the
/// creator after an execve: uid 1000 runs `unshare -U sh -c 'echo 5 >
/// /proc/sys/user/max_ipc_namespaces'` (no map written, so the shell runs
/// as the unmapped uid 65534). Does the write succeed?
///
/// Answer: `ok` or the errno name. Run as uid 1000 when the host user is
/// root, else as the invoking user.
///
/// Decided by security/commoncap.c `cap_bprm_creds_from_file`: at execve a
/// task that is not uid 0 in its namespace (65534 is not) keeps no
/// permitted or effective capabilities (the file has none), so kernel/ucount.c
/// `set_permissions` gives it the read-only modes and the open fails with
/// EACCES. Being the namespace's owner does not help: the owner's implicit
/// capabilities (security/commoncap.c `cap_capable`) apply only to tasks
/// in the parent namespace. On this machine (6.18): `EACCES`.
pub fn creator_after_exec_writes_own_max_sysctl() -> KernelAnswer {
    crate::host_allows_userns()?;
    let prefix = if crate::host_is_root() { AS_1000 } else { "" };
    let inner = format!(
        "{RESULT_FN}\n{CHECK_UNMAPPED}\n[ \"$(id -u)\" = 65534 ] || echo 'X not uid 65534'\n\
         w() {{ echo 5 > /proc/sys/user/max_ipc_namespaces; }}\nr w\n"
    );
    let script = format!("{prefix} unshare -U sh -c {}", shell_quote(&inner));
    single(&sh_as_host(&script, 30)?)
}

/// A process in a child user namespace whose `uid_map` and `gid_map` were
/// never written (so its own ids are unmapped there, shown as 65534) calls
/// unshare(CLONE_NEWUSER) again (`unshare -U unshare -U true`). Does it
/// succeed?
///
/// Answer: `ok` or the errno name; asked as the invoking user and, when
/// that is root, also as uid 1000 (`self=X uid1000=Y` if they differed).
///
/// Decided by kernel/user_namespace.c `create_user_ns`: the new
/// namespace's owner and group are the creator's euid and egid, and both
/// must have a mapping in the namespace that would be the parent, else
/// EPERM. With no map written nothing is mapped. On this machine (6.18):
/// `EPERM`. (Compare [`unshare_user_in_mapped_ns`], the same call with the
/// maps written: `ok`.)
pub fn unmapped_creator_unshare_user() -> KernelAnswer {
    crate::host_allows_userns()?;
    let mut parts = Vec::new();
    for (who, prefix) in runners() {
        let inner = format!("{RESULT_FN}\n{CHECK_UNMAPPED}\nr unshare -U true\n");
        let script = format!("{prefix} unshare -U sh -c {}", shell_quote(&inner));
        parts.push((who, single(&sh_as_host(&script, 30)?)?));
    }
    Ok(agree(parts))
}

/// Can uid 1000 enter (setns) a user namespace made by uid 1001? uid 1001
/// keeps a `sleep` alive in a namespace it made with `unshare -U` (killed
/// and reaped at the end). Asked two ways:
///
/// 1. as the question is usually put, uid 1000 runs
///    `nsenter --preserve-credentials --user=/proc/PID/ns/user true`, which
///    must first open the namespace file itself;
/// 2. host root opens `/proc/PID/ns/user` and uid 1000's `nsenter` gets the
///    descriptor (`--user=/proc/self/fd/3`), so that setns(2) itself decides.
///
/// As a control, uid 1001 (the owner) entering through the same kind of
/// descriptor must work; if it does not, the probe skips.
///
/// Answer: `open <r1>, setns <r2>` with each `ok` or an errno name.
///
/// Decided by (1) fs/proc/namespaces.c `proc_ns_get_link`, which lets only
/// a task that may ptrace-read the target process (kernel/ptrace.c
/// `__ptrace_may_access`: same uids, or CAP_SYS_PTRACE over its namespace)
/// follow `/proc/PID/ns/*`, else EACCES, so nsenter never reaches setns;
/// and (2) kernel/nsproxy.c `setns` → kernel/user_namespace.c
/// `userns_install`, which requires CAP_SYS_ADMIN in the target namespace:
/// uid 1000 has none there (it is neither in it nor its owner; the owner
/// rule of security/commoncap.c `cap_capable` gives the owner, uid 1001 in
/// the parent, all capabilities there), so EPERM.
///
/// On this machine (6.18): `open EACCES, setns EPERM`. The expected plain
/// `EPERM` is what setns(2) answers; a path-based nsenter by uid 1000 is
/// refused earlier, with EACCES, by the ptrace check.
pub fn setns_user_into_other_users_ns() -> KernelAnswer {
    need_root()?;
    crate::host_allows_userns()?;
    let nsenter = "nsenter --preserve-credentials";
    let script = format!(
        "{RESULT_FN}\n\
         {AS_1001} unshare -U {SLEEP} >/dev/null 2>&1 & p=$!\n\
         {WAIT_UNSHARED}\n\
         [ \"$(readlink /proc/$p/ns/user)\" = \"$(readlink /proc/self/ns/user)\" ] && echo 'X sleeper did not unshare'\n\
         r {AS_1000} {nsenter} --user=/proc/$p/ns/user true\n\
         ( exec 3</proc/$p/ns/user; r {AS_1000} {nsenter} --user=/proc/self/fd/3 true )\n\
         ( exec 3</proc/$p/ns/user; r {AS_1001} {nsenter} --user=/proc/self/fd/3 true )\n\
         kill $p; wait\n"
    );
    let rs = results(&sh_as_host(&script, 30)?)?;
    match rs.as_slice() {
        [open, setns, owner] if owner == "ok" => Ok(format!("open {open}, setns {setns}")),
        [_, _, owner] => Err(Skip(format!(
            "control failed: the owner could not enter its own namespace ({owner})"
        ))),
        _ => Err(Skip(format!("expected three results, got {rs:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asserts `expected` when the kernel answered, prints the reason when
    /// it could not.
    fn check(name: &str, answer: KernelAnswer, expected: &str) {
        match answer {
            Ok(a) => {
                eprintln!("{name}: {a}");
                assert_eq!(a, expected, "{name}");
            }
            Err(skip) => eprintln!("{name}: skipped: {skip}"),
        }
    }

    #[test]
    fn unshare_user_in_mapped_ns_is_ok() {
        check(
            "unshare_user_in_mapped_ns",
            unshare_user_in_mapped_ns(),
            "ok",
        );
    }

    #[test]
    fn second_uid_map_write_is_eperm() {
        check("second_uid_map_write", second_uid_map_write(), "EPERM");
    }

    #[test]
    fn netns_create_exit_loop_hits_enospc() {
        check(
            "netns_create_exit_loop_enospc",
            netns_create_exit_loop_enospc(),
            "ENOSPC at least once",
        );
    }

    #[test]
    fn userns_create_exit_loop_hits_enospc() {
        check(
            "userns_create_exit_loop_enospc",
            userns_create_exit_loop_enospc(),
            "ENOSPC at least once",
        );
    }

    #[test]
    fn userns_nesting_depth_is_33() {
        check(
            "userns_nesting_depth",
            userns_nesting_depth(),
            "33 ok, then ENOSPC",
        );
    }

    #[test]
    fn creator_writes_own_max_sysctl_is_ok() {
        check(
            "creator_writes_own_max_sysctl",
            creator_writes_own_max_sysctl(),
            "ok",
        );
    }

    #[test]
    fn creator_after_exec_writes_own_max_sysctl_is_eacces() {
        check(
            "creator_after_exec_writes_own_max_sysctl",
            creator_after_exec_writes_own_max_sysctl(),
            "EACCES",
        );
    }

    #[test]
    fn unmapped_creator_unshare_user_is_eperm() {
        check(
            "unmapped_creator_unshare_user",
            unmapped_creator_unshare_user(),
            "EPERM",
        );
    }

    #[test]
    fn setns_user_into_other_users_ns_is_refused() {
        check(
            "setns_user_into_other_users_ns",
            setns_user_into_other_users_ns(),
            "open EACCES, setns EPERM",
        );
    }

    #[test]
    fn agreeing_variants_give_one_answer() {
        assert_eq!(agree(vec![("a", "ok".into()), ("b", "ok".into())]), "ok");
        assert_eq!(
            agree(vec![("a", "ok".into()), ("b", "EPERM".into())]),
            "a=ok b=EPERM"
        );
    }

    #[test]
    fn set_up_lines_skip_and_results_are_named() {
        let out = |s: &str| ShOutput {
            status: Some(0),
            stdout: s.into(),
            stderr: String::new(),
        };
        assert_eq!(
            results(&out(
                "R ok\nR unshare: unshare failed: No space left on device\n"
            )),
            Ok(vec!["ok".to_string(), "ENOSPC".to_string()])
        );
        assert!(results(&out("X uid_map is ''\nR ok\n")).is_err());
        assert!(results(&out("R something odd\n")).is_err());
        assert!(results(&out("")).is_err());
    }
}
