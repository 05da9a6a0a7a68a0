//! Scenario files of nssim: TOML documents that describe one simulated world
//! (user namespaces, sysctls, tasks and the operations they perform), the
//! kernel profiles to run it on, and the outcome expected on each.
//!
//! [`parse`] and [`load`] turn a file into a checked [`Scenario`]: every name
//! is validated against [`kernel::catalog`], every number against its range,
//! and the world becomes a plain-data [`kernel::setup::Setup`]. Problems are
//! reported as a [`ScenarioError`] that names the file, the 1-based line and
//! column of the offending token and what was expected there, and renders
//! like a rustc diagnostic. No input makes the parser panic.
//!
//! The format is described in `docs/scenario-format.md`.
//!
//! ```
//! let text = r#"
//! name = "smoke"
//! summary = "one unshare"
//! [[task]]
//! name = "t"
//! ops = ["unshare(CLONE_NEWIPC)"]
//! [[kernel]]
//! profile = "v6.3"
//! expect = "pass"
//! "#;
//! let s = scenario::parse("smoke.toml", text).unwrap();
//! assert_eq!(s.runs[0].label, "v6.3");
//! assert_eq!(s.runs[0].explore, scenario::Explore::default());
//!
//! let err = scenario::parse("smoke.toml", &text.replace("v6.3", "v9.9")).unwrap_err();
//! assert_eq!((err.line, err.column), (Some(8), Some(11)));
//! assert!(err.to_string().contains("unknown kernel profile `v9.9`"));
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

mod check;
mod duration;
mod error;
pub mod gen;
mod ops;
mod strings;
mod suggest;
mod tables;

pub use check::FORMAT_KEYS;
pub use duration::{format_duration, parse_duration};
pub use error::ScenarioError;
pub use ops::signature as op_signature;
pub use suggest::did_you_mean;
pub use tables::reference_tables;

/// A checked scenario file.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The path as given to [`load`] (or the display name given to [`parse`]).
    pub path: PathBuf,
    pub name: String,
    pub summary: String,
    /// The file text.
    pub source: String,
    /// Invariants to check, in [`kernel::catalog::INVARIANTS`] order: those
    /// the file names, or all of them when it names none.
    pub invariants: Vec<String>,
    /// Cost-table overrides (name, nanoseconds), in file order.
    pub costs: Vec<(String, u64)>,
    /// User namespaces, sysctls (first `[sysctl]` in user namespace `init`,
    /// then those of each `[[userns]]` in order) and tasks.
    pub setup: kernel::setup::Setup,
    /// One run per `[[kernel]]`, in file order.
    pub runs: Vec<KernelRun>,
}

impl Scenario {
    /// A hash of what an execution of this scenario depends on: its set-up,
    /// invariants, cost table and kernel runs (profile, patches, label),
    /// but not its comments, summary, expectations or `[explore]` settings
    /// (a token carries its own). Tokens carry it, so that a replay can
    /// tell that the scenario changed since the token was made.
    pub fn content_hash(&self) -> sim::ContentHash {
        sim::ContentHash::Digest(content_digest(self.content_text().as_bytes()))
    }

    /// A digest of everything the scenario says about its runs: its content
    /// ([`Scenario::content_text`]) and each entry's expectation and
    /// exploration. Shards of one run have the same (`nssim merge`).
    pub fn definition_digest(&self) -> u128 {
        let text = format!("{:?}", (self.content_text(), &self.runs));
        content_digest(text.as_bytes())
    }

    /// The text [`Scenario::content_hash`] digests (and a token of format
    /// 3 hashed with FNV-1a).
    pub fn content_text(&self) -> String {
        let runs: Vec<_> = self
            .runs
            .iter()
            .map(|r| (&r.profile, &r.patches, &r.label))
            .collect();
        // Debug of these types is deterministic: vectors and B-tree maps.
        format!("{:?}", (&self.setup, &self.invariants, &self.costs, runs))
    }
}

/// The first 128 bits of the SHA-256 of `bytes`: what a token carries of a
/// scenario's content, which no one can make a second content match.
pub fn content_digest(bytes: &[u8]) -> u128 {
    use sha2::Digest;
    let sum = sha2::Sha256::digest(bytes);
    let mut first = [0u8; 16];
    first.copy_from_slice(&sum[..16]);
    u128::from_be_bytes(first)
}

