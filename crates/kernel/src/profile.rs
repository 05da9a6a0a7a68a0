//! Kernel profiles: a release's patch set, plus the toggles a scenario or
//! the command line adds.

use crate::catalog::{self, Patch, PATCHES};
use ipcns::IpcPatches;
use uevent::UeventPatches;

/// The patches in force for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivePatches {
    pub profile: String,
    /// Bit `Patch as usize` set for each patch in force.
    enabled: u64,
}

const _: () = assert!(PATCHES.len() <= 64, "ActivePatches holds one bit per patch");

impl ActivePatches {
    pub fn has(&self, patch: Patch) -> bool {
        self.enabled & (1 << patch as usize) != 0
    }

    fn set(&mut self, patch: Patch, on: bool) {
        if on {
            self.enabled |= 1 << patch as usize;
        } else {
            self.enabled &= !(1 << patch as usize);
        }
    }

    /// Whether the last `put_ucounts` drops an entry's count to zero before
    /// taking `ucounts_lock` ([`ucounts::UcountsTable::with_put_race`]):
    /// in the v5.14 merge window.
    pub fn ucounts_put_race(&self) -> bool {
        self.has(Patch::UcountsAtomicCount) && !self.has(Patch::UcountsPutDecAndLock)
    }

    /// The names of the patches in force that change a part of the kernel
    /// an op of `setup` runs through, then those of the others, each
    /// sorted by name.
    pub fn names_bearing_on(
        &self,
        setup: &crate::setup::Setup,
    ) -> (Vec<&'static str>, Vec<&'static str>) {
        let areas: Vec<catalog::Area> = setup.every_op().flat_map(|op| op.areas()).collect();
        self.names().into_iter().partition(|name| {
            Patch::from_name(name).is_some_and(|p| areas.contains(&p.info().area))
        })
    }

    /// The names of the patches in force, sorted by name.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<&str> = PATCHES
            .iter()
            .filter(|p| self.has(p.patch))
            .map(|p| p.name)
            .collect();
        names.sort_unstable();
        names
    }

    /// The RLIMIT_NPROC behaviours in force.
    pub fn nproc(&self) -> NprocPatches {
        NprocPatches::from_active(self)
    }

    pub fn ipc(&self) -> IpcPatches {
        IpcPatches {
            async_free: self.has(Patch::IpcAsyncFree),
            wait_pending_free: self.has(Patch::IpcWaitPendingFree),
            batch_free: self.has(Patch::IpcBatchFree),
            free_no_grace_period: self.has(Patch::IpcFreeNoGracePeriod),
            retry_after_free: self.has(Patch::IpcRetryAfterFree),
            pending_at_release: self.has(Patch::IpcPendingAtRelease),
            shm_own_namespace: self.has(Patch::ShmDestroyOwnNamespace),
        }
    }

    /// The queued-signal behaviours in force.
    pub fn signal(&self) -> crate::signal::SignalPatches {
        crate::signal::SignalPatches {
            ucounts: self.has(Patch::SigpendingUcounts),
            refcount_fix: self.has(Patch::UcountsSignalRefcount),
            no_leak: self.has(Patch::UcountsRlimitGetNoLeak),
        }
    }

    pub fn pidns(&self) -> crate::pidns::PidnsPatches {
        crate::pidns::PidnsPatches {
            nesting_limit: self.has(Patch::PidnsNestingLimit),
            ucounts_limits: self.has(Patch::PidnsUcountsLimits),
        }
    }

    pub fn uevent(&self) -> UeventPatches {
        UeventPatches {
            inject: self.has(Patch::UeventInject),
            restrict: self.has(Patch::UeventRestrict),
            netns_seqnum: self.has(Patch::UeventNetnsSeqnum),
            atomic_seqnum: self.has(Patch::UeventAtomicSeqnum),
            small_head_cache: self.has(Patch::SkbSmallHeadCache),
            rmem_after_charge: self.has(Patch::NetlinkRmemAfterCharge),
            wait_pending_free: self.has(Patch::NetnsWaitPendingFree),
        }
    }

    pub fn userns(&self) -> userns::UsernsPatches {
        let layout = if self.has(Patch::Idmap2017Proposal) {
            userns::Layout::Proposal2017
        } else if self.has(Patch::Idmap340Extents) {
            userns::Layout::Sorted340
        } else {
            userns::Layout::Inline5
        };
        userns::UsernsPatches {
            nesting_limit: self.has(Patch::UsernsNestingLimit),
            ucounts_limits: self.has(Patch::UsernsUcountsLimits),
            layout,
            sort_after_translate: self.has(Patch::IdmapSortAfterTranslate),
            setfcap_root: self.has(Patch::IdmapSetfcapRoot),
            relaxed_publication: self.has(Patch::IdmapRelaxedPublication),
            wait_pending_free: self.has(Patch::UsernsWaitPendingFree),
        }
    }
}

