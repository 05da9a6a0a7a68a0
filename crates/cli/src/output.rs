//! What `nssim` prints.

use crate::junit;
use crate::options::Format;
use kernel::{catalog, ActivePatches, Results};
use scenario::{Expect, Scenario};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sim::{ExecReport, ShrinkReport};
use std::collections::BTreeMap;

/// One (scenario, kernel) run as `--format json` prints it, field for
/// field: the text record and the JUnit case are made from it, so that
/// `nssim merge` prints a run from its JSON exactly as the run did.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub scenario: String,
    pub file: String,
    pub kernel: String,
    pub profile: String,
    pub patches: Vec<String>,
    pub strategy: String,
    pub seed: u64,
    pub outcome: String,
    pub invariant: Option<String>,
    /// The outcome in words, for a failure.
    pub detail: Option<String>,
    pub expected: Option<String>,
    pub expected_invariant: Option<String>,
    pub as_expected: bool,
    pub executions: u64,
    pub exhausted: bool,
    /// A stateful dfs search (`--no-reduction`): the distinct states it
    /// explored, each once (absent for every other search).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<u64>,
    /// A dfs search without a preemption bound (`preemption_bound =
    /// "none"`): exhausted, it searched every interleaving.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unbounded: bool,
    pub shrink: Option<ShrinkReport>,
    pub steps: u64,
    pub virtual_ns: u64,
    pub token: String,
    pub trace_hash: String,
    pub results: BTreeMap<String, BTreeMap<String, OpRecord>>,
    pub result_mismatches: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// `K/N`: the shard that ran it (`1/1` unsharded).
    pub shard: String,
    /// The reported execution's index in the whole run's order: the
    /// iteration of a random or PCT run, the execution of a dfs run.
    pub iteration: u64,
    /// A shard's part of a dfs search (absent unsharded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dfs_shard: Option<DfsShardRecord>,
    /// A shard's part of a run split over the shards: `as_expected` says
    /// only that nothing in it is wrong whatever the other shards hold;
    /// the run's expectation is judged by `nssim merge`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub judged_when_merged: bool,
    pub origin: RunOrigin,
    /// Wall-clock milliseconds the run took (the only field that differs
    /// between two runs of the same command; merged, the shards' sum).
    pub wall_ms: u64,
    /// What a pass exercised: whether each task instance had a call
    /// succeed in some execution (empty for a run that did not pass, and
    /// for a dfs search its budget cut).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub succeeded: BTreeMap<String, bool>,
    /// What a pass exercised of its invariants: whether each judged a
    /// call in some execution (empty where `succeeded` is). Whether, not
    /// how many: a state cache cuts executions short where a dfs search
    /// was before, differently when it is split over shards.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub judged: BTreeMap<String, bool>,
}

/// What makes the records of several shards parts of one run: `nssim
/// merge` refuses records whose origins differ, naming the first field
/// that does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunOrigin {
    /// The version of nssim that made the record.
    pub nssim: String,
    /// A digest of the scenario: its content, expectations and
    /// explorations (`Scenario::definition_digest`).
    pub scenario: String,
    /// The exploration the run made: the entry's, with the command line's
    /// overrides.
    pub explore: scenario::Explore,
    /// The command line's patch toggles (`+NAME`, `-NAME`).
    pub patch_toggles: Vec<String>,
    pub reduction: bool,
    pub state_cache: bool,
    pub shrink: bool,
}

impl RunOrigin {
    /// The first field in which `other` differs, a nested one named by its
    /// own key (`seed`): its name and both values.
    pub fn first_difference(&self, other: &RunOrigin) -> Option<(String, String, String)> {
        first_difference(&json!(self), &json!(other))
    }
}

/// The first leaf field of `a` (an object, its keys in order) whose value
/// in `b` differs.
fn first_difference(a: &Value, b: &Value) -> Option<(String, String, String)> {
    let (Value::Object(mine), Value::Object(theirs)) = (a, b) else {
        return None;
    };
    mine.iter().find_map(|(field, value)| {
        let other = theirs.get(field).unwrap_or(&Value::Null);
        match (value, other) {
            (Value::Object(_), Value::Object(_)) => first_difference(value, other),
            _ => (value != other).then(|| (field.clone(), value.to_string(), other.to_string())),
        }
    })
}

