//! Walks the span-preserving TOML tree of a scenario file and builds a
//! checked [`Scenario`], or the first problem as a [`ScenarioError`]
//! pointing at the offending token.

use std::ops::Range;
use std::path::PathBuf;

use kernel::catalog;
use kernel::pidns::MAX_PID_NS_LEVEL;
use kernel::setup::{
    child_name, ChildSpec, Op, Setup, SysctlSpec, TaskSpec, UserNsSpec, INIT_USER_NS,
};
use sim::echo::echo;
use sim::limits::{self, group, out_of_range, Limit};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::duration::{parse_duration, DURATION_SYNTAX};
use crate::error::ScenarioError;
use crate::ops::{parse_op, Names, INT_MAX};
use crate::strings::StringMap;
use crate::suggest::{did_you_mean, one_of};
use crate::{
    Expect, ExpectedOutcome, ExpectedResult, Explore, KernelRun, PatchToggle, Quantifier, Scenario,
    StrategyName,
};

type Val<'i> = Spanned<DeValue<'i>>;
type Res<T> = Result<T, ScenarioError>;

const ROOT_KEYS: &[&str] = &[
    "name",
    "summary",
    "invariants",
    "explore",
    "sysctl",
    "costs",
    "userns",
    "file",
    "task",
    "kernel",
];
const FILE_KEYS: &[&str] = &["name", "owner", "group", "mode"];
const EXPLORE_KEYS: &[&str] = &[
    "strategy",
    "seed",
    "iterations",
    "pct_depth",
    "preemption_bound",
    "cpus",
    "max_steps",
    "max_virtual_time",
];
const USERNS_KEYS: &[&str] = &[
    "name",
    "parent",
    "owner",
    "sysctl",
    "map",
    "gid_map",
    "creator_nproc",
];
const TASK_KEYS: &[&str] = &[
    "name",
    "instances",
    "sequential",
    "userns",
    "uid",
    "repeat",
    "ops",
    "nproc",
    "drop_caps",
    "drop_bounding",
    "pid_ns_depth",
    "child",
];
const CHILD_KEYS: &[&str] = &["name", "ops", "child"];
/// How deep `[[task.child.child...]]` blocks may nest.
const CHILD_DEPTH_MAX: usize = 8;
const KERNEL_KEYS: &[&str] = &["profile", "patches", "label", "expect", "explore"];
const EXPECT_KEYS: &[&str] = &["outcome", "invariant", "results", "exhausted", "bug"];

/// Every table of the format and the keys it accepts, each with the
/// heading of its section in `docs/scenario-format.md`, which documents
/// every key (a test holds the two together).
pub const FORMAT_KEYS: &[(&str, &[&str])] = &[
    ("Top level", ROOT_KEYS),
    ("`[explore]`", EXPLORE_KEYS),
    ("`[[userns]]`", USERNS_KEYS),
    ("`[[file]]`", FILE_KEYS),
    ("`[[task]]`", TASK_KEYS),
    ("Children that act: `[[task.child]]`", CHILD_KEYS),
    ("`[[kernel]]`", KERNEL_KEYS),
    ("`expect`", EXPECT_KEYS),
];

struct Ctx<'s> {
    file: &'s str,
    src: &'s str,
}

impl Ctx<'_> {
    fn err(&self, span: Range<usize>, message: impl Into<String>) -> ScenarioError {
        ScenarioError::at(self.file, self.src, span, message)
    }

    /// "first used on line N", for duplicates.
    fn first_at(&self, what: &str, span: Range<usize>) -> String {
        let offset = crate::error::floor_boundary(self.src, span.start);
        let (line, _, _) = crate::error::line_col(self.src, offset);
        format!("{what} first used on line {line}")
    }

    /// "wrong type for `key`: found an integer", expected `what`.
    fn wrong_type(&self, key: &str, v: &Val<'_>, what: &str) -> ScenarioError {
        self.err(
            v.span(),
            format!("wrong type for `{key}`: found {}", type_name(v.get_ref())),
        )
        .with_expected(what)
    }
}

/// A table of the document with its span and a description for messages.
#[derive(Clone, Copy)]
struct Tbl<'a, 'i> {
    t: &'a DeTable<'i>,
    /// Span of the table (its header for `[x]`/`[[x]]`, the braces for an
    /// inline table, `0..0` for the root).
    span: Option<&'a Val<'i>>,
}

impl<'a, 'i> Tbl<'a, 'i> {
    fn span(&self) -> Range<usize> {
        self.span.map_or(0..0, |v| v.span())
    }

    fn get(&self, key: &str) -> Option<&'a Val<'i>> {
        self.t.get(key)
    }

    /// Rejects keys not in `allowed`, pointing at the first unknown key.
    fn only(&self, ctx: &Ctx<'_>, allowed: &[&str], place: &str) -> Res<()> {
        for (k, _) in self.t.iter() {
            let key: &str = k.get_ref();
            if !allowed.contains(&key) {
                return Err(ctx
                    .err(k.span(), format!("unknown key `{}` in {place}", echo(key)))
                    .with_expected(one_of(allowed.iter().copied()))
                    .with_help_opt(did_you_mean(key, allowed.iter().copied())));
            }
        }
        Ok(())
    }

    fn require(&self, ctx: &Ctx<'_>, key: &str, place: &str) -> Res<&'a Val<'i>> {
        self.get(key).ok_or_else(|| {
            ctx.err(self.span(), format!("missing key `{key}` in {place}"))
                .with_expected(format!("`{key}` here"))
        })
    }
}

fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a datetime",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

fn string<'a>(ctx: &Ctx<'_>, key: &str, v: &'a Val<'_>) -> Res<&'a str> {
    match v.get_ref() {
        DeValue::String(s) => Ok(s),
        _ => Err(ctx.wrong_type(key, v, "a string")),
    }
}

fn table<'a, 'i>(ctx: &Ctx<'_>, key: &str, v: &'a Val<'i>) -> Res<Tbl<'a, 'i>> {
    match v.get_ref() {
        DeValue::Table(t) => Ok(Tbl { t, span: Some(v) }),
        DeValue::Array(_) => Err(ctx
            .wrong_type(key, v, "a table")
            .with_help(format!("write [{key}] (one table), not [[{key}]]"))),
        _ => Err(ctx.wrong_type(key, v, "a table")),
    }
}

/// An array of tables (`[[key]]` entries or an array of inline tables).
fn tables<'a, 'i>(ctx: &Ctx<'_>, key: &str, v: &'a Val<'i>) -> Res<Vec<Tbl<'a, 'i>>> {
    let what = format!("an array of tables ([[{key}]])");
    match v.get_ref() {
        DeValue::Array(items) => items
            .iter()
            .map(|item| match item.get_ref() {
                DeValue::Table(t) => Ok(Tbl {
                    t,
                    span: Some(item),
                }),
                _ => Err(ctx
                    .err(
                        item.span(),
                        format!("wrong type in `{key}`: found {}", type_name(item.get_ref())),
                    )
                    .with_expected("a table")),
            })
            .collect(),
        DeValue::Table(_) => Err(ctx
            .wrong_type(key, v, &what)
            .with_help(format!("write [[{key}]] for each entry"))),
        _ => Err(ctx.wrong_type(key, v, &what)),
    }
}

