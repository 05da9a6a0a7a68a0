//! What a scenario may name: kernel profiles, patches, invariants, sysctls,
//! operations and cost-table entries. The scenario checker validates
//! against these lists; `nssim kernels` prints them.

/// A named kernel behaviour that changed over history: one entry of
/// [`PATCHES`], made by `declare_patches!` from the same line as its
/// [`Patch`] variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchInfo {
    pub patch: Patch,
    pub name: &'static str,
    /// The mainline release that first had it, or `None` for proposals that
    /// were never merged (and deliberately broken variants).
    pub merged_in: Option<&'static str>,
    /// The part of the kernel it changes.
    pub area: Area,
    /// For a patch that fixed a bug: the subject of the fixing commit, as
    /// in the kernel's history (`nssim history` lists the library
    /// scenarios that show the bug without the patch and pass with it).
    pub fixes: Option<&'static str>,
    pub summary: &'static str,
}

/// Declares every patch once: its [`Patch`] variant, its name, the release
/// that merged it and its summary. Model code asks for a variant
/// ([`crate::ActivePatches::has`]), so a patch nobody declared does not
/// compile; scenarios, tokens and `nssim kernels` use the names.
macro_rules! declare_patches {
    ($($variant:ident = $name:literal, merged_in: $merged:expr, area: $area:ident, $(fixes: $fixes:literal,)? $summary:literal;)*) => {
        /// A kernel patch, by name in [`PATCHES`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Patch {
            $($variant),*
        }

        /// Every patch, in declaration order (`Patch as usize` indexes it).
        pub const PATCHES: &[PatchInfo] = &[
            $(PatchInfo {
                patch: Patch::$variant,
                name: $name,
                merged_in: $merged,
                area: Area::$area,
                fixes: fix_subject(&[$($fixes)?]),
                summary: $summary,
            }),*
        ];
    };
}

/// The fixing commit's subject a patch line gives, if any.
const fn fix_subject(given: &[&'static str]) -> Option<&'static str> {
    match given {
        [subject] => Some(subject),
        _ => None,
    }
}

impl Patch {
    pub fn info(self) -> &'static PatchInfo {
        &PATCHES[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The patch called `name`.
    pub fn from_name(name: &str) -> Option<Patch> {
        PATCHES.iter().find(|p| p.name == name).map(|p| p.patch)
    }
}

/// A kernel release. Its patch set is derived, never listed: every patch
/// whose `merged_in` release is at or before this one (see
/// [`ProfileInfo::patches`]). So each subsystem adds its patches once, and
/// every profile, old or new, gets them right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileInfo {
    pub name: &'static str,
    pub summary: &'static str,
}

impl ProfileInfo {
    /// The patches this release has, in catalogue order.
    pub fn patches(&self) -> Vec<&'static str> {
        self.merged().map(|p| p.name).collect()
    }

    /// Every patch merged by this release.
    pub fn merged(&self) -> impl Iterator<Item = &'static PatchInfo> {
        let me = release_number(self.name);
        PATCHES
            .iter()
            .filter(move |p| p.merged_in.is_some_and(|m| release_number(m) <= me))
    }
}

/// `v4.19.1` → `[4, 19, 1, MAX]`, `v5.14-rc1` → `[5, 14, 0, 1]`: comparable
/// in release order, a release candidate before its release.
pub fn release_number(name: &str) -> Vec<u32> {
    let name = name.trim_start_matches('v');
    let (version, rc) = match name.split_once("-rc") {
        Some((v, rc)) => (v, rc.parse().unwrap_or(0)),
        None => (name, u32::MAX),
    };
    let mut number: Vec<u32> = version.split('.').map(|n| n.parse().unwrap_or(0)).collect();
    number.resize(3, 0);
    number.push(rc);
    number
}

