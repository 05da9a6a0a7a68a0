//! Network namespaces in processes' nsproxy, and the uevent operations a
//! scenario's tasks perform: listen, receive, inject, and kernel device
//! events.
//!
//! Models the network-namespace half of kernel/nsproxy.c
//! (`create_new_namespaces` → `copy_net_ns`, `switch_task_namespaces`,
//! `exit_task_namespaces` → `put_net`), the socket calls of a uevent
//! listener (`socket`, `bind`, `recvmsg(MSG_DONTWAIT)`, `close`) and
//! `sendto` to the kernel uevent socket; the subsystem itself is the
//! `uevent` crate.

use crate::errno::Errno;
use crate::task::Task;
use sim::ObjId;
use std::sync::Arc;
use sync::Workqueue;
use uevent::{Kobject, Net, Uevent, UeventError, UeventPatches};
use userns::{Cred, Userns};

/// The uevent subsystem of a simulated machine.
pub struct NetWorld {
    pub uevent: Arc<Uevent>,
}

/// The errno a uevent path's error is returned as.
pub fn errno(e: UeventError) -> Errno {
    match e {
        UeventError::NoSpace => Errno::ENOSPC,
        UeventError::Perm => Errno::EPERM,
        UeventError::Inval => Errno::EINVAL,
        UeventError::NoMem => Errno::ENOMEM,
        UeventError::ConnRefused => Errno::ECONNREFUSED,
        UeventError::NoBufs => Errno::ENOBUFS,
        UeventError::Again => Errno::EAGAIN,
    }
}

impl NetWorld {
    /// The subsystem, and every named process in `init_net` (whose
    /// references are not counted: it is never freed). Call while the
    /// execution is set up.
    pub fn new(patches: UeventPatches, userns: &Arc<Userns>, wq: &Arc<Workqueue>) -> Arc<NetWorld> {
        Arc::new(NetWorld {
            uevent: Uevent::new(patches, userns, wq),
        })
    }

    /// `copy_net_ns` with CLONE_NEWNET for a task with `cred`: the new
    /// namespace is owned by `cred`'s user namespace and holds a reference
    /// on it until `cleanup_net` frees it.
    pub fn copy_net_ns(&self, cred: &Cred) -> Result<Arc<Net>, Errno> {
        let created = self.uevent.copy_net_ns(&cred.user_ns, cred.euid);
        match &created {
            Ok(net) => sim::note("copy_net_ns", net.obj, 0),
            Err(_) => sim::note("copy_net_ns", ObjId::NONE, Errno::ENOSPC.as_return()),
        }
        created.map_err(errno)
    }

    /// `socket` + `bind(groups = 1)`; a second listen replaces the first
    /// socket.
    pub fn listen(&self, task: &Task, rcvbuf: u64) -> Result<(), Errno> {
        sim::point("socket", ObjId::NONE, &crate::costs::SYSCALL);
        let net = Arc::clone(&task.nsproxy().net_ns);
        let rcvbuf = usize::try_from(rcvbuf).unwrap_or(usize::MAX);
        let sock = self.uevent.uevent_listen(&net, &task.name, rcvbuf);
        let old = task.own.lock().uevent_sock.replace(sock);
        if let Some(old) = old {
            self.uevent.uevent_close(&old);
        }
        Ok(())
    }

    /// A receive on the task's socket, waiting for a uevent when `wait`:
    /// its SEQNUM reported as a value, its ACTION as a word.
    pub fn recv(&self, task: &Task, wait: bool) -> Result<(), Errno> {
        sim::point("recvmsg", ObjId::NONE, &crate::costs::SYSCALL);
        let Some(sock) = task.own.lock().uevent_sock.clone() else {
            return Err(Errno::ENOENT);
        };
        let got = match wait {
            true => self.uevent.uevent_recv_wait(&sock),
            false => self.uevent.uevent_recv(&sock),
        };
        match got {
            Ok(got) => {
                sim::note("uevent_recv: SEQNUM", sock.obj, got.seqnum as i64);
                let mut own = task.own.lock();
                own.reported = vec![got.seqnum];
                own.reported_texts = vec![got.message.action().to_string()];
                Ok(())
            }
            Err(e) => {
                sim::note("uevent_recv", sock.obj, errno(e).as_return());
                Err(errno(e))
            }
        }
    }