/// An integer in `min..=max`; out of range, the message every front end
/// gives (see [`sim::limits`]).
fn int(ctx: &Ctx<'_>, key: &str, v: &Val<'_>, min: i128, max: i128) -> Res<i128> {
    let range = format!("an integer in {}..={}", group(min), group(max));
    let DeValue::Integer(i) = v.get_ref() else {
        return Err(ctx.wrong_type(key, v, &range));
    };
    let Ok(n) = i128::from_str_radix(i.as_str(), i.radix()) else {
        return Err(ctx
            .err(
                v.span(),
                format!(
                    "`{key}` must be in {}..={}, not {}",
                    group(min),
                    group(max),
                    echo(i.as_str())
                ),
            )
            .with_expected(range));
    };
    if !(min..=max).contains(&n) {
        return Err(ctx
            .err(v.span(), out_of_range(key, min, max, n))
            .with_expected(range));
    }
    Ok(n)
}

fn int_u64(ctx: &Ctx<'_>, key: &str, v: &Val<'_>, min: u64, max: u64) -> Res<u64> {
    let n = int(ctx, key, v, min.into(), max.into())?;
    u64::try_from(n).map_err(|_| ctx.err(v.span(), format!("`{key}` is out of range")))
}

/// A setting with a range of its own in [`sim::limits`].
fn limited(ctx: &Ctx<'_>, v: &Val<'_>, limit: &Limit) -> Res<u64> {
    int_u64(ctx, limit.name, v, limit.min, limit.max)
}

/// [`limited`] for settings held in a `u32`.
fn limited_u32(ctx: &Ctx<'_>, v: &Val<'_>, limit: &Limit) -> Res<u32> {
    let n = limited(ctx, v, limit)?;
    u32::try_from(n).map_err(|_| ctx.err(v.span(), limit.message(n.into())))
}

/// `preemption_bound`: an integer in its range, or `"none"` for no bound.
fn preemption_bound(ctx: &Ctx<'_>, v: &Val<'_>) -> Res<u32> {
    let none = limits::NO_PREEMPTION_BOUND;
    match v.get_ref() {
        DeValue::String(s) if s == none => Ok(limits::UNBOUNDED),
        DeValue::String(s) => Err(ctx.err(
            v.span(),
            format!(
                "`preemption_bound` takes an integer in {} or \"{none}\", not \"{}\"",
                limits::PREEMPTION_BOUND.range_text(),
                echo(s)
            ),
        )),
        _ => limited_u32(ctx, v, &limits::PREEMPTION_BOUND),
    }
}

fn boolean(ctx: &Ctx<'_>, key: &str, v: &Val<'_>) -> Res<bool> {
    match v.get_ref() {
        DeValue::Boolean(b) => Ok(*b),
        _ => Err(ctx.wrong_type(key, v, "a boolean (true or false)")),
    }
}

fn int_u32(ctx: &Ctx<'_>, key: &str, v: &Val<'_>, min: u32, max: u32) -> Res<u32> {
    let n = int(ctx, key, v, min.into(), max.into())?;
    u32::try_from(n).map_err(|_| ctx.err(v.span(), format!("`{key}` is out of range")))
}

/// A duration: integer nanoseconds or a string such as `"8ms"`, at least
/// `min` nanoseconds.
fn duration(ctx: &Ctx<'_>, key: &str, v: &Val<'_>, min: u64) -> Res<u64> {
    let ns = match v.get_ref() {
        DeValue::Integer(_) => int_u64(ctx, key, v, 0, u64::MAX)?,
        DeValue::String(s) => parse_duration(s).map_err(|e| {
            ctx.err(v.span(), format!("invalid duration for `{key}`: {e}"))
                .with_expected(DURATION_SYNTAX)
        })?,
        _ => {
            return Err(ctx.wrong_type(
                key,
                v,
                "a duration: integer nanoseconds or a string such as \"8ms\"",
            ))
        }
    };
    if ns < min {
        return Err(ctx
            .err(
                v.span(),
                format!("`{key}` must be at least {}", crate::format_duration(min)),
            )
            .with_expected(format!(
                "a duration of at least {}",
                crate::format_duration(min)
            )));
    }
    Ok(ns)
}

/// `max_virtual_time`, with the message of [`limits::MAX_VIRTUAL_NS`].
fn limited_duration(ctx: &Ctx<'_>, v: &Val<'_>) -> Res<u64> {
    let limit = &limits::MAX_VIRTUAL_NS;
    let ns = duration(ctx, limit.name, v, 0)?;
    limit.check(ns.into()).map_err(|m| {
        ctx.err(v.span(), m).with_expected(format!(
            "a duration of at least {}",
            crate::format_duration(limit.min)
        ))
    })
}

/// `name`-like identifiers: non-empty, only characters `ok` allows.
fn ident(
    ctx: &Ctx<'_>,
    key: &str,
    v: &Val<'_>,
    ok: fn(char) -> bool,
    pattern: &str,
) -> Res<String> {
    let s = string(ctx, key, v)?;
    if s.is_empty() || !s.chars().all(ok) {
        return Err(ctx
            .err(v.span(), format!("invalid {key} `{}`", echo(s)))
            .with_expected(format!("a non-empty name made of {pattern}")));
    }
    Ok(s.to_string())
}

fn scenario_name_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
}

fn object_name_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-')
}

fn label_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+')
}

/// A partially specified [`Explore`]: `[explore]` or a kernel's override.
#[derive(Default, Clone, Copy)]
struct ExplorePatch {
    strategy: Option<StrategyName>,
    seed: Option<u64>,
    iterations: Option<u64>,
    pct_depth: Option<u32>,
    preemption_bound: Option<u32>,
    cpus: Option<u32>,
    max_steps: Option<u64>,
    max_virtual_ns: Option<u64>,
}

impl ExplorePatch {
    fn apply(&self, base: Explore) -> Explore {
        Explore {
            strategy: self.strategy.unwrap_or(base.strategy),
            seed: self.seed.unwrap_or(base.seed),
            iterations: self.iterations.unwrap_or(base.iterations),
            pct_depth: self.pct_depth.unwrap_or(base.pct_depth),
            preemption_bound: self.preemption_bound.unwrap_or(base.preemption_bound),
            cpus: self.cpus.unwrap_or(base.cpus),
            max_steps: self.max_steps.unwrap_or(base.max_steps),
            max_virtual_ns: self.max_virtual_ns.unwrap_or(base.max_virtual_ns),
        }
    }
}

fn explore(ctx: &Ctx<'_>, t: Tbl<'_, '_>, place: &str) -> Res<ExplorePatch> {
    t.only(ctx, EXPLORE_KEYS, place)?;
    let mut p = ExplorePatch::default();
    for (k, v) in t.t.iter() {
        let key: &str = k.get_ref();
        match key {
            "strategy" => {
                let s = string(ctx, key, v)?;
                let names = || StrategyName::ALL.iter().map(|s| s.as_str());
                p.strategy = Some(s.parse().map_err(|_| {
                    ctx.err(v.span(), format!("unknown strategy `{}`", echo(s)))
                        .with_expected(one_of(names()))
                        .with_help_opt(did_you_mean(s, names()))
                })?);
            }
            "seed" => p.seed = Some(limited(ctx, v, &limits::SEED)?),
            "iterations" => p.iterations = Some(limited(ctx, v, &limits::ITERATIONS)?),
            "pct_depth" => p.pct_depth = Some(limited_u32(ctx, v, &limits::PCT_DEPTH)?),
            "preemption_bound" => p.preemption_bound = Some(preemption_bound(ctx, v)?),
            "cpus" => p.cpus = Some(limited_u32(ctx, v, &limits::CPUS)?),
            "max_steps" => p.max_steps = Some(limited(ctx, v, &limits::MAX_STEPS)?),
            "max_virtual_time" => p.max_virtual_ns = Some(limited_duration(ctx, v)?),
            _ => {}
        }
    }
    Ok(p)
}