declare_patches! {
    IpcAsyncFree = "ipc-async-free", merged_in: Some("v5.7"), area: Ipc,
        "put_ipc_ns queues the namespace on free_ipc_list and free_ipc_work frees it later (one RCU grace period per namespace); before, the last put freed synchronously";
    IpcWaitPendingFree = "ipc-wait-pending-free", merged_in: Some("v6.3"), area: Ipc,
        fixes: "ipc,namespace: make ipc namespace allocation wait for pending free",
        "create_ipc_ns: when inc_ucount fails and flush_work(&free_ipc_work) waited for pending frees, retry instead of failing with ENOSPC";
    IpcBatchFree = "ipc-batch-free", merged_in: Some("v6.3"), area: Ipc,
        "free_ipc: mnt_make_shortterm on every queued namespace, one synchronize_rcu for the whole batch, then free them all";
    IpcFreeNoGracePeriod = "ipc-free-no-grace-period", merged_in: None, area: Ipc,
        "deliberately broken: free_ipc frees the queued namespaces without waiting for an RCU grace period (use-after-free with RCU readers)";
    IpcRetryAfterFree = "ipc-retry-after-free", merged_in: None, area: Ipc,
        "candidate fix for v6.3's window 1: free_ipc_ns counts completed frees, and create_ipc_ns retries a failed charge when flush_work found nothing to wait for but a free completed since the charge was tried";
    IpcPendingAtRelease = "ipc-pending-at-release", merged_in: None, area: Ipc,
        "candidate fix for v6.3's window 2: put_ipc_ns counts the namespace as pending at the last put, before it is queued and its work scheduled, and create_ipc_ns waits for a free to complete when its charge fails while any is pending";
    ShmDestroyOwnNamespace = "shm-destroy-own-namespace", merged_in: Some("v5.16"), area: Shm,
        fixes: "shm: extend forced shm destroy to support objects from several IPC nses",
        "exit_shm destroys each segment the task created in the ipc namespace the segment was made in (while that namespace is alive and has shm_rmid_forced set), and a segment's removal takes it off its creator's list under the creator's lock; before, exit_shm destroyed them through the namespace the task was in at exit, so after a setns the segment was freed while its own namespace still listed it";
    IpcSysctlNamespaceRoot = "ipc-sysctl-namespace-root", merged_in: Some("v6.1"), area: Shm,
        "the System V ipc sysctls of an ipc namespace (kernel.shm_rmid_forced among them) belong to root of the namespace's owning user namespace, who may write them; before, only a task whose euid is the initial namespace's root could (EACCES for root of a container)";
    VfsCreateMappedOwner = "vfs-create-mapped-owner", merged_in: Some("v4.8"), area: Mqueue,
        "may_create refuses (EOVERFLOW) to make a file on a filesystem whose user namespace does not map the caller's fsuid and fsgid: mq_open creating a queue in an ipc namespace whose owner maps neither; before, the queue was made with an owner the namespace could not show";
    SysctlStoreBeforePermission = "sysctl-store-before-permission", merged_in: None, area: Sysctl,
        "deliberately broken: a max_* sysctl write stores the value before the permission check, so a refused write still changes the limit (caught by security.denied_changes_nothing)";
    UsernsUcountsLimits = "userns-ucounts-limits", merged_in: Some("v4.9"), area: Userns,
        "create_user_ns charges max_user_namespaces through ucounts (ENOSPC at the limit); the nesting limit answers ENOSPC instead of EUSERS";
    UcountsAtomicCount = "ucounts-atomic-count", merged_in: Some("v5.14-rc1"), area: Ucounts,
        "\"Use atomic_t for ucounts reference counting\" (the v5.14 merge window): an entry's reference count is an atomic again, and the last put_ucounts drops it to zero before it takes ucounts_lock to unhash the entry, so a look-up under the lock can take a reference on an entry being freed (use-after-free) until ucounts-put-dec-and-lock";
    UcountsPutDecAndLock = "ucounts-put-dec-and-lock", merged_in: Some("v5.14"), area: Ucounts,
        fixes: "ucounts: Fix race condition between alloc_ucounts and put_ucounts",
        "\"ucounts: Fix race condition between alloc_ucounts and put_ucounts\" (v5.14-rc7): the last put takes ucounts_lock as it drops the count to zero (atomic_dec_and_lock), and a look-up takes a reference only on an entry whose count it can raise from above zero";
    UsernsWaitPendingFree = "userns-wait-pending-free", merged_in: None, area: Userns,
        "candidate fix, never merged: when inc_user_namespaces fails, create_user_ns waits for the frees already on their way (rcu_barrier for the put_cred_rcu callbacks, then a flush of the free_user_ns works) and charges again, instead of failing with ENOSPC: once in any case, and again after each wait that began with frees on their way";
    Idmap340Extents = "idmap-340-extents", merged_in: Some("v4.15"), area: Idmap,
        "uid/gid maps hold up to 340 extents: 5 inline, else forward and reverse arrays sorted for binary search (5 extents before)";
    Idmap2017Proposal = "idmap-2017-proposal", merged_in: None, area: Idmap,
        "never merged: 3 inline extents plus direct, indirect and double-indirect blocks (368 extents), linear scan; overrides idmap-340-extents";
    IdmapSortAfterTranslate = "idmap-sort-after-translate", merged_in: Some("v4.20"), area: Idmap,
        fixes: "userns: also map extents in the reverse map to kernel IDs",
        "CVE-2018-18955 fix (also v4.19.2): map_write sorts and copies the reverse array after translating lower ids to kernel ids; without it, maps of more than 5 extents in nested namespaces answer from_kuid wrongly";
    IdmapSetfcapRoot = "idmap-setfcap-root", merged_in: Some("v5.12"), area: Idmap,
        fixes: "capabilities: require CAP_SETFCAP to map uid 0",
        "mapping parent uid 0 in a uid_map needs CAP_SETFCAP (the creator's at creation, or the opener's over the parent)";
    IdmapRelaxedPublication = "idmap-relaxed-publication", merged_in: None, area: Idmap,
        "deliberately broken: nr_extents published without smp_wmb/smp_rmb, so a lockless reader may see the count before the extents";
    NprocUcounts = "nproc-ucounts", merged_in: Some("v5.14-rc1"), area: Nproc,
        "RLIMIT_NPROC counted in ucounts per (user namespace, kuid) and charged up the namespace tree, instead of one user_struct per kuid for the whole machine; checked before the child is counted, with `>` (one process more than the limit gets through)";
    UcountsRlimitMaxCheck = "ucounts-rlimit-max-check", merged_in: Some("v5.16"), area: Nproc,
        fixes: "ucounts: Fix rlimit max values check",
        "is_rlimit_overlimit compares each ancestor level with the rlimit recorded in the namespace below it (its creator's), not with its own namespace's value";
    NprocEnforceLimit = "nproc-enforce-limit", merged_in: Some("v5.17"), area: Nproc,
        fixes: "ucounts: Enforce RLIMIT_NPROC not RLIMIT_NPROC+1",
        "copy_process checks RLIMIT_NPROC after copy_creds, on the child's ucounts: the limit, not limit+1, processes";
    NprocFlagAfterSetUser = "nproc-flag-after-set-user", merged_in: Some("v5.17"), area: Nproc,
        fixes: "ucounts: Move RLIMIT_NPROC handling after set_user",
        "set*uid decides PF_NPROC_EXCEEDED (checked by the next execve) on the new ucounts after set_cred_ucounts, without capability checks; before, set_user looked at the old ucounts";
    NprocUcountsRealUid = "nproc-ucounts-real-uid", merged_in: Some("v5.17"), area: Nproc,
        fixes: "ucounts: Base set_cred_ucounts changes on the real user",
        "set_cred_ucounts keys the credential's ucounts on the real uid; before, on the effective uid, while commit_creds moved the count only when the real user changed";
    NprocLimitnprocRegression = "nproc-limitnproc-regression", merged_in: Some("v5.17"), area: Nproc,
        fixes: "ucounts: Fix systemd LimitNPROC with private users regression",
        "a user namespace created by global root in the initial namespace records no RLIMIT_NPROC (systemd LimitNPROC with private users)";
    NprocPerUsernsRfc2016 = "nproc-per-userns-rfc-2016", merged_in: None, area: Nproc,
        "the 2016 RFC: processes counted per (user namespace, uid) up the tree, and a fork checked against the caller's own (namespace, uid) count only";
    SigpendingUcounts = "sigpending-ucounts", merged_in: Some("v5.14-rc1"), area: Signal,
        "RLIMIT_SIGPENDING counted in ucounts per (user namespace, kuid) of the receiver and charged up the namespace tree (inc_rlimit_ucounts), a pending signal pinning the leaf's entry only; before, one user_struct count per kuid for the whole machine";
    UcountsInitRlimitsUnlimited = "ucounts-init-rlimits-unlimited", merged_in: Some("v5.15"), area: Rlimit,
        fixes: "ucounts: Fix regression preventing increasing of rlimits in init_user_ns",
        "the initial user namespace records no maximum for the rlimit counters (RLIMIT_NPROC, MSGQUEUE, SIGPENDING, MEMLOCK); from v5.14-rc1 it recorded the rlimits the machine booted with, which the v5.14-v5.15 rule held its level to, so raising an rlimit with setrlimit did not let a user past the boot value (a large mq_open failed with EMFILE)";
    UcountsHoldUserns = "ucounts-hold-userns", merged_in: Some("v5.17"), area: Ucounts,
        fixes: "ucount: Make get_ucount a safe get_user replacement",
        "CVE-2022-24122: a ucounts entry holds a reference on its user namespace from alloc_ucounts to its last put_ucounts; before (v5.14 to v5.16), what an rlimit charge pins (a pending signal, a message queue) could outlive the namespace, and its uncharge read the freed namespace on the walk up the tree";
    UcountsSignalRefcount = "ucounts-signal-refcount", merged_in: Some("v5.15"), area: Signal,
        fixes: "ucounts: Fix signal ucount refcounting",
        "__sigqueue_alloc charges through inc_rlimit_get_ucounts, which pins every level whose count goes from 0 to 1 and refuses when a level is over its maximum, and __sigqueue_free unpins them (dec_rlimit_put_ucounts); before, only the leaf's entry was pinned";
    UcountsRlimitGetNoLeak = "ucounts-rlimit-get-no-leak", merged_in: Some("v6.12"), area: Signal,
        fixes: "ucounts: fix counter leak in inc_rlimit_get_ucounts()",
        "inc_rlimit_get_ucounts takes back the count of the level it found over its maximum along with the levels below it; before (v5.15 to v6.11), that level kept it, so every refused signal leaked one count there and later signals were refused with nothing pending";
    UeventInject = "uevent-inject", merged_in: Some("v4.17"), area: Uevent,
        "uevent_net_rcv_skb: a task with CAP_SYS_ADMIN over a network namespace's owning user namespace may send uevents into that namespace; before, the kernel uevent socket refused input";
    UeventRestrict = "uevent-restrict", merged_in: Some("v4.18"), area: Uevent,
        fixes: "netns: restrict uevents",
        "uevent_net_init puts only network namespaces owned by the initial user namespace on uevent_sock_list: untagged kernel uevents no longer reach containers";
    UeventNetnsSeqnum = "uevent-netns-seqnum", merged_in: None, area: Uevent,
        "the 2018 proposal: a uevent sequence number per network namespace; namespaces not owned by the initial user namespace are locked by their own sk_mutex instead of uevent_sock_mutex";
    UeventAtomicSeqnum = "uevent-atomic-seqnum", merged_in: Some("v6.9"), area: Uevent,
        "uevent_seqnum is an atomic taken before any lock; uevent_sock_mutex covers only the walk of uevent_sock_list; tagged events and injection take no lock";
    SkbSmallHeadCache = "skb-small-head-cache", merged_in: Some("v6.3"), area: Uevent,
        "__alloc_skb takes heads of up to 576 bytes (data and skb_shared_info) from a cache of that size instead of kmalloc: a short uevent charges a listener 832 bytes of truesize (768 from kmalloc-512 before, 1280 from kmalloc-1024 for 193-256 bytes of data)";
    NetnsWaitPendingFree = "netns-wait-pending-free", merged_in: None, area: Netns,
        "candidate fix, never merged: copy_net_ns waits for pending frees the way ipc does: when inc_net_namespaces fails and flush_work(&net_cleanup_work) waited for a queued or running cleanup_net, charge again instead of failing with ENOSPC";
    NetlinkRmemAfterCharge = "netlink-rmem-after-charge", merged_in: Some("v6.16"), area: Uevent,
        "netlink_broadcast_deliver adds the skb's truesize to sk_rmem_alloc first and queues it only if the total is within sk_rcvbuf or the skb is alone; before, it queued whenever the bytes already queued were within sk_rcvbuf, one skb past the buffer";
    UsernsNestingLimit = "userns-nesting-limit", merged_in: Some("v3.11"), area: Userns,
        fixes: "userns: limit the maximum depth of user_namespace->parent chain",
        "create_user_ns refuses a namespace below one already 32 levels under the initial one (EUSERS, ENOSPC from v4.9); before, user namespaces nested without limit";
    PidnsNestingLimit = "pidns-nesting-limit", merged_in: Some("v3.11"), area: Pidns,
        fixes: "pidns: limit the nesting depth of pid namespaces",
        "create_pid_namespace refuses a namespace more than 32 levels below the initial one (EINVAL, ENOSPC from v4.9); before, pid namespaces nested without limit, and every level made each pid below it larger";
    UnshareNsproxyLeakFix = "unshare-put-nsproxy", merged_in: Some("v7.1"), area: Ucounts,
        fixes: "unshare: fix nsproxy leak in ksys_unshare() on set_cred_ucounts() failure",
        "when set_cred_ucounts fails in ksys_unshare (after the other new namespaces were made), the new nsproxy is put; from v5.14 to v7.0 (and the stable releases until May 2026) it was leaked, so its namespaces and the new user namespace they hold were never freed nor their charges returned";
    PidnsUcountsLimits = "pidns-ucounts-limits", merged_in: Some("v4.9"), area: Pidns,
        "create_pid_namespace charges max_pid_namespaces through ucounts (ENOSPC at the limit), and answers ENOSPC for a namespace too deep as well, instead of EINVAL";
}