/// What a shard's record of a dfs run carries for `nssim merge`: its
/// subtrees of the search (`sim::merge_dfs_shards` makes the unsharded
/// search of them) and, in shard 1, the record of the search's first
/// execution, which the unsharded run reports when its budget runs out.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DfsShardRecord {
    /// The run's budget of executions.
    pub iterations: u64,
    /// The run expects its search exhausted: judged once merged.
    pub expect_exhausted: bool,
    pub subtrees: Vec<sim::SubtreeCount>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<Box<Record>>,
}

/// One op's results in a run record.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpRecord {
    pub calls: u64,
    pub results: BTreeMap<String, u64>,
    pub first_failure: Option<u64>,
    pub values: Vec<u64>,
    /// The words the calls reported (a received uevent's ACTION).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub texts: Vec<String>,
}

/// A run another shard makes, as a shard's JSON lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkippedRecord {
    pub scenario: String,
    pub file: String,
    pub kernel: String,
    pub shard: String,
    pub skipped: bool,
    pub reason: String,
    pub origin: RunOrigin,
}

/// A scenario file that could not be read, as JSON lists it (and JUnit,
/// as a failed test case): every shard lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnreadableRecord {
    pub file: String,
    pub unreadable: bool,
    pub error: String,
    pub as_expected: bool,
    pub shard: String,
}

impl UnreadableRecord {
    pub fn new(path: &std::path::Path, error: &str, shard: Option<(u64, u64)>) -> Self {
        UnreadableRecord {
            file: path.display().to_string(),
            unreadable: true,
            error: error.to_string(),
            as_expected: false,
            shard: shard_text(shard),
        }
    }

    /// The file as JUnit lists it: a failed test case named after it.
    pub fn junit_case(&self) -> junit::Case {
        junit::Case {
            scenario: self.file.clone(),
            kernel: "unreadable".into(),
            wall_ms: 0,
            passed: false,
            skipped: None,
            message: self.error.lines().next().unwrap_or_default().to_string(),
            details: self.error.clone(),
        }
    }
}

/// Why a shard skips a run.
pub const NOT_IN_THIS_SHARD: &str = "not in this shard";

/// `(k, n)` as records write it.
pub fn shard_text(shard: Option<(u64, u64)>) -> String {
    let (k, n) = shard.unwrap_or((1, 1));
    format!("{k}/{n}")
}

/// The outcome of one (scenario, kernel) run, ready to print.
pub struct RunRecord {
    pub as_expected: bool,
    pub record: Record,
}

fn results_record(results: &Results) -> BTreeMap<String, BTreeMap<String, OpRecord>> {
    results
        .iter()
        .map(|(task, ops)| {
            let ops = ops
                .iter()
                .map(|(op, stats)| {
                    let r = OpRecord {
                        calls: stats.calls,
                        results: stats.results.clone(),
                        first_failure: stats.first_failure,
                        values: stats.values.clone(),
                        texts: stats.texts.clone(),
                    };
                    (op.clone(), r)
                })
                .collect();
            (task.clone(), ops)
        })
        .collect()
}

fn results_text(results: &BTreeMap<String, BTreeMap<String, OpRecord>>) -> String {
    let mut lines = Vec::new();
    for (task, ops) in results {
        for (op, stats) in ops {
            let summary = kernel::results_summary(&stats.results, stats.first_failure);
            let values = if stats.values.is_empty() {
                String::new()
            } else {
                let v: Vec<String> = stats.values.iter().map(u64::to_string).collect();
                format!("; values {}", v.join(", "))
            };
            let texts = if stats.texts.is_empty() {
                String::new()
            } else {
                format!("; words {}", stats.texts.join(", "))
            };
            lines.push(format!("    {task}: {op}: {summary}{values}{texts}"));
        }
    }
    lines.join("\n")
}

