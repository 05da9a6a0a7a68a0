//! POSIX message queues and RLIMIT_MSGQUEUE: `mq_open` makes a queue in
//! the caller's ipc namespace and charges its creator the bytes it may
//! hold; the charge stays until the queue is unlinked and its last
//! descriptor closed, whoever does that and whenever.
//!
//! Models ipc/mqueue.c (`do_mq_open`, `mqueue_create_attr`,
//! `mqueue_get_inode`, `do_mq_unlink`; the queue itself is the `ipcns`
//! crate's [`ipcns::mqueue`]) and the rlimit paths of kernel/ucount.c it
//! calls. The charge goes to the creator's `user_struct` before v5.14 and
//! to the ucounts of its (user namespace, uid), at every level up the
//! tree, from v5.14 (`nproc-ucounts` marks that release). The creator's
//! RLIMIT_MSGQUEUE is compared with the leaf; the levels above, as
//! [`ucounts::RlimitCheck`] says. Until "ucounts: Fix regression
//! preventing increasing of rlimits in init_user_ns" the initial
//! namespace's level was also held to the rlimits the machine booted
//! with (patch `ucounts-init-rlimits-unlimited`,
//! [`crate::task::init_rlimit_maxima`]).

use super::World;
use crate::costs::SYSCALL;
use crate::errno::Errno;
use crate::task::Task;
use ipcns::charge::RlimitCharge;
use ipcns::mqueue::{mq_attr_ok, AttrError, MqInode};
use sim::ObjId;
use std::sync::Arc;
use ucounts::{
    dec_rlimit_ucounts, draw_rlimit_levels, inc_rlimit_ucounts, RlimitType, Ucounts, LONG_MAX,
};
use userns::caps::{CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_SYS_RESOURCE};
use userns::{capable_wrt_inode_uidgid, fsuidgid_has_mapping, ns_capable, Cred};

impl World {
    /// `mq_open("/NAME", O_CREAT | O_EXCL | O_RDWR, 0600, {maxmsg,
    /// msgsize})` in the task's ipc namespace; the descriptor is kept
    /// until the task exits.
    pub(super) fn mq_open(
        &self,
        task: &Task,
        name: &str,
        maxmsg: i64,
        msgsize: i64,
    ) -> Result<(), Errno> {
        sim::point("mq_open", ObjId::NONE, &SYSCALL);
        let ns = Arc::clone(&task.nsproxy().ipc_ns);
        let cred = task.cred();
        let privileged = ns_capable(&cred, &self.userns.init, CAP_SYS_RESOURCE);
        let sb = ns.mq_sb();
        let root = sb.root_lock.lock();
        if sb.names.lock().contains_key(name) {
            return Err(Errno::EEXIST);
        }
        // `vfs_mkobj` → `may_create`, on the superblock of the namespace's
        // mqueue mount, whose user namespace is the namespace's owner.
        let unmapped = |owner: &Arc<userns::UserNamespace>| !fsuidgid_has_mapping(owner, &cred);
        if self.create_needs_mapped_owner && ns.owner().is_some_and(unmapped) {
            return Err(Errno::EOVERFLOW);
        }
        let bytes = mq_attr_ok(maxmsg, msgsize, privileged).map_err(|e| match e {
            AttrError::Invalid => Errno::EINVAL,
            AttrError::Overflow => Errno::EOVERFLOW,
        })?;
        if !self.ipc.mq_count_queue(&ns, privileged) {
            return Err(Errno::ENOSPC);
        }
        let Some(inode) = self.mqueue_get_inode(task, &ns, &cred, bytes) else {
            self.ipc.mq_uncount_queue(&ns);
            return Err(Errno::EMFILE);
        };
        // The name's reference, and the descriptor's.
        inode.hold();
        sb.names.lock().insert(name.to_string(), Arc::clone(&inode));
        drop(root);
        task.own.lock().mq_fds.push(inode);
        Ok(())
    }