pub const PROFILES: &[ProfileInfo] = &[
    ProfileInfo {
        name: "v3.10",
        summary: "pid and user namespaces nest without limit (the earliest release modelled: the rest of user namespaces as in v4.8)",
    },
    ProfileInfo {
        name: "v3.11",
        summary: "pid and user namespaces nest at most 32 levels below the initial one (EINVAL and EUSERS)",
    },
    ProfileInfo {
        name: "v4.8",
        summary: "user namespaces without ucount limits; nesting deeper than 33 levels is EUSERS; 5-extent idmaps",
    },
    ProfileInfo {
        name: "v4.9",
        summary: "max_user_namespaces through ucounts; nesting limit ENOSPC",
    },
    ProfileInfo {
        name: "v4.14",
        summary: "last release with 5-extent idmaps",
    },
    ProfileInfo {
        name: "v4.15",
        summary: "340-extent idmaps with binary search; has CVE-2018-18955",
    },
    ProfileInfo {
        name: "v4.16",
        summary: "every untagged uevent goes to every network namespace; userspace cannot inject uevents",
    },
    ProfileInfo {
        name: "v4.17",
        summary: "uevent injection with CAP_SYS_ADMIN over the network namespace; untagged uevents still reach every namespace",
    },
    ProfileInfo {
        name: "v4.18",
        summary: "untagged uevents only reach network namespaces owned by the initial user namespace",
    },
    ProfileInfo {
        name: "v4.19",
        summary: "last mainline release with CVE-2018-18955 (fixed in v4.19.2)",
    },
    ProfileInfo {
        name: "v4.20",
        summary: "CVE-2018-18955 fixed: reverse idmap arrays hold kernel ids",
    },
    ProfileInfo {
        name: "v5.6",
        summary: "the last put_ipc_ns frees the namespace synchronously (kern_unmount waits a grace period)",
    },
    ProfileInfo {
        name: "v5.7",
        summary: "ipc namespaces freed asynchronously by free_ipc_work, one grace period each",
    },
    ProfileInfo {
        name: "v5.10",
        summary: "as v5.7: nothing the model covers changed in v5.8 to v5.10 (Debian's bullseye kernel)",
    },
    ProfileInfo {
        name: "v5.11",
        summary: "last release where mapping parent uid 0 needs no CAP_SETFCAP",
    },
    ProfileInfo {
        name: "v5.12",
        summary: "mapping parent uid 0 in a uid_map needs CAP_SETFCAP",
    },
    ProfileInfo {
        name: "v5.13",
        summary: "RLIMIT_NPROC counted per kuid in user_struct, shared by every namespace that maps the kuid",
    },
    ProfileInfo {
        name: "v5.14-rc1",
        summary: "the v5.14 merge window: RLIMIT_NPROC in ucounts, whose reference count is an atomic that the last put drops to zero outside ucounts_lock",
    },
    ProfileInfo {
        name: "v5.14",
        summary: "RLIMIT_NPROC in ucounts per user namespace; ancestors compared with their own namespace's value; limit+1 processes",
    },
    ProfileInfo {
        name: "v5.15",
        summary: "a pending signal pins every ucounts level it took from 0 (inc_rlimit_get_ucounts), but a refused one leaks a count at the level over its maximum",
    },
    ProfileInfo {
        name: "v5.16",
        summary: "ancestors compared with the rlimit their creator carried in",
    },
    ProfileInfo {
        name: "v5.17",
        summary: "RLIMIT_NPROC enforced exactly, PF_NPROC_EXCEEDED on the new user, ucounts keyed on the real uid, no limit recorded for root-created namespaces",
    },
    ProfileInfo {
        name: "v6.1",
        summary: "the System V ipc sysctls of an ipc namespace belong to root of its owner (Debian's bookworm kernel)",
    },
    ProfileInfo {
        name: "v6.2",
        summary: "last release with the allocation-vs-free race: ENOSPC while frees are pending",
    },
    ProfileInfo {
        name: "v6.3",
        summary: "allocation waits for pending frees and retries; one grace period per batch",
    },
    ProfileInfo {
        name: "v6.8",
        summary: "last release with the uevent sequence number taken and sent under uevent_sock_mutex",
    },
    ProfileInfo {
        name: "v6.9",
        summary: "atomic uevent sequence number; uevent_sock_mutex only around the walk of the socket list",
    },
    ProfileInfo {
        name: "v6.12",
        summary: "a refused signal takes back every level it charged: no RLIMIT_SIGPENDING count leaks",
    },
    ProfileInfo {
        name: "v6.16",
        summary: "a netlink receive buffer is checked with the new skb charged: a full listener holds one uevent fewer",
    },
];

