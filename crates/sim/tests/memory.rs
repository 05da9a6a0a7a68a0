//! The counting allocator lets an execution that keeps allocating end with
//! outcome `limit` (memory) instead of exhausting the machine. A test
//! binary of its own: the limit is a setting of the whole process.

use sim::{costs::STEP, ExecConfig, Execution, ObjId, Outcome, Schedule};

#[global_allocator]
static ALLOC: sim::mem::CountingAlloc = sim::mem::CountingAlloc::SYSTEM;

#[test]
fn a_run_past_the_memory_limit_ends_with_a_limit_outcome() {
    sim::mem::set_limit(Some(256 << 20));
    assert!(sim::mem::live_bytes().is_some());
    let mut e = Execution::new(
        ExecConfig::default(),
        &Schedule::Random {
            seed: 1,
            iteration: 0,
        },
    );
    e.setup(|| {
        sim::spawn("hog", false, || {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            // 1 MiB a step: 4 GiB if nothing stopped it.
            for _ in 0..4096 {
                hoard.push(vec![1u8; 1 << 20]);
                sim::point("alloc", ObjId::NONE, &STEP);
            }
        });
    });
    let r = e.run();
    sim::mem::set_limit(None);
    match r.outcome {
        Outcome::Limit { which, value } => {
            assert_eq!(which, "memory");
            assert!(value > 256 << 20, "{value}");
        }
        other => panic!("expected a memory limit, got {other}"),
    }
    assert!(
        r.steps < 1000,
        "stopped soon after the limit: {} steps",
        r.steps
    );
    // The hoard was freed when the execution was torn down.
    assert!(sim::mem::live_bytes().unwrap() < 64 << 20);
}
