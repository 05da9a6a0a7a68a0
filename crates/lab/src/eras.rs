//! The lab's default kernels: one per era of the bug history, each named by
//! its series and found in one suite of Debian's archive. `nssim lab fetch`
//! without a name fetches these, and `.ci/run` gates on them.

/// One era: a kernel series and the suite that carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Era {
    /// The name `--lab` takes, and the series its packages match (`6.1`
    /// takes `linux-image-6.1.0-57-...`, never `6.12`).
    pub name: &'static str,
    pub suite: &'static str,
    /// What the era shows that the others do not.
    pub why: &'static str,
}

pub const ERAS: &[Era] = &[
    Era {
        name: "5.10",
        suite: "bullseye-security",
        why: "before the v5.14 ucounts series: RLIMIT_NPROC counted per kuid; ipc namespaces freed asynchronously, allocation not waiting for the frees",
    },
    Era {
        name: "6.1",
        suite: "bookworm-security",
        why: "ucounts per user namespace; the ipc free queue's ENOSPC before the v6.3 fix",
    },
    Era {
        name: "6.12",
        suite: "bookworm-backports",
        why: "after the v6.3 ipc fix and the v6.12 signal-count fix",
    },
    Era {
        name: "6.18",
        suite: "trixie-backports",
        why: "the newest profile's era, the host's own series",
    },
];

/// A fix that Debian's kernels of a series carry although the release
/// that merged it is newer than the series (a stable backport): the lab
/// holds those kernels to their release's profile with the patch on.
/// Each was found by a scenario whose outcome on the kernel the profile
/// alone does not reach (`evidence`); `crates/cli/tests/lab.rs` runs it
/// with the patch and without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backport {
    /// The upstream series (`5.10`: every `5.10.*` release).
    pub series: &'static str,
    /// The patch of the model's catalog (`nssim kernels`).
    pub patch: &'static str,
    /// The library scenario that shows it: its file under `sim-scenarios/`,
    /// without `.toml`.
    pub evidence: &'static str,
    /// What the scenario shows on the kernel.
    pub shows: &'static str,
}

pub const BACKPORTS: &[Backport] = &[
    Backport {
        series: "5.10",
        patch: "idmap-setfcap-root",
        evidence: "security-unprivileged",
        shows: "mapping uid 0 without CAP_SETFCAP is refused (EPERM), as from v5.12",
    },
    Backport {
        series: "5.10",
        patch: "netlink-rmem-after-charge",
        evidence: "conformance/uevent/listener.overrun_enobufs_once",
        shows: "a listener with the smallest receive buffer keeps 3 short uevents, not 4: the skb is charged before the buffer is compared",
    },
    Backport {
        series: "6.1",
        patch: "netlink-rmem-after-charge",
        evidence: "conformance/uevent/listener.overrun_enobufs_once",
        shows: "a listener with the smallest receive buffer keeps 3 short uevents, not 4: the skb is charged before the buffer is compared",
    },
    Backport {
        series: "6.12",
        patch: "netlink-rmem-after-charge",
        evidence: "conformance/uevent/listener.overrun_enobufs_once",
        shows: "a listener with the smallest receive buffer keeps 2 short uevents, not 3: the skb is charged before the buffer is compared",
    },
    Backport {
        series: "6.1",
        patch: "ucounts-rlimit-get-no-leak",
        evidence: "ucounts-sigpending-leak",
        shows: "a refused signal leaks no count: the third sigqueue is queued, as from v6.12",
    },
];

/// The backports of the kernel release `release`.
pub fn backports(release: &str) -> Vec<&'static Backport> {
    BACKPORTS
        .iter()
        .filter(|b| {
            release
                .strip_prefix(b.series)
                .is_some_and(|rest| rest.starts_with('.'))
        })
        .collect()
}

pub fn era(name: &str) -> Option<&'static Era> {
    ERAS.iter().find(|e| e.name == name)
}

/// Whether the package `name` is a kernel image of the series `series`, of
/// a flavour the lab boots (the generic or the cloud one; not real-time,
/// not debug symbols): `(release, preference)`, lower preferred. The cloud
/// flavour is preferred: its image decompresses faster (LZ4 or zstd, where
/// the generic one is XZ) and boots in half the time under emulation.
pub fn image_package(name: &str, series: &str) -> Option<(String, u8)> {
    let rest = name.strip_prefix("linux-image-")?;
    let (rest, unsigned) = match rest.strip_suffix("-unsigned") {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let (release, cloud) = match rest.strip_suffix("-cloud-amd64") {
        Some(r) => (r, true),
        None => (rest.strip_suffix("-amd64")?, false),
    };
    let after = release.strip_prefix(series)?;
    // `6.1` must not take `6.12`; `6.1.0-0.deb11.52` is a backport of 6.1.
    if !after.starts_with('.') || release.ends_with("-rt") || release.contains("dbg") {
        return None;
    }
    let flavour = if cloud { "cloud-amd64" } else { "amd64" };
    let preference = u8::from(!cloud) * 2 + u8::from(!unsigned);
    Some((format!("{release}-{flavour}"), preference))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eras_are_named_once_and_sort_by_release() {
        let names: Vec<&str> = ERAS.iter().map(|e| e.name).collect();
        let mut sorted = names.clone();
        sorted.sort_by_key(|n| crate::store::release_key(n));
        sorted.dedup();
        assert_eq!(names, sorted);
        assert_eq!(era("6.1").map(|e| e.suite), Some("bookworm-security"));
    }

    #[test]
    fn image_packages_of_a_series_and_their_preference() {
        let p = |n: &str, s: &str| image_package(n, s);
        assert_eq!(
            p("linux-image-6.1.0-57-cloud-amd64-unsigned", "6.1"),
            Some(("6.1.0-57-cloud-amd64".into(), 0))
        );
        assert_eq!(
            p("linux-image-6.1.0-57-amd64-unsigned", "6.1"),
            Some(("6.1.0-57-amd64".into(), 2))
        );
        assert_eq!(
            p("linux-image-6.18.15+deb13-amd64", "6.18"),
            Some(("6.18.15+deb13-amd64".into(), 3))
        );
        assert_eq!(p("linux-image-6.12.95+deb12-amd64", "6.1"), None);
        assert_eq!(p("linux-image-6.1.0-57-rt-amd64", "6.1"), None);
        assert_eq!(p("linux-image-6.1-amd64", "6.1"), None, "a metapackage");
        assert_eq!(p("linux-image-6.1.0-57-amd64-dbg", "6.1"), None);
        assert_eq!(p("linux-headers-6.1.0-57-amd64", "6.1"), None);
    }

    #[test]
    fn every_backport_is_a_later_patch_shown_by_a_library_scenario() {
        for b in BACKPORTS {
            let patch = kernel::catalog::patch(b.patch).unwrap_or_else(|| panic!("{b:?}"));
            let merged = kernel::catalog::release_number(patch.merged_in.expect("merged"));
            let series = kernel::catalog::release_number(&format!("v{}", b.series));
            assert!(merged > series, "{b:?} is merged in {merged:?}, not later");
            let file = format!(
                "{}/../../sim-scenarios/{}.toml",
                env!("CARGO_MANIFEST_DIR"),
                b.evidence
            );
            assert!(std::path::Path::new(&file).is_file(), "{file}");
        }
        assert_eq!(backports("5.10.0-46-cloud-amd64").len(), 2);
        assert!(backports("5.100.1").is_empty());
    }
}