/// Sysctls of one user namespace. Nested tables are flattened, so that an
/// unquoted dotted key `user.max_ipc_namespaces = 3` works as well as the
/// quoted `"user.max_ipc_namespaces" = 3`.
fn sysctls(ctx: &Ctx<'_>, t: Tbl<'_, '_>, userns: &str, out: &mut Vec<SysctlSpec>) -> Res<()> {
    let mut seen: Vec<String> = Vec::new();
    sysctls_in(ctx, t.t, "", userns, out, &mut seen)
}

fn sysctls_in(
    ctx: &Ctx<'_>,
    t: &DeTable<'_>,
    prefix: &str,
    userns: &str,
    out: &mut Vec<SysctlSpec>,
    seen: &mut Vec<String>,
) -> Res<()> {
    let names = || catalog::SYSCTLS.iter().map(|s| s.0);
    for (k, v) in t.iter() {
        let full = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        if let DeValue::Table(inner) = v.get_ref() {
            let dotted = format!("{full}.");
            if names().any(|n| n.starts_with(&dotted)) {
                sysctls_in(ctx, inner, &full, userns, out, seen)?;
                continue;
            }
        }
        if !catalog::sysctl(&full) {
            return Err(ctx
                .err(k.span(), format!("unknown sysctl `{}`", echo(&full)))
                .with_expected(one_of(names()))
                .with_help_opt(did_you_mean(&full, names())));
        }
        if seen.contains(&full) {
            return Err(ctx.err(
                k.span(),
                format!("sysctl `{full}` is set twice for user namespace `{userns}`"),
            ));
        }
        let value = int(ctx, &full, v, 0, INT_MAX.into())?;
        seen.push(full.clone());
        out.push(SysctlSpec {
            userns: userns.to_string(),
            name: full,
            // In 0..=INT_MAX, so it fits.
            value: i64::try_from(value).unwrap_or(INT_MAX),
        });
    }
    Ok(())
}

fn costs(ctx: &Ctx<'_>, t: Tbl<'_, '_>) -> Res<Vec<(String, u64)>> {
    let names = || catalog::costs().into_iter().map(|c| c.name);
    let mut out = Vec::new();
    for (k, v) in t.t.iter() {
        let key: &str = k.get_ref();
        if !names().any(|n| n == key) {
            return Err(ctx
                .err(k.span(), format!("unknown cost `{}`", echo(key)))
                .with_expected(one_of(names()))
                .with_help_opt(did_you_mean(key, names())));
        }
        out.push((key.to_string(), duration(ctx, key, v, 0)?));
    }
    Ok(out)
}

fn invariants(ctx: &Ctx<'_>, v: &Val<'_>) -> Res<Vec<String>> {
    let names = || catalog::INVARIANTS.iter().map(|i| i.name);
    let DeValue::Array(items) = v.get_ref() else {
        return Err(ctx.wrong_type("invariants", v, "an array of invariant names"));
    };
    let mut named: Vec<&str> = Vec::new();
    for item in items.iter() {
        let s = string(ctx, "invariants", item)?;
        if !catalog::invariant(s) {
            return Err(ctx
                .err(item.span(), format!("unknown invariant `{}`", echo(s)))
                .with_expected(one_of(names()))
                .with_help_opt(did_you_mean(s, names())));
        }
        if named.contains(&s) {
            return Err(ctx.err(item.span(), format!("invariant `{s}` is listed twice")));
        }
        named.push(s);
    }
    Ok(names()
        .filter(|n| named.is_empty() || named.contains(n))
        .map(str::to_string)
        .collect())
}

struct UserNs {
    name: String,
    span: Range<usize>,
}

fn user_namespaces(
    ctx: &Ctx<'_>,
    v: &Val<'_>,
    setup: &mut Setup,
    defined: &mut Vec<UserNs>,
) -> Res<()> {
    let entries = tables(ctx, "userns", v)?;
    // Names of all entries, to tell "defined later" from "not defined".
    let all: Vec<&str> = entries
        .iter()
        .filter_map(|t| t.get("name").and_then(|n| n.get_ref().as_str()))
        .collect();
    let mut sysctl_specs = Vec::new();
    for t in &entries {
        let place = "[[userns]]";
        t.only(ctx, USERNS_KEYS, place)?;
        let name_v = t.require(ctx, "name", place)?;
        let name = ident(ctx, "name", name_v, object_name_char, "a-z, 0-9, _ and -")?;
        if name == INIT_USER_NS {
            return Err(ctx
                .err(
                    name_v.span(),
                    "`init` is the initial user namespace; it cannot be redefined",
                )
                .with_expected("another name"));
        }
        if let Some(first) = defined.iter().find(|u| u.name == name) {
            return Err(ctx
                .err(
                    name_v.span(),
                    format!("duplicate user namespace name `{name}`"),
                )
                .with_expected("a name not used by an earlier [[userns]]")
                .with_help(ctx.first_at("the name is", first.span.clone())));
        }
        let parent = match t.get("parent") {
            None => INIT_USER_NS.to_string(),
            Some(pv) => {
                let p = string(ctx, "parent", pv)?;
                if p != INIT_USER_NS && !defined.iter().any(|u| u.name == p) {
                    let known = std::iter::once(INIT_USER_NS)
                        .chain(defined.iter().map(|u| u.name.as_str()));
                    let mut e = if all.contains(&p) {
                        ctx.err(
                            pv.span(),
                            format!("parent user namespace `{p}` is defined later"),
                        )
                        .with_help("parents must come before their children")
                    } else if p == name {
                        ctx.err(
                            pv.span(),
                            format!("user namespace `{p}` cannot be its own parent"),
                        )
                    } else {
                        ctx.err(pv.span(), format!("no user namespace named `{}`", echo(p)))
                            .with_help_opt(did_you_mean(p, known.clone()))
                    };
                    e = e.with_expected(format!(
                        "`init` or an earlier [[userns]], {}",
                        one_of(known)
                    ));
                    return Err(e);
                }
                p.to_string()
            }
        };
        let owner = match t.get("owner") {
            None => 0,
            Some(ov) => int_u32(ctx, "owner", ov, 0, u32::MAX)?,
        };
        if let Some(sv) = t.get("sysctl") {
            sysctls(ctx, table(ctx, "sysctl", sv)?, &name, &mut sysctl_specs)?;
        }
        for (key, maps) in [
            ("map", &mut setup.processes.maps),
            ("gid_map", &mut setup.processes.gid_maps),
        ] {
            if let Some(mv) = t.get(key) {
                let text = string(ctx, key, mv)?;
                let map = kernel::setup::UidMap::parse(text).map_err(|e| {
                    ctx.err(mv.span(), e)
                        .with_expected("a map line `inside outside count`, e.g. \"0 100000 65536\"")
                })?;
                maps.insert(name.clone(), map);
            }
        }
        if let Some(cv) = t.get("creator_nproc") {
            let limit = int_u64(ctx, "creator_nproc", cv, 0, 1_000_000_000)?;
            setup.processes.creator_nproc.insert(name.clone(), limit);
        }
        setup.user_namespaces.push(UserNsSpec {
            name: name.clone(),
            parent,
            owner,
        });
        defined.push(UserNs {
            name,
            span: name_v.span(),
        });
    }
    setup.sysctls.extend(sysctl_specs);
    Ok(())
}