    pub fn close(&self, task: &Task) -> Result<(), Errno> {
        sim::point("close", ObjId::NONE, &crate::costs::SYSCALL);
        let sock = task.own.lock().uevent_sock.take();
        let sock = sock.ok_or(Errno::ENOENT)?;
        self.uevent.uevent_close(&sock);
        Ok(())
    }

    /// `sendto` to the kernel socket (portid 0) of the task's netns.
    pub fn inject(&self, task: &Task, payload: &str) -> Result<(), Errno> {
        sim::point("sendto", ObjId::NONE, &crate::costs::SYSCALL);
        let net = Arc::clone(&task.nsproxy().net_ns);
        let r = self.uevent.uevent_net_rcv_skb(&net, &task.cred(), payload);
        match r {
            Ok(seqnum) => {
                sim::note("uevent_inject: SEQNUM", net.obj, seqnum as i64);
                task.own.lock().reported = vec![seqnum];
            }
            Err(e) => sim::note("uevent_inject", net.obj, errno(e).as_return()),
        }
        r.map(|_| ()).map_err(errno)
    }

    /// `kobject_uevent_env` for a device at `devpath`, tagged with `tag`.
    /// A write of `action` to `/sys<devpath>/uevent` (`uevent_store`),
    /// which sends the device's uevent. The file is root's, mode 0200:
    /// the writer must be root, or have CAP_DAC_OVERRIDE in its user
    /// namespace with root's ids mapped there (`generic_permission`,
    /// `capable_wrt_inode_uidgid`), else EACCES.
    pub fn sysfs_uevent_write(
        &self,
        task: &Task,
        action: &str,
        devpath: &str,
    ) -> Result<(), Errno> {
        sim::point("write", ObjId::NONE, &crate::costs::SYSCALL);
        let cred = task.cred();
        let ns = &cred.user_ns;
        let root_mapped = userns::from_kuid(ns, 0) != userns::UNMAPPED
            && userns::from_kgid(ns, 0) != userns::UNMAPPED;
        let permitted = cred.fsuid == 0
            || (root_mapped && userns::ns_capable(&cred, ns, userns::caps::CAP_DAC_OVERRIDE));
        if !permitted {
            return Err(Errno::EACCES);
        }
        self.device_event(action, devpath, None)
    }

    /// A rename of a network device of the task's network namespace
    /// (`dev_change_name` from SIOCSIFNAME), which sends a uevent tagged
    /// with the namespace: it needs CAP_NET_ADMIN over the namespace's
    /// owner (`dev_ioctl`), else EPERM.
    /// A rename of a network device of the task's namespace
    /// (`dev_change_name`): `kobject_rename` sends a `move` uevent tagged
    /// with the namespace.
    pub fn netdev_rename(&self, task: &Task, devpath: &str) -> Result<(), Errno> {
        sim::point("ioctl", ObjId::NONE, &crate::costs::SYSCALL);
        let net = Arc::clone(&task.nsproxy().net_ns);
        let cred = task.cred();
        if !userns::ns_capable(&cred, &net.user_ns, userns::caps::CAP_NET_ADMIN) {
            return Err(Errno::EPERM);
        }
        self.device_event("move", devpath, Some(net))
    }

    pub fn device_event(
        &self,
        action: &str,
        devpath: &str,
        tag: Option<Arc<Net>>,
    ) -> Result<(), Errno> {
        let subsystem = match &tag {
            Some(_) => "net".to_string(),
            None => subsystem_of(devpath),
        };
        let kobj = Kobject {
            devpath: devpath.to_string(),
            subsystem,
            tag,
        };
        self.uevent
            .kobject_uevent_env(&kobj, action, &[])
            .map_err(errno)
    }
}

/// `/devices/virtual/mem/full` → `mem`: the directory the device is in.
fn subsystem_of(devpath: &str) -> String {
    let parts: Vec<&str> = devpath.split('/').filter(|p| !p.is_empty()).collect();
    match parts.len() {
        0 | 1 => "unknown".to_string(),
        n => parts[n - 2].to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsystems_come_from_the_device_path() {
        assert_eq!(subsystem_of("/devices/virtual/mem/full"), "mem");
        assert_eq!(subsystem_of("/x"), "unknown");
    }
}