#[cfg(test)]
mod digest_tests {
    use super::content_digest;

    #[test]
    fn the_content_digest_is_the_first_half_of_sha_256() {
        // The FIPS 180-2 example: SHA-256("abc") = ba7816bf 8f01cfea ...
        assert_eq!(
            content_digest(b"abc"),
            0xba78_16bf_8f01_cfea_4141_40de_5dae_2223
        );
        assert_ne!(content_digest(b"max = 3"), content_digest(b"max = 300"));
    }
}

/// One `[[kernel]]` entry: a kernel to run the scenario on and the outcome
/// expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelRun {
    /// A name from [`kernel::catalog::PROFILES`].
    pub profile: String,
    /// Patches switched on or off relative to the profile, in file order.
    pub patches: Vec<PatchToggle>,
    /// Unique within the scenario; defaults to the profile followed by the
    /// toggles as written, e.g. `v6.3-ipc-batch-free`.
    pub label: String,
    pub expect: Expect,
    /// `[explore]` merged with this kernel's `explore` overrides, defaults
    /// filled in.
    pub explore: Explore,
}

impl KernelRun {
    /// Its patch toggles as `kernel::resolve_patches` takes them: (name,
    /// on), in file order.
    pub fn toggles(&self) -> Vec<(String, bool)> {
        self.patches
            .iter()
            .map(|p| (p.name.clone(), p.enable))
            .collect()
    }
}

/// `+name` (enable) or `-name` (disable) a patch of [`kernel::catalog::PATCHES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchToggle {
    pub name: String,
    pub enable: bool,
}

/// The outcome a run is expected to have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    pub outcome: ExpectedOutcome,
    /// The violated invariant; `Some` exactly when `outcome` is
    /// [`ExpectedOutcome::Violation`].
    pub invariant: Option<String>,
    /// Syscall results the reported execution must show, from
    /// `results = { task = { op = "EPERM" } }`.
    pub results: Vec<ExpectedResult>,
    /// `exhausted = true`: the exhaustive search (`dfs`) must explore every
    /// schedule within its bounds, so that `pass` proves the absence of a
    /// failure there rather than reporting none found so far.
    pub exhausted: bool,
    /// `bug = "..."`: the expected results show a kernel bug (a wrong
    /// errno or count where the outcome passes): what it is. Such an
    /// entry counts as failing where the bug history looks.
    pub bug: Option<String>,
}

impl Expect {
    /// Does the entry show a bug: a failing outcome, or results marked as
    /// a bug's?
    pub fn shows_bug(&self) -> bool {
        self.outcome != ExpectedOutcome::Pass || self.bug.is_some()
    }
}

/// The calls of operation `op` by (every instance of) task `task`, at
/// least one, returned results among `results` (`ok` or errno names): all
/// of them (`"EPERM"`, `"EPERM or EACCES"`), at least one (`"some
/// ENOSPC"`), or none (`"not EPERM"`), as `quantifier` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedResult {
    pub task: String,
    /// An operation name (`write_uid_map`) or a full result label
    /// (`unshare(CLONE_NEWIPC)`).
    pub op: String,
    /// The results named, one or more (`"EPERM or EACCES"`).
    pub results: Vec<String>,
    pub quantifier: Quantifier,
    /// `{ values = [...] }`: what the calls reported, in call order (the
    /// SEQNUM a listener received, the sequence number an injection got).
    pub values: Option<Vec<u64>>,
    /// `{ calls = ["EPERM", "ok"] }`: the results of the first calls, in
    /// call order (at most [`kernel::SyscallStats::FIRST_RESULTS_KEPT`]).
    pub calls: Option<Vec<String>>,
    /// `{ words = ["add", "remove"] }`: what the calls reported as words,
    /// in call order (the ACTION of each received uevent).
    pub texts: Option<Vec<String>>,
}

/// How many of the calls must have returned one of the results named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantifier {
    /// Every call (`"EPERM"`, `"EPERM or EACCES"`).
    Every,
    /// At least one (`"some ENOSPC"`).
    Some,
    /// None (`"not EPERM"`).
    No,
}

impl ExpectedResult {
    /// The expectation as a scenario writes it: `some ENOSPC`, `not
    /// EPERM`, `EPERM or EACCES`.
    pub fn written(&self) -> String {
        let prefix = match self.quantifier {
            Quantifier::Every => "",
            Quantifier::Some => "some ",
            Quantifier::No => "not ",
        };
        format!("{prefix}{}", self.results.join(" or "))
    }

