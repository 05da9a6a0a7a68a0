//! Kernel images from Debian's archive, through a private apt
//! configuration: the lab's own sources list, package lists and download
//! folder under its cache, so that nothing of the system's apt set-up is
//! read as state or changed. The archive's address is the one the system's
//! own sources use (the security archive for `*-security` suites), so the
//! lab reaches exactly what this machine's apt reaches.

use crate::eras::{image_package, Era};
use crate::error::LabError;
use crate::store::{release_key, Kernel, KernelMeta, Lab, Origin};
use std::path::{Path, PathBuf};
use std::process::Command;

const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// The archives the system's apt sources name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archives {
    pub main: String,
    pub security: String,
}

impl Archives {
    /// From `/etc/apt/sources.list` and `/etc/apt/sources.list.d/`.
    pub fn from_system() -> Result<Archives, LabError> {
        let mut text = std::fs::read_to_string("/etc/apt/sources.list").unwrap_or_default();
        let mut parts: Vec<PathBuf> = std::fs::read_dir("/etc/apt/sources.list.d")
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        parts.sort();
        for p in parts {
            let keep = p.extension().is_some_and(|e| e == "list" || e == "sources");
            if keep {
                text.push('\n');
                text.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
        Archives::parse(&text)
    }

    /// The Debian archives among `sources` (one-line or deb822 entries):
    /// the one serving a `*-security` suite, and one serving another suite.
    pub fn parse(sources: &str) -> Result<Archives, LabError> {
        let entries = source_entries(sources);
        let debian = |e: &&(String, Vec<String>)| e.0.contains("debian");
        let security = entries
            .iter()
            .filter(debian)
            .find(|(_, suites)| suites.iter().any(|s| s.ends_with("-security")));
        let main = entries
            .iter()
            .filter(debian)
            .find(|(_, suites)| suites.iter().any(|s| !s.ends_with("-security")));
        match (main, security) {
            (Some(m), Some(s)) => Ok(Archives {
                main: m.0.clone(),
                security: s.0.clone(),
            }),
            _ => Err(LabError::NoArchive(
                "the lab needs the main archive and the security archive".into(),
            )),
        }
    }

    pub fn for_suite(&self, suite: &str) -> &str {
        match suite.ends_with("-security") {
            true => &self.security,
            false => &self.main,
        }
    }
}

/// Each enabled `deb` entry's address and suites.
fn source_entries(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("deb ") {
            let words: Vec<&str> = strip_options(rest).split_whitespace().collect();
            if let [uri, suite, ..] = words[..] {
                out.push((uri.to_string(), vec![suite.to_string()]));
            }
        }
    }
    for stanza in text.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.trim().strip_prefix(name).map(str::trim))
                .map(str::to_string)
        };
        let deb = field("Types:").is_some_and(|t| t.split_whitespace().any(|t| t == "deb"));
        let enabled = field("Enabled:").is_none_or(|e| e != "no");
        if let (true, true, Some(uris), Some(suites)) =
            (deb, enabled, field("URIs:"), field("Suites:"))
        {
            let suites: Vec<String> = suites.split_whitespace().map(str::to_string).collect();
            for uri in uris.split_whitespace() {
                out.push((uri.to_string(), suites.clone()));
            }
        }
    }
    out
}

fn strip_options(rest: &str) -> &str {
    match rest.trim_start().strip_prefix('[') {
        Some(r) => r.split_once(']').map_or("", |(_, after)| after),
        None => rest,
    }
}

/// The private apt state of one suite, under the lab's cache.
pub(crate) struct SuiteApt {
    dir: PathBuf,
}

