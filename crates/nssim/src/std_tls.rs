//! `std::thread_local!` used inside a model, detected.
//!
//! Every task of an execution runs on one OS thread, so a thread-local of
//! std's is one value for all of them, and it lives on from one execution
//! to the next: a failure can then depend on executions run before it,
//! and its token replays something else. It cannot be made per task (std
//! gives no hook), so it is found and said instead:
//!
//! - the program's own thread-locals are read from its symbol table
//!   (`/proc/self/exe`, `STT_TLS` symbols: each one's offset and size in
//!   the program's TLS block), once per process, leaving out those of std
//!   and of nssim's own runtime ([`RUNTIME_CRATES`]);
//! - each execution copies their bytes before its first task starts and
//!   compares them when it is dropped: one that changed (a value set, or a
//!   lazy one made on first use) was used inside the model.
//!
//! Each is noted in the check's [`crate::Report`] and printed once per
//! process. A thread-local only read and never initialized lazily is not
//! seen (it is one constant for every task, which is harmless). Where the
//! symbol table or the TLS block cannot be found (a stripped binary, a
//! platform other than Linux with glibc), nothing is detected.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};

/// The crates whose thread-locals nssim's runtime itself uses inside an
/// execution (their changes say nothing about the model).
const RUNTIME_CRATES: &[&str] = &[
    "std",
    "core",
    "alloc",
    "test",
    "nssim",
    "sim",
    "sync",
    "report",
    "parking_lot",
    "parking_lot_core",
    "lock_api",
    "corosensei",
];

/// The thread-locals one check found used, by path.
pub(crate) type Noted = Arc<Mutex<BTreeSet<String>>>;

/// One of the program's own thread-locals: where it is in the TLS block.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Symbol {
    path: String,
    offset: usize,
    size: usize,
}

/// The program's thread-locals that are not the runtime's, read once.
fn catalog() -> &'static [Symbol] {
    static CATALOG: OnceLock<Vec<Symbol>> = OnceLock::new();
    CATALOG.get_or_init(|| imp::read_catalog().unwrap_or_default())
}

/// The path of a thread-local's symbol, as written in its crate
/// (`crate::module::NAME`), without std's generated tail; `None` for a
/// runtime crate's.
fn user_path(symbol: &str) -> Option<String> {
    let demangled = format!("{:#}", rustc_demangle::demangle(symbol));
    let path: Vec<&str> = demangled
        .split("::")
        .take_while(|segment| !segment.starts_with('{') && !segment.starts_with('<'))
        .collect();
    let krate = *path.first()?;
    if path.len() < 2 || RUNTIME_CRATES.contains(&krate) {
        return None;
    }
    Some(path.join("::"))
}

/// The bytes of the program's thread-locals on this thread, before an
/// execution; [`Snapshot::compare`] notes those that changed.
pub(crate) struct Snapshot {
    bytes: Vec<Vec<u8>>,
    noted: Noted,
}

impl Snapshot {
    /// The thread-locals' bytes now, noted into `noted` when they change.
    pub(crate) fn take(noted: &Noted) -> Option<Snapshot> {
        let symbols = catalog();
        if symbols.is_empty() {
            return None;
        }
        Some(Snapshot {
            bytes: imp::read_bytes(symbols)?,
            noted: Arc::clone(noted),
        })
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let Some(now) = imp::read_bytes(catalog()) else {
            return;
        };
        for (symbol, (before, after)) in catalog().iter().zip(self.bytes.iter().zip(&now)) {
            if before != after {
                note(&self.noted, &symbol.path);
            }
        }
    }
}

/// Note `path` for the check, and print it the first time this process
/// sees it.
fn note(noted: &Noted, path: &str) {
    static PRINTED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    crate::mirror::unpoisoned(noted).insert(path.to_string());
    if crate::mirror::unpoisoned(&PRINTED).insert(path.to_string()) {
        eprintln!("nssim: warning: {}", message(path));
    }
}

/// What is wrong with `path`, said once.
pub(crate) fn message(path: &str) -> String {
    format!(
        "std::thread_local! `{path}` is used inside a model: std's thread-locals are one per OS thread, so every task of an execution shares its value and it carries over to the next execution; use nssim::thread_local!"
    )
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    use super::{user_path, Symbol};
    use object::{Object, ObjectSymbol, SymbolKind};

    /// The program's own thread-locals, from its symbol table.
    pub(super) fn read_catalog() -> Option<Vec<Symbol>> {
        let file = std::fs::File::open("/proc/self/exe").ok()?;
        let cache = object::ReadCache::new(file);
        let program = object::File::parse(&cache).ok()?;
        let mut symbols: Vec<Symbol> = program
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Tls && s.size() > 0)
            .filter_map(|s| {
                Some(Symbol {
                    path: user_path(s.name().ok()?)?,
                    offset: usize::try_from(s.address()).ok()?,
                    size: usize::try_from(s.size()).ok()?,
                })
            })
            .collect();
        symbols.sort_by_key(|s| s.offset);
        Some(symbols)
    }

    /// Where this thread's copy of the program's TLS block starts.
    fn tls_block() -> Option<*const u8> {
        unsafe extern "C" fn first(
            info: *mut libc::dl_phdr_info,
            _size: libc::size_t,
            out: *mut libc::c_void,
        ) -> libc::c_int {
            // SAFETY: the loader passes a valid entry, the program's first;
            // `out` is the `*const u8` given below.
            unsafe { *out.cast::<*const u8>() = (*info).dlpi_tls_data.cast::<u8>() };
            1
        }
        let mut block: *const u8 = std::ptr::null();
        // SAFETY: the callback writes one pointer into `block` and stops.
        unsafe { libc::dl_iterate_phdr(Some(first), (&raw mut block).cast()) };
        (!block.is_null()).then_some(block)
    }

    /// Each symbol's bytes on this thread now.
    pub(super) fn read_bytes(symbols: &[Symbol]) -> Option<Vec<Vec<u8>>> {
        let block = tls_block()?;
        let bytes = symbols
            .iter()
            .map(|s| {
                // SAFETY: the symbol lies inside the program's TLS block
                // (its offset and size come from the program's own symbol
                // table), which is allocated for this running thread.
                unsafe { std::slice::from_raw_parts(block.add(s.offset), s.size) }.to_vec()
            })
            .collect();
        Some(bytes)
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    use super::Symbol;

    pub(super) fn read_catalog() -> Option<Vec<Symbol>> {
        None
    }

    pub(super) fn read_bytes(_: &[Symbol]) -> Option<Vec<Vec<u8>>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::user_path;

    #[test]
    fn a_thread_local_is_named_by_its_path_and_the_runtime_s_are_left_out() {
        let mine = "_ZN7mycrate5state7COUNTER29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h26162f2b85c2ec5eE";
        assert_eq!(user_path(mine).as_deref(), Some("mycrate::state::COUNTER"));
        let runtime = "_ZN5nssim4weak5NOTES29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h26162f2b85c2ec5eE";
        assert_eq!(user_path(runtime), None);
        let std_v0 = "_RNvNtNtCsjrHSEGnQ3l9_3std6thread7current7CURRENT";
        assert_eq!(user_path(std_v0), None);
    }
}
