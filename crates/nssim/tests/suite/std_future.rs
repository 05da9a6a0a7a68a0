//! What `nssim::future` and shuttle's `future` give, for std: enough of
//! it, on real threads, that the suite's async models compile and run
//! against std too (std has no executor).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

struct Unparker(std::thread::Thread);

impl Wake for Unparker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Poll `fut` on this thread, parking while it is pending.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = Waker::from(Arc::new(Unparker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// The output when it is there, and the waker of whoever awaits it.
type Slot<T> = Arc<Mutex<(Option<T>, Option<Waker>)>>;

/// A spawned future's output, as a future.
pub struct JoinHandle<T>(Slot<T>);

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, ()>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slot = self.0.lock().unwrap();
        match slot.0.take() {
            Some(v) => Poll::Ready(Ok(v)),
            None => {
                slot.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Run `fut` on a thread of its own.
pub fn spawn<F>(fut: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let slot: Slot<F::Output> = Arc::new(Mutex::new((None, None)));
    let s = Arc::clone(&slot);
    std::thread::spawn(move || {
        let v = block_on(fut);
        let waker = {
            let mut slot = s.lock().unwrap();
            slot.0 = Some(v);
            slot.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    });
    JoinHandle(slot)
}

/// Pending once, having woken itself: nssim's, a plain future that needs
/// no scheduler of nssim's.
pub use nssim::future::yield_now;