/// `[[file]]`: regular files made before any task runs, for `open`.
fn files(ctx: &Ctx<'_>, v: &Val<'_>, setup: &mut Setup) -> Res<()> {
    let mut spans: Vec<Range<usize>> = Vec::new();
    for t in tables(ctx, "file", v)? {
        t.only(ctx, FILE_KEYS, "[[file]]")?;
        let name_v = t.require(ctx, "name", "[[file]]")?;
        let name = ident(ctx, "name", name_v, object_name_char, "a-z, 0-9, _ and -")?;
        if let Some(i) = setup.files.iter().position(|f| f.name == name) {
            return Err(ctx
                .err(name_v.span(), format!("duplicate file name `{name}`"))
                .with_expected("a name not used by an earlier [[file]]")
                .with_help(ctx.first_at("the name is", spans[i].clone())));
        }
        let id = |key| match t.get(key) {
            None => Ok(0),
            Some(iv) => int_u32(ctx, key, iv, 0, u32::MAX - 1),
        };
        let (uid, gid) = (id("owner")?, id("group")?);
        let mode_v = t.require(ctx, "mode", "[[file]]")?;
        let mode = int_u32(ctx, "mode", mode_v, 0, u32::MAX)?;
        if mode > 0o777 {
            return Err(ctx
                .err(
                    mode_v.span(),
                    format!("`mode` must be permission bits 0o000..=0o777, not 0o{mode:o}"),
                )
                .with_expected("permission bits, no set-id or sticky bit")
                .with_help("written in octal as TOML allows: mode = 0o640"));
        }
        spans.push(name_v.span());
        setup.files.push(kernel::setup::FileSpec {
            name,
            uid,
            gid,
            mode,
        });
    }
    Ok(())
}

/// A `[[task.child]]` block as first read: its full name, the full name
/// of the task or child that forks it, its own name and where it is.
struct ChildEntry<'a, 'i> {
    name: String,
    parent: String,
    short: String,
    span: Range<usize>,
    t: Tbl<'a, 'i>,
}

/// The `[[task.child]]` blocks under `t` (a task or a child named
/// `parent`), and theirs, parents first.
fn child_entries<'a, 'i>(
    ctx: &Ctx<'_>,
    parent: &str,
    t: Tbl<'a, 'i>,
    depth: usize,
    out: &mut Vec<ChildEntry<'a, 'i>>,
) -> Res<()> {
    let Some(v) = t.get("child") else {
        return Ok(());
    };
    if depth == CHILD_DEPTH_MAX {
        return Err(ctx
            .err(
                v.span(),
                format!("children nest more than {CHILD_DEPTH_MAX} deep"),
            )
            .with_expected(format!(
                "at most {CHILD_DEPTH_MAX} levels of [[task.child]]"
            )));
    }
    let first = out.len();
    for c in tables(ctx, "child", v)? {
        c.only(ctx, CHILD_KEYS, "[[task.child]]")?;
        let name_v = c.require(ctx, "name", "[[task.child]]")?;
        let short = ident(ctx, "name", name_v, object_name_char, "a-z, 0-9, _ and -")?;
        let full = child_name(parent, &short);
        if let Some(twin) = out[first..].iter().find(|e| e.name == full) {
            return Err(ctx
                .err(
                    name_v.span(),
                    format!("duplicate child name `{short}` under `{parent}`"),
                )
                .with_expected("a name not used by an earlier [[task.child]] of the same task")
                .with_help(ctx.first_at("the name is", twin.span.clone())));
        }
        out.push(ChildEntry {
            name: full.clone(),
            parent: parent.to_string(),
            short,
            span: name_v.span(),
            t: c,
        });
        child_entries(ctx, &full, c, depth + 1, out)?;
    }
    Ok(())
}

/// A task's or child's `ops`, checked against `refs`; each `wait(E)`
/// and `fork_child(C)` noted with where it is written.
fn ops_of(
    ctx: &Ctx<'_>,
    t: Tbl<'_, '_>,
    place: &str,
    refs: Names<'_>,
    noted: &mut Noted,
) -> Res<Vec<Op>> {
    let ops_v = t.require(ctx, "ops", place)?;
    let DeValue::Array(items) = ops_v.get_ref() else {
        return Err(ctx.wrong_type("ops", ops_v, "an array of operation strings"));
    };
    if items.is_empty() {
        return Err(ctx
            .err(ops_v.span(), format!("{place} has no operations"))
            .with_expected("at least one operation, e.g. \"unshare(CLONE_NEWIPC)\""));
    }
    let mut ops = Vec::with_capacity(items.len());
    for item in items.iter() {
        let text = string(ctx, "ops", item)?;
        match parse_op(text, refs) {
            Ok(op) => {
                match &op {
                    Op::Wait { event } => noted.waits.push((event.clone(), item.span())),
                    Op::ForkChild { child } | Op::CloneChild { child, .. } => {
                        noted.forks.push((child.clone(), item.span()))
                    }
                    _ => {}
                }
                ops.push(op)
            }
            Err(e) => {
                let map = StringMap::new(ctx.src, item.span(), text);
                let mut err = ctx.err(map.range(e.range), e.message).with_help_opt(e.help);
                err.expected = e.expected;
                return Err(err);
            }
        }
    }
    Ok(ops)
}

/// What the ops of one task or child name that must be held to the rest.
#[derive(Default)]
struct Noted {
    /// Each `wait(E)`: its event and where it is.
    waits: Vec<(String, Range<usize>)>,
    /// Each `fork_child(C)` and `clone_child(F, C)`: the child and where.
    forks: Vec<(String, Range<usize>)>,
}

/// The short names of `children`.
fn shorts<'c>(children: &[&'c ChildEntry<'_, '_>]) -> Vec<&'c str> {
    children.iter().map(|c| c.short.as_str()).collect()
}

/// Every child block is forked by exactly one op of its parent, which runs
/// once: `many` is the key and span of what would run it more often
/// (`instances`, `repeat` or `sequential`), if anything.
fn check_forks(
    ctx: &Ctx<'_>,
    parent: &str,
    many: Option<(&str, Range<usize>)>,
    children: &[&ChildEntry<'_, '_>],
    forks: &[(String, Range<usize>)],
) -> Res<()> {
    if children.is_empty() {
        return Ok(());
    }
    if let Some((key, span)) = many {
        return Err(ctx
            .err(
                span,
                format!("task `{parent}` has [[task.child]] blocks, so it runs once"),
            )
            .with_expected(format!("no `{key}`, or a [[task]] of its own per instance")));
    }
    for c in children {
        let mut by = forks.iter().filter(|(child, _)| *child == c.short);
        if by.next().is_none() {
            return Err(ctx
                .err(
                    c.span.clone(),
                    format!("child `{}` of `{parent}` is never forked", c.short),
                )
                .with_expected(format!(
                    "a `fork_child({0})` or `clone_child(FLAGS, {0})` op in `{parent}`",
                    c.short
                )));
        }
        if let Some((_, again)) = by.next() {
            return Err(ctx
                .err(
                    again.clone(),
                    format!("child `{}` is forked a second time", c.short),
                )
                .with_expected(
                    "one fork of each [[task.child]] block (give another block a name of its own)",
                ));
        }
    }
    Ok(())
}

