//! Writing and reading `/proc/PID/{uid,gid}_map` and `/proc/PID/setgroups`
//! (kernel/user_namespace.c: `proc_uid_map_write`, `map_write`,
//! `mappings_overlap`, `insert_extent`, `sort_idmaps`,
//! `new_idmap_permitted`, `verify_root_map`, `proc_setgroups_write`,
//! `uid_m_show`), and the id conversions (`make_kuid`, `from_kuid`,
//! `from_kuid_munged`).
//!
//! Every step that can fail is a [`Rule`]; a write reports the rule that
//! decided it, so the idmap checker can say *why*.

use crate::idmap::{Extent, IdMap, Layout, MAX_BASE_EXTENTS, UNMAPPED};
use crate::{caps, ns_capable, Cred, Error, UserNamespace, Userns, OVERFLOW_ID};
use std::sync::Arc;

/// `PAGE_SIZE`: writes must be shorter.
pub const PAGE_SIZE: usize = 4096;

/// Which map a write targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MapKind {
    Uid,
    Gid,
}

impl MapKind {
    /// The capability `map_write` is called with (`cap_setid`).
    pub fn cap_setid(self) -> u32 {
        match self {
            MapKind::Uid => caps::CAP_SETUID,
            MapKind::Gid => caps::CAP_SETGID,
        }
    }

    pub fn file(self) -> &'static str {
        match self {
            MapKind::Uid => "uid_map",
            MapKind::Gid => "gid_map",
        }
    }
}

/// The step of a map or setgroups write that decided its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// The initial namespace's maps cannot be written.
    InitialNamespace,
    /// The opener is neither in the target namespace nor in its parent.
    OpenerNamespace,
    /// Not at offset 0, or a page or more.
    OffsetOrSize,
    /// The map was already written.
    AlreadyWritten,
    /// The opener lacks CAP_SYS_ADMIN over the target namespace.
    OpenerNotAdmin,
    /// A line is not three base-10 numbers separated by white space.
    Syntax,
    /// `first` or `lower_first` is 4294967295.
    MaxId,
    /// A count of zero.
    ZeroCount,
    /// A range wraps past 4294967295.
    Wrap,
    /// The range overlaps an earlier line, upper or lower.
    Overlap,
    /// More lines than the layout holds.
    TooManyExtents,
    /// No line at all.
    NoExtents,
    /// Mapping parent uid 0 without CAP_SETFCAP (v5.12).
    SetfcapRoot,
    /// Neither the unprivileged self-map nor CAP_SETUID/CAP_SETGID in the
    /// parent for both the writer and the opener.
    NotPermitted,
    /// A lower range is not inside one extent of the parent's map.
    NotInParent,
    /// Accepted: the unprivileged single-line map of the opener's own id.
    SelfMap,
    /// Accepted: writer and opener have CAP_SETUID/CAP_SETGID in the parent.
    Privileged,
    /// setgroups: not "allow" or "deny" at offset 0 in under 8 bytes.
    SetgroupsSyntax,
    /// setgroups: the opener lacks CAP_SYS_ADMIN over the namespace.
    SetgroupsNotAdmin,
    /// setgroups: "allow" after "deny".
    SetgroupsAllowAfterDeny,
    /// setgroups: "deny" after the gid map was written.
    SetgroupsDenyAfterGidMap,
    /// setgroups: accepted.
    SetgroupsWritten,
}