    /// Whether calls that returned `got` (result → count) are as expected.
    pub fn holds_for(&self, got: &std::collections::BTreeMap<String, u64>) -> bool {
        let named = |r: &String| self.results.contains(r);
        !got.is_empty()
            && match self.quantifier {
                Quantifier::Every => got.keys().all(named),
                Quantifier::Some => got.keys().any(named),
                Quantifier::No => !got.keys().any(named),
            }
    }

    /// Whether calls whose first results were `got`, in call order, are
    /// as `calls` expects: they begin with the results it lists.
    pub fn calls_hold_for(&self, got: &[String]) -> bool {
        self.calls
            .as_ref()
            .is_none_or(|want| got.len() >= want.len() && got[..want.len()] == want[..])
    }

    /// Whether a result label (`unshare(CLONE_NEWIPC)`) is one of `op`'s.
    pub fn matches_label(&self, label: &str) -> bool {
        label == self.op
            || label
                .strip_prefix(self.op.as_str())
                .is_some_and(|rest| rest.starts_with('('))
    }

    /// Whether a task instance name (`looper`, `looper.3`) is `task`'s.
    pub fn matches_task(&self, name: &str) -> bool {
        name == self.task
            || name
                .strip_prefix(self.task.as_str())
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
    }
}

/// Outcome of exploring a scenario on one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExpectedOutcome {
    /// Every explored schedule satisfied every invariant.
    Pass,
    /// Some schedule violated an invariant.
    Violation,
    /// Some schedule deadlocked.
    Deadlock,
    /// Some schedule hit a kernel `BUG()`.
    Panic,
    /// Some schedule touched a freed object.
    UseAfterFree,
    /// Some schedule hit `max_steps` or `max_virtual_time`.
    Limit,
}

impl ExpectedOutcome {
    /// All outcomes, in declaration order.
    pub const ALL: [ExpectedOutcome; 6] = [
        ExpectedOutcome::Pass,
        ExpectedOutcome::Violation,
        ExpectedOutcome::Deadlock,
        ExpectedOutcome::Panic,
        ExpectedOutcome::UseAfterFree,
        ExpectedOutcome::Limit,
    ];

    /// `"pass"`, `"violation"`, `"deadlock"`, `"panic"`, `"use-after-free"`
    /// or `"limit"`, as written in scenario files.
    pub fn as_str(&self) -> &'static str {
        match self {
            ExpectedOutcome::Pass => "pass",
            ExpectedOutcome::Violation => "violation",
            ExpectedOutcome::Deadlock => "deadlock",
            ExpectedOutcome::Panic => "panic",
            ExpectedOutcome::UseAfterFree => "use-after-free",
            ExpectedOutcome::Limit => "limit",
        }
    }
}

impl fmt::Display for ExpectedOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ExpectedOutcome {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        ExpectedOutcome::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown outcome `{s}` (expected one of: pass, violation, deadlock, panic, use-after-free, limit)"
                )
            })
    }
}

/// Exploration strategy.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum StrategyName {
    /// Uniformly random scheduling choices.
    #[default]
    Random,
    /// Probabilistic concurrency testing with `pct_depth` priority changes.
    Pct,
    /// Depth-first enumeration of schedules, bounded by `preemption_bound`.
    Dfs,
    /// Random, but never starving a runnable task.
    Fair,
}

impl StrategyName {
    /// All strategies, in declaration order.
    pub const ALL: [StrategyName; 4] = [
        StrategyName::Random,
        StrategyName::Pct,
        StrategyName::Dfs,
        StrategyName::Fair,
    ];

    /// `"random"`, `"pct"`, `"dfs"` or `"fair"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            StrategyName::Random => "random",
            StrategyName::Pct => "pct",
            StrategyName::Dfs => "dfs",
            StrategyName::Fair => "fair",
        }
    }
}

impl fmt::Display for StrategyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for StrategyName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        StrategyName::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| {
                format!("unknown strategy `{s}` (expected one of: random, pct, dfs, fair)")
            })
    }
}