pub use crate::invariants::{Invariant, InvariantInfo, INVARIANTS};

pub use crate::ops::{op, Area, ArgKind, OpInfo, OPS};

pub use crate::clone_flags::CLONE_FLAGS;

/// Sysctls a scenario may set: (name, summary).
pub const SYSCTLS: &[(&str, &str)] = &[
    (
        "user.max_ipc_namespaces",
        "limit of ipc namespaces charged to a user namespace and its descendants",
    ),
    ("user.max_user_namespaces", "limit of user namespaces"),
    ("user.max_net_namespaces", "limit of network namespaces"),
    ("user.max_uts_namespaces", "limit of uts namespaces"),
    ("user.max_pid_namespaces", "limit of pid namespaces"),
    ("user.max_mnt_namespaces", "limit of mount namespaces"),
    ("user.max_cgroup_namespaces", "limit of cgroup namespaces"),
    (
        "user.max_time_namespaces",
        "limit of time namespaces (v5.7)",
    ),
    (
        "user.max_inotify_instances",
        "limit of inotify instances (v4.11)",
    ),
    (
        "user.max_inotify_watches",
        "limit of inotify watches (v4.11)",
    ),
    (
        "user.max_fanotify_groups",
        "limit of fanotify groups (v5.13)",
    ),
    ("user.max_fanotify_marks", "limit of fanotify marks (v5.13)"),
];

