//! The command line's shared options: the output format, the strategy
//! names and the settings that override a scenario's `[explore]` table,
//! with their parsers. A leaf: it imports no file of the crate.

use clap::ValueEnum;
use sim::echo::echo;
use sim::limits;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable lines.
    Text,
    /// JSON objects, one per line: what a line is, the option's help says.
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    /// Uniformly random choice at every scheduling point.
    Random,
    /// Probabilistic concurrency testing with a depth bound (--pct-depth).
    Pct,
    /// Exhaustive depth-first search with a preemption bound.
    Dfs,
    /// Discrete-event order by virtual clock (timing experiments).
    Fair,
}

/// Settings that override a scenario's `[explore]` table.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Overrides {
    /// Run only these kernels: a label or profile of the scenario's [[kernel]] entries, or any
    /// profile from `nssim kernels` (run expecting a pass). Repeatable.
    #[arg(long = "kernel", value_name = "NAME")]
    pub kernels: Vec<String>,
    /// Turn a patch on (+NAME) or off (-NAME) on top of each profile. Repeatable.
    #[arg(long = "patch", value_name = "+NAME|-NAME", allow_hyphen_values = true)]
    pub patches: Vec<String>,
    /// Exploration seed (iteration i of seed s is a pure function of s and i).
    #[arg(long, value_parser = |s: &str| limits::SEED.parse(s))]
    pub seed: Option<u64>,
    /// Most executions per run.
    #[arg(long, value_parser = |s: &str| limits::ITERATIONS.parse(s))]
    pub iterations: Option<u64>,
    /// Exploration strategy.
    #[arg(long, value_enum)]
    pub strategy: Option<StrategyArg>,
    /// PCT depth bound (number of priority change points + 1).
    #[arg(long, value_name = "D", value_parser = |s: &str| limits::PCT_DEPTH.parse_u32(s))]
    pub pct_depth: Option<u32>,
    /// Preemption bound of the dfs strategy: 0 to 64, or `none` for no
    /// bound (exhaustive over every interleaving; finite only where the
    /// scenario's space is).
    #[arg(long, value_name = "N|none", value_parser = limits::parse_preemption_bound)]
    pub preemption_bound: Option<u32>,
    /// Virtual CPUs.
    #[arg(long, value_name = "N", value_parser = |s: &str| limits::CPUS.parse_u32(s))]
    pub cpus: Option<u32>,
    /// Most scheduling points per execution (then outcome `limit`).
    #[arg(long, value_name = "N", value_parser = |s: &str| limits::MAX_STEPS.parse(s))]
    pub max_steps: Option<u64>,
    /// Most virtual time per execution, e.g. `10s`, `1h` (then outcome `limit`).
    #[arg(long, value_name = "DURATION")]
    pub max_virtual_time: Option<String>,
    /// Wall-clock time one run (scenario and kernel) may take, e.g. `30s`, `10m`;
    /// past it the run ends with outcome `limit` (wall-time). Default: 10m.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Stack per simulated task, e.g. `64k`, `1m` (default 128k); a task that nears
    /// its end stops with outcome `limit` (stack).
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub stack_size: Option<usize>,
    /// Memory the process may hold (its heap and its resident set), e.g. `512m`,
    /// `4g`; past it the run ends with outcome `limit` (memory) instead of the
    /// machine running out. Default: half of the machine's memory.
    #[arg(long, value_name = "BYTES", value_parser = parse_memory)]
    pub max_memory: Option<(usize, String)>,
    /// dfs: explore every interleaving, also those that only reorder independent
    /// steps (by default one execution per class of such interleavings).
    #[arg(long)]
    pub no_reduction: bool,
    /// dfs with --no-reduction: explore a state the model names again when another
    /// path reaches it (by default the search ends an execution at a state it has
    /// explored before, with no more preemptions used).
    #[arg(long)]
    pub no_state_cache: bool,
    /// Report the failing execution as found, without searching for a shorter one.
    #[arg(long)]
    pub no_shrink: bool,
    /// Threads running executions at once (default: every core). Runs that take
    /// one thread (dfs, fair, a single execution) go side by side, one per
    /// thread. Results and output do not depend on it.
    #[arg(long, value_name = "N", value_parser = |s: &str| limits::JOBS.parse_u32(s))]
    pub jobs: Option<u32>,
    /// Run only shard K of N of every run's executions (K from 1), of a dfs
    /// search its subtrees i with i mod N = K - 1; `nssim merge` makes the N
    /// shards' JSON outputs into the unsharded run's. fair runs, and dfs runs
    /// with --no-reduction, belong to shard 1 (the others list them as skipped).
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<(u64, u64)>,
}

/// `65536`, `64k`, `1m`, `2g` (binary units) in bytes.
fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t.as_str(), ""),
    };
    let mult: usize = match unit.trim_end_matches("ib").trim_end_matches('b') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return Err(not_a_size(s)),
    };
    let n: usize = num.parse().map_err(|_| not_a_size(s))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {} is more than this machine can address", echo(s)))
}

fn not_a_size(s: &str) -> String {
    format!("`{}` is not a size such as 65536, 64k, 1m or 2g", echo(s))
}

/// The bytes, and the limit as messages name it (as given).
fn parse_memory(s: &str) -> Result<(usize, String), String> {
    let bytes = parse_bytes(s)?;
    if bytes < 16 << 20 {
        return Err(format!(
            "--max-memory {} is too small (at least 16m)",
            echo(s)
        ));
    }
    Ok((bytes, format!("--max-memory {}", echo(s.trim()))))
}

fn parse_size(s: &str) -> Result<usize, String> {
    let bytes = parse_bytes(s)?;
    if !(16 << 10..=1 << 30).contains(&bytes) {
        return Err(format!(
            "stack size {} is out of range (16k to 1g)",
            echo(s)
        ));
    }
    Ok(bytes)
}

fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let bad = || {
        format!(
            "`{}` is not K/N with 1 <= K <= N, e.g. --shard 3/8",
            echo(s)
        )
    };
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}
