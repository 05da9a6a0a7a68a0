//! `parse_duration` and `format_duration`: accepted forms, rejected forms
//! and round trips.

use proptest::prelude::*;
use scenario::{format_duration, parse_duration};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
const M: u64 = 60 * S;
const H: u64 = 60 * M;

#[test]
fn accepted() {
    let cases: &[(&str, u64)] = &[
        ("0", 0),
        ("150", 150),
        ("250ns", 250),
        ("10us", 10 * US),
        ("10µs", 10 * US),
        ("10μs", 10 * US),
        ("1.5ms", 1_500 * US),
        ("8ms", 8 * MS),
        ("2s", 2 * S),
        ("1.19s", 1_190 * MS),
        ("0.5s", 500 * MS),
        ("6m19s", 6 * M + 19 * S),
        ("6m19.2s", 6 * M + 19_200 * MS),
        ("1m30.5s", 90_500 * MS),
        ("1h", H),
        ("1h30m", H + 30 * M),
        ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6),
        (" 1m 30s ", 90 * S),
        ("1.000000000s", S),
        ("0.000000001s", 1),
        ("18446744073709551615", u64::MAX),
        ("18446744073709551615ns", u64::MAX),
        ("18446744073.709551615s", u64::MAX),
    ];
    for &(text, ns) in cases {
        assert_eq!(parse_duration(text), Ok(ns), "{text}");
    }
}

#[test]
fn rejected() {
    let cases: &[(&str, &str)] = &[
        ("", "empty"),
        ("   ", "empty"),
        ("-1s", "negative"),
        ("-5", "negative"),
        ("5", ""), // accepted: see below
        ("1.5", "missing unit"),
        ("ms", "expected a number"),
        ("1x", "unknown unit `x`"),
        ("1 parsec", "unknown unit `parsec`"),
        ("1.5ns", "whole number of nanoseconds"),
        ("0.0000000001s", "whole number of nanoseconds"),
        ("1.s", "digits after the decimal point"),
        (".5s", "digit before the decimal point"),
        ("30s1m", "larger to smaller"),
        ("1s1s", "larger to smaller"),
        ("18446744073709551616", "too large"),
        ("18446744073709551616ns", "too large"),
        ("5124096h", "too large"),
        ("99999999999999999999999999999999h", "too large"),
        ("5124095h34m33s709551616ns", "too large"),
        ("1s+", "unknown unit `s+`"),
        ("1e3ns", "unknown unit `e`"),
    ];
    for &(text, fragment) in cases {
        if fragment.is_empty() {
            assert!(parse_duration(text).is_ok(), "{text}");
            continue;
        }
        match parse_duration(text) {
            Ok(v) => panic!("{text:?} accepted as {v}"),
            Err(e) => assert!(e.contains(fragment), "{text:?}: {e}"),
        }
    }
}

#[test]
fn formats() {
    let cases: &[(u64, &str)] = &[
        (0, "0ns"),
        (250, "250ns"),
        (1_000, "1us"),
        (1_500, "1.5us"),
        (12_345, "12.3us"),
        (8 * MS, "8ms"),
        (1_190 * MS, "1.19s"),
        (59 * S, "59s"),
        (6 * M + 19_200 * MS, "6m19.2s"),
        (H, "1h"),
        (3 * H + 5 * M, "3h5m"),
    ];
    for &(ns, text) in cases {
        assert_eq!(format_duration(ns), text, "{ns}");
    }
}

#[test]
fn exact_round_trips_of_round_values() {
    for k in 1..1000u64 {
        for unit in [1, US, MS] {
            let ns = k * unit;
            assert_eq!(parse_duration(&format_duration(ns)), Ok(ns), "{ns}");
        }
    }
    for k in 1..=59u64 {
        for ns in [k * S, k * M, k * H, k * H + k * M + k * S] {
            assert_eq!(parse_duration(&format_duration(ns)), Ok(ns), "{ns}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Formatting keeps about three significant digits, and the text
    /// always parses back.
    #[test]
    fn format_then_parse_is_close(ns in any::<u64>()) {
        let text = format_duration(ns);
        let back = parse_duration(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        let diff = back.abs_diff(ns);
        prop_assert!(u128::from(diff) * 200 <= u128::from(ns), "{ns} -> {text} -> {back}");
        // Formatting what was parsed gives the same text.
        prop_assert_eq!(format_duration(back), text);
    }

    #[test]
    fn small_values_round_trip(ns in 0u64..1000) {
        prop_assert_eq!(parse_duration(&format_duration(ns)), Ok(ns));
    }

    #[test]
    fn compound_forms_add_up(h in 0u64..1000, m in 0u64..60, s in 0u64..60, ms in 0u64..1000, frac in 0u64..10) {
        let text = format!("{h}h{m}m{s}s{ms}.{frac}ms");
        let want = h * H + m * M + s * S + ms * MS + frac * 100 * US;
        prop_assert_eq!(parse_duration(&text), Ok(want));
    }

    #[test]
    fn never_panics(text in "\\PC{0,24}") {
        let _ = parse_duration(&text);
    }

    #[test]
    fn never_panics_on_duration_like_text(text in "[0-9.µμnusmh +-]{0,24}") {
        let _ = parse_duration(&text);
    }
}