/// The set-up's nested pid namespaces are made by global root before the
/// tasks start (its processes wait in the chain) and charged to root's
/// `max_pid_namespaces` in the initial namespace: a scenario that limits
/// either cannot have the kernel agree with the model.
fn pid_ns_setup_alone(ctx: &Ctx<'_>, setup: &Setup, span: Range<usize>) -> Res<()> {
    let limits_pid_ns = setup
        .sysctls
        .iter()
        .any(|s| s.userns == INIT_USER_NS && s.name == "user.max_pid_namespaces");
    let why = if limits_pid_ns {
        "the initial namespace's `user.max_pid_namespaces`, which the set-up's nested pid namespaces are charged to"
    } else if !setup.processes.task_nproc.is_empty() {
        "`nproc`: the processes that nest the set-up's pid namespaces count against RLIMIT_NPROC"
    } else {
        return Ok(());
    };
    Err(ctx
        .err(
            span,
            format!("`pid_ns_depth` cannot be combined with {why}"),
        )
        .with_expected("`pid_ns_depth` in a scenario without either"))
}

fn tasks(ctx: &Ctx<'_>, v: &Val<'_>, userns: &[UserNs], setup: &mut Setup) -> Res<()> {
    let entries = tables(ctx, "task", v)?;
    if entries.is_empty() {
        return Err(ctx
            .err(v.span(), "no tasks")
            .with_expected("at least one [[task]]"));
    }
    // Pass 1: names, so that ops may name any task or child of the
    // scenario.
    let mut names: Vec<String> = Vec::new();
    let mut spans: Vec<Range<usize>> = Vec::new();
    let mut children: Vec<ChildEntry<'_, '_>> = Vec::new();
    let mut nested_pid_ns: Option<Range<usize>> = None;
    for t in &entries {
        t.only(ctx, TASK_KEYS, "[[task]]")?;
        let name_v = t.require(ctx, "name", "[[task]]")?;
        let name = ident(ctx, "name", name_v, object_name_char, "a-z, 0-9, _ and -")?;
        if let Some(i) = names.iter().position(|n| *n == name) {
            return Err(ctx
                .err(name_v.span(), format!("duplicate task name `{name}`"))
                .with_expected("a name not used by an earlier [[task]]")
                .with_help(ctx.first_at("the name is", spans[i].clone())));
        }
        child_entries(ctx, &name, *t, 0, &mut children)?;
        names.push(name);
        spans.push(name_v.span());
    }
    let name_refs: Vec<&str> = names
        .iter()
        .chain(children.iter().map(|c| &c.name))
        .map(String::as_str)
        .collect();
    let file_refs: Vec<&str> = setup.files.iter().map(|f| f.name.as_str()).collect();
    let children_of = |parent: &str| -> Vec<&ChildEntry<'_, '_>> {
        children.iter().filter(|c| c.parent == parent).collect()
    };
    // Every instance and child has a task (and a stack) of its own in an
    // execution.
    let mut all_instances: u64 = children.len() as u64;
    // Where each event is waited for, to hold each to a post.
    let mut waits: Vec<(String, Range<usize>)> = Vec::new();
    for ((t, name), name_span) in entries.iter().zip(&names).zip(&spans) {
        let place = format!("[[task]] `{name}`");
        let instances = match t.get("instances") {
            None => 1,
            Some(iv) => limited_u32(ctx, iv, &limits::INSTANCES)?,
        };
        all_instances += u64::from(instances);
        if all_instances > limits::INSTANCES.max {
            let span = t.get("instances").map_or(name_span.clone(), |v| v.span());
            return Err(ctx
                .err(
                    span,
                    format!(
                        "the tasks have {} instances in all, past the {} of `instances` that one execution may run",
                        group(all_instances.into()),
                        group(limits::INSTANCES.max.into())
                    ),
                )
                .with_expected(format!(
                    "at most {} instances over every [[task]]",
                    group(limits::INSTANCES.max.into())
                )));
        }
        let task_userns = match t.get("userns") {
            None => INIT_USER_NS.to_string(),
            Some(uv) => {
                let u = string(ctx, "userns", uv)?;
                if u != INIT_USER_NS && !userns.iter().any(|x| x.name == u) {
                    let known =
                        std::iter::once(INIT_USER_NS).chain(userns.iter().map(|x| x.name.as_str()));
                    return Err(ctx
                        .err(uv.span(), format!("no user namespace named `{}`", echo(u)))
                        .with_expected(one_of(known.clone()))
                        .with_help_opt(did_you_mean(u, known)));
                }
                u.to_string()
            }
        };
        let uid = match t.get("uid") {
            None => 0,
            Some(uv) => int_u32(ctx, "uid", uv, 0, u32::MAX)?,
        };
        let repeat = match t.get("repeat") {
            None => 1,
            Some(rv) => int_u64(ctx, "repeat", rv, 1, 1_000_000_000)?,
        };
        let sequential = match t.get("sequential") {
            None => false,
            Some(sv) => boolean(ctx, "sequential", sv)?,
        };
        if let Some(nv) = t.get("nproc") {
            let limit = int_u64(ctx, "nproc", nv, 0, 1_000_000_000)?;
            setup.processes.task_nproc.insert(name.clone(), limit);
        }
        if let Some(dv) = t.get("pid_ns_depth") {
            let depth = int_u32(ctx, "pid_ns_depth", dv, 0, MAX_PID_NS_LEVEL)?;
            setup.processes.pid_ns_depth.insert(name.clone(), depth);
            nested_pid_ns.get_or_insert(dv.span());
        }
        for (key, sets) in [
            ("drop_caps", &mut setup.processes.cap_drop),
            ("drop_bounding", &mut setup.processes.bounding_drop),
        ] {
            if let Some(cv) = t.get(key) {
                sets.insert(name.clone(), capabilities(ctx, key, cv)?);
            }
        }
        let mine = children_of(name);
        let refs = Names {
            tasks: &name_refs,
            files: &file_refs,
            children: &shorts(&mine),
        };
        let mut noted = Noted::default();
        let ops = ops_of(ctx, *t, &place, refs, &mut noted)?;
        let many = [
            ("instances", instances > 1),
            ("repeat", repeat > 1),
            ("sequential", sequential),
        ]
        .into_iter()
        .find(|(_, more)| *more)
        .and_then(|(key, _)| Some((key, t.get(key)?.span())));
        check_forks(ctx, name, many, &mine, &noted.forks)?;
        waits.extend(noted.waits);
        setup.tasks.push(TaskSpec {
            name: name.clone(),
            instances,
            userns: task_userns,
            uid,
            repeat,
            sequential,
            ops,
        });
    }
    if let Some(span) = nested_pid_ns {
        pid_ns_setup_alone(ctx, setup, span)?;
    }
    for c in &children {
        let place = format!("[[task.child]] `{}`", c.name);
        let mine = children_of(&c.name);
        let refs = Names {
            tasks: &name_refs,
            files: &file_refs,
            children: &shorts(&mine),
        };
        let mut noted = Noted::default();
        let ops = ops_of(ctx, c.t, &place, refs, &mut noted)?;
        check_forks(ctx, &c.name, None, &mine, &noted.forks)?;
        waits.extend(noted.waits);
        setup.children.push(ChildSpec {
            name: c.name.clone(),
            parent: c.parent.clone(),
            ops,
        });
    }
    let posted = |event: &str| {
        setup
            .every_op()
            .any(|op| matches!(op, Op::Post { event: e } if e == event))
    };
    if let Some((event, span)) = waits.iter().find(|(e, _)| !posted(e)) {
        return Err(ctx
            .err(
                span.clone(),
                format!("`wait({event})` can never return: no task posts `{event}`"),
            )
            .with_expected(format!("a `post({event})` in some task")));
    }
    Ok(())
}

