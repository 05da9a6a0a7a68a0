//! `std::sync::atomic` under nssim: every integer width, `AtomicBool` and
//! `AtomicPtr`, with std's methods and signatures. Each operation is one
//! scheduling point (a read for `load`, a write for everything else), so a
//! read-modify-write is as atomic as on real hardware; `fence` is a point
//! of its own. Accesses are sequentially consistent whatever `Ordering`
//! says (docs/rust-api.md says what that hides). Outside an execution the
//! same code runs on real threads.

use std::fmt;

pub use std::sync::atomic::Ordering;

type Obj = crate::lazy_obj::PerExecution<()>;

/// The scheduling point before a read of `obj` with `order`.
fn read(obj: &Obj, order: Ordering) {
    crate::weak::noted(obj.name(), "load", order);
    sim::read_point("atomic_read", obj.obj(), &::sync::costs::ATOMIC);
}

/// The scheduling point before a write (or read-modify-write) of `obj`
/// with `order`.
fn write(label: &'static str, obj: &Obj, order: Ordering) {
    crate::weak::noted(obj.name(), label, order);
    sim::point(label, obj.obj(), &::sync::costs::ATOMIC);
}

/// `std::sync::atomic::fence`: a scheduling point; every access is
/// already sequentially consistent.
pub fn fence(order: Ordering) {
    crate::weak::noted("fence", "fence", order);
    sim::point("fence", sim::ObjId::NONE, &::sync::costs::ATOMIC);
    std::sync::atomic::fence(order);
}

/// `std::sync::atomic::compiler_fence`: nothing to order between tasks.
pub fn compiler_fence(order: Ordering) {
    std::sync::atomic::compiler_fence(order);
}

/// The methods every atomic has: the value type `$t` of std's `$name`
/// (with its type parameters `$g`, `AtomicPtr`'s `T`).
macro_rules! common {
    ($name:ident, $t:ty) => {
        common!(@ [] $name, $t);
    };
    (@ [$($g:ident),*] $name:ident, $t:ty) => {
        impl<$($g),*> $name<$($g),*> {
            /// An atomic with a name of its own in traces.
            pub const fn named(name: &'static str, v: $t) -> Self {
                $name {
                    v: std::sync::atomic::$name::new(v),
                    obj: Obj::named(name),
                }
            }
            pub fn load(&self, order: Ordering) -> $t {
                read(&self.obj, order);
                self.v.load(order)
            }
            pub fn store(&self, v: $t, order: Ordering) {
                write("atomic_set", &self.obj, order);
                self.v.store(v, order)
            }
            pub fn swap(&self, v: $t, order: Ordering) -> $t {
                write("atomic_xchg", &self.obj, order);
                self.v.swap(v, order)
            }
            pub fn compare_exchange(
                &self,
                current: $t,
                new: $t,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$t, $t> {
                write("atomic_cmpxchg", &self.obj, success);
                self.v.compare_exchange(current, new, success, failure)
            }
            /// As `compare_exchange`: it never fails spuriously here.
            pub fn compare_exchange_weak(
                &self,
                current: $t,
                new: $t,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$t, $t> {
                self.compare_exchange(current, new, success, failure)
            }
            /// `f` applied until it gives up or its value is stored: one
            /// scheduling point, as no other task runs in between.
            pub fn fetch_update<F>(
                &self,
                set_order: Ordering,
                fetch_order: Ordering,
                f: F,
            ) -> Result<$t, $t>
            where
                F: FnMut($t) -> Option<$t>,
            {
                write("atomic_update", &self.obj, set_order);
                self.v.fetch_update(set_order, fetch_order, f)
            }
            /// std's deprecated `compare_and_swap`: `compare_exchange`,
            /// giving the value found either way.
            pub fn compare_and_swap(&self, current: $t, new: $t, order: Ordering) -> $t {
                let failure = match order {
                    Ordering::Release | Ordering::Relaxed => Ordering::Relaxed,
                    Ordering::AcqRel | Ordering::Acquire => Ordering::Acquire,
                    _ => Ordering::SeqCst,
                };
                match self.compare_exchange(current, new, order, failure) {
                    Ok(v) | Err(v) => v,
                }
            }
            /// loom's `unsync_load`: the value, read with no scheduling
            /// point (the model has made sure no task writes it now).
            ///
            /// # Safety
            /// As loom's: no other task may write the atomic meanwhile.
            pub unsafe fn unsync_load(&self) -> $t {
                self.v.load(Ordering::SeqCst)
            }
            pub fn get_mut(&mut self) -> &mut $t {
                self.v.get_mut()
            }
            pub fn into_inner(self) -> $t {
                self.v.into_inner()
            }
        }

        impl<$($g),*> fmt::Debug for $name<$($g),*> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // What std shows, read without a scheduling point.
                fmt::Debug::fmt(&self.v, f)
            }
        }
    };
}

