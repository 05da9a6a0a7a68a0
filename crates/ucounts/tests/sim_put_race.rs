//! The look-up-versus-last-put race in the simulator: one task drops the
//! only reference to (init, 5) while another looks it up and then drops
//! what it got. Exhaustive search finds the use after free only with the
//! racy put.

use sim::{explore, ExecConfig, Execution, ExploreConfig, Outcome, StrategySpec};
use std::sync::Arc;
use ucounts::{UcountsNs, UcountsTable};

fn build(racy: bool) -> impl Fn(&mut Execution) + Sync {
    move |e: &mut Execution| {
        e.setup(|| {
            let table = Arc::new(if racy {
                UcountsTable::with_put_race()
            } else {
                UcountsTable::new()
            });
            let init = UcountsNs::init(0);
            let first = table.alloc_ucounts(&init, 5).expect("first entry");
            let t = Arc::clone(&table);
            sim::spawn("putter", false, move || t.put_ucounts(&first));
            sim::spawn("finder", false, move || {
                let got = table.alloc_ucounts(&init, 5).expect("an entry");
                table.put_ucounts(&got);
            });
        });
    }
}

fn search(racy: bool) -> Outcome {
    let cfg = ExploreConfig::new(
        StrategySpec::Dfs {
            preemption_bound: 3,
        },
        1,
        10_000,
        ExecConfig::default(),
    );
    explore(&cfg, &build(racy)).report.outcome
}

#[test]
fn the_racy_put_frees_an_entry_a_lookup_just_returned() {
    match search(true) {
        Outcome::UseAfterFree { object, .. } => assert!(object.starts_with("ucounts"), "{object}"),
        other => panic!("expected a use after free, got {other:?}"),
    }
}

#[test]
fn the_put_under_the_lock_is_safe_in_every_interleaving() {
    assert_eq!(search(false), Outcome::Pass);
}
