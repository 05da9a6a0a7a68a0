//! The real `inc_ucount`/`dec_ucount` path on the std backend (outside a
//! simulation the primitives are plain atomics and parking_lot locks), with
//! 1, 2 and 4 threads each charging and uncharging one object at a time in
//! a container one level below the initial namespace: each thread as its
//! own uid (the levels above are shared), and all threads as one uid.
//!
//! ```text
//! cargo bench -p nssim-ucounts --features criterion --bench inc_dec_ucount
//! ```

#[cfg(loom)]
fn main() {}

#[cfg(not(loom))]
fn main() {
    imp::benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}

#[cfg(not(loom))]
mod imp {
    use criterion::{criterion_group, Criterion, Throughput};
    use std::sync::{Arc, Barrier};
    use std::time::{Duration, Instant};
    use ucounts::{UcountType, UcountsNs, UcountsTable};

    const T: UcountType = UcountType::UserNamespaces;

    struct Bench {
        table: Arc<UcountsTable>,
        child: Arc<UcountsNs>,
        /// References that keep each uid's entry hashed between pairs, as
        /// a running process's credential does.
        _held: Vec<Arc<ucounts::Ucounts>>,
    }

    fn setup(uids: &[u32]) -> Bench {
        let table = Arc::new(UcountsTable::new());
        let init = UcountsNs::init(0);
        let owner = table.alloc_ucounts(&init, 1000);
        let child = UcountsNs::child(1, "container", &init, owner);
        let held = uids
            .iter()
            .map(|u| table.alloc_ucounts(&child, *u).expect("entry"))
            .collect();
        Bench {
            table,
            child,
            _held: held,
        }
    }

    /// Time `iters` inc/dec pairs split over `threads` threads.
    fn run(threads: usize, same_uid: bool, iters: u64) -> Duration {
        let uids: Vec<u32> = (0..threads as u32)
            .map(|i| if same_uid { 7 } else { 7 + i })
            .collect();
        let b = setup(&uids);
        let per = iters.div_ceil(threads as u64);
        let start = Arc::new(Barrier::new(threads + 1));
        let handles: Vec<_> = uids
            .iter()
            .map(|&uid| {
                let (table, child, start) = (
                    Arc::clone(&b.table),
                    Arc::clone(&b.child),
                    Arc::clone(&start),
                );
                std::thread::spawn(move || {
                    start.wait();
                    for _ in 0..per {
                        let u = table.inc_ucount(&child, uid, T).expect("below the limit");
                        table.dec_ucount(&u, T);
                    }
                })
            })
            .collect();
        start.wait();
        let t = Instant::now();
        for h in handles {
            h.join().expect("bench thread");
        }
        t.elapsed()
    }

    fn inc_dec(c: &mut Criterion) {
        let mut g = c.benchmark_group("inc_dec_ucount");
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(500));
        g.measurement_time(Duration::from_secs(2));
        g.throughput(Throughput::Elements(1));
        for threads in [1usize, 2, 4] {
            g.bench_function(format!("{threads}_threads_own_uid"), |b| {
                b.iter_custom(|iters| run(threads, false, iters))
            });
            if threads > 1 {
                g.bench_function(format!("{threads}_threads_one_uid"), |b| {
                    b.iter_custom(|iters| run(threads, true, iters))
                });
            }
        }
        g.finish();
    }

    criterion_group!(group, inc_dec);

    pub fn benches() {
        group();
    }
}