impl Rule {
    /// A short stable name (`--format json` prints it).
    pub fn name(self) -> &'static str {
        match self {
            Rule::InitialNamespace => "proc.initial_namespace",
            Rule::OpenerNamespace => "proc.opener_namespace",
            Rule::OffsetOrSize => "write.offset_or_size",
            Rule::AlreadyWritten => "write.once",
            Rule::OpenerNotAdmin => "write.opener_cap_sys_admin",
            Rule::Syntax => "parse.syntax",
            Rule::MaxId => "parse.4294967295",
            Rule::ZeroCount => "parse.zero_count",
            Rule::Wrap => "parse.wrap",
            Rule::Overlap => "parse.overlap",
            Rule::TooManyExtents => "parse.too_many_extents",
            Rule::NoExtents => "parse.no_extents",
            Rule::SetfcapRoot => "permitted.setfcap_root",
            Rule::NotPermitted => "permitted.cap_setid",
            Rule::NotInParent => "translate.parent_map",
            Rule::SelfMap => "permitted.self_map",
            Rule::Privileged => "permitted.cap_setid_in_parent",
            Rule::SetgroupsSyntax => "setgroups.syntax",
            Rule::SetgroupsNotAdmin => "setgroups.opener_cap_sys_admin",
            Rule::SetgroupsAllowAfterDeny => "setgroups.allow_after_deny",
            Rule::SetgroupsDenyAfterGidMap => "setgroups.deny_after_gid_map",
            Rule::SetgroupsWritten => "setgroups.written",
        }
    }

    /// What the rule says, in a sentence.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::InitialNamespace => "the initial user namespace's maps are fixed",
            Rule::OpenerNamespace => "the file must be opened from the target namespace or its parent",
            Rule::OffsetOrSize => "a map is written in one write(2) at offset 0, shorter than a page",
            Rule::AlreadyWritten => "a map can be written only once",
            Rule::OpenerNotAdmin => "the opener needs CAP_SYS_ADMIN over the target namespace",
            Rule::Syntax => "each line is three base-10 numbers separated by white space",
            Rule::MaxId => "4294967295 cannot be the first id of a range",
            Rule::ZeroCount => "the count must be at least 1",
            Rule::Wrap => "a range must not wrap past 4294967295",
            Rule::Overlap => "ranges must not overlap, in the namespace or in the parent",
            Rule::TooManyExtents => "more lines than the kernel's map layout holds",
            Rule::NoExtents => "at least one line is needed",
            Rule::SetfcapRoot => "mapping parent uid 0 needs CAP_SETFCAP (v5.12)",
            Rule::NotPermitted => "only a single line mapping the opener's own id may be written without CAP_SETUID/CAP_SETGID in the parent (held by writer and opener); a gid self-map also needs setgroups \"deny\"",
            Rule::NotInParent => "every lower range must lie inside one extent of the parent's map",
            Rule::SelfMap => "a single line mapping the opener's own id, by the namespace's owner",
            Rule::Privileged => "writer and opener have CAP_SETUID/CAP_SETGID in the parent namespace",
            Rule::SetgroupsSyntax => "setgroups takes \"allow\" or \"deny\"",
            Rule::SetgroupsNotAdmin => "the opener needs CAP_SYS_ADMIN over the namespace",
            Rule::SetgroupsAllowAfterDeny => "\"deny\" is permanent",
            Rule::SetgroupsDenyAfterGidMap => "\"deny\" must come before the gid map",
            Rule::SetgroupsWritten => "setgroups written",
        }
    }

    fn errno(self) -> Option<Error> {
        match self {
            Rule::SelfMap | Rule::Privileged | Rule::SetgroupsWritten => None,
            Rule::OffsetOrSize
            | Rule::Syntax
            | Rule::MaxId
            | Rule::ZeroCount
            | Rule::Wrap
            | Rule::Overlap
            | Rule::TooManyExtents
            | Rule::NoExtents
            | Rule::SetgroupsSyntax => Some(Error::EINVAL),
            // proc_setgroups_open refuses the open itself.
            Rule::SetgroupsNotAdmin => Some(Error::EACCES),
            _ => Some(Error::EPERM),
        }
    }
}

/// The outcome of one write: bytes written or the errno, the deciding
/// rule, and the extents now published (kernel ids, forward order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    pub result: Result<usize, Error>,
    pub rule: Rule,
    pub extents: Vec<Extent>,
}

impl WriteOutcome {
    fn decided(rule: Rule, len: usize, extents: Vec<Extent>) -> Self {
        WriteOutcome {
            result: rule.errno().map_or(Ok(len), Err),
            rule,
            extents,
        }
    }

    /// `ok` or the errno name.
    pub fn answer(&self) -> String {
        match self.result {
            Ok(_) => "ok".into(),
            Err(e) => e.name().into(),
        }
    }
}