/// Where a record's run sits in the whole run, and which run it is.
#[derive(Debug, Clone)]
pub struct Place {
    pub shard: Option<(u64, u64)>,
    pub iteration: u64,
    pub origin: RunOrigin,
}

impl RunRecord {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        sc: &Scenario,
        label: &str,
        patches: &ActivePatches,
        strategy: &str,
        seed: u64,
        expect: Option<&Expect>,
        executions: u64,
        exhausted: bool,
        shrink: Option<ShrinkReport>,
        report: &ExecReport,
        token: String,
        results: &Results,
        place: Place,
    ) -> RunRecord {
        let outcome = &report.outcome;
        let mismatches = expect.map_or_else(Vec::new, |e| result_mismatches(&e.results, results));
        let mut record = Record {
            scenario: sc.name.clone(),
            file: sc.path.display().to_string(),
            kernel: label.to_string(),
            profile: patches.profile.to_string(),
            patches: patches.names().iter().map(|p| p.to_string()).collect(),
            strategy: strategy.to_string(),
            seed,
            outcome: outcome.kind().to_string(),
            invariant: outcome.invariant().map(str::to_string),
            detail: outcome.is_failure().then(|| outcome.to_string()),
            expected: expect.map(|e| e.outcome.as_str().to_string()),
            expected_invariant: expect.and_then(|e| e.invariant.clone()),
            as_expected: false,
            executions,
            exhausted,
            states: None,
            unbounded: false,
            shrink,
            steps: report.steps,
            virtual_ns: report.virtual_ns,
            token,
            trace_hash: format!("{:016x}", report.trace_hash),
            results: results_record(results),
            result_mismatches: mismatches,
            notes: Vec::new(),
            shard: shard_text(place.shard),
            iteration: place.iteration,
            dfs_shard: None,
            judged_when_merged: false,
            origin: place.origin,
            wall_ms: 0,
            succeeded: BTreeMap::new(),
            judged: BTreeMap::new(),
        };
        record.judge(expect.is_some_and(|e| e.exhausted));
        RunRecord {
            as_expected: record.as_expected,
            record,
        }
    }

    /// What the run exercised: whether each task had a call succeed in
    /// some execution, and the calls each invariant judged. A pass in
    /// which no call succeeded, or whose invariants judged none, tested
    /// nothing, unless the entry's `results` say that is what it shows.
    pub fn with_exercised(
        mut self,
        expect: Option<&Expect>,
        exercised: kernel::Exercised,
    ) -> RunRecord {
        if !self.record.counts_calls() {
            return self;
        }
        self.record.succeeded = exercised.succeeded;
        self.record.judged = exercised.judged;
        let listed_results = expect.is_some_and(|e| !e.results.is_empty());
        if let Some(why) = self.record.nothing_tested().filter(|_| !listed_results) {
            self.record.result_mismatches.push(why);
            self.record.judge_again();
            self.as_expected = self.record.as_expected;
        }
        self
    }

    /// Add notes on what the run could not do in time.
    pub fn with_notes(mut self, notes: Vec<String>) -> RunRecord {
        self.record.notes = notes;
        self
    }

    /// The distinct states of a stateful search.
    pub fn with_states(mut self, states: Option<u64>) -> RunRecord {
        self.record.states = states;
        self
    }

    /// Whether the run was a dfs search without a preemption bound.
    pub fn with_strategy(mut self, strategy: &sim::StrategySpec) -> RunRecord {
        self.record.unbounded = matches!(
            strategy,
            sim::StrategySpec::Dfs {
                preemption_bound: sim::limits::UNBOUNDED
            }
        );
        self
    }

    /// The record as the text output prints it.
    pub fn text(&self) -> String {
        self.record.text()
    }

    /// This run as a JUnit test case.
    pub fn junit_case(&self) -> junit::Case {
        self.record.junit_case()
    }
}

/// How the mismatch of a pass that tested nothing begins.
const NOTHING_TESTED: &str = "nothing was tested";

/// How the mismatch of a search expected exhausted begins.
const NOT_EXHAUSTED: &str = "the search was not exhausted";