/// Look-ups used by the scenario checker.
pub fn profile(name: &str) -> Option<&'static ProfileInfo> {
    PROFILES.iter().find(|p| p.name == name)
}

/// The newest profile at or before `release` (e.g. `"6.18.44"`): the one
/// that models a running kernel of that release.
pub fn profile_for_release(release: &str) -> Option<&'static ProfileInfo> {
    let host = release_number(release.split(['-', '+']).next().unwrap_or(release));
    PROFILES
        .iter()
        .filter(|p| release_number(p.name) <= host)
        .max_by(|a, b| release_number(a.name).cmp(&release_number(b.name)))
}

/// The help for a kernel name that is no profile but reads as a release
/// (`v6.17`, `6.17`): the profile that models it, the newest at or before
/// it, rather than the profile whose name is spelt most alike.
pub fn release_hint(name: &str) -> Option<String> {
    let bare = name.strip_prefix('v').unwrap_or(name);
    let mut parts = bare.split('.');
    let numeric =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if !(numeric(parts.next()) && numeric(parts.next())) {
        return None;
    }
    let modelled = profile_for_release(bare)?;
    if modelled.name.strip_prefix('v') == Some(bare) {
        // A profile of that very release, spelt without its `v`: a typo.
        return Some(format!("did you mean `{}`?", modelled.name));
    }
    Some(format!(
        "Linux {bare} is modelled by `{}`, the newest profile at or before it (a profile is named after the release where something it models changed)",
        modelled.name
    ))
}

