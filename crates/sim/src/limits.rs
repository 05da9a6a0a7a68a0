//! The ranges of the numbers a user can give nssim, declared once: the
//! scenario checker, the command line and the token decoder all check
//! against these tables, so a value one front end refuses is refused by
//! all, with the same message.

/// A named inclusive range of an integer setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// The setting's key in a scenario's `[explore]` table.
    pub name: &'static str,
    pub min: u64,
    pub max: u64,
    /// Written after the numbers in messages (`ns`), or empty.
    pub unit: &'static str,
}

pub const SEED: Limit = Limit::new("seed", 0, u64::MAX);
pub const ITERATIONS: Limit = Limit::new("iterations", 1, 1_000_000_000);
pub const PCT_DEPTH: Limit = Limit::new("pct_depth", 1, 64);
pub const PREEMPTION_BOUND: Limit = Limit::new("preemption_bound", 0, 64);
/// How a scenario (`preemption_bound = "none"`) and the command line
/// (`--preemption-bound none`) ask for no preemption bound at all.
pub const NO_PREEMPTION_BOUND: &str = "none";
/// The bound `dfs` takes for "none": a search without a bound.
pub const UNBOUNDED: u32 = u32::MAX;
pub const CPUS: Limit = Limit::new("cpus", 1, 1024);
pub const MAX_STEPS: Limit = Limit::new("max_steps", 1, 1_000_000_000_000);
/// `max_steps` as a token carries it. A run stopped by wall time or
/// memory has the step it stopped at pinned as its step limit, so that the
/// replay stops there too; that step may be 0.
pub const TOKEN_MAX_STEPS: Limit = Limit {
    min: 0,
    ..MAX_STEPS
};
/// `max_virtual_time` in nanoseconds.
pub const MAX_VIRTUAL_NS: Limit = Limit {
    unit: "ns",
    ..Limit::new("max_virtual_time", 1, u64::MAX)
};

/// Copies of one `[[task]]` of a scenario, and of all its tasks together:
/// they run at once, each on a stack of its own.
pub const INSTANCES: Limit = Limit::new("instances", 1, 16_000);
/// Tasks alive at once in one execution, a scenario's and the model's own
/// (kworkers); a spawn past it ends the execution with outcome `limit`
/// (tasks). Room for [`INSTANCES`] and the model's few.
pub const TASKS: Limit = Limit::new("tasks", 1, 16_384);
/// Threads running executions at once (`--jobs`).
pub const JOBS: Limit = Limit::new("jobs", 1, 1024);

/// Every range of the `[explore]` table, for tests and documentation.
pub const EXPLORE: &[Limit] = &[
    SEED,
    ITERATIONS,
    PCT_DEPTH,
    PREEMPTION_BOUND,
    CPUS,
    MAX_STEPS,
    MAX_VIRTUAL_NS,
];

/// Most explicit choices a token may carry. A choice is made at a
/// scheduling point, so an execution has no more than `max_steps` of them;
/// this bound also keeps a short run-length-encoded token from asking for
/// gigabytes (2^24 choices are 64 MiB).
pub const MAX_CHOICES: u64 = 1 << 24;

impl Limit {
    pub const fn new(name: &'static str, min: u64, max: u64) -> Limit {
        Limit {
            name,
            min,
            max,
            unit: "",
        }
    }

    pub fn contains(&self, v: i128) -> bool {
        (i128::from(self.min)..=i128::from(self.max)).contains(&v)
    }

    /// `min..=max` as TOML writes it (`1..=1_024`).
    pub fn range_text(&self) -> String {
        format!("{}..={}", group(self.min.into()), group(self.max.into()))
    }

    /// The one message for a value outside the range.
    pub fn message(&self, v: i128) -> String {
        if self.unit.is_empty() {
            return out_of_range(self.name, self.min.into(), self.max.into(), v);
        }
        // Only a lower bound is worth saying for a duration.
        format!(
            "`{}` must be at least {}{unit}, not {}{unit}",
            self.name,
            group(self.min.into()),
            group(v),
            unit = self.unit
        )
    }

