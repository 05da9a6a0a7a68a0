//! Operations of a task, written in call syntax inside a TOML string:
//! `unshare(CLONE_NEWIPC)`, `sysctl_write(user.max_ipc_namespaces, 5)`,
//! `sleep(10us)`, `bug("boom")`. Checked against [`kernel::ops::OPS`] and built by [`Op::build`], both
//! from the ops' one declaration.

use std::ops::Range;

use kernel::catalog::{self, ArgKind, OpInfo};
use kernel::ops::ArgValue;
use kernel::setup::Op;

use crate::duration::{parse_duration, DURATION_SYNTAX};
use crate::suggest::{did_you_mean, one_of};

/// Largest value of an integer argument (and of a sysctl).
pub(crate) const INT_MAX: i64 = 2_147_483_647;

/// A problem in an op string; `range` is a byte range of the op text.
#[derive(Debug)]
pub(crate) struct OpError {
    pub range: Range<usize>,
    pub message: String,
    pub expected: Option<String>,
    pub help: Option<String>,
}

impl OpError {
    fn new(range: Range<usize>, message: impl Into<String>) -> Self {
        OpError {
            range,
            message: message.into(),
            expected: None,
            help: None,
        }
    }

    fn expected(mut self, expected: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self
    }

    fn help(mut self, help: Option<String>) -> Self {
        self.help = help;
        self
    }
}

/// How an argument kind is written in a signature.
pub(crate) fn kind_name(kind: ArgKind) -> &'static str {
    match kind {
        ArgKind::CloneFlags => "flags",
        ArgKind::Sysctl => "sysctl",
        ArgKind::Int => "integer",
        ArgKind::Task => "task",
        ArgKind::Child => "child",
        ArgKind::Name => "name",
        ArgKind::Duration => "duration",
        ArgKind::Str => "\"string\"",
        ArgKind::Rlimit => "resource",
        ArgKind::File => "file",
        ArgKind::OpenAccess => "access",
        ArgKind::IdList => "\"ids\"",
        ArgKind::NsType => "namespace",
        ArgKind::FaultSite => "site",
        ArgKind::IpcFlags => "ipc_flags",
        ArgKind::SignedInt => "signed_integer",
        ArgKind::IpcCmd => "command",
        ArgKind::IpcSysctl => "ipc_sysctl",
    }
}

/// `sysctl_write(sysctl, integer)`.
pub fn signature(op: &OpInfo) -> String {
    let args: Vec<&str> = op.args.iter().map(|&k| kind_name(k)).collect();
    format!("{}({})", op.name, args.join(", "))
}

/// One argument as written: bare text (trimmed) or a double-quoted string.
struct Arg<'t> {
    range: Range<usize>,
    kind: ArgText<'t>,
}

enum ArgText<'t> {
    Bare(&'t str),
    Quoted(String),
}

struct Cursor<'t> {
    text: &'t str,
    pos: usize,
}

impl<'t> Cursor<'t> {
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if !c.is_whitespace() {
                break;
            }
            self.pos += c.len_utf8();
        }
    }

    /// Range of the next character, or an empty range at the end.
    fn here(&self) -> Range<usize> {
        let len = self.peek().map_or(0, char::len_utf8);
        self.pos..self.pos + len
    }
}

/// The names a scenario's ops may refer to.
#[derive(Clone, Copy)]
pub(crate) struct Names<'a> {
    /// Every task's name, and every child's full name (`parent/child`).
    pub tasks: &'a [&'a str],
    /// The set-up's files (`[[file]]`).
    pub files: &'a [&'a str],
    /// The `[[task.child]]` blocks of the task whose ops these are.
    pub children: &'a [&'a str],
}