/// `proc_uid_map_write`/`proc_gid_map_write` then `map_write`: `opener`
/// opened `/proc/PID/{uid,gid}_map` of a task in `target`, `writer` calls
/// write(2) with `buf` at offset `ppos`.
pub fn map_write(
    sys: &Userns,
    target: &Arc<UserNamespace>,
    kind: MapKind,
    opener: &Cred,
    writer: &Cred,
    buf: &[u8],
    ppos: u64,
) -> WriteOutcome {
    let reject = |rule: Rule| WriteOutcome::decided(rule, buf.len(), Vec::new());
    let Some(parent) = target.parent.clone() else {
        return reject(Rule::InitialNamespace);
    };
    if !Arc::ptr_eq(&opener.user_ns, target) && !Arc::ptr_eq(&opener.user_ns, &parent) {
        return reject(Rule::OpenerNamespace);
    }
    if ppos != 0 || buf.len() >= PAGE_SIZE {
        return reject(Rule::OffsetOrSize);
    }
    let _guard = sys.state_mutex.lock();
    let map = target.map(kind);
    if map.nr_extents() != 0 {
        return reject(Rule::AlreadyWritten);
    }
    if !ns_capable(opener, target, caps::CAP_SYS_ADMIN) {
        return reject(Rule::OpenerNotAdmin);
    }
    match parse_map(buf, map.layout().max_extents()) {
        Ok(extents) => {
            permit_translate_install(sys, target, kind, opener, writer, &extents, buf.len())
        }
        Err(rule) => reject(rule),
    }
}

/// `map_write` for extents given as values rather than text (tests and
/// benchmarks that need maps longer than a page of text): the same
/// checks, the same order, from the "already written" test on. Takes
/// `userns_state_mutex`.
pub fn map_write_extents(
    sys: &Userns,
    target: &Arc<UserNamespace>,
    kind: MapKind,
    opener: &Cred,
    writer: &Cred,
    extents: &[Extent],
) -> WriteOutcome {
    let reject = |rule: Rule| WriteOutcome::decided(rule, 0, Vec::new());
    if target.parent.is_none() {
        return reject(Rule::InitialNamespace);
    }
    let _guard = sys.state_mutex.lock();
    let map = target.map(kind);
    if map.nr_extents() != 0 {
        return reject(Rule::AlreadyWritten);
    }
    if !ns_capable(opener, target, caps::CAP_SYS_ADMIN) {
        return reject(Rule::OpenerNotAdmin);
    }
    let mut checked = Vec::with_capacity(extents.len());
    for e in extents {
        if let Err(rule) = check_extent(e, &checked) {
            return reject(rule);
        }
        checked.push(*e);
    }
    if extents.is_empty() {
        return reject(Rule::NoExtents);
    }
    if extents.len() > map.layout().max_extents() {
        return reject(Rule::TooManyExtents);
    }
    permit_translate_install(sys, target, kind, opener, writer, extents, 0)
}

/// The steps after parsing: `new_idmap_permitted`, translation through
/// the parent's map, sorting, publication. The caller holds
/// `userns_state_mutex`.
fn permit_translate_install(
    sys: &Userns,
    target: &Arc<UserNamespace>,
    kind: MapKind,
    opener: &Cred,
    writer: &Cred,
    extents: &[Extent],
    len: usize,
) -> WriteOutcome {
    let reject = |rule: Rule| WriteOutcome::decided(rule, len, Vec::new());
    let parent = target.parent.clone().expect("checked by the caller");
    let map = target.map(kind);
    let accepted = match new_idmap_permitted(sys, target, kind, opener, writer, extents) {
        Ok(rule) => rule,
        Err(rule) => return reject(rule),
    };
    let Some((forward, reverse)) = translate_and_sort(sys, &parent, kind, map, extents) else {
        return reject(Rule::NotInParent);
    };
    map.install(&forward, &reverse);
    WriteOutcome::decided(accepted, len, forward)
}

/// The parse loop of `map_write`: lines of "first lower_first count",
/// checked one by one against the earlier ones.
pub fn parse_map(buf: &[u8], max_extents: usize) -> Result<Vec<Extent>, Rule> {
    // memdup_user_nul: the text ends at the first NUL.
    let text = buf.split(|b| *b == 0).next().unwrap_or_default();
    let mut extents: Vec<Extent> = Vec::new();
    let mut pos = Some(text);
    while let Some(rest) = pos {
        let (line, next) = match rest.iter().position(|b| *b == b'\n') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..]).filter(|r| !r.is_empty())),
            None => (rest, None),
        };
        let e = parse_line(line)?;
        check_extent(&e, &extents)?;
        extents.push(e);
        if extents.len() == max_extents && next.is_some() {
            return Err(Rule::TooManyExtents);
        }
        pos = next;
    }
    if extents.is_empty() {
        return Err(Rule::NoExtents);
    }
    Ok(extents)
}

/// The kernel's `isspace` (its ctype table also counts Latin-1 NBSP).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0xa0)
}

fn skip_spaces(line: &[u8], mut p: usize) -> usize {
    while p < line.len() && is_space(line[p]) {
        p += 1;
    }
    p
}