    /// `v` if it is in range, else the message.
    pub fn check(&self, v: i128) -> Result<u64, String> {
        if self.contains(v) {
            Ok(v as u64)
        } else {
            Err(self.message(v))
        }
    }

    /// Parses a command-line value (digits, `_` allowed as in TOML) and
    /// checks it.
    pub fn parse(&self, s: &str) -> Result<u64, String> {
        let digits = s.trim().replace('_', "");
        match digits.parse::<i128>() {
            Ok(v) => self.check(v),
            Err(_) => Err(format!(
                "`{}` must be an integer in {}, not `{}`",
                self.name,
                self.range_text(),
                crate::echo::echo(s)
            )),
        }
    }

    /// Like [`Limit::parse`], for settings held in a `u32`.
    pub fn parse_u32(&self, s: &str) -> Result<u32, String> {
        debug_assert!(self.max <= u32::MAX.into());
        self.parse(s).map(|v| v as u32)
    }
}

/// A preemption bound as the command line gives it: [`PREEMPTION_BOUND`],
/// or [`NO_PREEMPTION_BOUND`] for [`UNBOUNDED`].
pub fn parse_preemption_bound(s: &str) -> Result<u32, String> {
    if s == NO_PREEMPTION_BOUND {
        return Ok(UNBOUNDED);
    }
    PREEMPTION_BOUND.parse_u32(s).map_err(|out_of_range| {
        if s.trim().parse::<i128>().is_ok() {
            return out_of_range;
        }
        format!(
            "`{}` must be an integer in {} or `{NO_PREEMPTION_BOUND}` (no bound), not `{}`",
            PREEMPTION_BOUND.name,
            PREEMPTION_BOUND.range_text(),
            crate::echo::echo(s)
        )
    })
}

/// A preemption bound as people read it: the number, or "none".
pub fn show_preemption_bound(bound: u32) -> String {
    match bound {
        UNBOUNDED => NO_PREEMPTION_BOUND.to_string(),
        n => n.to_string(),
    }
}

/// "`key` must be in min..=max, not v": shared by every integer the
/// scenario format checks, not only those of the tables above.
pub fn out_of_range(key: &str, min: i128, max: i128, v: i128) -> String {
    format!(
        "`{key}` must be in {}..={}, not {}",
        group(min),
        group(max),
        group(v)
    )
}

/// `1_000_000_000` style, as TOML accepts it.
pub fn group(n: i128) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('_');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_key_range_and_value() {
        assert_eq!(
            CPUS.check(0),
            Err("`cpus` must be in 1..=1_024, not 0".into())
        );
        assert_eq!(
            CPUS.check(1025),
            Err("`cpus` must be in 1..=1_024, not 1_025".into())
        );
        assert_eq!(CPUS.check(1024), Ok(1024));
        assert_eq!(group(-1_000), "-1_000");
        assert_eq!(
            MAX_VIRTUAL_NS.message(0),
            "`max_virtual_time` must be at least 1ns, not 0ns"
        );
    }

    #[test]
    fn boundaries_of_every_range() {
        for l in EXPLORE {
            let (min, max) = (i128::from(l.min), i128::from(l.max));
            assert_eq!(l.check(min - 1), Err(l.message(min - 1)), "{}", l.name);
            assert_eq!(l.check(min), Ok(l.min));
            assert_eq!(l.check(max), Ok(l.max));
            assert_eq!(l.check(max + 1), Err(l.message(max + 1)), "{}", l.name);
            assert_eq!(l.parse(&(max + 1).to_string()), Err(l.message(max + 1)));
            assert_eq!(l.parse(&min.to_string()), Ok(l.min));
        }
    }

    #[test]
    fn a_value_that_is_no_integer_is_named_safely() {
        let e = CPUS.parse("\u{1b}[31mRED").unwrap_err();
        assert_eq!(
            e,
            "`cpus` must be an integer in 1..=1_024, not `\\u{1b}[31mRED`"
        );
    }
}