fn expect(ctx: &Ctx<'_>, v: &Val<'_>, invariants: &[String], tasks: &[TaskOps]) -> Res<Expect> {
    let outcomes = || ExpectedOutcome::ALL.iter().map(|o| o.as_str());
    let outcome_of = |ov: &Val<'_>| -> Res<ExpectedOutcome> {
        let s = string(ctx, "outcome", ov)?;
        s.parse().map_err(|_| {
            ctx.err(ov.span(), format!("unknown outcome `{}`", echo(s)))
                .with_expected(one_of(outcomes()))
                .with_help_opt(did_you_mean(s, outcomes()))
        })
    };
    match v.get_ref() {
        DeValue::String(_) => {
            let outcome = outcome_of(v)?;
            if outcome == ExpectedOutcome::Violation {
                return Err(ctx
                    .err(v.span(), "outcome `violation` needs the invariant expected to be violated")
                    .with_expected("expect = { outcome = \"violation\", invariant = \"...\" }"));
            }
            Ok(Expect {
                outcome,
                invariant: None,
                results: Vec::new(),
                exhausted: false,
                bug: None,
            })
        }
        DeValue::Table(t) => {
            let t = Tbl { t, span: Some(v) };
            let place = "`expect`";
            t.only(ctx, EXPECT_KEYS, place)?;
            let ov = t.require(ctx, "outcome", place)?;
            let outcome = outcome_of(ov)?;
            let names = || catalog::INVARIANTS.iter().map(|i| i.name);
            let invariant = match (outcome, t.get("invariant")) {
                (ExpectedOutcome::Violation, None) => {
                    return Err(ctx
                        .err(v.span(), "outcome `violation` needs `invariant`: which one is expected to be violated")
                        .with_expected(format!("`invariant`, {}", one_of(invariants.iter().map(String::as_str)))));
                }
                (ExpectedOutcome::Violation, Some(iv)) => {
                    let s = string(ctx, "invariant", iv)?;
                    if !catalog::invariant(s) {
                        return Err(ctx
                            .err(iv.span(), format!("unknown invariant `{}`", echo(s)))
                            .with_expected(one_of(names()))
                            .with_help_opt(did_you_mean(s, names())));
                    }
                    if !invariants.iter().any(|i| i == s) {
                        return Err(ctx
                            .err(iv.span(), format!("invariant `{s}` is not checked by this scenario"))
                            .with_expected(one_of(invariants.iter().map(String::as_str)))
                            .with_help(format!("add \"{s}\" to the top-level `invariants`")));
                    }
                    Some(s.to_string())
                }
                (other, Some(iv)) => {
                    let key_span = t
                        .t
                        .iter()
                        .find(|(k, _)| k.get_ref() == "invariant")
                        .map_or(iv.span(), |(k, _)| k.span());
                    return Err(ctx
                        .err(key_span, format!("`invariant` is only allowed with outcome `violation`, not `{other}`"))
                        .with_help("remove `invariant`, or expect outcome \"violation\""));
                }
                (_, None) => None,
            };
            let results = match t.get("results") {
                Some(rv) => expected_results(ctx, rv, tasks)?,
                None => Vec::new(),
            };
            let exhausted = match t.get("exhausted") {
                Some(xv) => boolean(ctx, "exhausted", xv)?,
                None => false,
            };
            let bug = match t.get("bug") {
                Some(bv) if outcome != ExpectedOutcome::Pass => {
                    return Err(ctx
                        .err(bv.span(), format!("`bug` is only allowed with outcome `pass`, not `{outcome}`: a failing outcome shows the bug itself"))
                        .with_help("remove `bug`, or expect outcome \"pass\" with the results that show it"));
                }
                Some(bv) if results.is_empty() => {
                    return Err(ctx
                        .err(bv.span(), "`bug` needs `results`: the results that show the bug")
                        .with_help("add `results = { task = { op = \"...\" } }`"));
                }
                Some(bv) => Some(string(ctx, "bug", bv)?.to_string()),
                None => None,
            };
            Ok(Expect {
                outcome,
                invariant,
                results,
                exhausted,
                bug,
            })
        }
        _ => Err(ctx.wrong_type(
            "expect",
            v,
            "an outcome string such as \"pass\", or a table { outcome = \"violation\", invariant = \"...\" }",
        )),
    }
}

/// The span of `exhausted` in an `expect` table (the table's own if absent).
fn exhausted_span(expect: &Val<'_>) -> Range<usize> {
    match expect.get_ref() {
        DeValue::Table(t) => t
            .iter()
            .find(|(k, _)| k.get_ref() == "exhausted")
            .map_or(expect.span(), |(k, _)| k.span()),
        _ => expect.span(),
    }
}

/// `results = { task = { op = "EPERM", other_op = "ok" } }`.
/// A task's (or child's) name and the labels of its ops, in order.
struct TaskOps {
    name: String,
    labels: Vec<String>,
}

impl TaskOps {
    fn of(name: &str, ops: &[Op]) -> TaskOps {
        TaskOps {
            name: name.to_string(),
            labels: ops.iter().map(Op::label).collect(),
        }
    }

    /// The distinct labels of its ops that `key` (an op name or a
    /// label) stands for.
    fn labels_of(&self, key: &str) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for l in &self.labels {
            let named = l == key || l.strip_prefix(key).is_some_and(|r| r.starts_with('('));
            if named && !out.contains(&l.as_str()) {
                out.push(l);
            }
        }
        out
    }
}

