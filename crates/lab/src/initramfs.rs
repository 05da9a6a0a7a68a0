//! The VM's root file system: an initramfs (a newc cpio archive the kernel
//! unpacks into its root) holding a static busybox for `/init`'s few
//! commands, the `nssim` binary that runs as the guest and as the
//! executor, and the shared libraries it loads. No kernel modules: the
//! initramfs is the root, so the kernel needs no disk, network or 9p.

use crate::error::LabError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The hidden command the guest runs (`/nssim __lab-guest`).
pub const GUEST_COMMAND: &str = "__lab-guest";

/// Where the lab finds busybox: a static one, so that it loads nothing.
const BUSYBOX: &[&str] = &["/bin/busybox", "/usr/bin/busybox"];

/// `/init`: mount what the executor reads, then hand over to the guest;
/// power off when it ends, whatever happened.
fn init_script() -> String {
    format!(
        "#!/bin/busybox sh\n\
         /bin/busybox mount -t proc proc /proc\n\
         /bin/busybox mount -t sysfs sys /sys\n\
         /bin/busybox mount -t devtmpfs dev /dev\n\
         /bin/busybox mount -t tmpfs tmp /tmp\n\
         /bin/busybox mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null\n\
         /nssim {GUEST_COMMAND}\n\
         /bin/busybox poweroff -f\n"
    )
}

/// One file of the archive: its path inside, its mode, and where its bytes are.
enum Entry {
    Dir(String),
    File {
        path: String,
        mode: u32,
        from: Source,
    },
}

enum Source {
    Disk(PathBuf),
    Bytes(Vec<u8>),
}

/// Build the initramfs for `nssim` (the binary to run inside) into `out`.
pub fn build(nssim: &Path, out: &Path) -> Result<(), LabError> {
    let busybox = find_busybox()?;
    let mut entries: Vec<Entry> = ["bin", "dev", "proc", "sys", "tmp", "lib", "lib64", "etc"]
        .into_iter()
        .map(|d| Entry::Dir(d.to_string()))
        .collect();
    entries.push(Entry::File {
        path: "init".into(),
        mode: 0o755,
        from: Source::Bytes(init_script().into_bytes()),
    });
    entries.push(Entry::File {
        path: "bin/busybox".into(),
        mode: 0o755,
        from: Source::Disk(busybox),
    });
    entries.push(Entry::File {
        path: "nssim".into(),
        mode: 0o755,
        from: Source::Bytes(stripped(nssim)?),
    });
    for lib in shared_libraries(nssim)? {
        let inside = lib.to_string_lossy().trim_start_matches('/').to_string();
        entries.push(Entry::File {
            path: inside,
            mode: 0o755,
            from: Source::Disk(lib),
        });
    }
    add_parent_dirs(&mut entries);
    write(&entries, out)
}

fn find_busybox() -> Result<PathBuf, LabError> {
    let found = BUSYBOX.iter().map(PathBuf::from).find(|p| p.is_file());
    let Some(path) = found else {
        return Err(LabError::MissingTool {
            tool: "busybox",
            why: "the VM's /init runs it".into(),
            hint: "apt-get install busybox-static",
        });
    };
    if !shared_libraries(&path)?.is_empty() {
        return Err(LabError::MissingTool {
            tool: "busybox (static)",
            why: format!("{} loads shared libraries", path.display()),
            hint: "apt-get install busybox-static",
        });
    }
    Ok(path)
}

/// The binary without its debug information (a sixth of its size), or as
/// it is when `strip` is not here.
fn stripped(binary: &Path) -> Result<Vec<u8>, LabError> {
    let tmp = std::env::temp_dir().join(format!("nssim-lab-strip-{}", std::process::id()));
    let ok = Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&tmp)
        .arg(binary)
        .status()
        .is_ok_and(|s| s.success());
    let from = if ok { tmp.as_path() } else { binary };
    let bytes = std::fs::read(from).map_err(|e| LabError::cache(from, e));
    let _ = std::fs::remove_file(&tmp);
    bytes
}

