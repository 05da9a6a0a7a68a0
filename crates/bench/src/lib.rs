//! Benchmarks of nssim's scheduler against `shuttle` and `loom` on the same
//! workloads, written three ways and run one after the other in one
//! process (`cargo bench -p nssim-bench --features compare --bench compare`).
//!
//! This library holds the nssim side of every workload, the workload sizes,
//! the final-state type of the exhaustive model and the table helpers. The
//! shuttle and loom sides live in `models/` and are compiled into the
//! benches and tests only, so that shuttle, loom and criterion stay
//! dev-dependencies.
//!
//! The workloads:
//! * (a) `mutex`: N tasks each doing M lock/increment/unlock on one mutex;
//! * (b) `ipc`: the ipc free-queue race reduced to its core: an allocator
//!   charges a counter below a limit, releases its previous item to a queue
//!   and kicks a worker that drains the queue and uncharges; a charge that
//!   fails while fewer than `limit` items are alive is a false ENOSPC;
//! * (c) `small`: two tasks each doing lock; push; unlock (one then sets an
//!   atomic flag) and a third reading the flag and then the vector, small
//!   enough to explore exhaustively.

use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, Instant};

/// (a): tasks and lock operations per task at the reported size.
pub const MUTEX_TASKS: usize = 4;
pub const MUTEX_OPS: usize = 1000;
/// (a) at a size loom can exhaust.
pub const MUTEX_TINY_TASKS: usize = 2;
pub const MUTEX_TINY_OPS: usize = 2;
/// (b): the counter's limit (as in the kernel crate's ipc race test) and
/// the allocator's rounds.
pub const IPC_LIMIT: i64 = 3;
/// (b) made harder: the worker must lag by this many items less one.
pub const IPC_LIMIT_HARD: i64 = 6;
pub const IPC_ROUNDS: u32 = 20;
/// The invariant (b) breaks.
pub const FALSE_ENOSPC: &str = "no_false_enospc";
/// PCT depth used by every PCT run (nssim's `depth`, shuttle's `max_depth`).
pub const PCT_DEPTH: u32 = 3;
/// nssim's `dfs` without a preemption bound (`u32::MAX` is none: the
/// partial-order reduction is then optimal).
pub const DFS_UNBOUNDED: u32 = u32::MAX;

/// The final state of one execution of (c).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FinalState {
    /// The flag as the reader saw it.
    pub flag_seen: u32,
    /// The vector as the reader saw it, after reading the flag.
    pub seen: Vec<u8>,
    /// The vector at the end.
    pub last: Vec<u8>,
}

impl fmt::Display for FinalState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = |v: &[u8]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("");
        write!(
            f,
            "flag={} seen=[{}] end=[{}]",
            self.flag_seen,
            v(&self.seen),
            v(&self.last)
        )
    }
}