impl Record {
    /// Judge the record against its expectation, `expect_exhausted`
    /// included (again, when `nssim merge` made its counts): a mismatch
    /// of an unexhausted search is made from them.
    pub fn judge(&mut self, expect_exhausted: bool) {
        self.judged_when_merged = false;
        self.result_mismatches
            .retain(|m| !m.starts_with(NOT_EXHAUSTED));
        if expect_exhausted && !self.exhausted {
            let timed_out = self
                .detail
                .as_deref()
                .is_some_and(|d| d.contains("wall-time limit (--timeout)"));
            let why = match self.strategy.as_str() {
                "dfs" if timed_out => format!(
                    "the --timeout deadline stopped the search after {} executions, before every schedule within the bounds was explored (raise --timeout)",
                    self.executions
                ),
                "dfs" => format!(
                    "{} executions reached the iteration limit before every schedule within the bounds was explored (raise `iterations`)",
                    self.executions
                ),
                other => format!(
                    "the entry expects its exhaustive (dfs) search to finish, and a {other} run never exhausts one (run it without --strategy)"
                ),
            };
            self.result_mismatches
                .push(format!("{NOT_EXHAUSTED}: {why}"));
        }
        // A run without an expectation (a kernel the file does not list)
        // is as expected only when it passes: a violation there is a claim
        // about that kernel, which a dashboard must show.
        let pass = sim::Outcome::Pass.kind();
        self.as_expected = self.result_mismatches.is_empty()
            && *self.expected.as_deref().unwrap_or(pass) == self.outcome
            && self
                .expected_invariant
                .as_ref()
                .is_none_or(|i| Some(i) == self.invariant.as_ref());
    }

    /// Judge a record read back (a shard's, for `nssim merge`) anew: its
    /// `as_expected` is made from its outcome and expectation, never
    /// taken from the file. Whether the search had to be exhausted is
    /// what its own mismatches say.
    pub fn judge_again(&mut self) {
        let expect_exhausted = self
            .result_mismatches
            .iter()
            .any(|m| m.starts_with(NOT_EXHAUSTED));
        self.judge(expect_exhausted);
    }

    /// Attach a dfs shard's part of the search (judged as a part).
    pub fn with_dfs_shard(mut self, part: DfsShardRecord) -> Record {
        self.dfs_shard = Some(part);
        self.judge_as_shard_part();
        self
    }

    /// Judge a shard's part of a run split over the shards: it is wrong
    /// whatever the other shards hold only when it found a failure where
    /// the entry expects a pass. Whether an expected failure was found,
    /// which execution the run reports (and so its results) and whether a
    /// search was exhausted are the merged run's (`nssim merge` judges
    /// it).
    pub fn judge_as_shard_part(&mut self) {
        let pass = sim::Outcome::Pass.kind();
        self.judged_when_merged = true;
        self.as_expected = !(self.expected.as_deref() == Some(pass) && self.outcome != pass);
    }

    /// Why a pass tested nothing, if it did not: no call of any task
    /// succeeded in any execution (a user namespace with a uid map and no
    /// gid map gets EPERM everywhere), or its invariants judged no call.
    fn nothing_tested(&self) -> Option<String> {
        if self.outcome != sim::Outcome::Pass.kind() {
            return None;
        }
        self.no_call_succeeded()
            .or_else(|| self.no_invariant_judged())
    }

    /// The invariants' part of [`Record::nothing_tested`]: every invariant
    /// of the run judged no call (none of the calls it asserts about was
    /// made, or got as far as what it asserts).
    fn no_invariant_judged(&self) -> Option<String> {
        if self.judged.is_empty() || self.judged.values().any(|judged| *judged) {
            return None;
        }
        let names: Vec<&str> = self.judged.keys().map(String::as_str).collect();
        Some(format!(
            "{NOTHING_TESTED}: {} judged no call in any of the {} execution(s): none of the calls {} about was made, or got as far as what {} (a `results` expectation says when that is what the entry shows)",
            names.join(", "),
            self.executions,
            if names.len() == 1 { "it is" } else { "they are" },
            if names.len() == 1 { "it asserts" } else { "they assert" },
        ))
    }