impl SuiteApt {
    pub(crate) fn new(lab: &Lab, archives: &Archives, suite: &str) -> Result<SuiteApt, LabError> {
        let dir = lab.dir.join("apt").join(suite);
        for sub in [
            "lists/partial",
            "archives/partial",
            "cache",
            "etc/sources.list.d",
        ] {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d).map_err(|e| LabError::cache(d, e))?;
        }
        let write = |name: &str, text: String| {
            std::fs::write(dir.join(name), text).map_err(|e| LabError::cache(dir.join(name), e))
        };
        write(
            "etc/sources.list",
            format!(
                "deb [signed-by={KEYRING}] {} {suite} main\n",
                archives.for_suite(suite)
            ),
        )?;
        write("status", String::new())?;
        let d = dir.display();
        write(
            "apt.conf",
            format!(
                "Dir::Etc::SourceList \"{d}/etc/sources.list\";\n\
                 Dir::Etc::SourceParts \"{d}/etc/sources.list.d\";\n\
                 Dir::State::Lists \"{d}/lists\";\n\
                 Dir::State::status \"{d}/status\";\n\
                 Dir::Cache \"{d}/cache\";\n\
                 Dir::Cache::Archives \"{d}/archives\";\n\
                 Acquire::Languages \"none\";\n\
                 APT::Sandbox::User \"root\";\n"
            ),
        )?;
        Ok(SuiteApt { dir })
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("APT_CONFIG", self.dir.join("apt.conf"));
        c
    }

    pub(crate) fn update(&self) -> Result<(), LabError> {
        run(self.command("apt-get").args(["update", "-q"]))?;
        Ok(())
    }

    /// Kernel image packages of `series`, the one to try first first.
    fn candidates(&self, series: &str) -> Result<Vec<(String, String)>, LabError> {
        let pattern = format!("^linux-image-{}[.]", series.replace('.', "[.]"));
        let out = run(self
            .command("apt-cache")
            .args(["search", "--names-only", &pattern]))?;
        let mut found: Vec<(String, String, u8)> = out
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter_map(|name| {
                image_package(name, series).map(|(release, pref)| (name.to_string(), release, pref))
            })
            .collect();
        found.sort_by(|a, b| {
            release_key(&b.1)
                .cmp(&release_key(&a.1))
                .then(a.2.cmp(&b.2))
        });
        Ok(found.into_iter().map(|(n, r, _)| (n, r)).collect())
    }

    fn has_package(&self, name: &str) -> bool {
        self.command("apt-cache")
            .args(["show", "--no-all-versions", name])
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
    }

    /// Download `package` into `into`: its `.deb`.
    pub(crate) fn download(&self, package: &str, into: &Path) -> Result<PathBuf, LabError> {
        run(self
            .command("apt-get")
            .args(["download", "-q", package])
            .current_dir(into))?;
        std::fs::read_dir(into)
            .map_err(|e| LabError::cache(into, e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "deb"))
            .ok_or_else(|| LabError::Command {
                command: format!("apt-get download {package}"),
                detail: "no .deb was written".into(),
            })
    }
}