fn expected_results(ctx: &Ctx<'_>, v: &Val<'_>, tasks: &[TaskOps]) -> Res<Vec<ExpectedResult>> {
    let by_task = table(ctx, "results", v)?;
    let mut out = Vec::new();
    let names = || tasks.iter().map(|t| t.name.as_str());
    for (task_key, ops_v) in by_task.t.iter() {
        let task: &str = task_key.get_ref();
        let Some(task_ops) = tasks.iter().find(|t| t.name == task) else {
            return Err(ctx
                .err(task_key.span(), format!("no task named `{}`", echo(task)))
                .with_expected(one_of(names()))
                .with_help_opt(did_you_mean(task, names())));
        };
        let ops = table(ctx, task, ops_v)?;
        for (op_key, result_v) in ops.t.iter() {
            let op: &str = op_key.get_ref();
            let op_name = op.split('(').next().unwrap_or(op);
            if catalog::op(op_name).is_none() {
                let names = || catalog::OPS.iter().map(|o| o.name);
                return Err(ctx
                    .err(op_key.span(), format!("unknown operation `{}`", echo(op)))
                    .with_expected(one_of(names()))
                    .with_help_opt(did_you_mean(op_name, names())));
            }
            let table = match result_v.get_ref() {
                DeValue::Table(_) => expected_values(ctx, op, result_v)?,
                _ => ExpectedTable {
                    result: string(ctx, op, result_v)?.to_string(),
                    ..ExpectedTable::default()
                },
            };
            // The calls of each label are counted apart: calls in order
            // are those of one label.
            let labels = task_ops.labels_of(op);
            if table.calls.is_some() && labels.len() > 1 {
                return Err(ctx
                    .err(
                        op_key.span(),
                        format!(
                            "`calls` of `{}` in `{task}`, whose ops give it {} labels ({}): each label's calls are in order, not the labels' together",
                            echo(op),
                            labels.len(),
                            labels.join(", ")
                        ),
                    )
                    .with_expected("one label as the key, e.g. `\"mq_open(a, 1, 16)\" = { calls = [...] }`"));
            }
            let written = table.result.as_str();
            let (quantifier, named) = if let Some(r) = written.strip_prefix("some ") {
                (Quantifier::Some, r)
            } else if let Some(r) = written.strip_prefix("not ") {
                (Quantifier::No, r)
            } else {
                (Quantifier::Every, written)
            };
            let mut results = Vec::new();
            for result in named.split(" or ").map(str::trim) {
                if !result_names().any(|e| e == result) {
                    return Err(ctx
                        .err(
                            result_v.span(),
                            format!("unknown result `{}`", echo(result)),
                        )
                        .with_expected(one_of(result_names()))
                        .with_help_opt(did_you_mean(result, result_names())));
                }
                results.push(result.to_string());
            }
            out.push(ExpectedResult {
                task: task.to_string(),
                op: op.to_string(),
                results,
                quantifier,
                values: table.values,
                calls: table.calls,
                texts: table.texts,
            });
        }
    }
    Ok(out)
}

/// `["CAP_SYS_ADMIN", "CAP_SETUID"]`: capability numbers.
fn capabilities(ctx: &Ctx<'_>, key: &str, v: &Val<'_>) -> Res<Vec<u32>> {
    let DeValue::Array(items) = v.get_ref() else {
        return Err(ctx.wrong_type(key, v, "an array of capability names"));
    };
    let names = || userns::caps::NAMES.iter().copied();
    let mut caps = Vec::with_capacity(items.len());
    for item in items.iter() {
        let name = string(ctx, key, item)?;
        let Some(cap) = userns::caps::from_name(name) else {
            return Err(ctx
                .err(item.span(), format!("unknown capability `{}`", echo(name)))
                .with_expected(one_of(names()))
                .with_help_opt(did_you_mean(name, names())));
        };
        caps.push(cap);
    }
    Ok(caps)
}

/// `ok` and every errno name: what a call may return.
fn result_names() -> impl Iterator<Item = &'static str> + Clone {
    std::iter::once("ok").chain(kernel::Errno::ALL.iter().map(|e| e.name()))
}

/// An expected result written as a table.
#[derive(Default)]
struct ExpectedTable {
    result: String,
    values: Option<Vec<u64>>,
    /// The results of the first calls, in call order.
    calls: Option<Vec<String>>,
    texts: Option<Vec<String>>,
}

/// `{ result = "ok", values = [1, 2], calls = ["EPERM", "ok"], words =
/// ["add"] }`: the result (`ok` when left out, or, with `calls`, any of
/// the results `calls` names), the values and words the calls must report
/// in call order, and the results of the first calls in call order.
fn expected_values(ctx: &Ctx<'_>, op: &str, v: &Val<'_>) -> Res<ExpectedTable> {
    let t = table(ctx, op, v)?;
    t.only(ctx, &["result", "values", "calls", "words"], op)?;
    let texts = match t.get("words") {
        None => None,
        Some(wv) => {
            let DeValue::Array(items) = wv.get_ref() else {
                return Err(ctx.wrong_type("words", wv, "an array of strings"));
            };
            let words: Res<Vec<String>> = items
                .iter()
                .map(|i| string(ctx, "words", i).map(str::to_string))
                .collect();
            Some(words?)
        }
    };
    let calls = match t.get("calls") {
        None => None,
        Some(cv) => Some(call_results(ctx, cv)?),
    };
    let result = match (t.get("result"), &calls) {
        (Some(rv), _) => string(ctx, "result", rv)?.to_string(),
        (None, Some(calls)) if !calls.is_empty() => {
            let mut named: Vec<&str> = calls.iter().map(String::as_str).collect();
            named.sort_unstable();
            named.dedup();
            format!("some {}", named.join(" or "))
        }
        (None, _) => "ok".to_string(),
    };
    let values = match t.get("values") {
        None => None,
        Some(vv) => {
            let DeValue::Array(items) = vv.get_ref() else {
                return Err(ctx.wrong_type("values", vv, "an array of integers"));
            };
            let mut out = Vec::with_capacity(items.len());
            for item in items.iter() {
                out.push(int_u64(ctx, "values", item, 0, u64::MAX)?);
            }
            Some(out)
        }
    };
    Ok(ExpectedTable {
        result,
        values,
        calls,
        texts,
    })
}

