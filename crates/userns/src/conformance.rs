//! Conformance cases for `map_write` and `/proc/PID/setgroups`: each case
//! asks the model (the newest kernel's behaviour, [`UsernsPatches::NEWEST`])
//! and the running kernel the same question and answers as text:
//! the result of every write (`ok` or an errno name), then the map as
//! read back, e.g. `ok | 0 1000 1`.
//!
//! The kernel half runs shell probes: a sleeper made with `unshare -U`
//! (as host root or, through `setpriv`, as another uid) holds the target
//! namespace, each write is one write(2) by `dd bs=65536` from a file,
//! and the sleeper is killed and reaped at the end.

use crate::map_write::{map_write, proc_setgroups_write, uid_m_show, MapKind};
use crate::{caps, CapSet, Cred, UserNamespace, Userns, UsernsPatches};
use probe::{errno_from_message, sh_as_host, shell_quote, Case, KernelAnswer, Skip};
use std::sync::Arc;

/// Which file a write goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum File {
    Uid,
    Gid,
    Setgroups,
}

impl File {
    fn proc_name(self) -> &'static str {
        match self {
            File::Uid => "uid_map",
            File::Gid => "gid_map",
            File::Setgroups => "setgroups",
        }
    }

    fn map_kind(self) -> Option<MapKind> {
        match self {
            File::Uid => Some(MapKind::Uid),
            File::Gid => Some(MapKind::Gid),
            File::Setgroups => None,
        }
    }
}

/// Who made the target namespace and who writes to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// uid 1000 (no capabilities) made it; uid 1000 writes from the parent.
    UserFromParent,
    /// uid 1000 made it; host root writes from the parent.
    RootForUser,
    /// uid 1000 made it; host root without CAP_SETFCAP writes.
    RootWithoutSetfcapForUser,
    /// Host root made it and writes from the parent.
    Root,
    /// uid 1000 made it with unshare(2) and writes its own maps from
    /// inside, in the same process (no execve in between).
    UserInside,
    /// uid 1000 made it with unshare(1), which then exec'd the writer: the
    /// writer's uid is unmapped, so execve dropped every capability.
    UserInsideAfterExec,
    /// Host root made it and writes its own maps from inside; `setfcap`
    /// says whether it held CAP_SETFCAP when it made it.
    RootInside { setfcap: bool },
    /// Host root opens the file; uid 1000 writes through that descriptor.
    RootOpensUserWrites,
    /// Level 2: uid 100000 made level 1, host root mapped `0 100000 65536`
    /// there (uid and gid); root of level 1 made level 2 and writes its
    /// maps from level 1.
    Nested,
}

/// One write-and-read-back question.
pub struct MapCase {
    pub name: &'static str,
    pub setup: Setup,
    /// Writes done first, by the same writer (their results are part of
    /// the answer).
    pub before: Vec<(File, String)>,
    pub file: File,
    pub text: String,
}

const USER: u32 = 1000;
const NESTED_OWNER: u32 = 100_000;

fn case(name: &'static str, setup: Setup, file: File, text: &str) -> MapCase {
    MapCase {
        name,
        setup,
        before: Vec::new(),
        file,
        text: text.to_string(),
    }
}

/// Every map-write case still written by hand: the others are scenarios
/// under `sim-scenarios/conformance/idmap/`. This one is a descriptor
/// opened by one process and written by another, which no scenario op
/// expresses (an op opens the file it writes).
pub fn map_cases() -> Vec<MapCase> {
    vec![case(
        "opener_root.writer_user",
        Setup::RootOpensUserWrites,
        File::Uid,
        "0 1000 1\n",
    )]
}

/// The cases as conformance cases.
pub fn conformance_cases() -> Vec<Case> {
    map_cases()
        .into_iter()
        .map(|c| {
            let c = Arc::new(c);
            let (m, k) = (Arc::clone(&c), Arc::clone(&c));
            Case {
                subsystem: "idmap",
                name: c.name.to_string(),
                question: c.question(),
                model: Box::new(move || m.model()),
                kernel: Box::new(move || k.kernel()),
            }
        })
        .collect()
}

/// The model's side of one set-up: the target namespace, the opener and
/// writer, and the namespace the map is read back from.
struct ModelWorld {
    sys: Arc<Userns>,
    target: Arc<UserNamespace>,
    opener: Cred,
    writer: Cred,
    reader: Arc<UserNamespace>,
}

