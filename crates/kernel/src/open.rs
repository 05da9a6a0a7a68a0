//! Opening a regular file of the set-up (fs/open.c `do_sys_open`,
//! fs/namei.c `may_open`, `inode_permission`, `generic_permission`,
//! kernel/capability.c `capable_wrt_inode_uidgid`).
//!
//! The files lie in a directory every task may search, so the open is the
//! file's own permission check:
//! - the mode bits of one class decide first: the owner's when the
//!   caller's fsuid is the file's owner, else the group's when the caller
//!   is in the file's group (its fsgid or a supplementary group; tasks
//!   start with none), else the others' (`acl_permission_check`);
//! - failing that, CAP_DAC_OVERRIDE overrides reading and writing, and
//!   CAP_DAC_READ_SEARCH reading alone, each held in the caller's own user
//!   namespace and only when that namespace maps the file's owner and group
//!   (`capable_wrt_inode_uidgid`). That mapping check is where a wrong
//!   reverse map (CVE-2018-18955) gave a nested namespace's root the
//!   files of the initial namespace's root.
//!
//! The descriptor is closed again at once.

use super::World;
use crate::costs::SYSCALL;
use crate::errno::Errno;
use crate::setup::FileSpec;
use crate::task::Task;
use sim::ObjId;
use userns::{capable_wrt_inode_uidgid, caps, Cred};

/// `MAY_READ` and `MAY_WRITE` of the permission mask.
const MAY_WRITE: u32 = 2;
const MAY_READ: u32 = 4;

/// The permission mask an access mode asks for (`O_RDONLY` 0, `O_WRONLY`
/// 1, `O_RDWR` 2).
fn may_mask(access: u64) -> u32 {
    match access {
        0 => MAY_READ,
        1 => MAY_WRITE,
        _ => MAY_READ | MAY_WRITE,
    }
}

/// `acl_permission_check` without ACLs: the bits of the caller's class.
fn acl_permission_check(cred: &Cred, file: &FileSpec, mask: u32) -> bool {
    let class_bits = if cred.fsuid == file.uid {
        file.mode >> 6
    } else if cred.in_group_p(file.gid) {
        file.mode >> 3
    } else {
        file.mode
    };
    mask & !class_bits & 7 == 0
}

/// `generic_permission` for a regular file opened without MAY_EXEC.
fn generic_permission(cred: &Cred, file: &FileSpec, mask: u32) -> Result<(), Errno> {
    let over = |cap| capable_wrt_inode_uidgid(cred, file.uid, file.gid, cap);
    if acl_permission_check(cred, file, mask)
        || over(caps::CAP_DAC_OVERRIDE)
        || (mask == MAY_READ && over(caps::CAP_DAC_READ_SEARCH))
    {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

impl World {
    /// `open(file, access)` of set-up file `name`, then `close`.
    pub(super) fn open_file(&self, task: &Task, name: &str, access: u64) -> Result<(), Errno> {
        sim::point("do_sys_open", ObjId::NONE, &SYSCALL);
        let file = self
            .files
            .iter()
            .find(|f| f.name == name)
            .expect("the scenario checker admits only files of the set-up");
        generic_permission(&task.cred(), file, may_mask(access))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use userns::{CapSet, Userns, UsernsPatches};

    fn file(uid: u32, gid: u32, mode: u32) -> FileSpec {
        FileSpec {
            name: "f".into(),
            uid,
            gid,
            mode,
        }
    }

    #[test]
    fn the_class_of_the_caller_picks_the_bits() {
        let sys = Userns::standalone(UsernsPatches::NEWEST);
        let user = Cred::new(&sys.init, 1000, 1000, CapSet::EMPTY);
        let owner_only = file(1000, 0, 0o600);
        assert!(generic_permission(&user, &owner_only, MAY_READ | MAY_WRITE).is_ok());
        let group_read = file(0, 1000, 0o040);
        assert!(generic_permission(&user, &group_read, MAY_READ).is_ok());
        assert_eq!(
            generic_permission(&user, &group_read, MAY_WRITE),
            Err(Errno::EACCES)
        );
        // The owner's bits decide for the owner, even when others' allow.
        let others_only = file(1000, 0, 0o006);
        assert_eq!(
            generic_permission(&user, &others_only, MAY_READ),
            Err(Errno::EACCES)
        );
    }

    #[test]
    fn dac_override_reaches_only_files_whose_ids_the_namespace_maps() {
        let sys = Userns::standalone(UsernsPatches::NEWEST);
        let root = Cred::new(&sys.init, 0, 0, CapSet::FULL);
        let restricted = file(0, 0, 0o700);
        let user = Cred::new(&sys.init, 1000, 1000, CapSet::FULL);
        assert!(generic_permission(&root, &restricted, MAY_WRITE).is_ok());
        assert!(generic_permission(&user, &restricted, MAY_WRITE).is_ok());
        let mut read_only = Cred::new(&sys.init, 1000, 1000, CapSet::EMPTY);
        read_only.cap_effective = CapSet::EMPTY.with(caps::CAP_DAC_READ_SEARCH);
        assert!(generic_permission(&read_only, &restricted, MAY_READ).is_ok());
        assert_eq!(
            generic_permission(&read_only, &restricted, MAY_WRITE),
            Err(Errno::EACCES)
        );
        // Every capability in a child namespace that maps nothing: the
        // initial namespace's root file stays closed.
        let creator = Cred::new(&sys.init, 1000, 1000, CapSet::EMPTY);
        let inside = sys.create_user_ns(&creator, "child").unwrap();
        assert!(inside.cap_effective.has(caps::CAP_DAC_OVERRIDE));
        assert_eq!(
            generic_permission(&inside, &restricted, MAY_READ),
            Err(Errno::EACCES)
        );
    }
}