/// `calls = ["EPERM", "ok"]`: at most `FIRST_RESULTS_KEPT` results.
fn call_results(ctx: &Ctx<'_>, v: &Val<'_>) -> Res<Vec<String>> {
    let DeValue::Array(items) = v.get_ref() else {
        return Err(ctx.wrong_type("calls", v, "an array of results (\"ok\" or errno names)"));
    };
    let most = kernel::SyscallStats::FIRST_RESULTS_KEPT;
    if items.len() > most {
        return Err(ctx
            .err(v.span(), format!("`calls` lists {} results", items.len()))
            .with_expected(format!("the results of at most the first {most} calls")));
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items.iter() {
        let result = string(ctx, "calls", item)?;
        if !result_names().any(|r| r == result) {
            return Err(ctx
                .err(item.span(), format!("unknown result `{}`", echo(result)))
                .with_expected(one_of(result_names()))
                .with_help_opt(did_you_mean(result, result_names())));
        }
        out.push(result.to_string());
    }
    Ok(out)
}

fn kernels(
    ctx: &Ctx<'_>,
    v: &Val<'_>,
    base: &ExplorePatch,
    invariants: &[String],
    tasks: &[TaskOps],
) -> Res<Vec<KernelRun>> {
    let entries = tables(ctx, "kernel", v)?;
    if entries.is_empty() {
        return Err(ctx
            .err(v.span(), "no kernels to run")
            .with_expected("at least one [[kernel]]"));
    }
    let mut runs: Vec<KernelRun> = Vec::new();
    let mut label_spans: Vec<Range<usize>> = Vec::new();
    for t in &entries {
        let place = "[[kernel]]";
        t.only(ctx, KERNEL_KEYS, place)?;
        let pv = t.require(ctx, "profile", place)?;
        let profile_name = string(ctx, "profile", pv)?;
        let profiles = || catalog::PROFILES.iter().map(|p| p.name);
        let Some(profile) = catalog::profile(profile_name) else {
            return Err(ctx
                .err(
                    pv.span(),
                    format!("unknown kernel profile `{}`", echo(profile_name)),
                )
                .with_expected(one_of(profiles()))
                .with_help_opt(
                    catalog::release_hint(profile_name)
                        .or_else(|| did_you_mean(profile_name, profiles())),
                ));
        };
        let mut patches: Vec<PatchToggle> = Vec::new();
        let mut toggles_text = String::new();
        if let Some(patches_v) = t.get("patches") {
            let DeValue::Array(items) = patches_v.get_ref() else {
                return Err(ctx.wrong_type(
                    "patches",
                    patches_v,
                    "an array of patch toggles such as \"+ipc-batch-free\"",
                ));
            };
            let patch_names = || catalog::PATCHES.iter().map(|p| p.name);
            for item in items.iter() {
                let s = string(ctx, "patches", item)?;
                let (enable, name) = if let Some(n) = s.strip_prefix('+') {
                    (true, n)
                } else if let Some(n) = s.strip_prefix('-') {
                    (false, n)
                } else {
                    return Err(ctx
                        .err(
                            item.span(),
                            format!("patch toggle `{}` needs a `+` or `-` prefix", echo(s)),
                        )
                        .with_expected(format!(
                            "\"+{s}\" to enable the patch or \"-{s}\" to disable it"
                        )));
                };
                if catalog::patch(name).is_none() {
                    let mut e = ctx
                        .err(item.span(), format!("unknown patch `{}`", echo(name)))
                        .with_expected(one_of(patch_names()));
                    if let Some(c) = crate::suggest::closest(name, patch_names()) {
                        e = e.with_help(format!(
                            "did you mean `{}{c}`?",
                            if enable { '+' } else { '-' }
                        ));
                    }
                    return Err(e);
                }
                if patches.iter().any(|p| p.name == name) {
                    return Err(ctx.err(item.span(), format!("patch `{name}` is toggled twice")));
                }
                // A toggle the profile already agrees with (`+p` on a profile
                // with p, `-p` on one without) is accepted as a no-op.
                toggles_text.push_str(s);
                patches.push(PatchToggle {
                    name: name.to_string(),
                    enable,
                });
            }
        }
        let (label, label_span) = match t.get("label") {
            Some(lv) => (
                ident(ctx, "label", lv, label_char, "A-Z, a-z, 0-9, ., _, + and -")?,
                lv.span(),
            ),
            None => (format!("{}{toggles_text}", profile.name), pv.span()),
        };
        if let Some(i) = runs.iter().position(|r| r.label == label) {
            let first = ctx.first_at("the label is", label_spans[i].clone());
            return Err(ctx
                .err(label_span, format!("duplicate kernel label `{label}`"))
                .with_expected("a label not used by an earlier [[kernel]]")
                .with_help(format!("{first}; set `label` to tell the runs apart")));
        }
        let ev = t.require(ctx, "expect", place)?;
        let expect = expect(ctx, ev, invariants, tasks)?;
        let over = match t.get("explore") {
            Some(xv) => explore(ctx, table(ctx, "explore", xv)?, "`explore` of [[kernel]]")?,
            None => ExplorePatch::default(),
        };
        let explore = over.apply(base.apply(Explore::default()));
        if expect.exhausted && explore.strategy != StrategyName::Dfs {
            return Err(ctx
                .err(exhausted_span(ev), format!("`exhausted` needs strategy \"dfs\", not \"{}\"", explore.strategy.as_str()))
                .with_help("only the exhaustive search can be exhausted: set `explore = { strategy = \"dfs\", ... }` on this [[kernel]]"));
        }
        label_spans.push(label_span);
        runs.push(KernelRun {
            profile: profile.name.to_string(),
            patches,
            label,
            expect,
            explore,
        });
    }
    Ok(runs)
}

pub(crate) fn scenario(file: &str, text: &str) -> Res<Scenario> {
    let ctx = Ctx { file, src: text };
    let doc = DeTable::parse(text).map_err(|e| {
        let message = e.message().trim_end().to_string();
        match e.span() {
            Some(span) => ctx.err(span, format!("invalid TOML: {message}")),
            None => ScenarioError::new(file, format!("invalid TOML: {message}")),
        }
    })?;
    let root = Tbl {
        t: doc.get_ref(),
        span: None,
    };
    if root.t.is_empty() {
        return Err(ScenarioError::new(file, "empty scenario file")
            .with_expected("at least `name`, `summary`, one [[task]] and one [[kernel]]"));
    }
    let place = "the scenario (top level)";
    root.only(&ctx, ROOT_KEYS, place)?;
    for key in ["name", "summary", "task", "kernel"] {
        root.require(&ctx, key, place)?;
    }
    let mut name = String::new();
    let mut summary = String::new();
    let mut invariant_names: Vec<String> = catalog::INVARIANTS
        .iter()
        .map(|i| i.name.to_string())
        .collect();
    let mut base = ExplorePatch::default();
    let mut setup = Setup::default();
    let mut cost_list = Vec::new();
    let mut userns: Vec<UserNs> = Vec::new();
    // In a fixed order: invariants and user namespaces before the tasks and
    // kernels that refer to them.
    for key in ROOT_KEYS {
        let Some(v) = root.get(key) else { continue };
        match *key {
            "name" => {
                name = ident(&ctx, "name", v, scenario_name_char, "a-z, 0-9, ., _ and -")?;
            }
            "summary" => {
                let s = string(&ctx, "summary", v)?;
                if s.trim().is_empty() {
                    return Err(ctx
                        .err(v.span(), "empty summary")
                        .with_expected("a one-line description of the scenario"));
                }
                summary = s.to_string();
            }
            "invariants" => {
                let named = invariants(&ctx, v)?;
                if !named.is_empty() {
                    invariant_names = named;
                }
            }
            "explore" => base = explore(&ctx, table(&ctx, "explore", v)?, "[explore]")?,
            "sysctl" => sysctls(
                &ctx,
                table(&ctx, "sysctl", v)?,
                INIT_USER_NS,
                &mut setup.sysctls,
            )?,
            "costs" => cost_list = costs(&ctx, table(&ctx, "costs", v)?)?,
            "userns" => user_namespaces(&ctx, v, &mut setup, &mut userns)?,
            "file" => files(&ctx, v, &mut setup)?,
            "task" => tasks(&ctx, v, &userns, &mut setup)?,
            _ => {}
        }
    }
    // `kernel` is present (required above).
    let task_ops: Vec<TaskOps> = setup
        .tasks
        .iter()
        .map(|t| TaskOps::of(&t.name, &t.ops))
        .chain(setup.children.iter().map(|c| TaskOps::of(&c.name, &c.ops)))
        .collect();
    let runs = match root.get("kernel") {
        Some(v) => kernels(&ctx, v, &base, &invariant_names, &task_ops)?,
        None => Vec::new(),
    };
    Ok(Scenario {
        path: PathBuf::from(file),
        name,
        summary,
        source: text.to_string(),
        invariants: invariant_names,
        costs: cost_list,
        setup,
        runs,
    })
}
