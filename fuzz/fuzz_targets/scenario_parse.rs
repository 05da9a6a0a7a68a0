//! Any bytes given as a scenario file: a scenario or a located error,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = scenario::parse_bytes("fuzz.toml", data) {
        let _ = e.to_string();
    }
});