/// The running kernel's release (`6.18.0-...`), or `unknown`.
pub fn host_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|r| r.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The profile that models the running kernel (the newest one when the
/// release cannot be read).
pub fn host_profile() -> &'static str {
    profile_for_release(&host_release())
        .or(PROFILES.last())
        .map(|p| p.name)
        .expect("at least one profile")
}

pub fn patch(name: &str) -> Option<&'static PatchInfo> {
    PATCHES.iter().find(|p| p.name == name)
}

/// Every invariant's name, in catalogue order.
pub fn all_invariants() -> Vec<String> {
    INVARIANTS.iter().map(|i| i.name.to_string()).collect()
}

pub fn invariant(name: &str) -> bool {
    Invariant::from_name(name).is_some()
}

pub fn sysctl(name: &str) -> bool {
    SYSCTLS.iter().any(|(n, _)| *n == name)
}

/// Entries of the virtual-time cost table, each with its default and what
/// it costs. A scenario's `[costs]` table may override any of them.
pub fn costs() -> Vec<&'static sim::CostKey> {
    let mut all: Vec<&'static sim::CostKey> = vec![
        &sim::costs::STEP,
        &crate::costs::SYSCALL,
        &crate::costs::SWITCH_NS,
    ];
    all.extend(sync::costs::ALL.iter().copied());
    all.extend(ipcns::costs::ALL.iter().copied());
    all.extend(uevent::costs::ALL.iter().copied());
    all.extend(crate::costs::ALL[2..].iter().copied());
    all
}

/// Look up a cost-table entry by name.
pub fn cost(name: &str) -> Option<&'static sim::CostKey> {
    costs().into_iter().find(|c| c.name == name)
}

#[cfg(test)]
mod release_hint_tests {
    use super::release_hint;

    #[test]
    fn a_release_between_profiles_is_pointed_at_the_profile_that_models_it() {
        let hint = release_hint("v6.17").unwrap();
        assert!(hint.contains("`v6.16`"), "{hint}");
        assert!(release_hint("6.4").unwrap().contains("`v6.3`"));
        assert!(release_hint("v5.8").unwrap().contains("`v5.7`"));
        assert_eq!(release_hint("v2.6"), None, "older than every profile");
        assert_eq!(release_hint("v6.3+fix"), None);
        assert_eq!(release_hint("latest"), None);
        assert_eq!(release_hint("6.2").unwrap(), "did you mean `v6.2`?");
    }
}