/// The RLIMIT_NPROC behaviours of a profile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NprocPatches {
    pub ucounts: bool,
    pub rlimit_max_check: bool,
    pub enforce_limit: bool,
    pub flag_after_set_user: bool,
    pub real_uid: bool,
    pub limitnproc_regression: bool,
    pub rfc_2016: bool,
}

impl NprocPatches {
    pub fn from_active(p: &ActivePatches) -> Self {
        NprocPatches {
            ucounts: p.has(Patch::NprocUcounts),
            rlimit_max_check: p.has(Patch::UcountsRlimitMaxCheck),
            enforce_limit: p.has(Patch::NprocEnforceLimit),
            flag_after_set_user: p.has(Patch::NprocFlagAfterSetUser),
            real_uid: p.has(Patch::NprocUcountsRealUid),
            limitnproc_regression: p.has(Patch::NprocLimitnprocRegression),
            rfc_2016: p.has(Patch::NprocPerUsernsRfc2016),
        }
    }

    pub fn check(&self) -> ucounts::RlimitCheck {
        if self.rlimit_max_check {
            ucounts::RlimitCheck::NamespaceBelow
        } else {
            ucounts::RlimitCheck::OwnNamespace
        }
    }

    /// Is NPROC counted in ucounts (v5.14, or the RFC)?
    pub fn in_ucounts(&self) -> bool {
        self.ucounts || self.rfc_2016
    }
}

