//! `nssim merge`: the JSON-lines outputs of the N shards of one run
//! (`nssim run --shard K/N --format json`), made into what the unsharded
//! run prints, in text, JSON and JUnit.
//!
//! Each shard lists every (scenario, kernel) run in the same order: the
//! ones it made as records, the others as skipped. A fair run (or a dfs
//! run without reduction) is shard 1's alone and is taken as it is. Each
//! shard of a dfs run searched some subtrees of the search, whose counts
//! its record carries; the unsharded search is made of them
//! (`sim::merge_dfs_shards`). A random or PCT run's shards each
//! stop at their own first failure, or report their last iteration: the
//! unsharded run reports the failure of lowest iteration, or else its last
//! iteration, after that iteration plus one executions.

use crate::error::{shown, CliError};
use crate::junit;
use crate::options::Format;
use crate::output::{self, Record, SkippedRecord, UnreadableRecord};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One line of a shard's output.
enum Entry {
    Ran(Box<Record>),
    Skipped(SkippedRecord),
    Unreadable(UnreadableRecord),
}

impl Entry {
    fn shard(&self) -> &str {
        match self {
            Entry::Ran(r) => &r.shard,
            Entry::Skipped(s) => &s.shard,
            Entry::Unreadable(u) => &u.shard,
        }
    }

    fn origin(&self) -> Option<&output::RunOrigin> {
        match self {
            Entry::Ran(r) => Some(&r.origin),
            Entry::Skipped(s) => Some(&s.origin),
            Entry::Unreadable(_) => None,
        }
    }

    /// The run it is: (scenario file, kernel label); an unreadable file's
    /// kernel is empty.
    fn key(&self) -> (&str, &str) {
        match self {
            Entry::Ran(r) => (&r.file, &r.kernel),
            Entry::Skipped(s) => (&s.file, &s.kernel),
            Entry::Unreadable(u) => (&u.file, ""),
        }
    }
}

/// A merged entry: the unsharded run's record, or a file it could not
/// read.
enum Merged {
    Ran(Box<Record>),
    Unreadable(UnreadableRecord),
}

/// One shard's output.
struct Shard {
    path: PathBuf,
    k: u64,
    n: u64,
    /// Entries and their line numbers.
    entries: Vec<(usize, Entry)>,
}

fn error(path: &Path, line: usize, what: impl std::fmt::Display) -> CliError {
    CliError(format!("error: {}:{line}: {what}", shown(path)))
}

fn parse_entry(path: &Path, line: usize, text: &str) -> Result<Entry, CliError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        CliError(format!(
            "error: {}:{line}:{}: not JSON: {}",
            shown(path),
            e.column(),
            sim::echo::echo_message(&e.to_string())
        ))
    })?;
    let not_a_record = |e: serde_json::Error| {
        error(
            path,
            line,
            format!(
                "not a record of `nssim run --format json`: {}",
                sim::echo::echo_message(&e.to_string())
            ),
        )
    };
    if value.get("unreadable") == Some(&Value::Bool(true)) {
        Ok(Entry::Unreadable(
            serde_json::from_value(value).map_err(not_a_record)?,
        ))
    } else if value.get("skipped") == Some(&Value::Bool(true)) {
        Ok(Entry::Skipped(
            serde_json::from_value(value).map_err(not_a_record)?,
        ))
    } else {
        Ok(Entry::Ran(Box::new(
            serde_json::from_value(value).map_err(not_a_record)?,
        )))
    }
}

/// `K/N` as a record writes it.
fn parse_shard(text: &str) -> Option<(u64, u64)> {
    let (k, n) = text.split_once('/')?;
    let (k, n) = (k.parse().ok()?, n.parse().ok()?);
    (1 <= k && k <= n).then_some((k, n))
}

fn read_shard(path: &Path) -> Result<Shard, CliError> {
    let bytes = sim::input::read_input(path)
        .map_err(|e| CliError(format!("error: cannot read {}: {e}", shown(path))))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        CliError(format!(
            "error: {}: not UTF-8 text (byte {})",
            shown(path),
            e.utf8_error().valid_up_to()
        ))
    })?;
    let mut entries = Vec::new();
    let mut shard: Option<(u64, u64, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry = parse_entry(path, i + 1, line)?;
        let Some((k, n)) = parse_shard(entry.shard()) else {
            return Err(error(
                path,
                i + 1,
                format!("`shard` is `{}`, not K/N", sim::echo::echo(entry.shard())),
            ));
        };
        match &shard {
            None => shard = Some((k, n, entry.shard().to_string())),
            Some((_, _, first)) if first != entry.shard() => {
                return Err(error(
                    path,
                    i + 1,
                    format!(
                        "a record of shard {} in the output of shard {}",
                        sim::echo::echo(entry.shard()),
                        sim::echo::echo(first)
                    ),
                ))
            }
            Some(_) => {}
        }
        entries.push((i + 1, entry));
    }
    let Some((k, n, _)) = shard else {
        return Err(CliError(format!(
            "error: {} has no records of `nssim run --format json`",
            shown(path)
        )));
    };
    Ok(Shard {
        path: path.to_path_buf(),
        k,
        n,
        entries,
    })
}

