//! The lab's cache: where its kernels are kept, each with its release, the
//! package and version it came from, and its configuration.
//!
//! The cache is `$NSSIM_LAB_DIR`, else `$XDG_CACHE_HOME/nssim/lab`, else
//! `~/.cache/nssim/lab`. A kernel is the folder `kernels/NAME/` holding
//! `vmlinuz`, `config` and `kernel.json`; the folder is written under a
//! temporary name and renamed into place, so a cut-off fetch leaves no
//! half kernel behind.

use crate::error::LabError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where a kernel came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// A kernel image package of Debian's archive.
    Debian,
    /// Built here from Debian's kernel source package (`nssim lab build-fault-kernel`).
    Built,
}

/// One kernel of the lab, as `kernel.json` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelMeta {
    /// The name `--lab` takes: the era it was fetched for (`6.1`), or its
    /// release when it was fetched by package name.
    pub name: String,
    /// What `uname -r` prints in it.
    pub release: String,
    /// The Debian package it came from (for a built kernel, the source package).
    pub package: String,
    pub version: String,
    /// The suite of Debian's archive (`bookworm-security`).
    pub suite: String,
    pub origin: Origin,
}

/// A kernel of the lab, on the disk.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub meta: KernelMeta,
    pub dir: PathBuf,
}

impl Kernel {
    pub fn name(&self) -> &str {
        &self.meta.name
    }

    pub fn image(&self) -> PathBuf {
        self.dir.join("vmlinuz")
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.join("config")
    }

    /// Whether its configuration sets `CONFIG_{option}=y`.
    pub fn has_config(&self, option: &str) -> bool {
        let want = format!("CONFIG_{option}=y");
        std::fs::read_to_string(self.config_path())
            .map(|c| c.lines().any(|l| l == want))
            .unwrap_or(false)
    }

    /// Whether it can fail allocations on demand (`/proc/thread-self/fail-nth`).
    pub fn fault_injection(&self) -> bool {
        ["FAULT_INJECTION", "FAILSLAB", "FAULT_INJECTION_DEBUG_FS"]
            .iter()
            .all(|o| self.has_config(o))
    }

    /// The model's profile for its release.
    pub fn profile(&self) -> &'static str {
        kernel::catalog::profile_for_release(&self.meta.release).map_or("-", |p| p.name)
    }

    /// The patches its series carries before the release that merged them
    /// ([`crate::eras::BACKPORTS`]).
    pub fn backports(&self) -> Vec<&'static str> {
        crate::eras::backports(&self.meta.release)
            .into_iter()
            .map(|b| b.patch)
            .collect()
    }

    /// The profile it is held to, with its backports: `v5.7+idmap-setfcap-root`.
    pub fn held_to(&self) -> String {
        let mut s = self.profile().to_string();
        for patch in self.backports() {
            s.push('+');
            s.push_str(patch);
        }
        s
    }
}

/// The lab's cache directory.
#[derive(Debug, Clone)]
pub struct Lab {
    pub dir: PathBuf,
}

impl Lab {
    /// The cache named by the environment (see the module's doc).
    pub fn open() -> Lab {
        Lab { dir: cache_dir() }
    }

    pub fn at(dir: impl Into<PathBuf>) -> Lab {
        Lab { dir: dir.into() }
    }

    pub fn kernels_dir(&self) -> PathBuf {
        self.dir.join("kernels")
    }