/// Start from `profile`'s patches and apply `toggles` in order (`true`
/// turns a patch on).
pub fn resolve_patches(profile: &str, toggles: &[(String, bool)]) -> Result<ActivePatches, String> {
    let p = catalog::profile(profile).ok_or_else(|| {
        let names: Vec<_> = catalog::PROFILES.iter().map(|p| p.name).collect();
        format!(
            "unknown kernel profile `{profile}` (known: {})",
            names.join(", ")
        )
    })?;
    let mut active = ActivePatches {
        profile: profile.to_string(),
        enabled: 0,
    };
    for merged in p.merged() {
        active.set(merged.patch, true);
    }
    for (name, on) in toggles {
        let Some(patch) = Patch::from_name(name) else {
            let names: Vec<_> = PATCHES.iter().map(|p| p.name).collect();
            return Err(format!(
                "unknown patch `{name}` (known: {})",
                names.join(", ")
            ));
        };
        active.set(patch, *on);
    }
    Ok(active)
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_patches_bearing_on_an_ipc_loop_are_the_ipc_and_ucounts_ones() {
        use crate::clone_flags::CLONE_NEWIPC;
        use crate::setup::{Op, Setup, TaskSpec, INIT_USER_NS};
        let mut setup = Setup::default();
        let unshare = Op::Unshare {
            flags: CLONE_NEWIPC,
        };
        setup
            .tasks
            .push(TaskSpec::new("looper", INIT_USER_NS, 0, vec![unshare]));
        let v6_3 = resolve_patches("v6.3", &[]).unwrap();
        let (bearing, others) = v6_3.names_bearing_on(&setup);
        assert_eq!(
            bearing,
            [
                "ipc-async-free",
                "ipc-batch-free",
                "ipc-wait-pending-free",
                "ucounts-atomic-count",
                "ucounts-hold-userns",
                "ucounts-put-dec-and-lock"
            ]
        );
        assert!(others.contains(&"nproc-ucounts") && others.contains(&"idmap-340-extents"));
        assert_eq!(bearing.len() + others.len(), v6_3.names().len());
    }

    use super::*;

    #[test]
    fn profiles_have_the_ipc_eras() {
        let v62 = resolve_patches("v6.2", &[]).unwrap().ipc();
        assert!(v62.async_free && !v62.wait_pending_free && !v62.batch_free);
        let v63 = resolve_patches("v6.3", &[]).unwrap().ipc();
        assert!(v63.async_free && v63.wait_pending_free && v63.batch_free);
        let v56 = resolve_patches("v5.6", &[]).unwrap().ipc();
        assert!(!v56.async_free);
        let wait_only = resolve_patches("v6.3", &[("ipc-batch-free".into(), false)])
            .unwrap()
            .ipc();
        assert!(wait_only.wait_pending_free && !wait_only.batch_free);
        assert!(resolve_patches("v9.9", &[]).is_err());
        assert!(resolve_patches("v6.3", &[("nope".into(), true)]).is_err());
    }

    #[test]
    fn a_profile_has_every_patch_merged_by_its_release() {
        let names = |v: &str| catalog::profile(v).unwrap().patches();
        assert!(!names("v5.6").contains(&"ipc-async-free"));
        assert!(names("v5.7").contains(&"ipc-async-free"));
        assert!(names("v6.3").contains(&"ipc-wait-pending-free"));
        assert!(!names("v6.3").contains(&"ipc-free-no-grace-period"));
        assert_eq!(
            catalog::profile_for_release("6.18.44-fc-v657")
                .unwrap()
                .name,
            catalog::PROFILES.last().unwrap().name
        );
        assert_eq!(catalog::profile_for_release("6.2.9").unwrap().name, "v6.2");
        assert_eq!(
            catalog::profile_for_release("3.10.0").unwrap().name,
            "v3.10"
        );
        assert!(catalog::profile_for_release("3.9.11").is_none());
        // The v3.11 nesting limits, and their errno's v4.9 change.
        let p = |v: &str| resolve_patches(v, &[]).unwrap().pidns();
        assert!(!p("v3.10").nesting_limit && p("v3.11").nesting_limit);
        assert!(!p("v4.8").ucounts_limits && p("v4.9").ucounts_limits);
        let u = |v: &str| resolve_patches(v, &[]).unwrap().userns();
        assert!(!u("v3.10").nesting_limit && u("v3.11").nesting_limit);
    }

    #[test]
    fn profiles_have_the_uevent_eras() {
        let u = |v: &str| resolve_patches(v, &[]).unwrap().uevent();
        assert!(!u("v4.16").inject && !u("v4.16").restrict);
        assert!(u("v4.17").inject && !u("v4.17").restrict);
        assert!(u("v4.18").restrict && !u("v4.18").atomic_seqnum);
        assert!(!u("v6.8").atomic_seqnum && u("v6.9").atomic_seqnum);
        assert!(!u("v6.2").small_head_cache && u("v6.3").small_head_cache);
        assert!(!u("v6.9").rmem_after_charge && u("v6.16").rmem_after_charge);
        assert!(!u("v6.9").netns_seqnum);
        let newest = catalog::PROFILES.last().unwrap().name;
        assert!(!u(newest).wait_pending_free);
        let fixed = resolve_patches(newest, &[("netns-wait-pending-free".into(), true)]).unwrap();
        assert!(fixed.uevent().wait_pending_free && !fixed.userns().wait_pending_free);
    }

    #[test]
    fn profiles_have_the_userns_eras() {
        let u = |v: &str| resolve_patches(v, &[]).unwrap().userns();
        assert!(!u("v4.8").ucounts_limits && u("v4.9").ucounts_limits);
        assert_eq!(u("v4.14").layout, userns::Layout::Inline5);
        assert_eq!(u("v4.15").layout, userns::Layout::Sorted340);
        assert!(!u("v4.19").sort_after_translate && u("v4.20").sort_after_translate);
        assert!(!u("v5.11").setfcap_root && u("v5.12").setfcap_root);
        let proposal = resolve_patches("v4.14", &[("idmap-2017-proposal".into(), true)]).unwrap();
        assert_eq!(proposal.userns().layout, userns::Layout::Proposal2017);
        let newest = catalog::PROFILES.last().unwrap().name;
        assert!(!u(newest).wait_pending_free);
        let fixed = resolve_patches(newest, &[("userns-wait-pending-free".into(), true)]).unwrap();
        assert!(fixed.userns().wait_pending_free && !fixed.uevent().wait_pending_free);
    }

    #[test]
    fn profiles_are_sorted_by_release() {
        let releases: Vec<_> = catalog::PROFILES
            .iter()
            .map(|p| catalog::release_number(p.name))
            .collect();
        assert!(releases.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn every_profile_names_known_patches() {
        for p in catalog::PROFILES {
            for patch in p.patches() {
                assert!(catalog::patch(patch).is_some(), "{patch}");
            }
        }
    }
}
