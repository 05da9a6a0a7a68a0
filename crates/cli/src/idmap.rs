//! `nssim idmap check`: would the kernel accept this uid/gid map write,
//! which rule decides, and what does every id map to afterwards?
//!
//! The target namespace is a child of a parent namespace (the initial one,
//! or a namespace with `--parent-map` written by root of the initial
//! one). The writer is a process of that parent namespace (or, with
//! `--writer inside`, the target namespace's creator writing its own
//! file), with the capabilities `--writer` and `--without-cap` give it.
//! The map text goes through the model's `map_write` under the kernel
//! profile given by `--kernel`.

use crate::options::Format;
use kernel::catalog;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use userns::{caps, map_write, proc_setgroups_write, CapSet, Cred, MapKind, Userns};

#[derive(clap::Subcommand, Debug)]
pub enum IdmapCommand {
    /// Check a uid_map or gid_map write against a kernel profile's rules.
    ///
    /// Exit status: 0 when the kernel would accept the write, 1 when it would
    /// refuse it, 2 for bad input.
    Check(CheckArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WhichMap {
    Uid,
    Gid,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Writer {
    /// A process of the parent namespace with every capability there.
    Privileged,
    /// A process of the parent namespace without capabilities (it owns the target
    /// namespace unless --owner-uid says otherwise).
    Unprivileged,
    /// The target namespace's creator, writing its own map from inside (full
    /// capabilities in the new namespace, none in the parent).
    Inside,
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// File holding the map text ("first lower_first count" per line); `-` or
    /// nothing reads standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Which map is written.
    #[arg(long = "map", value_enum, default_value = "uid")]
    pub map: WhichMap,
    /// Kernel profile (`nssim kernels` lists them); default: the newest.
    #[arg(long, value_name = "PROFILE")]
    pub kernel: Option<String>,
    /// Turn a patch on (+NAME) or off (-NAME) on top of the profile. Repeatable.
    #[arg(long = "patch", value_name = "+NAME|-NAME", allow_hyphen_values = true)]
    pub patches: Vec<String>,
    /// File holding the parent namespace's map (both uid and gid), as root of
    /// the initial namespace would write it. Default: the parent is the
    /// initial namespace (`0 0 4294967295`).
    #[arg(long, value_name = "FILE")]
    pub parent_map: Option<PathBuf>,
    /// Who writes.
    #[arg(long, value_enum, default_value = "privileged")]
    pub writer: Writer,
    /// The writer's uid, as the parent namespace sees it.
    #[arg(long, default_value_t = 0)]
    pub writer_uid: u32,
    /// The writer's gid, as the parent namespace sees it.
    #[arg(long, default_value_t = 0)]
    pub writer_gid: u32,
    /// Owner (creator) uid of the target namespace in the parent namespace;
    /// default: the writer's.
    #[arg(long)]
    pub owner_uid: Option<u32>,
    /// Owner (creator) gid of the target namespace; default: the writer's.
    #[arg(long)]
    pub owner_gid: Option<u32>,
    /// A capability the writer (and the creator) lack, e.g. CAP_SETFCAP. Repeatable.
    #[arg(long, value_name = "CAP")]
    pub without_cap: Vec<String>,
    /// Write "deny" to the target's /proc/PID/setgroups first.
    #[arg(long)]
    pub setgroups_deny: bool,
    /// Output format: `json` prints one line: the verdict, its errno, the rule that
    /// decided and the extents.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn run(command: &IdmapCommand) -> Result<bool, String> {
    match command {
        IdmapCommand::Check(args) => check(args),
    }
}

/// The map text, at most a page: the kernel refuses a write of a page or
/// more, so one byte past what it would accept is enough to say so (and
/// `/dev/zero` or an endless pipe is not read without bound).
fn read_text(path: Option<&PathBuf>) -> Result<Vec<u8>, String> {
    let limit = userns::map_write::PAGE_SIZE as u64;
    let mut buf = Vec::new();
    match path {
        Some(p) if p.as_os_str() != "-" => {
            // A FIFO's open would wait for a writer: a pipe comes as `-`,
            // standard input. A file or a device is read a page at most.
            use std::os::unix::fs::FileTypeExt;
            let kind = std::fs::metadata(p)
                .map_err(|e| format!("cannot read {}: {e}", crate::error::shown(p)))?
                .file_type();
            if kind.is_fifo() || kind.is_socket() || kind.is_dir() {
                return Err(format!(
                    "cannot read {}: not a file or a device (give a pipe as `-`, standard input)",
                    crate::error::shown(p)
                ));
            }
            std::fs::File::open(p)
                .and_then(|f| f.take(limit).read_to_end(&mut buf))
                .map_err(|e| format!("cannot read {}: {e}", crate::error::shown(p)))?
        }
        _ => std::io::stdin()
            .take(limit)
            .read_to_end(&mut buf)
            .map_err(|e| format!("cannot read standard input: {e}"))?,
    };
    Ok(buf)
}

fn capability(name: &str) -> Result<u32, String> {
    let upper = name.to_ascii_uppercase();
    let full = if upper.starts_with("CAP_") {
        upper
    } else {
        format!("CAP_{upper}")
    };
    caps::from_name(&full).ok_or_else(|| {
        format!(
            "unknown capability `{}` (known: {})",
            sim::echo::echo(name),
            caps::NAMES.join(", ")
        )
    })
}

fn patches(args: &CheckArgs) -> Result<(String, userns::UsernsPatches), String> {
    let profile = args
        .kernel
        .clone()
        .unwrap_or_else(|| catalog::PROFILES.last().expect("profiles").name.to_string());
    let mut toggles = Vec::new();
    for p in &args.patches {
        let (on, name) = match p.split_at_checked(1) {
            Some(("+", n)) => (true, n),
            Some(("-", n)) => (false, n),
            _ => return Err(format!("--patch `{p}`: expected +NAME or -NAME")),
        };
        toggles.push((name.to_string(), on));
    }
    let active = kernel::resolve_patches(&profile, &toggles)?;
    Ok((profile, active.userns()))
}

/// The namespace the writer lives in: the initial one, or a child with
/// `--parent-map`.
fn parent_namespace(
    sys: &Userns,
    parent_map: Option<&PathBuf>,
) -> Result<Arc<userns::UserNamespace>, String> {
    let Some(path) = parent_map else {
        return Ok(Arc::clone(&sys.init));
    };
    let text = read_text(Some(path))?;
    let root = sys.init_root();
    let parent = sys
        .create_user_ns(&root, "parent")
        .map_err(|e| format!("cannot make the parent namespace: {e}"))?;
    for kind in [MapKind::Uid, MapKind::Gid] {
        let out = map_write(sys, &parent.user_ns, kind, &root, &root, &text, 0);
        if let Err(e) = out.result {
            return Err(format!(
                "--parent-map {}: the kernel refuses it as a {}: {e} ({}: {})",
                path.display(),
                kind.file(),
                out.rule.name(),
                out.rule.describe()
            ));
        }
    }
    Ok(parent.user_ns)
}

/// The writer's credentials in the parent namespace, ids given as the
/// parent sees them.
fn parent_cred(
    parent: &Arc<userns::UserNamespace>,
    uid: u32,
    gid: u32,
    caps: CapSet,
) -> Result<Cred, String> {
    let kuid = userns::make_kuid(parent, uid);
    let kgid = userns::make_kgid(parent, gid);
    if kuid == userns::UNMAPPED || kgid == userns::UNMAPPED {
        return Err(format!(
            "uid {uid} / gid {gid} is not mapped in the parent namespace"
        ));
    }
    Ok(Cred::new(parent, kuid, kgid, caps))
}

fn check(args: &CheckArgs) -> Result<bool, String> {
    let (profile, patches) = patches(args)?;
    let text = read_text(args.file.as_ref())?;
    let sys = Userns::standalone(patches);
    let parent = parent_namespace(&sys, args.parent_map.as_ref())?;
    let mut dropped = CapSet::FULL;
    for name in &args.without_cap {
        dropped = dropped.without(capability(name)?);
    }
    let writer_caps = match args.writer {
        Writer::Privileged => dropped,
        Writer::Unprivileged | Writer::Inside => CapSet::EMPTY,
    };
    let owner_uid = args.owner_uid.unwrap_or(args.writer_uid);
    let owner_gid = args.owner_gid.unwrap_or(args.writer_gid);
    // An unprivileged writer made the namespace without capabilities;
    // otherwise the creator had the writer's (inside: the writer is it).
    let creator_caps = match args.writer {
        Writer::Unprivileged => CapSet::EMPTY,
        Writer::Privileged | Writer::Inside => dropped,
    };
    let creator = parent_cred(&parent, owner_uid, owner_gid, creator_caps)?;
    let made = sys
        .create_user_ns(&creator, "target")
        .map_err(|e| format!("cannot make the target namespace: {e}"))?;
    let target = Arc::clone(&made.user_ns);
    let writer = match args.writer {
        Writer::Inside => made.clone(),
        _ => parent_cred(&parent, args.writer_uid, args.writer_gid, writer_caps)?,
    };
    if args.setgroups_deny {
        let (r, rule) = proc_setgroups_write(&sys, &target, &writer, b"deny", 0);
        if let Err(e) = r {
            return Err(format!(
                "--setgroups-deny: the write of \"deny\" fails: {e} ({}: {})",
                rule.name(),
                rule.describe()
            ));
        }
    }
    let kind = match args.map {
        WhichMap::Uid => MapKind::Uid,
        WhichMap::Gid => MapKind::Gid,
    };
    let out = map_write(&sys, &target, kind, &writer, &writer, &text, 0);
    let accepted = out.result.is_ok();
    match args.format {
        Format::Json => println!("{}", json(&out, &profile, kind)),
        Format::Text => print_text(&out, &profile, kind, &parent),
    }
    Ok(accepted)
}

fn json(out: &userns::WriteOutcome, profile: &str, kind: MapKind) -> serde_json::Value {
    let extents: Vec<serde_json::Value> = out
        .extents
        .iter()
        .map(|e| {
            serde_json::json!({
                "first": e.first,
                "lower_first": e.lower_first,
                "count": e.count,
            })
        })
        .collect();
    serde_json::json!({
        "accepted": out.result.is_ok(),
        "errno": out.result.err().map(|e| e.name()),
        "rule": out.rule.name(),
        "why": out.rule.describe(),
        "kernel": profile,
        "map": kind.file(),
        "extents": extents,
    })
}

fn print_text(
    out: &userns::WriteOutcome,
    profile: &str,
    kind: MapKind,
    parent: &userns::UserNamespace,
) {
    let verdict = match out.result {
        Ok(_) => "accepted".to_string(),
        Err(e) => format!("refused with {e}"),
    };
    println!("{} write on {profile}: {verdict}", kind.file());
    println!("rule: {} ({})", out.rule.name(), out.rule.describe());
    if out.extents.is_empty() {
        return;
    }
    println!(
        "{:>12} {:>12} {:>12} {:>12}",
        "first", "parent id", "kernel id", "count"
    );
    for e in &out.extents {
        let in_parent = parent.map(kind).map_id_up(e.lower_first);
        println!(
            "{:>12} {:>12} {:>12} {:>12}",
            e.first, in_parent, e.lower_first, e.count
        );
    }
}