/// How to explore the schedules of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Explore {
    pub strategy: StrategyName,
    pub seed: u64,
    /// Number of schedules to try, 1..=1_000_000_000.
    pub iterations: u64,
    /// PCT's bug depth, 1..=64.
    pub pct_depth: u32,
    /// DFS's bound on preemptions, 0..=64.
    pub preemption_bound: u32,
    /// Virtual CPUs, 1..=1024.
    pub cpus: u32,
    /// Scheduling steps per schedule before it counts as outcome `limit`,
    /// 1..=10^12.
    pub max_steps: u64,
    /// Virtual time per schedule before it counts as outcome `limit`.
    pub max_virtual_ns: u64,
}

impl Default for Explore {
    fn default() -> Self {
        Explore {
            strategy: StrategyName::Random,
            seed: 1,
            iterations: 100,
            pct_depth: 3,
            preemption_bound: 2,
            cpus: 2,
            max_steps: 10_000_000,
            max_virtual_ns: 3_600_000_000_000,
        }
    }
}

/// Parses and checks scenario `text`. `file` is the name used in errors and
/// as [`Scenario::path`].
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    check::scenario(file, text)
}

/// Like [`parse`], for raw bytes: text that is not UTF-8 is reported with
/// the line and column of the first invalid byte.
pub fn parse_bytes(file: &str, bytes: &[u8]) -> Result<Scenario, ScenarioError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse(file, text),
        Err(e) => {
            let at = e.valid_up_to();
            let byte = bytes.get(at).copied().unwrap_or(0);
            // Identical to `bytes` up to `at`, where U+FFFD stands for the
            // invalid byte in the rendered line.
            let lossy = String::from_utf8_lossy(bytes);
            let mut err = ScenarioError::at(
                file,
                &lossy,
                at..at + '\u{fffd}'.len_utf8(),
                format!("not UTF-8 text: invalid byte 0x{byte:02x} at byte offset {at}"),
            )
            .with_expected("UTF-8 text");
            err.set_span(at..at + e.error_len().unwrap_or(1));
            Err(err)
        }
    }
}

/// Reads and parses the scenario file at `path`. Read errors are
/// [`ScenarioError`]s without a position.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let bytes = sim::input::read_input(path)
        .map_err(|e| ScenarioError::new(&file, format!("cannot read scenario file: {e}")))?;
    let mut scenario = parse_bytes(&file, &bytes)?;
    scenario.path = path.to_path_buf();
    Ok(scenario)
}

/// The subdirectory of a scenario directory that holds its regressions:
/// scenarios each kept from a defect found and fixed, run with the others.
pub const REGRESSIONS: &str = "regressions";

/// The scenario files named by `paths`: files as given (whatever their
/// extension), directories expanded to the `*.toml` files directly in them
/// and in their [`REGRESSIONS`] subdirectory (no deeper), sorted by their
/// path below the directory. A path that does not exist, and a directory
/// without `*.toml` files, are errors.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ScenarioError> {
    let mut out = Vec::new();
    for path in paths {
        let file = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|e| {
            let what = if e.kind() == std::io::ErrorKind::NotFound {
                "no such file or directory".to_string()
            } else {
                format!("cannot read: {e}")
            };
            ScenarioError::new(&file, what)
        })?;
        if !meta.is_dir() {
            out.push(path.clone());
            continue;
        }
        let mut found = toml_files_in(path, &file)?;
        let regressions = path.join(REGRESSIONS);
        if regressions.is_dir() {
            found.extend(toml_files_in(&regressions, &file)?);
        }
        if found.is_empty() {
            return Err(ScenarioError::new(
                &file,
                "no scenario files (*.toml) in this directory",
            ));
        }
        found.sort_by(|a, b| a.strip_prefix(path).ok().cmp(&b.strip_prefix(path).ok()));
        out.extend(found);
    }
    Ok(out)
}

/// The `*.toml` files directly in `dir` (`file`: how errors name it).
fn toml_files_in(dir: &Path, file: &str) -> Result<Vec<PathBuf>, ScenarioError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| ScenarioError::new(file, format!("cannot read directory: {e}")))?;
    let mut found = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| ScenarioError::new(file, format!("cannot read directory: {e}")))?;
        let p = entry.path();
        let is_toml = p.extension().is_some_and(|x| x == "toml");
        if is_toml && std::fs::metadata(&p).is_ok_and(|m| m.is_file()) {
            found.push(p);
        }
    }
    Ok(found)
}