/// The shared libraries `binary` loads, its loader among them, as `ldd`
/// names them (none for a static binary).
pub fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, LabError> {
    let out = Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| LabError::MissingTool {
            tool: "ldd",
            why: e.to_string(),
            hint: "apt-get install libc-bin",
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .filter_map(|l| {
            let path = match l.split_once("=>") {
                Some((_, right)) => right.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect())
}

/// Every folder a file of the archive sits in, before the file.
fn add_parent_dirs(entries: &mut Vec<Entry>) {
    let mut dirs: Vec<String> = Vec::new();
    for e in entries.iter() {
        if let Entry::File { path, .. } = e {
            let mut p = Path::new(path).parent();
            while let Some(d) = p.filter(|d| !d.as_os_str().is_empty()) {
                dirs.push(d.to_string_lossy().into_owned());
                p = d.parent();
            }
        }
    }
    dirs.sort_by_key(|d| d.matches('/').count());
    dirs.dedup();
    let known: Vec<String> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Dir(d) => Some(d.clone()),
            Entry::File { .. } => None,
        })
        .collect();
    let missing: Vec<Entry> = dirs
        .into_iter()
        .filter(|d| !known.contains(d))
        .map(Entry::Dir)
        .collect();
    let files = std::mem::take(entries);
    let (dirs_first, rest): (Vec<Entry>, Vec<Entry>) =
        files.into_iter().partition(|e| matches!(e, Entry::Dir(_)));
    entries.extend(dirs_first);
    entries.extend(missing);
    entries.extend(rest);
}

fn write(entries: &[Entry], out: &Path) -> Result<(), LabError> {
    let fail = |e: std::io::Error| LabError::cache(out, e);
    let file = std::fs::File::create(out).map_err(fail)?;
    let mut w = std::io::BufWriter::new(file);
    for (ino, e) in entries.iter().enumerate() {
        let ino = ino as u32 + 1;
        w = match e {
            Entry::Dir(path) => cpio::NewcBuilder::new(path)
                .ino(ino)
                .mode(0o040755)
                .nlink(2)
                .write(w, 0)
                .finish()
                .map_err(fail)?,
            Entry::File { path, mode, from } => {
                let bytes = match from {
                    Source::Disk(p) => std::fs::read(p).map_err(|e| LabError::cache(p, e))?,
                    Source::Bytes(b) => b.clone(),
                };
                let mut fw = cpio::NewcBuilder::new(path)
                    .ino(ino)
                    .mode(0o100000 | mode)
                    .nlink(1)
                    .write(w, bytes.len() as u32);
                std::io::Write::write_all(&mut fw, &bytes).map_err(fail)?;
                fw.finish().map_err(fail)?
            }
        };
    }
    let mut w = cpio::newc::trailer(w).map_err(fail)?;
    std::io::Write::flush(&mut w).map_err(fail)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_holds_init_nssim_and_its_libraries_each_folder_before_its_files() {
        if find_busybox().is_err() {
            eprintln!("skipped: no static busybox here (apt-get install busybox-static)");
            return;
        }
        let me = std::env::current_exe().unwrap();
        let out =
            std::env::temp_dir().join(format!("nssim-lab-initrd-{}.cpio", std::process::id()));
        build(&me, &out).unwrap();
        let mut names = Vec::new();
        let mut r = std::fs::File::open(&out).unwrap();
        loop {
            let entry = cpio::NewcReader::new(r).unwrap();
            if entry.entry().is_trailer() {
                break;
            }
            names.push(entry.entry().name().to_string());
            r = entry.finish().unwrap();
        }
        std::fs::remove_file(&out).unwrap();
        for want in ["init", "nssim", "bin/busybox"] {
            assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
        }
        let libs = shared_libraries(&me).unwrap();
        assert!(!libs.is_empty(), "a test binary loads libc");
        for lib in libs {
            let inside = lib.to_string_lossy().trim_start_matches('/').to_string();
            let at = names
                .iter()
                .position(|n| *n == inside)
                .expect("library inside");
            let parent = Path::new(&inside)
                .parent()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let dir_at = names.iter().position(|n| *n == parent).expect("its folder");
            assert!(dir_at < at, "{parent} before {inside}");
        }
    }
}
