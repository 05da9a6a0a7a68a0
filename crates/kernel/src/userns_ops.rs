//! The user-namespace syscalls of a simulated process: `unshare` and
//! `clone` with CLONE_NEWUSER (kernel/fork.c `unshare_userns`,
//! kernel/user_namespace.c `create_user_ns`), `setns` into a user
//! namespace (`userns_install`), writes to `/proc/PID/{uid_map,gid_map,
//! setgroups}` (fs/proc/base.c, kernel/user_namespace.c `map_write`), and
//! the user-namespace invariants.

use super::{violation, Process, World};
use crate::errno::Errno;
use crate::setup::{clone_flags, UsernsFile};
use sim::{Execution, ObjId};
use std::sync::Arc;
use userns::{caps, ns_capable, CapSet, Cred, MapKind, UserNamespace};

/// The kernel's errno for a user-namespace error.
pub(super) fn errno(e: userns::Error) -> Errno {
    match e {
        userns::Error::EPERM => Errno::EPERM,
        userns::Error::EINVAL => Errno::EINVAL,
        userns::Error::ENOSPC => Errno::ENOSPC,
        userns::Error::EUSERS => Errno::EUSERS,
        userns::Error::ENOMEM => Errno::ENOMEM,
        userns::Error::EACCES => Errno::EACCES,
    }
}

/// The credentials a scenario task starts with: its uid (and gid) as a
/// kernel id in its user namespace; every capability for root of the
/// initial namespace and for the owner of a child namespace (who made
/// it), none otherwise.
pub(super) fn initial_cred(ns: &Arc<UserNamespace>, uid: u32) -> Cred {
    let full = match &ns.parent {
        None => uid == 0,
        Some(_) => uid == ns.owner,
    };
    let caps = if full { CapSet::FULL } else { CapSet::EMPTY };
    // Set-up namespaces are pinned: no reference to count.
    Cred::new(ns, uid, uid, caps)
}

impl World {
    /// The task's current credentials.
    pub(super) fn cred(&self, p: &Process) -> Cred {
        p.cred.lock().clone()
    }

    /// A name for the next namespace a task makes: `<task>/userns<N>`.
    fn next_userns_name(&self, p: &Process) -> String {
        let n = self
            .userns_made
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}/userns{n}", p.name)
    }

    /// `unshare_userns`: new credentials in a new child namespace (the
    /// caller installs them once every other namespace was made).
    pub(super) fn unshare_userns(&self, p: &Process, cred: &Cred) -> Result<Cred, Errno> {
        let name = self.next_userns_name(p);
        let made = self.userns.create_user_ns(cred, &name);
        let code = made.as_ref().map_or_else(|e| errno(*e).as_return(), |_| 0);
        let obj = made.as_ref().map_or(ObjId::NONE, |c| c.user_ns.obj);
        sim::note("create_user_ns", obj, code);
        made.map_err(errno)
    }

    /// A child process with the task's credentials (`prepare_creds` takes
    /// a reference to the user namespace) unshares and exits.
    pub(super) fn unshare_and_exit(&self, p: &Process, flags: u64) -> Result<(), Errno> {
        sim::point("clone", ObjId::NONE, &super::SYSCALL);
        let cred = self.cred(p);
        cred.user_ns.get();
        if flags & clone_flags::CLONE_NEWUSER == 0 {
            self.userns.put_cred(cred);
            return Ok(());
        }
        match self.unshare_userns(p, &cred) {
            Ok(new) => {
                // The child exits: its credentials go, and with them the
                // only reference to the new namespace.
                self.userns.put_cred(new);
                Ok(())
            }
            Err(e) => {
                self.userns.put_cred(cred);
                Err(e)
            }
        }
    }

    /// `setns(fd, CLONE_NEWUSER)`: `userns_install`.
    pub(super) fn setns_user(&self, p: &Process, target: &str) -> Result<(), Errno> {
        sim::point("setns", ObjId::NONE, &super::SYSCALL);
        let target = self.proc_named(target).ok_or(Errno::ENOENT)?;
        let ns = Arc::clone(&target.cred.lock().user_ns);
        let cred = self.cred(p);
        if Arc::ptr_eq(&ns, &cred.user_ns) {
            return Err(Errno::EINVAL);
        }
        if !ns_capable(&cred, &ns, caps::CAP_SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
        ns.get();
        let new = Cred {
            user_ns: Arc::clone(&ns),
            cap_effective: CapSet::FULL,
            ..cred.clone()
        };
        *p.cred.lock() = new;
        self.userns.put_user_ns(&cred.user_ns);
        Ok(())
    }

    /// One write(2) to `/proc/PID/<file>` of `target` (the writer itself
    /// when `None`), the file opened by the writer.
    pub(super) fn write_userns_file(
        &self,
        p: &Process,
        file: UsernsFile,
        target: Option<&str>,
        text: &str,
    ) -> Result<(), Errno> {
        sim::point("write", ObjId::NONE, &super::SYSCALL);
        let ns = match target {
            None => Arc::clone(&p.cred.lock().user_ns),
            Some(t) => {
                let t = self.proc_named(t).ok_or(Errno::ENOENT)?;
                let ns = Arc::clone(&t.cred.lock().user_ns);
                ns
            }
        };
        let cred = self.cred(p);
        let result = match file {
            UsernsFile::UidMap | UsernsFile::GidMap => {
                let kind = if file == UsernsFile::UidMap {
                    MapKind::Uid
                } else {
                    MapKind::Gid
                };
                userns::map_write(&self.userns, &ns, kind, &cred, &cred, text.as_bytes(), 0).result
            }
            UsernsFile::Setgroups => {
                userns::proc_setgroups_write(&self.userns, &ns, &cred, text.as_bytes(), 0).0
            }
        };
        let code = result.map_or_else(|e| errno(e).as_return(), |_| 0);
        sim::note(file.name(), ns.obj, code);
        result.map(|_| ()).map_err(errno)
    }

    /// A task by name, or instance 0 of a task with instances.
    pub(super) fn proc_named(&self, name: &str) -> Option<&Arc<Process>> {
        self.procs
            .get(name)
            .or_else(|| self.procs.get(&format!("{name}.0")))
    }
}

/// Install the user-namespace invariants a scenario asks for.
pub(super) fn install_userns_invariants(
    e: &mut Execution,
    world: &Arc<World>,
    wants: impl Fn(&str) -> bool,
) {
    type Check = fn(&userns::Userns) -> Option<String>;
    let checks: [(&str, Check); 4] = [
        ("idmap.published_whole", userns::invariants::published_whole),
        ("idmap.roundtrip", userns::invariants::roundtrip),
        ("idmap.confined", userns::invariants::confined),
        ("userns.depth", userns::invariants::depth),
    ];
    for (name, check) in checks {
        if wants(name) {
            let w = Arc::clone(world);
            e.check_each_step(move || check(&w.userns).map(|d| violation(name, d)));
        }
    }
}
