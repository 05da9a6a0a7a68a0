//! What SysV message queues and semaphore sets share: their ids in an ipc
//! namespace, looked up by key or by id, and the permission record each
//! object carries.
//!
//! Models ipc/util.c: `ipc_addid` (an index from `idr_alloc_cyclic`, the
//! sequence number raised when the indexes wrap, the id built of both),
//! `ipc_findkey`, `ipcget_new` and `ipcget_public` (what `IPC_CREAT` and
//! `IPC_EXCL` decide), `ipc_obtain_object_check` (an id whose index or
//! sequence number names nothing is EINVAL) and `ipc_rmid`. The
//! permission checks (`ipcperms`, `ipcctl_obtain_check`) read credentials
//! and capabilities, so they are the world's, beside the syscalls.
//!
//! Kernels before v5.2 took the lowest free index and a new sequence
//! number for every object: the ids of a namespace's second and later
//! objects differ there, but no op reports an id, and a stale id is
//! EINVAL under both rules.

use sim::HostMutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// `IPC_PRIVATE`: the key that always makes a new object.
pub const IPC_PRIVATE: i64 = 0;
/// `IPC_CREAT`: make the object when the key names none.
pub const IPC_CREAT: u64 = 0o1000;
/// `IPC_EXCL`: with `IPC_CREAT`, fail (EEXIST) when the key names one.
pub const IPC_EXCL: u64 = 0o2000;
/// The permission bits of a `*get` flag word and of an object's mode.
pub const MODE_MASK: u64 = 0o777;
/// `S_IRUGO` and `S_IWUGO`: what reading and changing an object ask of
/// its mode.
pub const S_IRUGO: u64 = 0o444;
pub const S_IWUGO: u64 = 0o222;
/// `IPCMNI`: indexes per ids, and the multiplier of the sequence number.
pub const IPCMNI: u32 = 32_768;

/// `struct kern_ipc_perm`: an object's key, id, owner and creator (kuid
/// and kgid) and mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernIpcPerm {
    pub key: i64,
    pub id: i32,
    pub uid: u32,
    pub gid: u32,
    pub cuid: u32,
    pub cgid: u32,
    pub mode: u64,
}

impl KernIpcPerm {
    /// The record of a new object of `key` with id `id` by a caller of
    /// euid and egid `euid`, `egid` (its owner and creator), the mode bits
    /// of `flags` its mode (`ipc_addid`, and each kind's `new*`).
    pub fn new(key: i64, id: i32, flags: u64, euid: u32, egid: u32) -> KernIpcPerm {
        KernIpcPerm {
            key,
            id,
            uid: euid,
            gid: egid,
            cuid: euid,
            cgid: egid,
            mode: flags & MODE_MASK,
        }
    }
}

/// What a `*get` of a key found or was told to make (`ipcget_public`).
pub enum Lookup<T> {
    /// The key names an object; `IPC_CREAT | IPC_EXCL` was not asked.
    Found(Arc<T>),
    /// Make a new object (`IPC_PRIVATE`, or a key that names none with
    /// `IPC_CREAT`).
    New,
    /// ENOENT: the key names none and `IPC_CREAT` was not asked.
    NoEntry,
    /// EEXIST: the key names one and `IPC_CREAT | IPC_EXCL` was asked.
    Exists,
}

/// An object that lives in [`IpcIds`].
pub trait IpcObject {
    fn perm(&self) -> &KernIpcPerm;

    /// Its object in the simulator (what a look-up touches).
    fn obj(&self) -> sim::ObjId;

    /// The key a look-up finds it by now (a segment removed while
    /// attached has `IPC_PRIVATE`).
    fn key(&self) -> i64 {
        self.perm().key
    }
}

impl<T: IpcObject> IpcObject for Arc<T> {
    fn perm(&self) -> &KernIpcPerm {
        (**self).perm()
    }

    fn obj(&self) -> sim::ObjId {
        (**self).obj()
    }

    fn key(&self) -> i64 {
        (**self).key()
    }
}

/// `struct ipc_ids`: one kind's objects in one namespace, with the rwsem
/// that `*get` and `IPC_RMID` take for writing.
pub struct IpcIds<T> {
    pub rwsem: sync::Mutex<()>,
    idr: HostMutex<BTreeMap<u32, Arc<T>>>,
    /// `ids->last_idx` and `ids->seq`.
    cursor: HostMutex<(Option<u32>, u32)>,
}

impl<T: IpcObject> IpcIds<T> {
    pub fn new(what: &'static str) -> IpcIds<T> {
        IpcIds {
            rwsem: sync::Mutex::new(what, ()),
            idr: HostMutex::new("ipc_ids idr", BTreeMap::new()),
            cursor: HostMutex::new("ipc_ids seq", (None, 0)),
        }
    }

    /// Objects in use (`ids->in_use`).
    pub fn in_use(&self) -> usize {
        self.idr.lock().len()
    }

