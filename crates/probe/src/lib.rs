//! Conformance cases: one question asked of the model and of the running
//! kernel, with the two answers compared as text.
//!
//! The kernel half runs in child processes (`unshare`, `setpriv`, `sh`,
//! `dd`), never by forking the calling process, so cases are safe to run
//! from a multi-threaded test harness. Limits are lowered only inside
//! child user namespaces, every probe is bounded by `timeout`, and every
//! child is reaped before a probe returns.

use std::process::{Command, Stdio};
pub mod host_cases;

/// The kernel's answer, or why this host cannot give one.
pub type KernelAnswer = Result<String, Skip>;

/// Why a case's kernel half did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip(pub String);

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One conformance case. `model` and `kernel` return comparable answers:
/// the same text when model and kernel agree (for example `ok`,
/// `EINVAL`, or `ok=300 ENOSPC=0`).
pub struct Case {
    /// `idmap`, `ipc`, `nproc`, `uevent`, `userns`, `netns`.
    pub subsystem: &'static str,
    /// Short unique name, e.g. `uid_map.unprivileged_self_map`.
    pub name: String,
    /// What is asked, in a line.
    pub question: String,
    pub model: Box<dyn Fn() -> String + Send + Sync>,
    pub kernel: Box<dyn Fn() -> KernelAnswer + Send + Sync>,
}

/// The outcome of running one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub subsystem: &'static str,
    pub name: String,
    pub question: String,
    pub model: String,
    pub kernel: KernelAnswer,
}

impl Verdict {
    /// `Some(true)` when both answered the same, `None` when skipped.
    pub fn agree(&self) -> Option<bool> {
        self.kernel.as_ref().ok().map(|k| *k == self.model)
    }
}

impl Case {
    pub fn run(&self) -> Verdict {
        Verdict {
            subsystem: self.subsystem,
            name: self.name.clone(),
            question: self.question.clone(),
            model: (self.model)(),
            kernel: (self.kernel)(),
        }
    }
}

/// Every case of a set run once: which agreed, which were skipped (with
/// the reason) and how the others disagreed.
#[derive(Debug, Default)]
pub struct Agreement {
    pub agreed: usize,
    pub skipped: Vec<(String, String)>,
    pub disagreements: Vec<String>,
}

impl Agreement {
    /// Run every case, printing each skip with its reason.
    pub fn of(cases: &[Case]) -> Agreement {
        let mut a = Agreement::default();
        for case in cases {
            let v = case.run();
            match &v.kernel {
                Ok(k) if *k == v.model => a.agreed += 1,
                Ok(k) => a.disagreements.push(format!(
                    "{}: {}\n    model:  {}\n    kernel: {k}",
                    v.name, v.question, v.model
                )),
                Err(skip) => {
                    eprintln!("skipped {}: {skip}", v.name);
                    a.skipped.push((v.name, skip.0.clone()));
                }
            }
        }
        eprintln!(
            "{} agree, {} skipped, {} disagree",
            a.agreed,
            a.skipped.len(),
            a.disagreements.len()
        );
        a
    }

    /// Panics with every disagreement, if there is one.
    pub fn assert_no_disagreement(&self) {
        assert!(
            self.disagreements.is_empty(),
            "{}",
            self.disagreements.join("\n")
        );
    }
}

/// True when no two cases share a name.
pub fn names_are_unique(cases: &[Case]) -> bool {
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.windows(2).all(|w| w[0] != w[1])
}