fn model_world(setup: Setup) -> ModelWorld {
    let sys = Userns::standalone(UsernsPatches::NEWEST);
    let root = sys.init_root();
    let user = Cred::new(&sys.init, USER, USER, CapSet::EMPTY);
    let made_by = |creator: &Cred| sys.create_user_ns(creator, "target").expect("creatable");
    let from_parent = |creator: &Cred, writer: &Cred, opener: &Cred| {
        let target = made_by(creator).user_ns;
        (
            target,
            opener.clone(),
            writer.clone(),
            Arc::clone(&sys.init),
        )
    };
    let no_setfcap = Cred {
        cap_effective: CapSet::FULL.without(caps::CAP_SETFCAP),
        ..root.clone()
    };
    let (target, opener, writer, reader) = match setup {
        Setup::UserFromParent => from_parent(&user, &user, &user),
        Setup::RootForUser => from_parent(&user, &root, &root),
        Setup::RootWithoutSetfcapForUser => from_parent(&user, &no_setfcap, &no_setfcap),
        Setup::Root => from_parent(&root, &root, &root),
        Setup::RootOpensUserWrites => from_parent(&user, &user, &root),
        Setup::UserInsideAfterExec => {
            let c = made_by(&user);
            let after_exec = Cred {
                cap_effective: CapSet::EMPTY,
                ..c.clone()
            };
            (
                Arc::clone(&c.user_ns),
                after_exec.clone(),
                after_exec,
                Arc::clone(&c.user_ns),
            )
        }
        Setup::UserInside => {
            let c = made_by(&user);
            (
                Arc::clone(&c.user_ns),
                c.clone(),
                c.clone(),
                Arc::clone(&c.user_ns),
            )
        }
        Setup::RootInside { setfcap } => {
            let creator = if setfcap {
                root.clone()
            } else {
                no_setfcap.clone()
            };
            let c = made_by(&creator);
            (
                Arc::clone(&c.user_ns),
                c.clone(),
                c.clone(),
                Arc::clone(&c.user_ns),
            )
        }
        Setup::Nested => {
            let l1 = made_by(&Cred::new(
                &sys.init,
                NESTED_OWNER,
                NESTED_OWNER,
                CapSet::EMPTY,
            ));
            for kind in [MapKind::Uid, MapKind::Gid] {
                let out = map_write(&sys, &l1.user_ns, kind, &root, &root, b"0 100000 65536", 0);
                assert_eq!(out.answer(), "ok", "level 1 map");
            }
            let l1_root = Cred::new(&l1.user_ns, NESTED_OWNER, NESTED_OWNER, CapSet::FULL);
            let l2 = sys.create_user_ns(&l1_root, "l2").expect("level 2");
            (
                l2.user_ns,
                l1_root.clone(),
                l1_root,
                Arc::clone(&l1.user_ns),
            )
        }
    };
    ModelWorld {
        sys,
        target,
        opener,
        writer,
        reader,
    }
}

impl MapCase {
    pub fn question(&self) -> String {
        let before: Vec<String> = self
            .before
            .iter()
            .map(|(f, t)| format!("{} {:?}, then ", f.proc_name(), t))
            .collect();
        format!(
            "{:?}: {}write {} {:?}",
            self.setup,
            before.concat(),
            self.file.proc_name(),
            abbreviate(&self.text)
        )
    }

    /// The model's answer.
    pub fn model(&self) -> String {
        let w = model_world(self.setup);
        let mut results = Vec::new();
        for (file, text) in self
            .before
            .iter()
            .chain([(self.file, self.text.clone())].iter())
        {
            results.push(model_write(&w, *file, text));
        }
        let shown = match self.file.map_kind() {
            Some(kind) => uid_m_show(&w.target, kind, &w.reader),
            None => String::new(),
        };
        answer(&results, &shown)
    }

    /// The running kernel's answer.
    pub fn kernel(&self) -> KernelAnswer {
        if !probe::host_is_root() {
            return Err(Skip("the kernel half needs root on the host".into()));
        }
        probe::host_allows_userns()?;
        let out = sh_as_host(&self.script(), 30)?;
        parse_probe(&out.stdout).ok_or_else(|| {
            Skip(format!(
                "probe gave no answer: {} {}",
                out.stdout.trim(),
                out.stderr.trim()
            ))
        })
    }