/// Parses and checks one op against the scenario's `names`.
pub(crate) fn parse_op(text: &str, names: Names<'_>) -> Result<Op, OpError> {
    let mut cur = Cursor { text, pos: 0 };
    cur.skip_ws();
    let name_start = cur.pos;
    while let Some(c) = cur.peek() {
        if !(c.is_ascii_alphanumeric() || c == '_') {
            break;
        }
        cur.pos += 1;
    }
    let name = &text[name_start..cur.pos];
    let op_names = || catalog::OPS.iter().map(|o| o.name);
    if name.is_empty() {
        let message = if cur.peek().is_none() {
            "empty operation"
        } else {
            "expected an operation name"
        };
        return Err(OpError::new(cur.here(), message).expected(one_of(op_names())));
    }
    let Some(op) = catalog::op(name) else {
        return Err(
            OpError::new(name_start..cur.pos, format!("unknown operation `{name}`"))
                .expected(one_of(op_names()))
                .help(did_you_mean(name, op_names())),
        );
    };
    cur.skip_ws();
    if cur.peek() != Some('(') {
        let found = describe_next(&cur);
        return Err(OpError::new(
            cur.here(),
            format!("expected `(` after `{name}`, found {found}"),
        )
        .expected(signature(op)));
    }
    let open = cur.pos;
    cur.pos += 1;
    let args = parse_args(&mut cur, op)?;
    let close = cur.pos - 1;
    cur.skip_ws();
    if cur.pos < text.len() {
        let rest = text[cur.pos..].trim_end();
        return Err(OpError::new(
            cur.pos..cur.pos + rest.len(),
            format!("unexpected `{rest}` after the closing `)`"),
        )
        .expected("the end of the operation"));
    }
    if args.len() != op.args.len() {
        let want = op.args.len();
        let message = format!(
            "`{name}` takes {want} argument{}, found {}",
            if want == 1 { "" } else { "s" },
            args.len()
        );
        let range = match args.get(want) {
            Some(extra) => extra.range.start..args.last().map_or(extra.range.end, |a| a.range.end),
            None if args.is_empty() => open..close + 1,
            None => close..close + 1,
        };
        return Err(OpError::new(range, message).expected(signature(op)));
    }
    let mut checked = Vec::with_capacity(args.len());
    for (arg, &kind) in args.iter().zip(op.args) {
        checked.push(check_arg(arg, kind, op, names)?);
    }
    Op::build(op.name, checked).ok_or_else(|| {
        OpError::new(
            name_start..name_start + name.len(),
            format!("operation `{name}` is in the kernel catalog but this scenario checker cannot build it yet"),
        )
    })
}

fn describe_next(cur: &Cursor<'_>) -> String {
    match cur.peek() {
        None => "the end of the operation".to_string(),
        Some(c) => format!("`{c}`"),
    }
}

/// Arguments up to and including the closing `)`; the cursor ends after it.
fn parse_args<'t>(cur: &mut Cursor<'t>, op: &OpInfo) -> Result<Vec<Arg<'t>>, OpError> {
    let mut args = Vec::new();
    cur.skip_ws();
    if cur.peek() == Some(')') {
        cur.pos += 1;
        return Ok(args);
    }
    loop {
        cur.skip_ws();
        let start = cur.pos;
        if cur.peek() == Some('"') {
            let value = parse_quoted(cur)?;
            args.push(Arg {
                range: start..cur.pos,
                kind: ArgText::Quoted(value),
            });
        } else {
            while let Some(c) = cur.peek() {
                if c == ',' || c == ')' || c == '"' {
                    break;
                }
                cur.pos += c.len_utf8();
            }
            let raw = &cur.text[start..cur.pos];
            let trimmed = raw.trim_end();
            if trimmed.is_empty() {
                return Err(OpError::new(
                    cur.here(),
                    format!("expected an argument, found {}", describe_next(cur)),
                )
                .expected(signature(op)));
            }
            args.push(Arg {
                range: start..start + trimmed.len(),
                kind: ArgText::Bare(trimmed),
            });
        }
        cur.skip_ws();
        match cur.peek() {
            Some(',') => {
                cur.pos += 1;
                // A trailing comma is allowed.
                cur.skip_ws();
                if cur.peek() == Some(')') {
                    cur.pos += 1;
                    return Ok(args);
                }
            }
            Some(')') => {
                cur.pos += 1;
                return Ok(args);
            }
            _ => {
                let found = describe_next(cur);
                return Err(OpError::new(
                    cur.here(),
                    format!("expected `,` or `)`, found {found}"),
                )
                .expected(signature(op)));
            }
        }
    }
}

/// A double-quoted string at the cursor, with escapes `\"`, `\\`, `\n`, `\t`.
fn parse_quoted(cur: &mut Cursor<'_>) -> Result<String, OpError> {
    let start = cur.pos;
    cur.pos += 1;
    let mut out = String::new();
    loop {
        let Some(c) = cur.peek() else {
            return Err(
                OpError::new(start..cur.pos, "unterminated string").expected("a closing `\"`")
            );
        };
        cur.pos += c.len_utf8();
        match c {
            '"' => return Ok(out),
            '\\' => {
                let esc_start = cur.pos - 1;
                let Some(e) = cur.peek() else {
                    return Err(OpError::new(start..cur.pos, "unterminated string")
                        .expected("a closing `\"`"));
                };
                cur.pos += e.len_utf8();
                out.push(match e {
                    '"' => '"',
                    '\\' => '\\',
                    'n' => '\n',
                    't' => '\t',
                    _ => {
                        return Err(OpError::new(
                            esc_start..cur.pos,
                            format!("unknown escape `\\{e}` in string"),
                        )
                        .expected("one of: \\\", \\\\, \\n, \\t"))
                    }
                });
            }
            c => out.push(c),
        }
    }
}