/// `simple_strtoul(.., 10)` stored into a u32: the digits at `p`, taken
/// modulo 2^32 (the kernel truncates silently), and where they end.
fn strtoul(line: &[u8], mut p: usize) -> (u32, usize) {
    let mut v: u32 = 0;
    while p < line.len() && line[p].is_ascii_digit() {
        v = v.wrapping_mul(10).wrapping_add(u32::from(line[p] - b'0'));
        p += 1;
    }
    (v, p)
}

fn parse_line(line: &[u8]) -> Result<Extent, Rule> {
    let space_at = |p: usize| p < line.len() && is_space(line[p]);
    let p = skip_spaces(line, 0);
    let (first, p) = strtoul(line, p);
    if !space_at(p) {
        return Err(Rule::Syntax);
    }
    let p = skip_spaces(line, p);
    let (lower_first, p) = strtoul(line, p);
    if !space_at(p) {
        return Err(Rule::Syntax);
    }
    let p = skip_spaces(line, p);
    let (count, p) = strtoul(line, p);
    if p < line.len() && !is_space(line[p]) {
        return Err(Rule::Syntax);
    }
    if skip_spaces(line, p) != line.len() {
        return Err(Rule::Syntax);
    }
    Ok(Extent::new(first, lower_first, count))
}

/// The per-line checks after parsing: the excluded id, zero and wrapping
/// counts (one test in the kernel: `first + count <= first`), overlaps.
fn check_extent(e: &Extent, earlier: &[Extent]) -> Result<(), Rule> {
    if e.first == u32::MAX || e.lower_first == u32::MAX {
        return Err(Rule::MaxId);
    }
    if e.count == 0 {
        return Err(Rule::ZeroCount);
    }
    if e.first.checked_add(e.count).is_none() || e.lower_first.checked_add(e.count).is_none() {
        return Err(Rule::Wrap);
    }
    if earlier.iter().any(|prev| mappings_overlap(prev, e)) {
        return Err(Rule::Overlap);
    }
    Ok(())
}

/// `mappings_overlap` for one earlier extent.
fn mappings_overlap(prev: &Extent, e: &Extent) -> bool {
    let upper = prev.first <= e.last() && prev.last() >= e.first;
    let lower = prev.lower_first <= e.lower_last() && prev.lower_last() >= e.lower_first;
    upper || lower
}

/// `new_idmap_permitted`: `Ok` with the rule that allows the map, or the
/// rule that refuses it. `opener` is `file->f_cred`, `writer` is current.
pub fn new_idmap_permitted(
    sys: &Userns,
    ns: &Arc<UserNamespace>,
    kind: MapKind,
    opener: &Cred,
    writer: &Cred,
    extents: &[Extent],
) -> Result<Rule, Rule> {
    let parent = ns.parent.as_ref().expect("checked by the caller");
    if kind == MapKind::Uid && sys.patches.setfcap_root && !verify_root_map(ns, opener, extents) {
        return Err(Rule::SetfcapRoot);
    }
    if let [only] = extents {
        if only.count == 1 && ns.owner == opener.euid {
            let self_map = match kind {
                MapKind::Uid => parent.uid_map.map_id_down(only.lower_first) == opener.euid,
                MapKind::Gid => {
                    !ns.setgroups_allowed()
                        && parent.gid_map.map_id_down(only.lower_first) == opener.egid
                }
            };
            if self_map {
                return Ok(Rule::SelfMap);
            }
        }
    }
    let cap = kind.cap_setid();
    if ns_capable(writer, parent, cap) && ns_capable(opener, parent, cap) {
        return Ok(Rule::Privileged);
    }
    Err(Rule::NotPermitted)
}

/// `verify_root_map` (v5.12): a map whose lower range starts at parent
/// uid 0 needs CAP_SETFCAP: held by the creator at creation when the
/// opener is inside the namespace, else by the opener over the parent.
fn verify_root_map(ns: &Arc<UserNamespace>, opener: &Cred, extents: &[Extent]) -> bool {
    if !extents.iter().any(|e| e.lower_first == 0) {
        return true;
    }
    if Arc::ptr_eq(&opener.user_ns, ns) {
        ns.parent_could_setfcap
    } else {
        let parent = ns.parent.as_ref().expect("checked by the caller");
        ns_capable(opener, parent, caps::CAP_SETFCAP)
    }
}