    fn no_call_succeeded(&self) -> Option<String> {
        if self.succeeded.is_empty() || self.succeeded.values().any(|ok| *ok) {
            return None;
        }
        let mut failures: BTreeMap<&str, u64> = BTreeMap::new();
        for stats in self.results.values().flat_map(|ops| ops.values()) {
            for (result, n) in &stats.results {
                *failures.entry(result).or_default() += n;
            }
        }
        let counts: Vec<String> = failures.iter().map(|(e, n)| format!("{n} {e}")).collect();
        Some(format!(
            "{NOTHING_TESTED}: no call of any task succeeded in any of the {} execution(s) (the reported one: {}), so no invariant had a call to judge (a `results` expectation says when that is what the entry shows)",
            self.executions,
            counts.join(", ")
        ))
    }

    /// Whether what the run exercised is told exactly: only a pass
    /// ran every execution of its budget, and only a dfs search that was
    /// exhausted ran no more (a run that stops at a failure, or a dfs
    /// search at its budget, may have run others beside it on other
    /// threads, and `--jobs` must not change a record).
    fn counts_calls(&self) -> bool {
        let cut_dfs = self.strategy == "dfs" && !self.exhausted;
        self.outcome == sim::Outcome::Pass.kind() && !cut_dfs
    }

    /// Merged shards: what they exercised together, and whether that was
    /// nothing (each shard judged only its own executions).
    pub fn add_exercised(&mut self, parts: &[&Record]) {
        let mut all = kernel::Exercised::default();
        if self.counts_calls() {
            for part in parts {
                for (task, ok) in &part.succeeded {
                    *all.succeeded.entry(task.clone()).or_default() |= ok;
                }
                for (invariant, judged) in &part.judged {
                    *all.judged.entry(invariant.clone()).or_default() |= judged;
                }
            }
        }
        self.succeeded = all.succeeded;
        self.judged = all.judged;
        if self.nothing_tested().is_none() {
            self.result_mismatches
                .retain(|m| !m.starts_with(NOTHING_TESTED));
        }
    }

    fn expectation(&self) -> String {
        match (&self.expected, &self.expected_invariant) {
            (Some(e), Some(i)) => format!("expected {e} of {i}"),
            (Some(e), None) => format!("expected {e}"),
            (None, _) => "not listed in the file: expected pass".into(),
        }
    }

    /// The record as the text output prints it.
    pub fn text(&self) -> String {
        let mark = if self.as_expected { "ok  " } else { "FAIL" };
        let states_note = match self.states {
            None => String::new(),
            Some(0) => " (the model named no state)".to_string(),
            Some(n) => format!(" ({n} distinct states)"),
        };
        let exhausted_note = match (self.exhausted, self.unbounded) {
            (true, true) => ", search exhausted without a preemption bound",
            (true, false) => ", search exhausted",
            (false, _) => "",
        };
        let mut text = format!(
            "{mark} {} [{}] {} ({}) after {} execution(s){states_note} of {} seed {}{exhausted_note}; {} steps, {} virtual",
            self.scenario,
            self.kernel,
            self.outcome,
            self.expectation(),
            self.executions,
            self.strategy,
            self.seed,
            self.steps,
            scenario::format_duration(self.virtual_ns),
        );
        if let Some(detail) = &self.detail {
            text.push_str(&format!("\n    {detail}"));
        }
        let differs = if self.judged_when_merged {
            "this part differs from the expectation"
        } else {
            "not as expected"
        };
        for m in &self.result_mismatches {
            text.push_str(&format!("\n    {differs}: {m}"));
        }
        if self.judged_when_merged {
            text.push_str(&format!(
                "\n    shard {} of a run split over the shards: its expectation is judged by `nssim merge`",
                self.shard
            ));
        }
        if let Some(s) = &self.shrink {
            text.push_str(&format!(
                "\n    shrunk from {} steps ({} preemptions) to {} steps ({} preemptions) in {} executions",
                s.steps_before, s.preemptions_before, s.steps_after, s.preemptions_after, s.attempts
            ));
            if s.stopped_at_deadline {
                text.push_str(
                    ", stopped at the --timeout deadline: the shortest schedule found by then",
                );
            }
        }
        let res = results_text(&self.results);
        if !res.is_empty() {
            text.push('\n');
            text.push_str(&res);
        }
        let unjudged: Vec<&str> = (self.judged.values().any(|judged| *judged))
            .then(|| self.judged.iter().filter(|(_, judged)| !**judged))
            .into_iter()
            .flatten()
            .map(|(name, _)| name.as_str())
            .collect();
        if !unjudged.is_empty() {
            text.push_str(&format!(
                "\n    not exercised: {} (no call they judge was made, or got as far as what they assert)",
                unjudged.join(", ")
            ));
        }
        for n in &self.notes {
            text.push_str(&format!("\n    note: {n}"));
        }
        if let Some(part) = &self.dfs_shard {
            text.push_str(&format!(
                "\n    shard {}: {} subtree(s) of the dfs search; `nssim merge` of every shard's JSON judges the whole search",
                self.shard,
                part.subtrees.len()
            ));
        }
        text.push_str(&format!(
            "\n    token {}\n    replay: nssim replay {} {}",
            self.token,
            crate::error::shown(std::path::Path::new(&self.file)),
            self.token
        ));
        text
    }

