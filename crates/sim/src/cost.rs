//! Virtual-time costs. Each primitive and model path names its cost with a
//! static [`CostKey`] that carries the default; a scenario's cost table
//! overrides defaults by name.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

/// A named entry of the cost table with its default in nanoseconds.
#[derive(Debug)]
pub struct CostKey {
    pub name: &'static str,
    pub default_ns: u64,
    pub summary: &'static str,
    slot: OnceLock<usize>,
}

static INTERNED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

fn intern(name: &'static str) -> usize {
    let mut names = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = names.iter().position(|n| *n == name) {
        return i;
    }
    names.push(name);
    names.len() - 1
}

impl CostKey {
    pub const fn new(name: &'static str, default_ns: u64, summary: &'static str) -> Self {
        CostKey {
            name,
            default_ns,
            summary,
            slot: OnceLock::new(),
        }
    }

    /// A small process-wide index for this key, used for fast look-ups.
    /// Its value never influences a run.
    pub fn slot(&self) -> usize {
        *self.slot.get_or_init(|| intern(self.name))
    }
}

/// Overrides of the cost table, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CostTable {
    overrides: BTreeMap<String, u64>,
}

impl CostTable {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set(&mut self, name: &str, ns: u64) {
        self.overrides.insert(name.to_string(), ns);
    }

    pub fn overrides(&self) -> impl Iterator<Item = (&str, u64)> {
        self.overrides.iter().map(|(k, v)| (k.as_str(), *v))
    }

    pub fn get(&self, key: &CostKey) -> u64 {
        self.overrides
            .get(key.name)
            .copied()
            .unwrap_or(key.default_ns)
    }
}

/// The per-run resolved table: slot index to override.
#[derive(Debug, Default)]
pub(crate) struct ResolvedCosts {
    by_slot: Vec<Option<u64>>,
    table: CostTable,
}

impl ResolvedCosts {
    pub(crate) fn new(table: &CostTable) -> Self {
        ResolvedCosts {
            by_slot: Vec::new(),
            table: table.clone(),
        }
    }

    /// The cost of `key` in this run: one indexed load once the key has
    /// been resolved (every scheduling point asks).
    #[inline]
    pub(crate) fn get(&mut self, key: &CostKey) -> u64 {
        if let Some(&slot) = key.slot.get() {
            if let Some(Some(v)) = self.by_slot.get(slot) {
                return *v;
            }
        }
        self.resolve(key)
    }

    #[cold]
    #[inline(never)]
    fn resolve(&mut self, key: &CostKey) -> u64 {
        let slot = key.slot();
        let v = self.table.get(key);
        if self.by_slot.len() <= slot {
            self.by_slot.resize(slot + 1, None);
        }
        self.by_slot[slot] = Some(v);
        v
    }
}

/// A scheduling point whose caller names no cost.
pub static STEP: CostKey = CostKey::new("step", 10, "any scheduling point not listed elsewhere");