    fn script(&self) -> String {
        let mut files = String::new();
        let all: Vec<(File, &String)> = self
            .before
            .iter()
            .map(|(f, t)| (*f, t))
            .chain([(self.file, &self.text)])
            .collect();
        for (i, (_, text)) in all.iter().enumerate() {
            files.push_str(&format!("printf %s {} > $d/w{i}\n", shell_quote(text)));
        }
        files.push_str("chmod 644 $d/*\n");
        let files_and_targets: Vec<(String, &str)> = all
            .iter()
            .enumerate()
            .map(|(i, (f, _))| (format!("w{i}"), f.proc_name()))
            .collect();
        let readback = self.file.map_kind().map(MapKind::file);
        let body = match self.setup {
            Setup::UserInside => python_inside(AS_USER, true, &files_and_targets, readback),
            Setup::UserInsideAfterExec => {
                python_inside(AS_USER, false, &files_and_targets, readback)
            }
            Setup::RootInside { setfcap } => {
                let creator = if setfcap { "" } else { NO_SETFCAP };
                python_inside(creator, true, &files_and_targets, readback)
            }
            setup => {
                let writes: String = files_and_targets
                    .iter()
                    .map(|(f, t)| format!("w $d/{f} /proc/$p/{t}\n"))
                    .collect();
                let readback = readback
                    .map(|file| format!("sed 's/^/M /' /proc/$p/{file}\n"))
                    .unwrap_or_default();
                setup_script(setup, &format!("{writes}{readback}"))
            }
        };
        format!("set -u\nd=$(mktemp -d); chmod 1777 $d\n{files}{body}\nrm -rf $d\n")
    }
}

/// A Python process (single-threaded, so unshare(2) may make a user
/// namespace) that writes its own files without an execve in between:
/// `unshare` says whether it calls unshare(2) itself (keeping the full
/// capabilities the new namespace gives) or was started by unshare(1).
fn python_inside(
    creator: &str,
    unshare: bool,
    writes: &[(String, &str)],
    readback: Option<&str>,
) -> String {
    let writes: Vec<String> = writes
        .iter()
        .map(|(f, t)| format!("(\"{f}\", \"{t}\")"))
        .collect();
    let program = format!(
        "import ctypes, os, sys\n\
         d = os.environ[\"d\"]\n\
         if {unshare}:\n\
         \x20   libc = ctypes.CDLL(None, use_errno=True)\n\
         \x20   if libc.unshare(0x10000000) != 0:\n\
         \x20       print(\"U\", os.strerror(ctypes.get_errno())); sys.exit(0)\n\
         for f, t in [{}]:\n\
         \x20   data = open(os.path.join(d, f), \"rb\").read()\n\
         \x20   try:\n\
         \x20       fd = os.open(\"/proc/self/\" + t, os.O_WRONLY)\n\
         \x20       try:\n\
         \x20           os.write(fd, data)\n\
         \x20       finally:\n\
         \x20           os.close(fd)\n\
         \x20       print(\"W ok\")\n\
         \x20   except OSError as e:\n\
         \x20       print(\"W\", e.strerror)\n\
         if {}:\n\
         \x20   for line in open(\"/proc/self/{}\"):\n\
         \x20       print(\"M\", line.rstrip())\n",
        writes.join(", "),
        if readback.is_some() { "True" } else { "False" },
        readback.unwrap_or("uid_map"),
        unshare = if unshare { "True" } else { "False" },
    );
    let launcher = if unshare { "" } else { "unshare -U" };
    format!(
        "d=$d {creator} {launcher} /usr/bin/python3 -c {}\n",
        shell_quote(&program)
    )
}

fn abbreviate(text: &str) -> String {
    if text.len() > 60 {
        format!(
            "{}... ({} lines, {} bytes)",
            &text[..40],
            text.lines().count(),
            text.len()
        )
    } else {
        text.to_string()
    }
}

fn model_write(w: &ModelWorld, file: File, text: &str) -> String {
    match file.map_kind() {
        Some(kind) => map_write(
            &w.sys,
            &w.target,
            kind,
            &w.opener,
            &w.writer,
            text.as_bytes(),
            0,
        )
        .answer(),
        None => match proc_setgroups_write(&w.sys, &w.target, &w.opener, text.as_bytes(), 0).0 {
            Ok(_) => "ok".into(),
            Err(e) => e.name().into(),
        },
    }
}