    /// This run as a JUnit test case.
    pub fn junit_case(&self) -> junit::Case {
        junit::Case {
            scenario: self.scenario.clone(),
            kernel: self.kernel.clone(),
            wall_ms: self.wall_ms,
            passed: self.as_expected,
            skipped: None,
            message: format!(
                "{} ({})",
                self.detail.as_deref().unwrap_or(&self.outcome),
                self.expectation()
            ),
            details: format!(
                "token {}\nreplay: nssim replay {} {}",
                self.token, self.file, self.token
            ),
        }
    }

    /// The record as `--format json` prints it.
    pub fn json(&self) -> Value {
        serde_json::to_value(self).expect("a record is plain data")
    }
}

impl SkippedRecord {
    pub fn new(
        sc: &Scenario,
        label: &str,
        shard: Option<(u64, u64)>,
        origin: RunOrigin,
    ) -> SkippedRecord {
        SkippedRecord {
            origin,
            scenario: sc.name.clone(),
            file: sc.path.display().to_string(),
            kernel: label.to_string(),
            shard: shard_text(shard),
            skipped: true,
            reason: NOT_IN_THIS_SHARD.into(),
        }
    }

    /// This run as JUnit lists it: skipped.
    pub fn junit_case(&self) -> junit::Case {
        junit::Case {
            scenario: self.scenario.clone(),
            kernel: self.kernel.clone(),
            wall_ms: 0,
            passed: true,
            skipped: Some(self.reason.clone()),
            message: String::new(),
            details: String::new(),
        }
    }
}

/// How the reported execution's syscall results differ from the
/// scenario's `results` expectations, one line each.
pub(crate) fn result_mismatches(
    expected: &[scenario::ExpectedResult],
    results: &Results,
) -> Vec<String> {
    let mut out = Vec::new();
    for want in expected {
        let mut got: BTreeMap<String, u64> = BTreeMap::new();
        let mut values: Vec<u64> = Vec::new();
        let mut calls: Vec<String> = Vec::new();
        let mut texts: Vec<String> = Vec::new();
        for ops in results
            .iter()
            .filter(|(t, _)| want.matches_task(t))
            .map(|(_, ops)| ops)
        {
            for stats in ops
                .iter()
                .filter(|(l, _)| want.matches_label(l))
                .map(|(_, s)| s)
            {
                for (result, n) in &stats.results {
                    *got.entry(result.clone()).or_default() += n;
                }
                values.extend(&stats.values);
                calls.extend(stats.first_results.iter().cloned());
                texts.extend(stats.texts.iter().cloned());
            }
        }
        if !want.holds_for(&got) {
            let seen = if got.is_empty() {
                "no call".to_string()
            } else {
                kernel::results_summary(&got, None)
            };
            out.push(format!(
                "{} {}: expected {}, got {seen}",
                want.task,
                want.op,
                want.written()
            ));
        }
        if let Some(want_calls) = want.calls.as_ref().filter(|_| !want.calls_hold_for(&calls)) {
            out.push(format!(
                "{} {}: expected the calls to begin {}, got {}",
                want.task,
                want.op,
                want_calls.join(", "),
                calls.join(", ")
            ));
        }
        if let Some(want_texts) = want.texts.as_ref().filter(|w| **w != texts) {
            out.push(format!(
                "{} {}: expected words {want_texts:?}, got {texts:?}",
                want.task, want.op
            ));
        }
        if let Some(want_values) = &want.values {
            if *want_values != values {
                out.push(format!(
                    "{} {}: expected values {want_values:?}, got {values:?}",
                    want.task, want.op
                ));
            }
        }
    }
    out
}