fn check_arg(
    arg: &Arg<'_>,
    kind: ArgKind,
    op: &OpInfo,
    names: Names<'_>,
) -> Result<ArgValue, OpError> {
    let tasks = names.tasks;
    let what = kind_name(kind);
    let bare = match (&arg.kind, kind) {
        (ArgText::Quoted(s), ArgKind::Str) => return Ok(ArgValue::Text(s.clone())),
        (ArgText::Quoted(s), ArgKind::IdList) => {
            return match kernel::ops::id_list(s) {
                Some(_) => Ok(ArgValue::Text(s.clone())),
                None => Err(OpError::new(
                    arg.range.clone(),
                    format!("`{s}` is not a list of ids"),
                )
                .expected(format!(
                    "at most {} ids 0..=4294967294 separated by blanks, e.g. \"0 1000\" (\"\" for none)",
                    kernel::ops::ID_LIST_MAX
                ))),
            }
        }
        (ArgText::Quoted(_), _) => {
            return Err(OpError::new(
                arg.range.clone(),
                format!("expected a bare {what}, found a quoted string"),
            )
            .expected(signature(op))
            .help(Some(format!("write the {what} without quotes"))))
        }
        (ArgText::Bare(s), _) => *s,
    };
    let range = arg.range.clone();
    match kind {
        ArgKind::CloneFlags => {
            let flags = clone_flags(bare, range.start)?;
            let unshare_only = flags & kernel::clone_flags::UNSHARE_ONLY != 0;
            if unshare_only && !kernel::ops::takes_unshare_only(op.name) {
                return Err(OpError::new(
                    range,
                    format!("{} takes no CLONE_FS or CLONE_FILES", op.name),
                )
                .expected(format!(
                    "namespace flags: {}",
                    catalog::CLONE_FLAGS
                        .iter()
                        .filter(|f| f.2 && f.1 & kernel::clone_flags::UNSHARE_ONLY == 0)
                        .map(|f| f.0)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .help(Some(
                    "they share the fs information and file table with the child, which the model does not tell apart; unshare takes them".to_string(),
                )));
            }
            Ok(ArgValue::Flags(flags))
        }
        ArgKind::Sysctl => {
            if catalog::sysctl(bare) {
                Ok(ArgValue::Text(bare.to_string()))
            } else {
                let names = || catalog::SYSCTLS.iter().map(|s| s.0);
                Err(OpError::new(range, format!("unknown sysctl `{bare}`"))
                    .expected(one_of(names()))
                    .help(did_you_mean(bare, names())))
            }
        }
        ArgKind::Int => int_arg(bare, range).map(ArgValue::Int),
        ArgKind::SignedInt => signed_int_arg(bare, range).map(ArgValue::Int),
        ArgKind::IpcFlags => ipc_flags(bare, range.start).map(ArgValue::Flags),
        ArgKind::IpcCmd => ipc_cmd(op.name, bare, range).map(ArgValue::Flags),
        ArgKind::IpcSysctl => {
            let names = || kernel::ops::IPC_SYSCTLS.iter().map(|s| s.name);
            match kernel::ops::ipc_sysctl(bare) {
                Some(s) => Ok(ArgValue::Text(s.name.to_string())),
                None => Err(OpError::new(range, format!("unknown ipc sysctl `{bare}`"))
                    .expected(one_of(names()))
                    .help(did_you_mean(bare, names()))),
            }
        }
        ArgKind::Task => {
            if tasks.contains(&bare) {
                Ok(ArgValue::Text(bare.to_string()))
            } else {
                Err(
                    OpError::new(range, format!("no task named `{bare}` in this scenario"))
                        .expected(one_of(tasks.iter().copied()))
                        .help(did_you_mean(bare, tasks.iter().copied())),
                )
            }
        }
        ArgKind::Name => {
            let mut chars = bare.chars();
            let ok = chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
            if ok {
                Ok(ArgValue::Text(bare.to_string()))
            } else {
                Err(OpError::new(range, format!("`{bare}` is not a valid name"))
                    .expected("a name made of [A-Za-z_][A-Za-z0-9_]*"))
            }
        }
        ArgKind::Duration => parse_duration(bare)
            .map(ArgValue::Duration)
            .map_err(|e| OpError::new(range, e).expected(DURATION_SYNTAX)),
        ArgKind::File => {
            let files = names.files;
            if files.contains(&bare) {
                Ok(ArgValue::Text(bare.to_string()))
            } else if files.is_empty() {
                Err(
                    OpError::new(range, format!("no file named `{bare}` in this scenario"))
                        .expected("a file of the set-up")
                        .help(Some(format!(
                            "declare it: [[file]] name = \"{bare}\", owner = 0, group = 0, mode = 0o600"
                        ))),
                )
            } else {
                Err(
                    OpError::new(range, format!("no file named `{bare}` in this scenario"))
                        .expected(one_of(files.iter().copied()))
                        .help(did_you_mean(bare, files.iter().copied())),
                )
            }
        }
        ArgKind::Child => {
            let children = names.children;
            if children.contains(&bare) {
                Ok(ArgValue::Text(bare.to_string()))
            } else if children.is_empty() {
                Err(OpError::new(range, format!("no child named `{bare}`: this task has no [[task.child]] blocks"))
                    .expected(format!("the name of a [[task.child]] block under this task, with the ops `{bare}` runs")))
            } else {
                Err(
                    OpError::new(range, format!("no child named `{bare}` under this task"))
                        .expected(one_of(children.iter().copied()))
                        .help(did_you_mean(bare, children.iter().copied())),
                )
            }
        }
        ArgKind::NsType => {
            let types = || kernel::ops::NS_TYPES.iter().copied();
            if types().any(|t| t == bare) {
                Ok(ArgValue::Text(bare.to_string()))
            } else {
                Err(
                    OpError::new(range, format!("unknown namespace type `{bare}`"))
                        .expected(one_of(types()))
                        .help(did_you_mean(bare, types())),
                )
            }
        }
        ArgKind::FaultSite => {
            let sites = || kernel::ops::FAULT_SITES.iter().map(|s| s.name);
            match kernel::ops::fault_site(bare) {
                Some(site) => Ok(ArgValue::Text(site.name.to_string())),
                None => Err(
                    OpError::new(range, format!("unknown allocation site `{bare}`"))
                        .expected(one_of(sites()))
                        .help(did_you_mean(bare, sites())),
                ),
            }
        }
        ArgKind::OpenAccess => {
            let modes = || kernel::ops::OPEN_ACCESS.iter().map(|(n, _)| *n);
            match kernel::ops::OPEN_ACCESS.iter().find(|(n, _)| *n == bare) {
                Some((_, v)) => Ok(ArgValue::Flags(*v)),
                None => Err(OpError::new(range, format!("unknown access mode `{bare}`"))
                    .expected(one_of(modes()))
                    .help(did_you_mean(bare, modes()))),
            }
        }
        ArgKind::Rlimit => match kernel::ops::rlimit_named(bare) {
            Some(_) => Ok(ArgValue::Text(
                bare.strip_prefix("RLIMIT_").unwrap_or(bare).to_string(),
            )),
            None => Err(
                OpError::new(range, format!("unknown or unmodelled resource `{bare}`")).expected(
                    kernel::ops::RLIMITS
                        .iter()
                        .map(|(n, _)| format!("{n} (RLIMIT_{n})"))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            ),
        },
        ArgKind::IdList => Err(OpError::new(range, "expected a double-quoted list of ids")
            .expected(signature(op))
            .help(Some(format!("quote it: \"{bare}\"")))),
        ArgKind::Str => Err(OpError::new(range, "expected a double-quoted string")
            .expected(signature(op))
            .help(Some(
                "quote it; a TOML literal string makes that easy: ops = ['bug(\"boom\")']"
                    .to_string(),
            ))),
    }
}

fn int_arg(bare: &str, range: Range<usize>) -> Result<i64, OpError> {
    let expected = format!("an integer in 0..={INT_MAX}");
    if let Some(digits) = bare.strip_prefix('-') {
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(OpError::new(range, format!("negative value `{bare}`")).expected(expected));
        }
    }
    if bare.is_empty() || !bare.bytes().all(|b| b.is_ascii_digit()) {
        return Err(
            OpError::new(range, format!("`{bare}` is not a non-negative integer"))
                .expected(expected),
        );
    }
    match bare.parse::<i64>() {
        Ok(v) if v <= INT_MAX => Ok(v),
        _ => Err(OpError::new(range, format!("value `{bare}` is out of range")).expected(expected)),
    }
}

/// A semaphore operation: an integer in -32767..=32767.
fn signed_int_arg(bare: &str, range: Range<usize>) -> Result<i64, OpError> {
    const SEMVMX: i64 = 32_767;
    let expected = format!("an integer in -{SEMVMX}..={SEMVMX}");
    let digits = bare.strip_prefix('-').unwrap_or(bare);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(OpError::new(range, format!("`{bare}` is not an integer")).expected(expected));
    }
    match bare.parse::<i64>() {
        Ok(v) if v.abs() <= SEMVMX => Ok(v),
        _ => Err(OpError::new(range, format!("value `{bare}` is out of range")).expected(expected)),
    }
}

/// `IPC_CREAT | IPC_EXCL | 0600`, or `0`: flags and at most one octal
/// mode (`0` followed by octal digits, at most 0777); `base` is where
/// `bare` starts in the op text.
fn ipc_flags(bare: &str, base: usize) -> Result<u64, OpError> {
    let expected = || {
        format!(
            "{} and an octal mode (`IPC_CREAT | IPC_EXCL | 0600`), or 0",
            one_of(kernel::ops::IPC_FLAGS.iter().map(|f| f.0))
        )
    };
    let mut flags = 0u64;
    let mut mode_seen = false;
    let mut offset = 0usize;
    for part in bare.split('|') {
        let lead = part.len() - part.trim_start().len();
        let word = part.trim();
        let start = base + offset + lead;
        let range = start..start + word.len();
        offset += part.len() + 1;
        if let Some((_, value)) = kernel::ops::IPC_FLAGS.iter().find(|f| f.0 == word) {
            flags |= value;
            continue;
        }
        let octal = word.starts_with('0') && word.bytes().all(|b| (b'0'..=b'7').contains(&b));
        match u64::from_str_radix(word, 8) {
            Ok(mode) if octal && !mode_seen && mode <= 0o777 => {
                flags |= mode;
                mode_seen = true;
            }
            _ if octal && mode_seen => {
                return Err(OpError::new(range, "a second mode").expected(expected()))
            }
            _ if octal => {
                return Err(OpError::new(range, format!("mode `{word}` is above 0777"))
                    .expected(expected()))
            }
            _ => {
                let names = || kernel::ops::IPC_FLAGS.iter().map(|f| f.0);
                return Err(OpError::new(range, format!("unknown ipc flag `{word}`"))
                    .expected(expected())
                    .help(did_you_mean(word, names()).or_else(|| {
                        word.bytes()
                            .all(|b| b.is_ascii_digit())
                            .then(|| format!("a mode is octal with a leading 0: 0{word}"))
                    })));
            }
        }
    }
    Ok(flags)
}

/// A `*ctl` command `op` takes ([`kernel::ops::IPC_CMDS`]).
fn ipc_cmd(op: &str, bare: &str, range: Range<usize>) -> Result<u64, OpError> {
    let taken = || {
        kernel::ops::IPC_CMDS
            .iter()
            .filter(|c| c.2.contains(&op))
            .map(|c| c.0)
    };
    match kernel::ops::IPC_CMDS.iter().find(|c| c.0 == bare) {
        Some(cmd) if cmd.2.contains(&op) => Ok(cmd.1),
        Some(_) => {
            Err(OpError::new(range, format!("{op} does not take {bare}")).expected(one_of(taken())))
        }
        None => Err(OpError::new(range, format!("unknown command `{bare}`"))
            .expected(one_of(taken()))
            .help(did_you_mean(bare, taken()))),
    }
}

/// `CLONE_NEWIPC | CLONE_NEWNET`; `base` is where `bare` starts in the op
/// text, so errors can point at the offending flag.
fn clone_flags(bare: &str, base: usize) -> Result<u64, OpError> {
    let names = || catalog::CLONE_FLAGS.iter().map(|f| f.0);
    let mut flags = 0u64;
    let mut offset = 0usize;
    for part in bare.split('|') {
        let lead = part.len() - part.trim_start().len();
        let name = part.trim();
        let start = base + offset + lead;
        let range = start..start + name.len();
        offset += part.len() + 1;
        if name.is_empty() {
            return Err(OpError::new(range, "expected a clone flag").expected(one_of(names())));
        }
        match catalog::CLONE_FLAGS.iter().find(|f| f.0 == name) {
            Some(&(_, value, true, _)) => flags |= value,
            Some(&(_, _, false, _)) => {
                let modelled: Vec<&str> = catalog::CLONE_FLAGS
                    .iter()
                    .filter(|f| f.2)
                    .map(|f| f.0)
                    .collect();
                return Err(OpError::new(range, format!("{name} is not modelled yet"))
                    .expected(one_of(modelled)));
            }
            None => {
                return Err(OpError::new(range, format!("unknown clone flag `{name}`"))
                    .expected(one_of(names()))
                    .help(did_you_mean(name, names())))
            }
        }
    }
    Ok(flags)
}
