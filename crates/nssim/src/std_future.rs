//! Async code under nssim, with shuttle's `future` API: `spawn` makes a
//! future a task of its own, `block_on` runs one in the current task, and
//! a `JoinHandle` is itself a future. A task polls its future, and while
//! the future is pending waits for its waker, a wait the deadlock detector
//! sees; every poll after the first is a scheduling point, so a future
//! that wakes itself (`yield_now`) lets other tasks run. Outside an
//! execution the same calls run on real threads (a thread per spawned
//! future, parked while pending).

use crate::mirror::unpoisoned;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as HostMutex};
use std::task::{Context, Poll, Wake, Waker};

/// What a pending future's task waits on: woken by its waker.
struct Signal {
    notified: AtomicBool,
    /// Inside an execution: what the task blocks on.
    obj: sim::ObjId,
    /// Outside one: the thread to unpark.
    thread: std::thread::Thread,
}

impl Signal {
    fn new() -> Arc<Signal> {
        Arc::new(Signal {
            notified: AtomicBool::new(false),
            obj: sim::new_object("future"),
            thread: std::thread::current(),
        })
    }

    /// Wait for a wake (at once if one came already).
    fn wait(&self) {
        if sim::active() {
            sim::wait_until("await", self.obj, || {
                self.notified.swap(false, Ordering::SeqCst)
            });
        } else {
            while !self.notified.swap(false, Ordering::SeqCst) {
                std::thread::park();
            }
        }
    }
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.notified.store(true, Ordering::SeqCst);
        if sim::active() {
            sim::wake_all(self.obj, 0);
        } else {
            self.thread.unpark();
        }
    }
}

/// Poll `fut` to completion in the current task, unless `stop`'s flag
/// is set first (`None` then); its slot gets the task's signal, for a stop
/// to wake it.
fn run_to_end<F: Future>(fut: F, stop: Option<&Stop>) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let signal = Signal::new();
    if let Some(stop) = stop {
        *unpoisoned(&stop.signal) = Some(Arc::clone(&signal));
    }
    let waker = Waker::from(Arc::clone(&signal));
    let mut cx = Context::from_waker(&waker);
    let mut first = true;
    loop {
        if !first && sim::active() {
            // A yield: a future woken at once (`yield_now`) lets the next
            // task run first.
            sim::yield_point("poll", signal.obj, &sim::costs::STEP);
        }
        first = false;
        if stop.is_some_and(|s| s.flag.load(Ordering::SeqCst)) {
            return None;
        }
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Some(v);
        }
        signal.wait();
    }
}

/// Run `future` to completion in the current task and return its output.
///
/// ```
/// use nssim::future;
///
/// let report = nssim::check_dfs(|| {
///     let a = future::spawn(async { 6 });
///     let b = future::spawn(async { 7 });
///     let product = future::block_on(async { a.await.unwrap() * b.await.unwrap() });
///     assert_eq!(product, 42);
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    run_to_end(future, None).expect("nothing stops block_on")
}

/// A request to stop a spawned future, and the signal that wakes its task
/// to see it.
struct Stop {
    flag: AtomicBool,
    signal: HostMutex<Option<Arc<Signal>>>,
}

/// Why a spawned future gave no output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinError {
    /// [`JoinHandle::abort`] stopped it.
    Cancelled,
}

impl std::fmt::Display for JoinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the task was cancelled")
    }
}

impl std::error::Error for JoinError {}

/// A spawned future's output, as a future; or wait for it with
/// `block_on`.
pub struct JoinHandle<T> {
    state: Arc<JoinState<T>>,
}

struct JoinState<T> {
    result: HostMutex<Option<T>>,
    aborted: Stop,
    /// `done`, and the wakers of those who await it meanwhile.
    awaiting: HostMutex<(bool, Vec<Waker>)>,
}

impl<T> JoinHandle<T> {
    /// Stop the task at its next poll; awaiting the handle then gives
    /// `Err(JoinError::Cancelled)` (unless it had finished).
    pub fn abort(&self) {
        let stop = &self.state.aborted;
        stop.flag.store(true, Ordering::SeqCst);
        if let Some(signal) = unpoisoned(&stop.signal).clone() {
            signal.wake_by_ref();
        }
    }

    /// Whether the task has finished (or was stopped).
    pub fn is_finished(&self) -> bool {
        unpoisoned(&self.state.awaiting).0
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut awaiting = unpoisoned(&self.state.awaiting);
        if !awaiting.0 {
            awaiting.1.push(cx.waker().clone());
            return Poll::Pending;
        }
        drop(awaiting);
        match unpoisoned(&self.state.result).take() {
            Some(v) => Poll::Ready(Ok(v)),
            None => Poll::Ready(Err(JoinError::Cancelled)),
        }
    }
}

/// Make `future` a task of its own, named by where it is spawned.
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let state = Arc::new(JoinState {
        result: HostMutex::new(None),
        aborted: Stop {
            flag: AtomicBool::new(false),
            signal: HostMutex::new(None),
        },
        awaiting: HostMutex::new((false, Vec::new())),
    });
    let s = Arc::clone(&state);
    let body = move || {
        let output = run_to_end(future, Some(&s.aborted));
        *unpoisoned(&s.result) = output;
        let wakers = {
            let mut awaiting = unpoisoned(&s.awaiting);
            awaiting.0 = true;
            std::mem::take(&mut awaiting.1)
        };
        for w in wakers {
            w.wake();
        }
    };
    let name = crate::mirror::thread::site_task_name(std::panic::Location::caller());
    if sim::active() {
        // Past the tasks limit the execution ends at its next scheduling
        // point with outcome `limit`.
        let _ = sim::spawn(name, false, body);
    } else {
        std::thread::Builder::new()
            .name(name)
            .spawn(body)
            .expect("the system starts a thread");
    }
    JoinHandle { state }
}

/// A future that is pending once, having woken itself: the task polling
/// it lets others run before it goes on.
pub fn yield_now() -> impl Future<Output = ()> {
    struct YieldNow(bool);
    impl Future for YieldNow {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                return Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
    YieldNow(false)
}