/// A run this shard leaves to another (fair runs, and dfs runs without
/// reduction, belong to shard 1): a line of text, a JSON record.
/// A file that could not be read: text output has already said why, on
/// standard error; JSON lists it.
pub fn print_unreadable(r: &UnreadableRecord, format: Format) {
    if format == Format::Json {
        println!("{}", json!(r));
    }
}

pub fn print_skipped(r: &SkippedRecord, format: Format) {
    match format {
        Format::Text => println!(
            "{}",
            sim::echo::escape_controls(&format!(
                "skip {} [{}]: {}",
                r.scenario, r.kernel, r.reason
            ))
        ),
        Format::Json => println!(
            "{}",
            serde_json::to_value(r).expect("a record is plain data")
        ),
    }
}

/// The end of a run's output: the closing line, and the JUnit XML when
/// asked for; `Ok(true)` when every run was as expected.
pub fn finish(
    cases: &[junit::Case],
    format: Format,
    junit_file: Option<&std::path::Path>,
) -> Result<bool, crate::error::CliError> {
    let failed = cases.iter().filter(|c| !c.passed).count();
    let ran = cases.iter().filter(|c| c.skipped.is_none()).count();
    print_summary(ran - failed, failed, format);
    if let Some(file) = junit_file {
        std::fs::write(file, junit::render(cases)).map_err(|e| {
            crate::error::CliError(format!(
                "error: cannot write JUnit XML to {}: {e}",
                crate::error::shown(file)
            ))
        })?;
    }
    Ok(failed == 0)
}

/// The closing line, `N passed, N failed`: on standard output for text, on
/// standard error for JSON (whose output stays one object per line).
pub fn print_summary(passed: usize, failed: usize, format: Format) {
    let line = format!("{passed} passed, {failed} failed");
    match format {
        Format::Text => println!("\n{line}"),
        Format::Json => eprintln!("{line}"),
    }
}

/// Records printed so far: (as expected, not), for a closing line the
/// watchdog prints when it ends the process.
static PRINTED: [std::sync::atomic::AtomicUsize; 2] = [
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
];

/// The closing line for the records printed so far.
pub fn print_summary_so_far(format: Format) {
    use std::sync::atomic::Ordering::SeqCst;
    print_summary(PRINTED[0].load(SeqCst), PRINTED[1].load(SeqCst), format);
}

pub fn print_record(r: &Record, format: Format) {
    let tally = if r.as_expected { 0 } else { 1 };
    PRINTED[tally].fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    match format {
        Format::Json => println!("{}", r.json()),
        // Names and arguments come from files: a control character in one
        // (a terminal's escape sequence) is shown escaped, never sent.
        Format::Text => println!("{}", sim::echo::escape_controls(&r.text())),
    }
}