/// Print a set of final states on one line.
pub fn show_states(states: &BTreeSet<FinalState>) -> String {
    states
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Time `f`.
pub fn timed<R>(f: impl FnOnce() -> R) -> (R, Duration) {
    let start = Instant::now();
    let r = f();
    (r, start.elapsed())
}

/// The median of `xs` (the mean of the middle two for an even count).
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The nssim side of every workload (the `sim` backend of `sync`: none of
/// it exists under `--cfg loom`).
#[cfg(not(loom))]
pub mod nssim {
    use super::*;
    use sim::{ExecConfig, Execution, ExploreConfig, ExploreReport, Outcome, StrategySpec};
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::sync::atomic::AtomicU64 as StdU64;
    use std::sync::Mutex as StdMutex;
    use sync::{schedule_work, Arc, AtomicI64, AtomicU32, LList, Mutex, Ordering, Work, Workqueue};

    /// The exploration every nssim run here uses: default limits, no
    /// shrinking (the benches time the search, not the shrink).
    pub fn config(strategy: StrategySpec, seed: u64, iterations: u64) -> ExploreConfig {
        let mut cfg = ExploreConfig::new(strategy, seed, iterations, ExecConfig::default());
        cfg.shrink = false;
        cfg
    }

    /// (a): `tasks` tasks each doing `ops` times lock; +1; unlock. The
    /// count is checked at the end, as the other tools' versions do.
    pub fn mutex_build(tasks: usize, ops: usize) -> impl Fn(&mut Execution) + Sync {
        move |e: &mut Execution| {
            let m = e.setup(|| {
                let m = Arc::new(Mutex::new("counter_lock", 0u64));
                for t in 0..tasks {
                    let m = Arc::clone(&m);
                    sim::spawn(format!("t{t}"), false, move || {
                        for _ in 0..ops {
                            *m.lock() += 1;
                        }
                    });
                }
                m
            });
            let want = (tasks * ops) as u64;
            e.check_at_end(move || {
                let v = *m.lock();
                (v != want).then(|| Outcome::Violation {
                    invariant: "count".into(),
                    detail: format!("{v} != {want}"),
                })
            });
        }
    }

    /// One task taking `points` scheduling points (a bare `sim::point`
    /// each) and nothing else: every step is forced, so no strategy draws
    /// and no task switches. What a scheduling point costs the simulator
    /// by itself: the pending operation, the pick, the virtual clock and
    /// the trace.
    pub fn lone_task_build(points: usize) -> impl Fn(&mut Execution) + Sync {
        move |e: &mut Execution| {
            e.setup(|| {
                sim::spawn("t0", false, move || {
                    let obj = sim::new_object("bench_object");
                    for _ in 0..points {
                        sim::point("bench_point", obj, &sync::costs::ATOMIC);
                    }
                });
            });
        }
    }

    /// `tasks` tasks taking `points` bare scheduling points each (one
    /// point in one loop, the same code for every task) and nothing else:
    /// a random point of it is a draw and, mostly, a switch, with no lock
    /// work and the return addresses of every task alike.
    pub fn bare_points_build(tasks: usize, points: usize) -> impl Fn(&mut Execution) + Sync {
        move |e: &mut Execution| {
            e.setup(|| {
                for t in 0..tasks {
                    sim::spawn(format!("t{t}"), false, move || {
                        let obj = sim::new_object("bench_object");
                        for _ in 0..points {
                            sim::point("bench_point", obj, &sync::costs::ATOMIC);
                        }
                    });
                }
            });
        }
    }

    /// Executions an exploration ran: its report's count, plus the probe
    /// execution that `pct` runs first.
    pub fn executions_run(strategy: StrategySpec, r: &ExploreReport) -> u64 {
        r.executions + matches!(strategy, StrategySpec::Pct { .. }) as u64
    }

    /// Explore `build` with a checker that counts scheduling points (steps)
    /// over every execution, the `pct` probe included. Used in an untimed
    /// pass: the runs are deterministic, so the timed pass has the same
    /// steps.
    pub fn count_steps(
        strategy: StrategySpec,
        seed: u64,
        iterations: u64,
        build: &(dyn Fn(&mut Execution) + Sync),
    ) -> (ExploreReport, u64) {
        let steps = Arc::new(StdU64::new(0));
        let counting = |e: &mut Execution| {
            build(e);
            let s = Arc::clone(&steps);
            e.check_each_step(move || {
                s.fetch_add(1, Ordering::Relaxed);
                None
            });
        };
        let r = sim::explore(&config(strategy, seed, iterations), &counting);
        (r, steps.load(Ordering::Relaxed))
    }

    /// Explore (a) for `iterations` executions.
    pub fn mutex(
        strategy: StrategySpec,
        seed: u64,
        iterations: u64,
        tasks: usize,
        ops: usize,
    ) -> ExploreReport {
        sim::explore(
            &config(strategy, seed, iterations),
            &mutex_build(tasks, ops),
        )
    }

    /// (b), written against nssim's `sync` primitives: the allocator loops
    /// "charge below the limit, release the previous item to the free list,
    /// kick the worker"; the worker (a work item on a kworker) drains the
    /// list and uncharges. A failed charge while fewer than `limit` items
    /// are alive is a false ENOSPC.
    pub fn ipc_build(limit: i64, rounds: u32) -> impl Fn(&mut Execution) + Sync {
        move |e: &mut Execution| {
            e.setup(|| {
                let wq = Workqueue::new("system_wq");
                wq.start_worker("kworker");
                let counter = Arc::new(AtomicI64::new("ucount", 0));
                let list: Arc<LList<u32>> = Arc::new(LList::new("free_list"));
                let (c, l) = (Arc::clone(&counter), Arc::clone(&list));
                let work = Work::new("free_work", &wq, move || {
                    for _item in l.llist_del_all() {
                        c.fetch_sub(1, Ordering::SeqCst);
                    }
                });
                sim::spawn("alloc", false, move || {
                    let mut prev: Option<u32> = None;
                    for i in 0..rounds {
                        // Alive: charged and not yet released.
                        let alive = prev.is_some() as i64;
                        if !inc_below(&counter, limit) {
                            if alive < limit {
                                sim::fail(Outcome::Violation {
                                    invariant: FALSE_ENOSPC.into(),
                                    detail: format!(
                                        "charge failed at round {i} with {alive} of {limit} alive"
                                    ),
                                });
                            }
                            return;
                        }
                        if let Some(p) = prev.replace(i) {
                            if list.llist_add(p) {
                                schedule_work(&work);
                            }
                        }
                    }
                });
            });
        }
    }

    /// `atomic_long_inc_below`: a compare-exchange loop.
    fn inc_below(v: &AtomicI64, limit: i64) -> bool {
        let mut c = v.load(Ordering::SeqCst);
        loop {
            if c >= limit {
                return false;
            }
            match v.compare_exchange(c, c + 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return true,
                Err(now) => c = now,
            }
        }
    }

    /// Explore (b) until the first failure or `budget` executions.
    pub fn ipc(strategy: StrategySpec, seed: u64, budget: u64, limit: i64) -> ExploreReport {
        sim::explore(
            &config(strategy, seed, budget),
            &ipc_build(limit, IPC_ROUNDS),
        )
    }

    /// (b) through the real kernel model: one task looping
    /// `unshare(CLONE_NEWIPC)` `rounds` times under the v6.2 profile with
    /// `user.max_ipc_namespaces = limit`, every invariant checked.
    pub fn ipc_kernel(
        strategy: StrategySpec,
        seed: u64,
        budget: u64,
        limit: i64,
        rounds: u64,
    ) -> ExploreReport {
        let patches = kernel::resolve_patches("v6.2", &[]).expect("the v6.2 profile exists");
        let every: Vec<&str> = kernel::catalog::INVARIANTS.iter().map(|i| i.name).collect();
        let explore = config(strategy, seed, budget);
        unshare_loopers(&patches, 1, limit, rounds, &every, explore)
    }

    /// The library's scenario `ipc-v6.3-window-loopers` under its entry
    /// `v6.3+fix` (two tasks unsharing their ipc namespaces twice under
    /// `max_ipc_namespaces = 3`, both candidate fixes applied, its three
    /// invariants checked), explored as `explore` says: an exhaustive
    /// search long enough to time.
    pub fn ipc_loopers_fixed(explore: ExploreConfig) -> ExploreReport {
        ipc_loopers(&["ipc-retry-after-free", "ipc-pending-at-release"], explore)
    }

    /// The same scenario on v6.3 with the patches `fixes` added (none: its
    /// entry `v6.3-dfs`, whose false ENOSPC `dfs` finds after some
    /// hundreds of executions).
    pub fn ipc_loopers(fixes: &[&str], explore: ExploreConfig) -> ExploreReport {
        let fixes: Vec<(String, bool)> = fixes.iter().map(|f| (f.to_string(), true)).collect();
        let patches =
            kernel::resolve_patches("v6.3", &fixes).expect("the v6.3 profile and fixes exist");
        let invariants = [
            "ipc.no_false_enospc",
            "ucounts.balanced",
            "ipc.freed_eventually",
        ];
        unshare_loopers(&patches, 2, 3, 2, &invariants, explore)
    }

    /// `instances` tasks each looping `unshare(CLONE_NEWIPC)` `rounds`
    /// times with `user.max_ipc_namespaces = limit`, `invariants` checked.
    fn unshare_loopers(
        patches: &kernel::ActivePatches,
        instances: u32,
        limit: i64,
        rounds: u64,
        invariants: &[&str],
        explore: ExploreConfig,
    ) -> ExploreReport {
        let loopers = Loopers {
            flags: kernel::setup::clone_flags::CLONE_NEWIPC,
            instances,
            limit,
            rounds,
        };
        loopers.explore(patches, invariants, explore, false).0
    }

    /// Tasks that each unshare namespaces in a loop.
    #[derive(Debug, Clone, Copy)]
    pub struct Loopers {
        /// The `unshare` flags: `CLONE_NEWIPC` or `CLONE_NEWUSER`.
        pub flags: u64,
        pub instances: u32,
        /// `user.max_user_namespaces` with `CLONE_NEWUSER`, else
        /// `user.max_ipc_namespaces`.
        pub limit: i64,
        pub rounds: u64,
    }

    impl Loopers {
        /// Explore them on `patches` with `invariants` checked (and no
        /// replay of the reported execution); with `count_steps`, also
        /// count the steps of every execution.
        pub fn explore(
            self,
            patches: &kernel::ActivePatches,
            invariants: &[&str],
            explore: ExploreConfig,
            count_steps: bool,
        ) -> (ExploreReport, Option<u64>) {
            use kernel::setup::{clone_flags::CLONE_NEWUSER, Op, Setup, SysctlSpec, TaskSpec};
            let sysctl = if self.flags & CLONE_NEWUSER != 0 {
                "user.max_user_namespaces"
            } else {
                "user.max_ipc_namespaces"
            };
            let setup = Setup {
                user_namespaces: vec![],
                sysctls: vec![SysctlSpec {
                    userns: "init".into(),
                    name: sysctl.into(),
                    value: self.limit,
                }],
                tasks: vec![TaskSpec {
                    name: "looper".into(),
                    instances: self.instances,
                    userns: "init".into(),
                    uid: 0,
                    repeat: self.rounds,
                    sequential: false,
                    ops: vec![Op::Unshare { flags: self.flags }],
                }],
                ..Default::default()
            };
            let invariants: Vec<String> = invariants.iter().map(|i| i.to_string()).collect();
            let spec = kernel::RunSpec {
                setup: &setup,
                patches,
                invariants: &invariants,
                explore,
            };
            kernel::explore_steps(&spec, count_steps)
        }
    }

    /// What task c of (c) read: the flag, then the vector.
    type Seen = (u32, Vec<u8>);

    /// (c): task a: lock; push 1; unlock; flag = 1. Task b: lock; push 2;
    /// unlock. Task c: read the flag; lock; read the vector; unlock.
    /// Every final state is added to `states`.
    pub fn small_build(
        states: Arc<StdMutex<BTreeSet<FinalState>>>,
    ) -> impl Fn(&mut Execution) + Sync {
        move |e: &mut Execution| {
            let (m, seen) = e.setup(|| {
                let m = Arc::new(Mutex::new("m", Vec::<u8>::new()));
                let flag = Arc::new(AtomicU32::new("flag", 0));
                let seen: Rc<RefCell<Option<Seen>>> = Rc::default();
                let (ma, fa) = (Arc::clone(&m), Arc::clone(&flag));
                sim::spawn("a", false, move || {
                    ma.lock().push(1);
                    fa.store(1, Ordering::SeqCst);
                });
                let mb = Arc::clone(&m);
                sim::spawn("b", false, move || {
                    mb.lock().push(2);
                });
                let (mc, fc, sc) = (Arc::clone(&m), flag, Rc::clone(&seen));
                sim::spawn("c", false, move || {
                    let f = fc.load(Ordering::SeqCst);
                    let v = mc.lock().clone();
                    *sc.borrow_mut() = Some((f, v));
                });
                (m, seen)
            });
            let states = Arc::clone(&states);
            e.check_at_end(move || {
                let (flag_seen, seen) = seen.borrow_mut().take().expect("c has run");
                let last = m.lock().clone();
                states.lock().expect("not poisoned").insert(FinalState {
                    flag_seen,
                    seen,
                    last,
                });
                None
            });
        }
    }

    /// A bug of PCT depth `depth` (2 or 3): task a stores 1 then 2 into
    /// `x`; b fails at depth 2 when it reads 1 (it must run between a's
    /// stores: two ordering constraints); at depth 3 b only notes that it
    /// read 1 and c fails when it then reads 2 after b's note (a third
    /// constraint). Each task first takes `padding` steps of its own, and
    /// a set-up task takes `prefix` steps alone before spawning them:
    /// scheduling points without a choice, which PCT must not count.
    pub fn pct_depth_build(
        depth: u32,
        padding: usize,
        prefix: usize,
    ) -> impl Fn(&mut Execution) + Sync {
        assert!(matches!(depth, 2 | 3), "models of depth 2 and 3");
        move |e: &mut Execution| {
            e.setup(move || {
                sim::spawn("setup", false, move || {
                    for _ in 0..prefix {
                        pad();
                    }
                    let x = Arc::new(AtomicU32::new("x", 0));
                    let saw_one = Arc::new(AtomicU32::new("saw_one", 0));
                    let xa = Arc::clone(&x);
                    sim::spawn("a", false, move || {
                        (0..padding).for_each(|_| pad());
                        xa.store(1, Ordering::SeqCst);
                        xa.store(2, Ordering::SeqCst);
                    });
                    let (xb, sb) = (Arc::clone(&x), Arc::clone(&saw_one));
                    sim::spawn("b", false, move || {
                        (0..padding).for_each(|_| pad());
                        let one = xb.load(Ordering::SeqCst) == 1;
                        assert!(!(one && depth == 2), "b read 1");
                        sb.store(u32::from(one), Ordering::SeqCst);
                    });
                    if depth == 3 {
                        sim::spawn("c", false, move || {
                            (0..padding).for_each(|_| pad());
                            let two = x.load(Ordering::SeqCst) == 2;
                            let one = saw_one.load(Ordering::SeqCst) == 1;
                            assert!(!(one && two), "b read 1, then c read 2");
                        });
                    }
                });
            });
        }
    }

    /// The tasks of `pct_depth_build(depth, ..)`, the set-up task
    /// included: PCT's n.
    pub fn pct_depth_tasks(depth: u32) -> u32 {
        depth + 1
    }

    fn pad() {
        sim::point("pad", sim::ObjId::NONE, &sim::costs::STEP);
    }

    /// How often PCT of `depth` finds the bug of `pct_depth_build`: the
    /// failing executions among iterations 0..`n` of seed 1, with the
    /// change points spread over `hint` choice points.
    pub fn pct_found(
        build: &(dyn Fn(&mut Execution) + Sync),
        depth: u32,
        hint: u64,
        n: u64,
    ) -> u64 {
        (0..n)
            .filter(|&iteration| {
                let schedule = sim::Schedule::Pct {
                    seed: 1,
                    iteration,
                    depth,
                    steps_hint: hint,
                };
                let mut e = Execution::new(ExecConfig::default(), &schedule);
                build(&mut e);
                e.run().outcome.is_failure()
            })
            .count() as u64
    }

    /// The probe execution `pct` of seed 1 measures a model with.
    pub fn pct_probe(build: &(dyn Fn(&mut Execution) + Sync)) -> sim::ExecReport {
        let mut e = Execution::new(ExecConfig::default(), &sim::pct_probe(1));
        build(&mut e);
        e.run()
    }

    /// Scale: `total` tasks in one execution, at most `alive` of them at
    /// once. The set-up starts `alive` tasks; each takes `steps` steps and,
    /// while fewer than `total` have been started, starts its successor
    /// before it exits, so the runnable set stays `alive` tasks wide the
    /// whole run.
    pub fn scale_build(total: usize, alive: usize, steps: usize) -> impl Fn(&mut Execution) + Sync {
        move |e: &mut Execution| {
            e.setup(move || {
                let started = Rc::new(std::cell::Cell::new(0));
                for _ in 0..alive.min(total) {
                    scale_task(Rc::clone(&started), total, steps);
                }
            });
        }
    }

    /// One timed execution of the scale row: `total` tasks of three steps
    /// each, at most `alive` at once, on 32 KiB stacks under the random
    /// strategy; the set-up's spawns are timed too (the longer rows start
    /// most of their tasks during the run).
    pub fn scale_run(total: usize, alive: usize) -> (sim::ExecReport, Duration) {
        let build = scale_build(total, alive, 3);
        let cfg = ExecConfig {
            stack_size: 32 * 1024,
            ..ExecConfig::default()
        };
        let schedule = sim::Schedule::Random {
            seed: 1,
            iteration: 0,
        };
        timed(|| {
            let mut e = Execution::new(cfg, &schedule);
            build(&mut e);
            e.run()
        })
    }

    fn scale_task(started: Rc<std::cell::Cell<usize>>, total: usize, steps: usize) {
        let n = started.get();
        started.set(n + 1);
        sim::spawn(format!("t{n}"), false, move || {
            for _ in 0..steps {
                sim::point("work", sim::ObjId::NONE, &sim::costs::STEP);
            }
            if started.get() < total {
                scale_task(started, total, steps);
            }
        });
    }

    /// Exhaust (c) with `dfs`; the report and every final state found.
    pub fn small(preemption_bound: u32) -> (ExploreReport, BTreeSet<FinalState>) {
        let states = Arc::new(StdMutex::new(BTreeSet::new()));
        let r = sim::explore(
            &config(StrategySpec::Dfs { preemption_bound }, 0, 10_000_000),
            &small_build(Arc::clone(&states)),
        );
        let states = states.lock().expect("not poisoned").clone();
        (r, states)
    }
}

/// The time of one bare coroutine round trip (a `resume` into a coroutine
/// and its `suspend` back), the reference for a scheduling point of a
/// scheduler on stackful coroutines (a switch straight from one task to
/// another is about one of its two halves): the median over `rounds`
/// batches of `n` round trips, in seconds (a `Duration` would round it to
/// a whole nanosecond, a third of it or more).
pub fn coroutine_round_trip(n: u64, rounds: usize) -> f64 {
    use corosensei::{Coroutine, CoroutineResult};
    let mut per = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let mut co = Coroutine::new(|yielder, ()| {
            for _ in 0..u64::MAX {
                yielder.suspend(());
            }
        });
        let start = Instant::now();
        for _ in 0..n {
            if let CoroutineResult::Return(()) = co.resume(()) {
                break;
            }
        }
        per.push(start.elapsed().as_secs_f64() / n as f64);
        // A suspended coroutine is unwound when dropped.
        drop(std::hint::black_box(co));
    }
    median(&per)
}

/// The time of one point of the barest random scheduler on corosensei
/// coroutines: `coroutines` coroutines, each of which, at every point,
/// draws its successor uniformly (a SplitMix64 step, cheaper than any
/// stream a reproducible scheduler draws from) and goes on if it drew
/// itself, else suspends to a loop that resumes the one drawn. No trace,
/// clock, runnable set or cost: what a random scheduler that switches
/// through a loop with `resume` and `suspend` cannot beat on this
/// machine. The median over `rounds` batches of `n` points, in seconds.
pub fn coroutine_random_successor(coroutines: usize, n: u64, rounds: usize) -> f64 {
    use corosensei::{Coroutine, CoroutineResult};
    use std::cell::Cell;
    use std::rc::Rc;
    /// What the coroutines share: the draw, the points left, the successor.
    struct Bare {
        state: Cell<u64>,
        left: Cell<u64>,
        next: Cell<usize>,
    }
    impl Bare {
        /// SplitMix64 (Steele, Lea, Flood 2014): one add, three xor-shift-multiplies.
        fn draw_below(&self, n: usize) -> usize {
            let s = self.state.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
            self.state.set(s);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (((z >> 32) * n as u64) >> 32) as usize
        }
    }
    let mut per = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let bare = Rc::new(Bare {
            state: Cell::new(round as u64),
            left: Cell::new(n),
            next: Cell::new(0),
        });
        let mut cos: Vec<Coroutine<(), (), ()>> = (0..coroutines)
            .map(|me| {
                let bare = Rc::clone(&bare);
                Coroutine::new(move |yielder, ()| {
                    while bare.left.get() > 0 {
                        bare.left.set(bare.left.get() - 1);
                        let k = bare.draw_below(coroutines);
                        if k != me {
                            bare.next.set(k);
                            yielder.suspend(());
                        }
                    }
                })
            })
            .collect();
        let start = Instant::now();
        loop {
            let t = bare.next.get();
            if let CoroutineResult::Return(()) = cos[t].resume(()) {
                break;
            }
        }
        per.push(start.elapsed().as_secs_f64() / n as f64);
        // The others are suspended; they are unwound when dropped.
        drop(std::hint::black_box(cos.drain(..)));
    }
    median(&per)
}