/// Translate every lower range through the parent's map and build the
/// arrays lookups use: `(forward, reverse)`. `None` when a lower range is
/// not inside one parent extent. Without `idmap-sort-after-translate`
/// (v4.15 to v4.19.1), `reverse` was sorted and copied before the
/// translation and only `forward` was translated (CVE-2018-18955).
fn translate_and_sort(
    sys: &Userns,
    parent: &UserNamespace,
    kind: MapKind,
    map: &IdMap,
    extents: &[Extent],
) -> Option<(Vec<Extent>, Vec<Extent>)> {
    let parent_map = parent.map(kind);
    let sorts = map.layout() == Layout::Sorted340 && extents.len() > MAX_BASE_EXTENTS;
    let mut stale_reverse = extents.to_vec();
    stale_reverse.sort_by_key(|e| e.lower_first);
    let mut forward = Vec::with_capacity(extents.len());
    for e in extents {
        let lower = parent_map.map_id_range_down(e.lower_first, e.count);
        if lower == UNMAPPED {
            return None;
        }
        forward.push(Extent::new(e.first, lower, e.count));
    }
    if !sorts {
        return Some((forward.clone(), forward));
    }
    forward.sort_by_key(|e| e.first);
    let reverse = if sys.patches.sort_after_translate {
        let mut r = forward.clone();
        r.sort_by_key(|e| e.lower_first);
        r
    } else {
        stale_reverse
    };
    Some((forward, reverse))
}

/// `proc_setgroups_write` (after `proc_setgroups_open`, which checks the
/// opener's CAP_SYS_ADMIN over the namespace for a write).
pub fn proc_setgroups_write(
    sys: &Userns,
    ns: &Arc<UserNamespace>,
    opener: &Cred,
    buf: &[u8],
    ppos: u64,
) -> (Result<usize, Error>, Rule) {
    let decided = |rule: Rule| (rule.errno().map_or(Ok(buf.len()), Err), rule);
    if !ns_capable(opener, ns, caps::CAP_SYS_ADMIN) {
        return decided(Rule::SetgroupsNotAdmin);
    }
    if ppos != 0 || buf.len() >= 8 {
        return decided(Rule::SetgroupsSyntax);
    }
    let text = buf.split(|b| *b == 0).next().unwrap_or_default();
    let (allow, rest) = if let Some(rest) = text.strip_prefix(b"allow") {
        (true, rest)
    } else if let Some(rest) = text.strip_prefix(b"deny") {
        (false, rest)
    } else {
        return decided(Rule::SetgroupsSyntax);
    };
    if skip_spaces(rest, 0) != rest.len() {
        return decided(Rule::SetgroupsSyntax);
    }
    let _guard = sys.state_mutex.lock();
    if allow {
        if !ns.setgroups_allowed() {
            return decided(Rule::SetgroupsAllowAfterDeny);
        }
    } else {
        if ns.gid_map.nr_extents() != 0 {
            return decided(Rule::SetgroupsDenyAfterGidMap);
        }
        ns.deny_setgroups();
    }
    decided(Rule::SetgroupsWritten)
}

/// `uid_m_show`/`gid_m_show`: the map file as `reader_ns` reads it. The
/// lower column is shown in the reader's namespace, or in the parent when
/// the reader is inside the map's own namespace; unmappable ids show as
/// 4294967295.
pub fn uid_m_show(
    ns: &Arc<UserNamespace>,
    kind: MapKind,
    reader_ns: &Arc<UserNamespace>,
) -> String {
    let lower_ns = match &ns.parent {
        Some(p) if Arc::ptr_eq(reader_ns, ns) => Arc::clone(p),
        _ => Arc::clone(reader_ns),
    };
    ns.map(kind)
        .extents()
        .iter()
        .map(|e| {
            let lower = lower_ns.map(kind).map_id_up(e.lower_first);
            format!("{:>10} {:>10} {:>10}\n", e.first, lower, e.count)
        })
        .collect()
}

/// `make_kuid`: the kernel uid of `uid` in `ns`, or [`UNMAPPED`].
pub fn make_kuid(ns: &UserNamespace, uid: u32) -> u32 {
    ns.uid_map.map_id_down(uid)
}

/// `make_kgid`.
pub fn make_kgid(ns: &UserNamespace, gid: u32) -> u32 {
    ns.gid_map.map_id_down(gid)
}

