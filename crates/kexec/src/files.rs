//! The set-up's regular files (`[[file]]`) on the running kernel: made by
//! the executor before the runs, in a directory of their own that every
//! task may search (mode 0755), each owned, grouped and moded as the
//! scenario says; removed when the executor is done.

use kernel::setup::Setup;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// The directory of a run's files, removed when dropped.
pub struct SetupFiles {
    dir: Option<PathBuf>,
}

impl SetupFiles {
    /// Make the files of `setup` (nothing when it has none).
    pub fn make(setup: &Setup) -> Result<SetupFiles, String> {
        if setup.files.is_empty() {
            return Ok(SetupFiles { dir: None });
        }
        let dir = std::env::temp_dir().join(format!("nssim-files.{}", std::process::id()));
        let made = SetupFiles {
            dir: Some(dir.clone()),
        };
        let fail = |what: &str, e: std::io::Error| format!("{what} {}: {e}", dir.display());
        std::fs::create_dir(&dir).map_err(|e| fail("cannot make", e))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| fail("cannot open up", e))?;
        for f in &setup.files {
            let path = dir.join(&f.name);
            let fail = |what: &str, e: std::io::Error| format!("{what} {}: {e}", path.display());
            std::fs::write(&path, b"\n").map_err(|e| fail("cannot make", e))?;
            std::os::unix::fs::chown(&path, Some(f.uid), Some(f.gid))
                .map_err(|e| fail("cannot chown", e))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(f.mode))
                .map_err(|e| fail("cannot chmod", e))?;
        }
        Ok(made)
    }

    /// The directory's path, empty when the set-up has no files.
    pub fn dir(&self) -> String {
        self.dir
            .as_ref()
            .map_or(String::new(), |d| d.display().to_string())
    }
}

impl Drop for SetupFiles {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