/// How entry `e` of a shard is not the run `f` of the shard at `first`
/// lists in its place: another (scenario, kernel), or another origin.
fn not_the_same_run(e: &Entry, f: &Entry, first: &Path) -> Option<String> {
    let (file, kernel) = e.key();
    if e.key() != f.key() {
        let (want_file, want_kernel) = f.key();
        return Some(format!(
            "run {file} [{kernel}] where {} has {want_file} [{want_kernel}]",
            shown(first)
        ));
    }
    let (field, mine, theirs) = e
        .origin()
        .zip(f.origin())
        .and_then(|(a, b)| a.first_difference(b))?;
    Some(format!(
        "{file} [{kernel}] was run with {field} {mine} where {} has {field} {theirs}",
        shown(first)
    ))
}

/// The shards of one run, in shard order: every K of 1..=N once.
fn read_shards(paths: &[PathBuf]) -> Result<Vec<Shard>, CliError> {
    let mut shards = paths
        .iter()
        .map(|p| read_shard(p))
        .collect::<Result<Vec<_>, _>>()?;
    shards.sort_by_key(|s| s.k);
    let n = shards[0].n;
    if let Some(other) = shards.iter().find(|s| s.n != n) {
        return Err(CliError(format!(
            "error: {} is a shard of {} and {} a shard of {n}: not the shards of one run",
            shown(&other.path),
            other.n,
            shown(&shards[0].path)
        )));
    }
    for pair in shards.windows(2) {
        if pair[0].k == pair[1].k {
            return Err(CliError(format!(
                "error: {} and {} are both shard {}/{n}",
                shown(&pair[0].path),
                shown(&pair[1].path),
                pair[0].k
            )));
        }
    }
    if let Some(k) = (1..=n).find(|k| shards.iter().all(|s| s.k != *k)) {
        return Err(CliError(format!(
            "error: shard {k}/{n} is missing: give the outputs of all {n} shards"
        )));
    }
    let first = &shards[0];
    for s in &shards[1..] {
        if s.entries.len() != first.entries.len() {
            return Err(CliError(format!(
                "error: {} lists {} runs and {} lists {}: not the shards of one run",
                shown(&s.path),
                s.entries.len(),
                shown(&first.path),
                first.entries.len()
            )));
        }
        for ((line, e), (_, f)) in s.entries.iter().zip(&first.entries) {
            if let Some(what) = not_the_same_run(e, f, &first.path) {
                return Err(error(
                    &s.path,
                    *line,
                    format!("{what}: not the shards of one run"),
                ));
            }
        }
    }
    Ok(shards)
}

/// The unsharded run's entry of one run, from its shards' entries.
fn combine(entries: &[&Entry]) -> Result<Merged, CliError> {
    if let Entry::Unreadable(u) = entries[0] {
        let mut u = u.clone();
        u.shard = output::shard_text(None);
        return Ok(Merged::Unreadable(u));
    }
    Ok(Merged::Ran(Box::new(combine_runs(entries)?)))
}

/// The unsharded run's record of one run, from its shards' records.
fn combine_runs(entries: &[&Entry]) -> Result<Record, CliError> {
    let ran: Vec<&Record> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Ran(r) => Some(r.as_ref()),
            _ => None,
        })
        .collect();
    let mut merged = match ran.as_slice() {
        [] => {
            let (file, kernel) = entries[0].key();
            return Err(CliError(format!(
                "error: no shard ran {file} [{kernel}]: every output lists it as skipped"
            )));
        }
        several if several.iter().any(|r| r.dfs_shard.is_some()) => combine_dfs(several)?,
        [only] => (*only).clone(),
        several => {
            check_iterations(several)?;
            let failed = |r: &&&Record| r.outcome != sim::Outcome::Pass.kind();
            let reported = several
                .iter()
                .filter(failed)
                .min_by_key(|r| r.iteration)
                .or_else(|| several.iter().max_by_key(|r| r.iteration))
                .expect("several records");
            let mut r = (*reported).clone();
            r.executions = r.iteration + 1;
            r
        }
    };
    merged.shard = output::shard_text(None);
    merged.wall_ms = ran.iter().map(|r| r.wall_ms).sum();
    merged.add_exercised(&ran);
    // Expectations are judged once, on the merged record.
    merged.judge_again();
    Ok(merged)
}