    /// `mqueue_get_inode`: the queue, charged `bytes` to its creator, or
    /// `None` when they do not fit in its RLIMIT_MSGQUEUE (EMFILE).
    fn mqueue_get_inode(
        &self,
        task: &Task,
        ns: &Arc<ipcns::IpcNamespace>,
        cred: &Cred,
        bytes: i64,
    ) -> Option<Arc<MqInode>> {
        let rlimit = task.rlimit(RlimitType::Msgqueue).0;
        let limit = i64::try_from(rlimit).unwrap_or(LONG_MAX);
        let table = self.procs.ucounts();
        if !self.procs.nproc_patches().in_ucounts() {
            let user = Arc::clone(cred.user.as_ref()?);
            return self
                .ipc
                .mq_new_inode(ns, cred.fsuid, cred.fsgid, bytes, || {
                    user.charge_rlimit(RlimitType::Msgqueue, bytes, limit)?;
                    Some(RlimitCharge::User(user))
                });
        }
        let leaf: Arc<Ucounts> = table.get_ucounts(cred.ucounts.as_ref()?)?;
        let check = self.procs.rlimit_check();
        draw_rlimit_levels(&leaf, RlimitType::Msgqueue, rlimit, check);
        let made = self
            .ipc
            .mq_new_inode(ns, cred.fsuid, cred.fsgid, bytes, || {
                let n = inc_rlimit_ucounts(table, &leaf, RlimitType::Msgqueue, bytes, check);
                if n == LONG_MAX || n > limit {
                    dec_rlimit_ucounts(table, &leaf, RlimitType::Msgqueue, bytes);
                    return None;
                }
                Some(RlimitCharge::Ucounts(Arc::clone(&leaf)))
            });
        if made.is_none() {
            table.put_ucounts(&leaf);
        }
        made
    }

    /// `mq_open("/NAME", O_RDWR)` of an existing queue in the task's ipc
    /// namespace (`prepare_open`): ENOENT when there is none; EACCES
    /// (`inode_permission` of read and write on a queue made 0600) unless
    /// the task's fsuid owns it or the task has CAP_DAC_OVERRIDE over it.
    /// The descriptor holds the queue until the task exits.
    pub(super) fn mq_open_existing(&self, task: &Task, name: &str) -> Result<(), Errno> {
        sim::point("mq_open", ObjId::NONE, &SYSCALL);
        let ns = Arc::clone(&task.nsproxy().ipc_ns);
        let cred = task.cred();
        let sb = ns.mq_sb();
        let root = sb.root_lock.lock();
        let inode = sb.names.lock().get(name).cloned().ok_or(Errno::ENOENT)?;
        let owner = cred.fsuid == inode.uid;
        if !owner && !capable_wrt_inode_uidgid(&cred, inode.uid, inode.gid, CAP_DAC_OVERRIDE) {
            return Err(Errno::EACCES);
        }
        inode.hold();
        drop(root);
        task.own.lock().mq_fds.push(inode);
        Ok(())
    }

    /// `mq_unlink("/NAME")` in the task's ipc namespace: ENOENT when there
    /// is no such queue; EPERM (the directory is sticky) unless the task's
    /// fsuid owns the queue or the directory, or it has CAP_FOWNER over
    /// the queue. The queue goes once no descriptor holds it.
    pub(super) fn mq_unlink(&self, task: &Task, name: &str) -> Result<(), Errno> {
        sim::point("mq_unlink", ObjId::NONE, &SYSCALL);
        let ns = Arc::clone(&task.nsproxy().ipc_ns);
        let cred = task.cred();
        let sb = ns.mq_sb();
        let root = sb.root_lock.lock();
        let inode = sb.names.lock().get(name).cloned().ok_or(Errno::ENOENT)?;
        let fsuid = cred.fsuid;
        let owns = fsuid == inode.uid || fsuid == ns.mq_root_uid();
        if !owns && !capable_wrt_inode_uidgid(&cred, inode.uid, inode.gid, CAP_FOWNER) {
            return Err(Errno::EPERM);
        }
        sb.names.lock().remove(name);
        drop(root);
        self.ipc.mq_iput(&inode);
        Ok(())
    }

    /// `exit_files`: the task's queue descriptors are closed.
    pub(super) fn mq_close_all(&self, task: &Task) {
        let fds = std::mem::take(&mut task.own.lock().mq_fds);
        for inode in &fds {
            self.ipc.mq_iput(inode);
        }
    }

    /// The ucounts entries the queues and the locked SysV segments alive
    /// hold (their charges').
    pub(super) fn pinned_charges(&self) -> Vec<Arc<Ucounts>> {
        let mut namespaces = vec![Arc::clone(&self.ipc.init_ipc_ns)];
        for t in &self.tasks {
            let ns = &t.nsproxy().ipc_ns;
            if !namespaces.iter().any(|n| Arc::ptr_eq(n, ns)) {
                namespaces.push(Arc::clone(ns));
            }
        }
        let queues = namespaces
            .iter()
            .flat_map(|ns| ns.peek_queues())
            .filter_map(|q| q.charged_ucounts());
        let locked = namespaces.iter().flat_map(|ns| ns.peek_shm_lock_charges());
        queues.chain(locked).collect()
    }
}