/// What a shell probe printed.
#[derive(Debug, Clone)]
pub struct ShOutput {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Run `script` with `sh -c` inside a fresh user namespace where the
/// caller is root (`unshare -U -r --fork`), bounded by `timeout_s`
/// seconds. Returns [`Skip`] when user namespaces are unavailable.
pub fn sh_in_userns(script: &str, timeout_s: u32) -> Result<ShOutput, Skip> {
    host_allows_userns()?;
    sh_as_host(
        &format!("exec unshare -U -r --fork sh -c {}", shell_quote(script)),
        timeout_s,
    )
}

/// Run `script` with `sh -c` in the host's namespaces (as the invoking
/// user), bounded by `timeout_s` seconds.
pub fn sh_as_host(script: &str, timeout_s: u32) -> Result<ShOutput, Skip> {
    let out = Command::new("timeout")
        .args(["-k", "5", &timeout_s.to_string(), "sh", "-c", script])
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Skip(format!("cannot run `sh`/`timeout`: {e}")))?;
    let status = out.status.code();
    if status == Some(124) || status == Some(137) {
        return Err(Skip(format!("probe timed out after {timeout_s} s")));
    }
    Ok(ShOutput {
        status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Quote `s` as one `sh` word.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `Ok` when `unshare -U -r` works here, else why not.
pub fn host_allows_userns() -> Result<(), Skip> {
    let out = Command::new("timeout")
        .args(["10", "unshare", "-U", "-r", "true"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Skip(format!("cannot run `unshare`: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Skip(format!(
            "user namespaces are not available here (`unshare -U -r true`: {})",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// `true` when the invoking user is root in the initial user namespace.
pub fn host_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// The running kernel's release as (major, minor), e.g. (6, 18).
pub fn kernel_release() -> Option<(u32, u32)> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let mut parts = release
        .trim()
        .split(['.', '-'])
        .filter_map(|p| p.parse::<u32>().ok());
    Some((parts.next()?, parts.next()?))
}

/// The errno name for a libc error message as tools print it (`dd`,
/// `unshare`, `sh`), e.g. "Invalid argument" → `EINVAL`.
pub fn errno_from_message(msg: &str) -> Option<&'static str> {
    const MESSAGES: &[(&str, &str)] = &[
        ("Operation not permitted", "EPERM"),
        ("No such file or directory", "ENOENT"),
        ("No such process", "ESRCH"),
        ("Resource temporarily unavailable", "EAGAIN"),
        ("Cannot allocate memory", "ENOMEM"),
        ("Permission denied", "EACCES"),
        ("Bad address", "EFAULT"),
        ("Device or resource busy", "EBUSY"),
        ("File exists", "EEXIST"),
        ("Invalid argument", "EINVAL"),
        ("No space left on device", "ENOSPC"),
        ("Too many users", "EUSERS"),
        ("No buffer space available", "ENOBUFS"),
        ("Message too long", "EMSGSIZE"),
        ("Numerical result out of range", "ERANGE"),
        ("Connection refused", "ECONNREFUSED"),
    ];
    MESSAGES
        .iter()
        .find(|(m, _)| msg.contains(m))
        .map(|(_, e)| *e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names_come_from_messages() {
        assert_eq!(
            errno_from_message("dd: error writing '/proc/1/uid_map': Invalid argument"),
            Some("EINVAL")
        );
        assert_eq!(
            errno_from_message("unshare failed: No space left on device"),
            Some("ENOSPC")
        );
        assert_eq!(errno_from_message("all good"), None);
    }

    #[test]
    fn quoting_survives_single_quotes() {
        let out = sh_as_host(&format!("printf %s {}", shell_quote("it's")), 10).unwrap();
        assert_eq!(out.stdout, "it's");
    }

    fn case(name: &str, model: &'static str, kernel: KernelAnswer) -> Case {
        Case {
            subsystem: "ipc",
            name: name.into(),
            question: "q".into(),
            model: Box::new(move || model.into()),
            kernel: Box::new(move || kernel.clone()),
        }
    }

    #[test]
    fn an_agreement_counts_agreements_skips_and_disagreements() {
        let cases = [
            case("a", "ok", Ok("ok".into())),
            case("b", "ok", Ok("EPERM".into())),
            case("c", "ok", Err(Skip("no userns".into()))),
        ];
        assert!(names_are_unique(&cases));
        let a = Agreement::of(&cases);
        assert_eq!(a.agreed, 1);
        assert_eq!(a.skipped, [("c".to_string(), "no userns".to_string())]);
        assert_eq!(a.disagreements.len(), 1);
        assert!(a.disagreements[0].contains("kernel: EPERM"));
        let twice = [
            case("a", "ok", Ok("ok".into())),
            case("a", "x", Ok("x".into())),
        ];
        assert!(!names_are_unique(&twice));
    }

    #[test]
    fn a_verdict_agrees_only_when_answers_match() {
        let case = Case {
            subsystem: "ipc",
            name: "t".into(),
            question: "q".into(),
            model: Box::new(|| "ok".into()),
            kernel: Box::new(|| Ok("EINVAL".into())),
        };
        assert_eq!(case.run().agree(), Some(false));
        let skipped = Case {
            kernel: Box::new(|| Err(Skip("no userns".into()))),
            ..case
        };
        assert_eq!(skipped.run().agree(), None);
    }
}
