//! `lazy_static!` as loom's and shuttle's have it: inside an execution
//! each execution has its own value, made on first use and dropped when
//! the execution ends (each execution is one run of the program); outside
//! one, one value for the process, as the `lazy_static` crate's.

use std::collections::BTreeMap;
use std::sync::Mutex as HostMutex;

/// The value behind a `lazy_static!` static.
#[doc(hidden)]
pub struct LazyStatic<T: 'static> {
    init: fn() -> T,
    /// By execution serial: the value, boxed (its address kept while the
    /// execution runs).
    values: HostMutex<BTreeMap<u64, usize>>,
    outside: std::sync::OnceLock<T>,
}

impl<T: 'static> LazyStatic<T> {
    #[doc(hidden)]
    pub const fn new(init: fn() -> T) -> LazyStatic<T> {
        LazyStatic {
            init,
            values: HostMutex::new(BTreeMap::new()),
            outside: std::sync::OnceLock::new(),
        }
    }

    /// This execution's value, made now if it was not.
    pub fn get(&'static self) -> &'static T {
        let Some(serial) = sim::execution_serial() else {
            return self.outside.get_or_init(self.init);
        };
        let found = crate::mirror::unpoisoned(&self.values)
            .get(&serial)
            .copied();
        let addr = match found {
            Some(addr) => addr,
            None => {
                // Made outside the lock: the initializer may use another,
                // and take scheduling points, where another task may make
                // it first (whose value is then the one).
                let made = Box::new((self.init)());
                let mut values = crate::mirror::unpoisoned(&self.values);
                if let Some(&first) = values.get(&serial) {
                    drop(values);
                    drop(made);
                    // SAFETY: as below.
                    return unsafe { &*(first as *const T) };
                }
                let addr = Box::into_raw(made) as usize;
                values.insert(serial, addr);
                drop(values);
                crate::lazy_obj::at_end(move || {
                    if let Some(addr) = crate::mirror::unpoisoned(&self.values).remove(&serial) {
                        // SAFETY: made by `Box::into_raw` above; the
                        // execution whose tasks used it has ended.
                        drop(unsafe { Box::from_raw(addr as *mut T) });
                    }
                });
                addr
            }
        };
        // SAFETY: the box lives until the execution ends, and only its
        // tasks, which end first, hold the reference.
        unsafe { &*(addr as *const T) }
    }
}

/// `lazy_static!`: `static ref NAME: Type = expr;` items, each a value
/// made on first use, per execution inside one (see the module doc).
///
/// ```
/// use nssim::sync::atomic::{AtomicUsize, Ordering};
/// use nssim::thread;
///
/// nssim::lazy_static! {
///     static ref HITS: AtomicUsize = AtomicUsize::new(0);
/// }
/// let report = nssim::check_dfs(|| {
///     let t = thread::spawn(|| HITS.fetch_add(1, Ordering::SeqCst));
///     HITS.fetch_add(1, Ordering::SeqCst);
///     t.join().unwrap();
///     assert_eq!(HITS.load(Ordering::SeqCst), 2, "a value of this execution's own");
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
#[macro_export]
macro_rules! lazy_static {
    ($(#[$attr:meta])* $vis:vis static ref $name:ident : $t:ty = $init:expr; $($rest:tt)*) => {
        $(#[$attr])*
        #[allow(non_camel_case_types)]
        $vis struct $name {
            _private: (),
        }
        $vis static $name: $name = $name { _private: () };
        impl ::std::ops::Deref for $name {
            type Target = $t;
            fn deref(&self) -> &$t {
                static LAZY: $crate::LazyStatic<$t> = $crate::LazyStatic::new(|| $init);
                LAZY.get()
            }
        }
        $crate::lazy_static!($($rest)*);
    };
    () => {};
}
