//! Any bytes given as a scenario file, and when they parse, a bounded
//! exploration of every kernel run: outcomes, never a panic or an abort.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    nssim_cli::fuzz::scenario_run(data, nssim_cli::fuzz::Budget::default());
});