/// `ok EPERM | 0 1000 1;1 2000 1`: every write's result, then the map.
fn answer(results: &[String], shown: &str) -> String {
    let map: Vec<String> = shown
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    format!("{} | {}", results.join(" "), map.join(";"))
}

/// The probe prints `W <ok or dd's message>` per write and `M <line>` per
/// map line.
fn parse_probe(stdout: &str) -> Option<String> {
    let mut results = Vec::new();
    let mut shown = String::new();
    for line in stdout.lines() {
        if let Some(r) = line.strip_prefix("W ") {
            let r = if r == "ok" {
                "ok".to_string()
            } else {
                errno_from_message(r).map_or_else(|| format!("?{r}"), str::to_string)
            };
            results.push(r);
        } else if let Some(m) = line.strip_prefix("M ") {
            shown.push_str(m);
            shown.push('\n');
        }
    }
    (!results.is_empty()).then(|| answer(&results, &shown))
}

/// `w FILE TARGET`: one write(2) of FILE to TARGET by `$W`, reporting
/// `W ok` or `W <dd's error>`.
const WRITE_FN: &str = r#"w() { if $W dd if="$1" of="$2" bs=65536 conv=notrunc 2>"$1.err" >/dev/null; then echo "W ok"; else echo "W $(grep -v records "$1.err" | head -n1)"; fi; }"#;

/// Wait (at most ~3 s) until `$p` is in another user namespace than this
/// shell.
const WAIT_UNSHARED: &str = r#"i=0; while [ "$(readlink /proc/$p/ns/user)" = "$(readlink /proc/self/ns/user)" ] && [ $i -lt 300 ]; do i=$((i+1)); sleep 0.01; done"#;

const AS_USER: &str = "setpriv --reuid=1000 --regid=1000 --clear-groups";
const NO_SETFCAP: &str = "setpriv --bounding-set=-setfcap --inh-caps=-setfcap";

/// The shell around `steps` (which use `w`, `$p` and `$d`) for a set-up.
fn setup_script(setup: Setup, steps: &str) -> String {
    let sleeper = |creator: &str, writer: &str, steps: &str| {
        format!(
            "{WRITE_FN}\nW='{writer}'\n{creator} unshare -U sleep 30 & p=$!\n{WAIT_UNSHARED}\n{steps}kill $p; wait\n"
        )
    };
    match setup {
        Setup::UserFromParent => sleeper(AS_USER, AS_USER, steps),
        Setup::RootForUser => sleeper(AS_USER, "", steps),
        Setup::RootWithoutSetfcapForUser => sleeper(AS_USER, NO_SETFCAP, steps),
        Setup::Root => sleeper("", "", steps),
        Setup::RootOpensUserWrites => {
            // A root subshell opens the file as fd 3; dd, as uid 1000,
            // writes to it as its standard output.
            let steps = steps.replace(
                "w $d/w0 /proc/$p/uid_map\n",
                &format!(
                    "if (exec 3>/proc/$p/uid_map; {AS_USER} dd if=$d/w0 bs=65536 conv=notrunc 1>&3 2>$d/err); then echo 'W ok'; else echo \"W $(grep -v records $d/err | head -n1)\"; fi\n"
                ),
            );
            sleeper(AS_USER, "", &steps)
        }
        Setup::UserInside | Setup::UserInsideAfterExec | Setup::RootInside { .. } => {
            unreachable!("written by python_inside")
        }
        Setup::Nested => {
            let inner = format!(
                "{WRITE_FN}\nW=''\nunshare -U sleep 30 & p=$!\n{WAIT_UNSHARED}\n{steps}kill $p; wait\n"
            );
            format!(
                "setpriv --reuid=100000 --regid=100000 --clear-groups unshare -U sleep 30 & l1=$!\n\
                 p=$l1; {WAIT_UNSHARED}\n\
                 printf '0 100000 65536' > $d/l1\n\
                 dd if=$d/l1 of=/proc/$l1/uid_map bs=65536 conv=notrunc 2>/dev/null\n\
                 dd if=$d/l1 of=/proc/$l1/gid_map bs=65536 conv=notrunc 2>/dev/null\n\
                 d=$d nsenter -t $l1 -U sh -c {}\n\
                 kill $l1; wait\n",
                shell_quote(&inner)
            )
        }
    }
}
