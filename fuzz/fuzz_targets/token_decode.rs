//! Any text given as a schedule token: a token (that encodes back to a
//! token that decodes the same) or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(token) = sim::Token::decode(text) {
        assert_eq!(sim::Token::decode(&token.encode()), Ok(token));
    }
});