/// `nssim ops`: every op a task can run, from its declaration
/// (`kernel::ops::OPS`), as the format chapter's table gives them.
pub fn print_ops(format: Format) {
    for op in kernel::ops::OPS {
        let signature = scenario::op_signature(op);
        match format {
            Format::Json => println!(
                "{}",
                json!({
                    "name": op.name,
                    "signature": signature,
                    "summary": op.summary,
                    "kernel": op.kernel,
                })
            ),
            Format::Text => {
                println!("{signature}\n    {}", op.summary);
                if !op.kernel.is_empty() {
                    println!("    kernel: {}", op.kernel.join(", "));
                }
            }
        }
    }
}

/// `nssim kernels`: the profiles, patches, invariants and cost-table
/// entries; with `--format json` one object per line, its `kind` one of
/// `profile`, `patch`, `invariant`, `cost`.
pub fn print_kernels(format: Format) {
    if format == Format::Json {
        for line in kernels_json() {
            println!("{line}");
        }
        return;
    }
    println!("Kernel profiles (a release and the patches it has):");
    for p in catalog::PROFILES {
        let patches = if p.patches().is_empty() {
            "-".to_string()
        } else {
            p.patches().join(", ")
        };
        println!(
            "  {:<8} {}\n           patches: {patches}",
            p.name, p.summary
        );
    }
    println!("\nPatches (turn on or off with --patch +NAME / --patch -NAME):");
    for p in catalog::PATCHES {
        let merged = p
            .merged_in
            .map_or("never merged".to_string(), |v| format!("merged in {v}"));
        println!("  {:<26} ({merged}) {}", p.name, p.summary);
    }
    println!("\nInvariants:");
    for i in catalog::INVARIANTS {
        println!("  {:<22} {}", i.name, i.summary);
    }
    println!("\nKnown kernel behaviours (violations the running kernel shows too; `nssim gen --check model` counts them apart):");
    for k in kernel::known::KNOWN_BEHAVIOURS {
        println!(
            "  {:<26} {} ({})\n{:29}evidence: {}",
            k.name,
            k.invariant.name(),
            k.summary,
            "",
            k.evidence
        );
    }
    println!("\nCost table (defaults; a scenario's [costs] overrides them):");
    for c in catalog::costs() {
        println!(
            "  {:<24} {:>10}  {}",
            c.name,
            scenario::format_duration(c.default_ns),
            c.summary
        );
    }
}

/// The lines of `nssim kernels --format json`, from the same catalog.
fn kernels_json() -> Vec<serde_json::Value> {
    let profiles = catalog::PROFILES.iter().map(|p| {
        json!({ "kind": "profile", "name": p.name, "summary": p.summary, "patches": p.patches() })
    });
    let patches = catalog::PATCHES.iter().map(|p| {
        json!({ "kind": "patch", "name": p.name, "merged_in": p.merged_in, "summary": p.summary })
    });
    let invariants = catalog::INVARIANTS
        .iter()
        .map(|i| json!({ "kind": "invariant", "name": i.name, "summary": i.summary }));
    let costs = catalog::costs().into_iter().map(|c| {
        json!({ "kind": "cost", "name": c.name, "default_ns": c.default_ns, "summary": c.summary })
    });
    let known = kernel::known::KNOWN_BEHAVIOURS.iter().map(|k| {
        json!({
            "kind": "known",
            "name": k.name,
            "invariant": k.invariant.name(),
            "patch": k.needs.map(|p| p.name()),
            "summary": k.summary,
            "evidence": k.evidence,
        })
    });
    profiles
        .chain(patches)
        .chain(invariants)
        .chain(costs)
        .chain(known)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_difference_of_two_origins_is_named_by_its_own_key() {
        let origin = RunOrigin {
            nssim: "0.1.0".into(),
            scenario: String::new(),
            explore: scenario::Explore::default(),
            patch_toggles: Vec::new(),
            reduction: true,
            state_cache: true,
            shrink: true,
        };
        let other = RunOrigin {
            explore: scenario::Explore {
                seed: 9,
                ..origin.explore
            },
            shrink: false,
            ..origin.clone()
        };
        // Keys in order: `explore` before `shrink`, `seed` within it.
        assert_eq!(
            origin.first_difference(&other),
            Some(("seed".into(), "1".into(), "9".into()))
        );
        assert_eq!(origin.first_difference(&origin), None);
    }
}
