//! Shared by the report crate's tests: a synthetic execution that follows
//! the trace conventions, and the trace-event checker.

pub mod trace_events;

use report::Lexicon;
use sim::{costs::STEP, Event, ExecConfig, ExecReport, Execution, ObjId, Outcome, Schedule};

fn describe(e: &Event) -> Option<String> {
    (e.label == "unshare").then(|| match e.value {
        0 => "ok".to_string(),
        _ => "ENOSPC".to_string(),
    })
}

fn is_syscall(label: &str) -> bool {
    label == "unshare"
}

fn is_limit(name: &str) -> bool {
    name.starts_with("max_")
}

/// `unshare` is the syscall; -28 reads `ENOSPC`; `max_*` are limits.
pub const LEXICON: Lexicon<'static> = Lexicon {
    describe: &describe,
    is_syscall: &is_syscall,
    is_limit: &is_limit,
    sums: &[],
    errno: &errno,
};

fn errno(v: i64) -> Option<&'static str> {
    (v == -28).then_some("ENOSPC")
}

/// The RCU state, as the sync crate declares it.
static RCU: sim::Singleton = sim::Singleton::woken_on_exit("rcu");

fn rcu() -> ObjId {
    RCU.id().expect("inside a task")
}

fn lock(obj: ObjId) {
    sim::point("spin_lock", obj, &STEP);
    sim::note("acquired", obj, 0);
}

fn unlock(obj: ObjId) {
    sim::point("spin_unlock", obj, &STEP);
    sim::note("released", obj, 0);
}

/// What the task named by [`execution`] does.
fn script(fail: bool) {
    let (a, b) = (sim::new_object("A"), sim::new_object("B"));
    let (work, ns) = (sim::new_object("work"), sim::new_object("ns"));
    sim::point("unshare", ObjId::NONE, &STEP);
    // Hand over hand: the holds of A and B overlap without nesting.
    lock(a);
    lock(b);
    unlock(a);
    unlock(b);
    sim::note("counter:widgets", ObjId::NONE, 1);
    sim::note("counter:max_widgets", ObjId::NONE, 2);
    sim::note("unshare", ObjId::NONE, -28);
    for label in [
        "rcu_read_lock",
        "rcu_read_lock",
        "rcu_read_unlock",
        "rcu_read_unlock",
    ] {
        sim::point(label, rcu(), &STEP);
    }
    sim::point("schedule_work", work, &STEP);
    sim::park_object(ns, "queued");
    sim::point("work_run", work, &STEP);
    sim::note("gp_start", rcu(), 0);
    sim::sleep("grace period", 1000);
    sim::note("gp_end", rcu(), 0);
    sim::free_object(ns);
    sim::note("counter:widgets", ObjId::NONE, 0);
    sim::note("work_done", work, 0);
    if fail {
        sim::point("check", ObjId::NONE, &STEP);
        sim::fail(Outcome::Violation {
            invariant: "widgets.bounded".into(),
            detail: "<b>too many</b> & \"more\"".into(),
        });
    }
}

/// A recorded execution: an idle task `idler`, then `task` running
/// [`script`]; the run fails at a last step `check` when `fail` is set.
pub fn execution(task: &str, fail: bool) -> ExecReport {
    let config = ExecConfig {
        record: true,
        ..ExecConfig::default()
    };
    let mut e = Execution::new(config, &Schedule::Fair);
    let task = task.to_string();
    e.setup(move || {
        sim::spawn("idler", false, || sim::point("nap", ObjId::NONE, &STEP));
        sim::spawn(task, false, move || script(fail));
    });
    e.run()
}

/// The index of the first event with `label`.
pub fn find(report: &ExecReport, label: &str) -> usize {
    let events = report.events.as_ref().expect("recorded");
    events
        .iter()
        .position(|e| e.label == label)
        .unwrap_or_else(|| panic!("no event {label}"))
}
