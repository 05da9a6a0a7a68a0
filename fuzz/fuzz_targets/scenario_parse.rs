//! Any bytes given as a scenario file: a scenario or a located error,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = nssim_cli::fuzz::scenario_parse(data);
});
