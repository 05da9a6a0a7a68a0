//! The ucounts side of a named state (`sim::Execution::name_state`):
//! each value a later step can read, written in a fixed order. Each
//! function takes its struct apart field by field, so that a field added
//! to it does not compile until it is named here or said to be fixed.

use crate::{Ucounts, UcountsNs, UcountsTable};
use std::hash::Hasher;

impl UcountsNs {
    /// Its identity, its limits, and the entry it was charged to.
    pub fn name_state(&self, h: &mut dyn Hasher) {
        let UcountsNs {
            id,
            // Fixed from creation, or named by `id`:
            name: _,
            parent: _,
            level: _,
            rlimit_max: _,
            obj: _,
            ucount_max,
            ucounts,
        } = self;
        h.write_u32(*id);
        ucount_max.iter().for_each(|m| h.write_i64(m.peek()));
        h.write_u32(ucounts.as_ref().map_or(0, |u| u.obj.0));
    }
}

impl Ucounts {
    /// Its identity and every counter in it.
    pub fn name_state(&self, h: &mut dyn Hasher) {
        let Ucounts {
            obj,
            ns,
            uid,
            serial,
            count,
            ucount,
            rlimit,
            freed,
            // What the views draw changes no behaviour.
            rlimit_drawn: _,
        } = self;
        h.write_u32(obj.0);
        h.write_u32(ns.id);
        h.write_u32(*uid);
        h.write_u64(*serial);
        h.write_i64(count.peek());
        ucount.iter().for_each(|c| h.write_i64(c.peek()));
        rlimit.iter().for_each(|c| h.write_i64(c.peek()));
        h.write_u8(freed.load(std::sync::atomic::Ordering::Relaxed) as u8);
    }
}

impl UcountsTable {
    /// The hashed entries with their counters, and the ledger. False
    /// while a task holds the table's lock.
    pub fn name_state(&self, h: &mut dyn Hasher) -> bool {
        let UcountsTable {
            table,
            ledger,
            // Fixed for the run:
            put_race: _,
            ns_pins: _,
            faults: _,
        } = self;
        let named = table.peek_with(|t| {
            h.write_usize(t.len());
            t.values().for_each(|u| u.name_state(h));
        });
        named.is_some() && ledger.name_state(h)
    }
}