    /// `ipcget`'s decision for `key` and `flags` (the caller holds the
    /// rwsem): a new object for `IPC_PRIVATE`, else what `ipc_findkey`
    /// finds and the flags make of it.
    pub fn ipcget(&self, key: i64, flags: u64) -> Lookup<T> {
        if key == IPC_PRIVATE {
            return Lookup::New;
        }
        match self.ipc_findkey(key) {
            None if flags & IPC_CREAT != 0 => Lookup::New,
            None => Lookup::NoEntry,
            Some(_) if flags & IPC_CREAT != 0 && flags & IPC_EXCL != 0 => Lookup::Exists,
            Some(found) => Lookup::Found(found),
        }
    }

    fn ipc_findkey(&self, key: i64) -> Option<Arc<T>> {
        self.idr.lock().values().find(|o| o.key() == key).cloned()
    }

    /// The id the next object gets (`ipc_idr_alloc`): the first free index
    /// after the last one given, cyclically, and the sequence number,
    /// raised when the indexes wrap. `None` when every index is taken.
    pub fn next_id(&self) -> Option<i32> {
        let idr = self.idr.lock();
        let (last, seq) = *self.cursor.lock();
        let start = last.map_or(0, |l| (l + 1) % IPCMNI);
        let idx = (start..IPCMNI)
            .chain(0..start)
            .find(|i| !idr.contains_key(i))?;
        let seq = if last.is_some_and(|l| idx <= l) {
            seq + 1
        } else {
            seq
        };
        i32::try_from(u64::from(seq % 65_536) * u64::from(IPCMNI) + u64::from(idx)).ok()
    }

    /// `ipc_addid` of an object made with [`Self::next_id`]'s id.
    pub fn ipc_addid(&self, object: Arc<T>) {
        let id = object.perm().id;
        let idx = ipcid_to_idx(id);
        let seq = u32::try_from(id).unwrap_or(0) / IPCMNI;
        *self.cursor.lock() = (Some(idx), seq);
        self.idr.lock().insert(idx, object);
    }

    /// `ipc_obtain_object_check`: the object `id` names, or `None` (EINVAL)
    /// for a negative id, a free index, or another sequence number.
    pub fn obtain_object_check(&self, id: i32) -> Option<Arc<T>> {
        if id < 0 {
            return None;
        }
        self.idr
            .lock()
            .get(&ipcid_to_idx(id))
            .filter(|o| o.perm().id == id)
            .cloned()
    }

    /// `ipc_rmid`: the object leaves the ids.
    pub fn ipc_rmid(&self, object: &T) {
        let idx = ipcid_to_idx(object.perm().id);
        self.idr.lock().remove(&idx);
    }

    /// The object at index `idx`, whatever its id.
    pub fn at_index(&self, idx: u32) -> Option<Arc<T>> {
        self.idr.lock().get(&idx).cloned()
    }

    /// Every object, in index order.
    pub fn all(&self) -> Vec<Arc<T>> {
        self.idr.lock().values().cloned().collect()
    }

    /// Every object, in index order, taken out (for `free_ipcs` at the
    /// namespace's end).
    pub fn take_all(&self) -> Vec<Arc<T>> {
        std::mem::take(&mut *self.idr.lock())
            .into_values()
            .collect()
    }
}

/// `ipcid_to_idx`.
pub fn ipcid_to_idx(id: i32) -> u32 {
    u32::try_from(id).unwrap_or(0) % IPCMNI
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Obj(KernIpcPerm);
    impl IpcObject for Obj {
        fn perm(&self) -> &KernIpcPerm {
            &self.0
        }

        fn obj(&self) -> sim::ObjId {
            sim::ObjId::NONE
        }
    }

    fn obj(key: i64, id: i32) -> Arc<Obj> {
        Arc::new(Obj(KernIpcPerm {
            key,
            id,
            uid: 0,
            gid: 0,
            cuid: 0,
            cgid: 0,
            mode: 0o600,
        }))
    }

    #[test]
    fn keys_are_found_created_or_refused_as_the_flags_say() {
        let ids: IpcIds<Obj> = IpcIds::new("ids");
        assert!(matches!(ids.ipcget(7, 0), Lookup::NoEntry));
        assert!(matches!(ids.ipcget(7, IPC_CREAT), Lookup::New));
        ids.ipc_addid(obj(7, ids.next_id().unwrap()));
        assert!(matches!(ids.ipcget(7, 0), Lookup::Found(_)));
        assert!(matches!(ids.ipcget(7, IPC_CREAT), Lookup::Found(_)));
        assert!(matches!(
            ids.ipcget(7, IPC_CREAT | IPC_EXCL),
            Lookup::Exists
        ));
        assert!(matches!(ids.ipcget(IPC_PRIVATE, 0), Lookup::New));
    }

    #[test]
    fn a_removed_objects_id_names_nothing_though_its_index_is_taken_again() {
        let ids: IpcIds<Obj> = IpcIds::new("ids");
        for _ in 0..3 {
            ids.ipc_addid(obj(0, ids.next_id().unwrap()));
        }
        let first = ids.obtain_object_check(0).expect("id 0");
        ids.ipc_rmid(&first);
        assert!(ids.obtain_object_check(0).is_none());
        assert_eq!(ids.next_id(), Some(3), "cyclic: after the last index");
        assert!(ids.obtain_object_check(-1).is_none());
        assert!(ids.obtain_object_check(1).is_some());
    }
}