/// Every record of a random or PCT run reports an iteration of its own
/// shard (shard k of n runs the iterations i with i mod n = k - 1), one
/// that a run can reach: the merged run has run that many plus one.
fn check_iterations(shards: &[&Record]) -> Result<(), CliError> {
    for r in shards {
        let (k, n) = parse_shard(&r.shard).expect("checked when read");
        let refused = |why: String| {
            CliError(format!(
                "error: {} [{}]: shard {} reports iteration {}, {why}: not the shards of one run",
                r.file, r.kernel, r.shard, r.iteration
            ))
        };
        let owner = sim::shard_of(r.iteration, n);
        if owner != k {
            return Err(refused(format!("which shard {owner}/{n} runs")));
        }
        // Iterations are numbered below their count, a u64.
        if r.iteration == u64::MAX {
            return Err(refused("past the last a run can have".into()));
        }
    }
    Ok(())
}

/// A dfs run: every shard searched some subtrees of the one search; the
/// unsharded search is made of them, and its record is the one of the
/// shard whose execution it reports (or shard 1's first execution, when
/// the budget ran out), with the search's counts.
fn combine_dfs(shards: &[&Record]) -> Result<Record, CliError> {
    let refused = |what: String| {
        CliError(format!(
            "error: {} [{}]: {what}: not the shards of one run",
            shards[0].file, shards[0].kernel
        ))
    };
    let mut parts = Vec::new();
    for r in shards {
        let Some(part) = &r.dfs_shard else {
            return Err(refused(format!(
                "shard {} has no part of the dfs search",
                r.shard
            )));
        };
        let (k, n) = parse_shard(&r.shard).expect("checked when read");
        if let Some(s) = part
            .subtrees
            .iter()
            .find(|s| sim::shard_of(s.index, n) != k)
        {
            return Err(refused(format!(
                "shard {} lists subtree {}, which is shard {}'s",
                r.shard,
                s.index,
                sim::shard_of(s.index, n)
            )));
        }
        parts.push((k, *r, part));
    }
    let (_, _, first) = parts[0];
    if let Some((k, _, _)) = parts.iter().find(|(_, _, p)| {
        p.iterations != first.iterations || p.expect_exhausted != first.expect_exhausted
    }) {
        return Err(refused(format!(
            "shard {k} searched with another budget or expectation"
        )));
    }
    let counts = parts
        .iter()
        .flat_map(|(_, _, p)| p.subtrees.iter().copied());
    let merged = sim::merge_dfs_shards(first.iterations, counts).map_err(refused)?;
    let n = parts.len() as u64;
    let mut record = match merged.reported {
        sim::Reported::Failure { subtree } | sim::Reported::LastOf { subtree } => {
            let owner = sim::shard_of(subtree, n);
            let (_, r, _) = parts
                .iter()
                .find(|(k, _, _)| *k == owner)
                .expect("every shard");
            (*r).clone()
        }
        sim::Reported::First => {
            let (_, _, part) = parts.iter().find(|(k, _, _)| *k == 1).expect("shard 1");
            let first = part.first.as_ref();
            *first
                .ok_or_else(|| refused("shard 1 has no record of the first execution".into()))?
                .clone()
        }
    };
    record.executions = merged.executions;
    record.exhausted = merged.exhausted;
    record.iteration = merged.iteration;
    record.dfs_shard = None;
    record.judge(first.expect_exhausted);
    Ok(record)
}

pub fn merge(
    paths: &[PathBuf],
    format: Format,
    junit_file: Option<&Path>,
) -> Result<bool, CliError> {
    let shards = read_shards(paths)?;
    let mut records = Vec::new();
    for i in 0..shards[0].entries.len() {
        let entries: Vec<&Entry> = shards.iter().map(|s| &s.entries[i].1).collect();
        records.push(combine(&entries)?);
    }
    let mut cases: Vec<junit::Case> = Vec::new();
    for merged in &records {
        match merged {
            Merged::Ran(r) => {
                output::print_record(r, format);
                cases.push(r.junit_case());
            }
            Merged::Unreadable(u) => {
                if format == Format::Text {
                    eprintln!("{}\n", sim::echo::escape_controls(&u.error));
                }
                output::print_unreadable(u, format);
                cases.push(u.junit_case());
            }
        }
    }
    output::finish(&cases, format, junit_file)
}
