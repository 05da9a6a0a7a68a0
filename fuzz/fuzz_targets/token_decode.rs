//! Any text given as a schedule token: a token (that encodes back to a
//! token that decodes the same) or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = nssim_cli::fuzz::token_decode(data);
});
