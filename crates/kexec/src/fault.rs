//! `fail_alloc` on a kernel with fault injection (the lab's
//! `6.12-fault`): the model fails the Nth allocation at one named site; the
//! kernel's failslab can do the same for the first one. The world root
//! sets failslab to fail, `times` over the whole run, only slab
//! allocations made with the site's function on the stack (the stack-trace
//! filter, from the function's range in `/proc/kallsyms`) by tasks that
//! asked for it (`task-filter`); the op then marks its task
//! (`/proc/thread-self/make-it-fail`), so that the task's next allocation
//! under that function fails, as the model's does. failslab's settings are
//! the kernel's own, shared by every task: they are only written on a
//! disposable machine.

use crate::sys::{self, SysResult};
use kernel::setup::{Op, Setup};

/// failslab's settings.
const FAILSLAB: &str = "/sys/kernel/debug/failslab";

/// The `fail_alloc` ops of the scenario, every task's and child's.
fn fail_allocs(setup: &Setup) -> Vec<(&str, u64)> {
    setup
        .every_op()
        .filter_map(|op| match op {
            Op::FailAlloc { site, nth } => Some((site.as_str(), *nth)),
            _ => None,
        })
        .collect()
}

pub fn injects_faults(setup: &Setup) -> bool {
    !fail_allocs(setup).is_empty()
}

/// Why this scenario's faults cannot be injected here, if they cannot.
pub fn refuses(setup: &Setup) -> Option<String> {
    let faults = fail_allocs(setup);
    if faults.is_empty() {
        return None;
    }
    if let Some((site, nth)) = faults.iter().find(|(_, nth)| *nth != 1) {
        return Some(format!(
            "fail_alloc({site}, {nth}): failslab's stack-trace filter fails the first allocation under a function, not the Nth"
        ));
    }
    let mut sites: Vec<&str> = faults.iter().map(|(s, _)| *s).collect();
    sites.sort_unstable();
    sites.dedup();
    if sites.len() > 1 {
        return Some(format!(
            "faults at {} sites: failslab filters one function at a time",
            sites.len()
        ));
    }
    let filter = format!("{FAILSLAB}/require-start");
    (!std::path::Path::new(&filter).exists()).then(|| {
        "this kernel has no failslab with a stack-trace filter (CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_STACKTRACE_FILTER, debugfs): `nssim lab build-fault-kernel` builds one".to_string()
    })
}

/// The address range of the kernel function `name`: from its symbol to
/// the next symbol above it.
fn function_range(kallsyms: &str, name: &str) -> Option<(u64, u64)> {
    let mut addresses: Vec<u64> = Vec::new();
    let mut start = None;
    for line in kallsyms.lines() {
        let mut words = line.split_whitespace();
        let (Some(addr), Some(_kind), Some(symbol)) = (words.next(), words.next(), words.next())
        else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        if symbol == name {
            start = Some(addr);
        }
        addresses.push(addr);
    }
    let start = start.filter(|a| *a != 0)?;
    let end = addresses.into_iter().filter(|a| *a > start).min()?;
    Some((start, end))
}

/// Set failslab for the scenario's faults (see the module's doc); the
/// world root calls it before the tasks start.
pub fn arm_failslab(setup: &Setup) -> Result<(), String> {
    let faults = fail_allocs(setup);
    let Some((site, _)) = faults.first() else {
        return Ok(());
    };
    let kallsyms = sys::read_file("/proc/kallsyms")
        .map_err(|e| format!("/proc/kallsyms: {}", sys::errno_name(e)))?;
    let (start, end) = function_range(&kallsyms, site)
        .ok_or_else(|| format!("the kernel has no function {site} in /proc/kallsyms"))?;
    let settings = [
        ("probability", "100".to_string()),
        ("interval", "1".to_string()),
        ("times", faults.len().to_string()),
        ("space", "0".to_string()),
        ("verbose", "0".to_string()),
        ("task-filter", "Y".to_string()),
        ("ignore-gfp-wait", "N".to_string()),
        ("cache-filter", "N".to_string()),
        ("stacktrace-depth", "32".to_string()),
        ("require-start", start.to_string()),
        ("require-end", end.to_string()),
        ("reject-start", "0".to_string()),
        ("reject-end", "0".to_string()),
    ];
    for (file, value) in settings {
        sys::write_file_once(&format!("{FAILSLAB}/{file}"), &value)
            .map_err(|e| format!("failslab/{file} = {value}: {}", sys::errno_name(e)))?;
    }
    Ok(())
}

/// `fail_alloc`: the calling task's next allocation under the site fails.
pub fn fail_alloc() -> SysResult<()> {
    sys::write_file_once("/proc/thread-self/make-it-fail", "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_spans_to_the_next_symbol_above_it() {
        let kallsyms = "ffffffff81000000 T _stext\n\
                        ffffffff81082a40 T set_cred_ucounts\n\
                        ffffffff81082900 t alloc_ucounts\n\
                        ffffffff81082b30 T get_ucounts\n\
                        0000000000000000 A fixed_percpu_data\n";
        assert_eq!(
            function_range(kallsyms, "set_cred_ucounts"),
            Some((0xffffffff81082a40, 0xffffffff81082b30))
        );
        assert_eq!(
            function_range(kallsyms, "fixed_percpu_data"),
            None,
            "no address"
        );
        assert_eq!(function_range(kallsyms, "copy_creds"), None);
    }
}