/// A markdown table.
#[derive(Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(cells.len(), self.headers.len(), "one cell per column");
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let mut out = line(&self.headers);
        let sep: Vec<String> = self.headers.iter().map(|_| "---".to_string()).collect();
        out.push_str(&line(&sep));
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

/// A count with a metric prefix: `1.23 M`.
pub fn si(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let (v, p) = if x >= 1e9 {
        (x / 1e9, " G")
    } else if x >= 1e6 {
        (x / 1e6, " M")
    } else if x >= 1e3 {
        (x / 1e3, " k")
    } else {
        (x, "")
    };
    if v >= 100.0 {
        format!("{v:.0}{p}")
    } else if v >= 10.0 {
        format!("{v:.1}{p}")
    } else {
        format!("{v:.2}{p}")
    }
}

/// A duration in the most readable unit.
pub fn dur(d: Duration) -> String {
    secs(d.as_secs_f64())
}

/// Seconds in the most readable unit.
pub fn secs(s: f64) -> String {
    if !s.is_finite() {
        "n/a".into()
    } else if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.1} µs", s * 1e6)
    } else {
        format!("{:.1} ns", s * 1e9)
    }
}

/// A ratio `a / b` printed as `12.3×`.
pub fn ratio(a: f64, b: f64) -> String {
    let r = a / b;
    if !r.is_finite() {
        "n/a".into()
    } else if r >= 10.0 {
        format!("{r:.0}×")
    } else {
        format!("{r:.2}×")
    }
}