/// Run `cmd` to its end: its standard output, or an error with its last words.
pub(crate) fn run(cmd: &mut Command) -> Result<String, LabError> {
    let shown = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let out = cmd.output().map_err(|e| LabError::Command {
        command: shown.clone(),
        detail: e.to_string(),
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        return Err(LabError::Command {
            command: shown,
            detail: format!(
                "{} ({})",
                last[last.len().saturating_sub(3)..].join("; "),
                out.status
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Fetch the kernel of `era`: the newest image of its series that the
/// archive serves, trying the next when a download fails (a listed package
/// may be missing from the pool).
pub fn fetch_era(lab: &Lab, archives: &Archives, era: &Era) -> Result<Kernel, LabError> {
    let apt = SuiteApt::new(lab, archives, era.suite)?;
    apt.update()?;
    let candidates = apt.candidates(era.name)?;
    let mut failures = Vec::new();
    for (package, release) in candidates.iter().take(6) {
        match fetch_package(lab, &apt, package, release, era.name, era.suite) {
            Ok(k) => return Ok(k),
            Err(e) => failures.push(format!("{package}: {e}")),
        }
    }
    Err(LabError::NoPackage(
        era.name.to_string(),
        match failures.is_empty() {
            true => format!("{} lists none", era.suite),
            false => failures.join("; "),
        },
    ))
}

/// Fetch the kernel image package `package`, from the first of the eras'
/// suites that lists it; the kernel is named by its release.
pub fn fetch_named(lab: &Lab, archives: &Archives, package: &str) -> Result<Kernel, LabError> {
    let series = package
        .strip_prefix("linux-image-")
        .map(|rest| rest.split('.').take(2).collect::<Vec<_>>().join("."))
        .unwrap_or_default();
    let (release, _) = image_package(package, &series).ok_or_else(|| {
        LabError::NoPackage(
            package.into(),
            "not a kernel image package of a flavour the lab boots (amd64 or cloud-amd64)".into(),
        )
    })?;
    for era in crate::eras::ERAS {
        let apt = SuiteApt::new(lab, archives, era.suite)?;
        apt.update()?;
        if apt.has_package(package) {
            return fetch_package(lab, &apt, package, &release, &release, era.suite);
        }
    }
    let suites: Vec<&str> = crate::eras::ERAS.iter().map(|e| e.suite).collect();
    Err(LabError::NoPackage(
        package.into(),
        format!("searched {}", suites.join(", ")),
    ))
}

fn fetch_package(
    lab: &Lab,
    apt: &SuiteApt,
    package: &str,
    release: &str,
    name: &str,
    suite: &str,
) -> Result<Kernel, LabError> {
    let scratch = lab.scratch("fetch")?;
    let result = (|| {
        let deb = apt.download(package, &scratch)?;
        let version = run(Command::new("dpkg-deb")
            .args(["-f"])
            .arg(&deb)
            .arg("Version"))?;
        let tree = scratch.join("tree");
        run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tree))?;
        let (image, config) = image_and_config(&tree, release)?;
        let meta = KernelMeta {
            name: name.to_string(),
            release: release.to_string(),
            package: package.to_string(),
            version: version.trim().to_string(),
            suite: suite.to_string(),
            origin: Origin::Debian,
        };
        lab.store(&meta, &image, &config)
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// Where an extracted image package keeps the image and its config:
/// `boot/` in most, `usr/lib/modules/RELEASE/` in the newest.
fn image_and_config(tree: &Path, release: &str) -> Result<(PathBuf, PathBuf), LabError> {
    let places = [
        (
            tree.join(format!("boot/vmlinuz-{release}")),
            tree.join(format!("boot/config-{release}")),
        ),
        (
            tree.join(format!("usr/lib/modules/{release}/vmlinuz")),
            tree.join(format!("usr/lib/modules/{release}/config")),
        ),
    ];
    places
        .into_iter()
        .find(|(i, c)| i.is_file() && c.is_file())
        .ok_or_else(|| LabError::Command {
            command: "dpkg-deb -x".into(),
            detail: format!("the package holds no vmlinuz and config for {release}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archives_are_read_from_both_source_formats() {
        let deb822 = "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n\
                      Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n";
        let a = Archives::parse(deb822).unwrap();
        assert_eq!(a.main, "http://mirror.example/debian");
        assert_eq!(a.security, "http://mirror.example/debian-security");
        assert_eq!(a.for_suite("bullseye-security"), a.security);
        assert_eq!(a.for_suite("trixie-backports"), a.main);
        let one_line =
            "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm main\n\
                        deb http://m.example/debian-security bookworm-security main\n";
        let b = Archives::parse(one_line).unwrap();
        assert_eq!(b.main, "http://m.example/debian");
        assert_eq!(b.security, "http://m.example/debian-security");
    }

    #[test]
    fn a_disabled_or_foreign_source_is_not_an_archive() {
        let text = "Types: deb\nURIs: http://m.example/debian\nSuites: bookworm\nEnabled: no\n\n\
                    Types: deb\nURIs: https://other.example/apt\nSuites: stable-security\n";
        assert!(matches!(Archives::parse(text), Err(LabError::NoArchive(_))));
    }
}