/// The read-modify-write operations of an integer or a flag, each with
/// the label its scheduling point has in traces (the kernel's names, as
/// the kernel primitives' atomics have them).
macro_rules! rmw {
    ($name:ident, $t:ty, $($op:ident => $label:literal),*) => {
        impl $name {
            $(
                pub fn $op(&self, v: $t, order: Ordering) -> $t {
                    write($label, &self.obj, order);
                    self.v.$op(v, order)
                }
            )*
        }
    };
}

macro_rules! atomic_int {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[doc = concat!("`std::sync::atomic::", stringify!($name), "`, explored.")]
        pub struct $name {
            v: std::sync::atomic::$name,
            obj: Obj,
        }

        impl $name {
            /// Named by where it is made; `const`, so that it may be a
            /// `static` (which then works in every execution).
            #[track_caller]
            pub const fn new(v: $t) -> Self {
                $name {
                    v: std::sync::atomic::$name::new(v),
                    obj: Obj::new(std::panic::Location::caller()),
                }
            }
        }

        impl Default for $name {
            #[track_caller]
            fn default() -> Self {
                Self::new(0)
            }
        }

        impl From<$t> for $name {
            #[track_caller]
            fn from(v: $t) -> Self {
                Self::new(v)
            }
        }

        common!($name, $t);
        rmw!(
            $name, $t,
            fetch_add => "atomic_add",
            fetch_sub => "atomic_sub",
            fetch_and => "atomic_and",
            fetch_nand => "atomic_nand",
            fetch_or => "atomic_or",
            fetch_xor => "atomic_xor",
            fetch_max => "atomic_max",
            fetch_min => "atomic_min"
        );
    )*};
}

atomic_int!(
    AtomicU8: u8,
    AtomicU16: u16,
    AtomicU32: u32,
    AtomicU64: u64,
    AtomicUsize: usize,
    AtomicI8: i8,
    AtomicI16: i16,
    AtomicI32: i32,
    AtomicI64: i64,
    AtomicIsize: isize,
);

/// `std::sync::atomic::AtomicBool`, explored.
pub struct AtomicBool {
    v: std::sync::atomic::AtomicBool,
    obj: Obj,
}

impl AtomicBool {
    /// Named by where it is made; `const`, so that it may be a `static`.
    #[track_caller]
    pub const fn new(v: bool) -> Self {
        AtomicBool {
            v: std::sync::atomic::AtomicBool::new(v),
            obj: Obj::new(std::panic::Location::caller()),
        }
    }
}

impl Default for AtomicBool {
    #[track_caller]
    fn default() -> Self {
        Self::new(false)
    }
}

impl From<bool> for AtomicBool {
    #[track_caller]
    fn from(v: bool) -> Self {
        Self::new(v)
    }
}

common!(AtomicBool, bool);
rmw!(
    AtomicBool, bool,
    fetch_and => "atomic_and",
    fetch_nand => "atomic_nand",
    fetch_or => "atomic_or",
    fetch_xor => "atomic_xor"
);

/// `std::sync::atomic::AtomicPtr`, explored.
pub struct AtomicPtr<T> {
    v: std::sync::atomic::AtomicPtr<T>,
    obj: Obj,
}

impl<T> AtomicPtr<T> {
    /// Named by where it is made; `const`, so that it may be a `static`.
    #[track_caller]
    pub const fn new(p: *mut T) -> Self {
        AtomicPtr {
            v: std::sync::atomic::AtomicPtr::new(p),
            obj: Obj::new(std::panic::Location::caller()),
        }
    }
}

common!(@ [T] AtomicPtr, *mut T);

impl<T> Default for AtomicPtr<T> {
    #[track_caller]
    fn default() -> Self {
        Self::new(std::ptr::null_mut())
    }
}