    /// Scratch space for one task (a fetch, a VM); the caller removes it.
    pub fn scratch(&self, what: &str) -> Result<PathBuf, LabError> {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| self.sweep_scratch());
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = self
            .dir
            .join("tmp")
            .join(format!("{what}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| LabError::cache(&dir, e))?;
        Ok(dir)
    }

    /// Remove the scratch folders of processes that no longer run: a run
    /// killed before its Drop leaves its folder (a VM's saved state is
    /// about 90 MB) behind. A folder's name ends in `-PID-N`.
    pub fn sweep_scratch(&self) {
        let Ok(entries) = std::fs::read_dir(self.dir.join("tmp")) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let owner = name.rsplit('-').nth(1).and_then(|p| p.parse::<u32>().ok());
            let gone = owner.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
            if gone {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }

    /// Every kernel, oldest release first.
    pub fn kernels(&self) -> Result<Vec<Kernel>, LabError> {
        let dir = self.kernels_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(LabError::cache(dir, e)),
        };
        let mut kernels: Vec<Kernel> = entries
            .filter_map(Result::ok)
            .filter_map(|e| read_kernel(&e.path()))
            .collect();
        kernels.sort_by(|a, b| {
            release_key(&a.meta.release)
                .cmp(&release_key(&b.meta.release))
                .then(a.meta.name.cmp(&b.meta.name))
        });
        Ok(kernels)
    }

    /// The kernels `names` pick: `all`, or each by name or release.
    pub fn select(&self, names: &[String]) -> Result<Vec<Kernel>, LabError> {
        let kernels = self.kernels()?;
        if kernels.is_empty() {
            return Err(LabError::Empty);
        }
        if names.iter().any(|n| n == "all") {
            return Ok(kernels);
        }
        names
            .iter()
            .map(|n| {
                kernels
                    .iter()
                    .find(|k| k.meta.name == *n || k.meta.release == *n)
                    .cloned()
                    .ok_or_else(|| LabError::UnknownKernel(n.clone()))
            })
            .collect()
    }

    /// Keep `image` and `config` as the kernel `meta` describes, replacing
    /// one of the same name.
    pub fn store(
        &self,
        meta: &KernelMeta,
        image: &Path,
        config: &Path,
    ) -> Result<Kernel, LabError> {
        let final_dir = self.kernels_dir().join(&meta.name);
        let partial = self.kernels_dir().join(format!(".{}.partial", meta.name));
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir_all(&partial).map_err(|e| LabError::cache(&partial, e))?;
        let copy = |from: &Path, to: &str| {
            std::fs::copy(from, partial.join(to)).map_err(|e| LabError::cache(from, e))
        };
        copy(image, "vmlinuz")?;
        copy(config, "config")?;
        let json = serde_json::to_string_pretty(meta).expect("metadata serializes");
        std::fs::write(partial.join("kernel.json"), json + "\n")
            .map_err(|e| LabError::cache(&partial, e))?;
        let _ = std::fs::remove_dir_all(&final_dir);
        std::fs::rename(&partial, &final_dir).map_err(|e| LabError::cache(&final_dir, e))?;
        Ok(Kernel {
            meta: meta.clone(),
            dir: final_dir,
        })
    }
}

fn read_kernel(dir: &Path) -> Option<Kernel> {
    let text = std::fs::read_to_string(dir.join("kernel.json")).ok()?;
    let meta: KernelMeta = serde_json::from_str(&text).ok()?;
    dir.join("vmlinuz").is_file().then(|| Kernel {
        meta,
        dir: dir.to_path_buf(),
    })
}

fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("NSSIM_LAB_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("nssim").join("lab")
}

/// A release's numbers in order (`6.12.95+deb12-cloud-amd64` is 6, 12,
/// 95, 12), so that releases sort as versions.
pub fn release_key(release: &str) -> Vec<u64> {
    release
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(name: &str, release: &str) -> KernelMeta {
        KernelMeta {
            name: name.into(),
            release: release.into(),
            package: format!("linux-image-{release}"),
            version: "1".into(),
            suite: "test".into(),
            origin: Origin::Debian,
        }
    }

    #[test]
    fn scratch_folders_of_processes_that_ended_are_swept() {
        let dir = std::env::temp_dir().join(format!("nssim-lab-sweep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let lab = Lab::at(&dir);
        // No process has the largest pid a kernel can give plus one.
        let stale = dir.join("tmp").join("boot-6.1-4194305-3");
        let mine = dir
            .join("tmp")
            .join(format!("run-{}-0", std::process::id()));
        let unnamed = dir.join("tmp").join("kept");
        for d in [&stale, &mine, &unnamed] {
            std::fs::create_dir_all(d).unwrap();
        }
        lab.sweep_scratch();
        assert!(!stale.exists());
        assert!(mine.exists() && unnamed.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn releases_sort_as_versions() {
        let mut r = vec![
            "6.12.95+deb12-amd64",
            "5.10.0-46-amd64",
            "6.1.0-57-amd64",
            "6.2.0",
        ];
        r.sort_by_key(|r| release_key(r));
        assert_eq!(
            r,
            [
                "5.10.0-46-amd64",
                "6.1.0-57-amd64",
                "6.2.0",
                "6.12.95+deb12-amd64"
            ]
        );
    }

    #[test]
    fn kernels_are_stored_listed_and_selected_by_name_or_release() {
        let dir = std::env::temp_dir().join(format!("nssim-lab-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let lab = Lab::at(&dir);
        assert!(matches!(lab.select(&["all".into()]), Err(LabError::Empty)));
        let image = dir.join("image");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&image, b"bzImage").unwrap();
        let config = dir.join("config-in");
        std::fs::write(&config, "CONFIG_FAULT_INJECTION=y\nCONFIG_FAILSLAB=y\n").unwrap();
        lab.store(&meta("6.12", "6.12.95+deb12-amd64"), &image, &config)
            .unwrap();
        let k = lab
            .store(&meta("5.10", "5.10.0-46-amd64"), &image, &config)
            .unwrap();
        assert!(!k.fault_injection(), "FAULT_INJECTION_DEBUG_FS is missing");
        assert!(k.has_config("FAILSLAB"));
        let names: Vec<String> = lab
            .kernels()
            .unwrap()
            .iter()
            .map(|k| k.meta.name.clone())
            .collect();
        assert_eq!(names, ["5.10", "6.12"]);
        let picked = lab.select(&["6.12.95+deb12-amd64".into()]).unwrap();
        assert_eq!(picked[0].meta.name, "6.12");
        assert!(
            matches!(lab.select(&["4.19".into()]), Err(LabError::UnknownKernel(n)) if n == "4.19")
        );
        assert_eq!(lab.select(&["all".into()]).unwrap().len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