/// `from_kuid`: the uid `kuid` has in `ns`, or [`UNMAPPED`].
pub fn from_kuid(ns: &UserNamespace, kuid: u32) -> u32 {
    ns.uid_map.map_id_up(kuid)
}

/// `from_kgid`.
pub fn from_kgid(ns: &UserNamespace, kgid: u32) -> u32 {
    ns.gid_map.map_id_up(kgid)
}

/// `from_kuid_munged`: as [`from_kuid`], with `overflowuid` (65534) for
/// unmapped ids (what getuid(2) and stat(2) report).
pub fn from_kuid_munged(ns: &UserNamespace, kuid: u32) -> u32 {
    match from_kuid(ns, kuid) {
        UNMAPPED => OVERFLOW_ID,
        uid => uid,
    }
}

/// `from_kgid_munged`: as [`from_kgid`], with `overflowgid` (65534) for
/// unmapped ids.
pub fn from_kgid_munged(ns: &UserNamespace, kgid: u32) -> u32 {
    match from_kgid(ns, kgid) {
        UNMAPPED => OVERFLOW_ID,
        gid => gid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CapSet, UsernsPatches};

    fn parse(s: &str) -> Result<Vec<Extent>, Rule> {
        parse_map(s.as_bytes(), 340)
    }

    #[test]
    fn lines_parse_like_the_kernel() {
        assert_eq!(parse("0 1000 1\n"), Ok(vec![Extent::new(0, 1000, 1)]));
        assert_eq!(parse("  0\t1000   1  "), Ok(vec![Extent::new(0, 1000, 1)]));
        assert_eq!(parse("0 1000"), Err(Rule::Syntax));
        assert_eq!(parse("0 1000 1x"), Err(Rule::Syntax));
        assert_eq!(parse("0 1000 1 2"), Err(Rule::Syntax));
        assert_eq!(parse("0 1000 1\n\n"), Err(Rule::Syntax));
        assert_eq!(parse("-1 1000 1"), Err(Rule::Syntax));
        assert_eq!(parse("0 1000 0"), Err(Rule::ZeroCount));
        assert_eq!(parse("4294967295 0 1"), Err(Rule::MaxId));
        assert_eq!(parse("4294967294 0 2"), Err(Rule::Wrap));
        assert_eq!(parse("4294967296 0 1"), Ok(vec![Extent::new(0, 0, 1)]));
        assert_eq!(parse("0 0 10\n5 100 1"), Err(Rule::Overlap));
        assert_eq!(parse("0 0 10\n100 5 1"), Err(Rule::Overlap));
        assert_eq!(parse_map(b"0 0 1\n1 1 1\n", 1), Err(Rule::TooManyExtents));
        assert_eq!(parse_map(b"0 0 1\n", 1), Ok(vec![Extent::new(0, 0, 1)]));
    }

    #[test]
    fn an_unprivileged_owner_may_map_only_its_own_id() {
        let sys = Userns::standalone(UsernsPatches::NEWEST);
        let user = Cred::new(&sys.init, 1000, 1000, CapSet::EMPTY);
        let child = sys.create_user_ns(&user, "c").unwrap();
        let ns = &child.user_ns;
        let w = |kind, text: &str| map_write(&sys, ns, kind, &user, &user, text.as_bytes(), 0);
        assert_eq!(w(MapKind::Uid, "0 1001 1\n").rule, Rule::NotPermitted);
        assert_eq!(w(MapKind::Uid, "0 1000 2\n").rule, Rule::NotPermitted);
        assert_eq!(w(MapKind::Uid, "0 1000 1\n").rule, Rule::SelfMap);
        assert_eq!(w(MapKind::Uid, "0 1000 1\n").rule, Rule::AlreadyWritten);
        assert_eq!(w(MapKind::Gid, "0 1000 1\n").rule, Rule::NotPermitted);
        let (r, rule) = proc_setgroups_write(&sys, ns, &user, b"deny", 0);
        assert_eq!((r, rule), (Ok(4), Rule::SetgroupsWritten));
        assert_eq!(w(MapKind::Gid, "0 1000 1\n").rule, Rule::SelfMap);
        assert_eq!(from_kuid_munged(ns, 1000), 0);
        assert_eq!(from_kuid_munged(ns, 0), OVERFLOW_ID);
        assert_eq!(
            uid_m_show(ns, MapKind::Uid, &sys.init),
            "         0       1000          1\n"
        );
        assert_eq!(
            uid_m_show(ns, MapKind::Uid, ns),
            "         0       1000          1\n"
        );
    }
}
