//! Durations of virtual time: `"8ms"`, `"1.5s"`, `"6m19s"`, or an integer
//! number of nanoseconds.

const NS: u64 = 1;
const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
const M: u64 = 60 * S;
const H: u64 = 60 * M;

/// Units in decreasing size: (spellings, nanoseconds).
const UNITS: &[(&[&str], u64)] = &[
    (&["h"], H),
    (&["m"], M),
    (&["s"], S),
    (&["ms"], MS),
    (&["us", "µs", "μs"], US),
    (&["ns"], NS),
];

/// What [`parse_duration`] accepts, for error messages.
pub(crate) const DURATION_SYNTAX: &str =
    "a duration such as `150ns`, `10us`, `8ms`, `1.5s`, `6m19s` or `1h` (units: ns, us, µs, ms, s, m, h)";

/// Parses a duration into nanoseconds.
///
/// Accepts a plain non-negative integer (nanoseconds), or one or more
/// components `<number><unit>` with units in decreasing order, each at most
/// once: `"250ns"`, `"10us"`, `"10µs"`, `"1.5ms"`, `"8ms"`, `"2s"`,
/// `"6m19s"`, `"1m30.5s"`, `"1h"`. Numbers may have a decimal part as long
/// as the result is a whole number of nanoseconds. Blanks are allowed
/// around the whole, between a number and its unit and between components
/// (`"1m 30s"`). Rejects negative, empty, unit-less decimals, unknown
/// units and values beyond `u64::MAX` nanoseconds.
///
/// ```
/// assert_eq!(scenario::parse_duration("1m30.5s"), Ok(90_500_000_000));
/// assert_eq!(scenario::parse_duration("150"), Ok(150));
/// assert!(scenario::parse_duration("-1s").is_err());
/// ```
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    // Messages quote the input: escaped and cut.
    let q = sim::echo::echo(t);
    if t.is_empty() {
        return Err("empty duration".into());
    }
    if t.starts_with('-') {
        return Err(format!("negative duration `{q}`"));
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse::<u64>()
            .map_err(|_| format!("duration `{q}` is too large (at most {} ns)", u64::MAX));
    }
    let mut rest = t;
    let mut total: u64 = 0;
    // Index into UNITS of the last unit seen: later ones must be smaller.
    let mut last_unit: Option<usize> = None;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &rest[..int_len];
        rest = &rest[int_len..];
        let mut frac_part = "";
        if let Some(after_dot) = rest.strip_prefix('.') {
            let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &after_dot[..frac_len];
            rest = &after_dot[frac_len..];
            if frac_len == 0 {
                return Err(format!("`{q}`: expected digits after the decimal point"));
            }
        }
        if int_part.is_empty() {
            if frac_part.is_empty() {
                let bad = rest.chars().next().unwrap_or(' ');
                return Err(format!(
                    "`{q}`: expected a number, found `{}`",
                    sim::echo::echo(&bad.to_string())
                ));
            }
            return Err(format!("`{q}`: expected a digit before the decimal point"));
        }
        rest = rest.trim_start();
        let unit_len = rest
            .char_indices()
            .find(|&(_, c)| c.is_ascii_digit() || c == '.' || c.is_whitespace())
            .map_or(rest.len(), |(i, _)| i);
        let unit = &rest[..unit_len];
        rest = rest[unit_len..].trim_start();
        if unit.is_empty() {
            let dot = if frac_part.is_empty() { "" } else { "." };
            let number = sim::echo::echo(&format!("{int_part}{dot}{frac_part}"));
            return Err(format!("`{q}`: missing unit after `{number}` (units: ns, us, ms, s, m, h; a plain integer is nanoseconds)"));
        }
        let Some(idx) = UNITS.iter().position(|(names, _)| names.contains(&unit)) else {
            return Err(format!(
                "`{q}`: unknown unit `{}` (units: ns, us, µs, ms, s, m, h)",
                sim::echo::echo(unit)
            ));
        };
        if let Some(prev) = last_unit {
            if idx <= prev {
                return Err(format!(
                    "`{q}`: units must go from larger to smaller, each at most once"
                ));
            }
        }
        last_unit = Some(idx);
        let unit_ns = UNITS[idx].1;
        let part = component_ns(int_part, frac_part, unit_ns).map_err(|e| format!("`{q}`: {e}"))?;
        total = total
            .checked_add(part)
            .ok_or_else(|| format!("duration `{q}` is too large (at most {} ns)", u64::MAX))?;
    }
    Ok(total)
}

/// `int.frac` of a unit of `unit_ns` nanoseconds, exactly.
fn component_ns(int_part: &str, frac_part: &str, unit_ns: u64) -> Result<u64, String> {
    let too_large = || format!("too large (at most {} ns)", u64::MAX);
    let int_part = int_part.trim_start_matches('0');
    if int_part.len() > 20 {
        return Err(too_large());
    }
    let int: u128 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().map_err(|_| too_large())?
    };
    let mut ns = int.checked_mul(u128::from(unit_ns)).ok_or_else(too_large)?;
    let frac = frac_part.trim_end_matches('0');
    if !frac.is_empty() {
        // A unit is at most 3.6e12 ns, so more than 13 significant
        // fractional digits can never give a whole number of nanoseconds.
        if frac.len() > 13 {
            return Err("not a whole number of nanoseconds".into());
        }
        let digits: u128 = frac.parse().map_err(|_| too_large())?;
        let scale = 10u128.pow(frac.len() as u32);
        let scaled = digits * u128::from(unit_ns);
        if !scaled.is_multiple_of(scale) {
            return Err("not a whole number of nanoseconds".into());
        }
        ns += scaled / scale;
    }
    u64::try_from(ns).map_err(|_| too_large())
}

/// Formats nanoseconds short and human, to about three significant digits:
/// `"250ns"`, `"12.5us"`, `"8ms"`, `"1.19s"`, `"6m19.2s"`, `"1h30m"`.
///
/// The result is accepted by [`parse_duration`], which gives back the value
/// rounded to the precision shown.
///
/// ```
/// assert_eq!(scenario::format_duration(8_000_000), "8ms");
/// assert_eq!(scenario::format_duration(379_200_000_000), "6m19.2s");
/// ```
pub fn format_duration(ns: u64) -> String {
    if ns < US {
        return format!("{ns}ns");
    }
    for (unit, name) in [(US, "us"), (MS, "ms"), (S, "s")] {
        let (text, whole) = three_digits(ns, unit);
        if whole < 1000 && (unit != S || whole < 60) {
            return format!("{text}{name}");
        }
    }
    if ns < H {
        // Minutes and seconds, seconds to a tenth.
        let tenths = div_round(u128::from(ns), u128::from(S / 10));
        let minutes = tenths / 600;
        let rest = tenths % 600;
        if minutes < 60 {
            return match rest {
                0 => format!("{minutes}m"),
                r if r % 10 == 0 => format!("{minutes}m{}s", r / 10),
                r => format!("{minutes}m{}.{}s", r / 10, r % 10),
            };
        }
    }
    // Hours, minutes and whole seconds, zero parts left out. Round to the
    // nearest second unless that would not parse back (beyond u64::MAX ns).
    let mut secs = div_round(u128::from(ns), u128::from(S));
    if secs * u128::from(S) > u128::from(u64::MAX) {
        secs = u128::from(ns / S);
    }
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = format!("{h}h");
    if m != 0 {
        out.push_str(&format!("{m}m"));
    }
    if s != 0 {
        out.push_str(&format!("{s}s"));
    }
    out
}

/// `ns` in `unit`s with three significant digits, trailing zeros trimmed;
/// also returns the integer part after rounding.
fn three_digits(ns: u64, unit: u64) -> (String, u128) {
    let ns = u128::from(ns);
    let unit = u128::from(unit);
    let int = ns / unit;
    let decimals: u32 = if int >= 100 {
        0
    } else if int >= 10 {
        1
    } else {
        2
    };
    let scale = 10u128.pow(decimals);
    let scaled = div_round(ns * scale, unit);
    let whole = scaled / scale;
    let frac = scaled % scale;
    if frac == 0 {
        return (whole.to_string(), whole);
    }
    let frac = format!("{frac:0width$}", width = decimals as usize);
    (format!("{whole}.{}", frac.trim_end_matches('0')), whole)
}

fn div_round(a: u128, b: u128) -> u128 {
    (a + b / 2) / b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(format_duration(0), "0ns");
        assert_eq!(format_duration(250), "250ns");
        assert_eq!(format_duration(999), "999ns");
        assert_eq!(format_duration(1_000), "1us");
        assert_eq!(format_duration(12_500), "12.5us");
        assert_eq!(format_duration(999_999), "1ms");
        assert_eq!(format_duration(8_000_000), "8ms");
        assert_eq!(format_duration(1_190_000_000), "1.19s");
        assert_eq!(format_duration(59_999_000_000), "1m");
        assert_eq!(format_duration(379_200_000_000), "6m19.2s");
        assert_eq!(format_duration(379_000_000_000), "6m19s");
        assert_eq!(format_duration(H), "1h");
        assert_eq!(format_duration(H + 30 * M), "1h30m");
        assert_eq!(format_duration(2 * H + 5 * S), "2h5s");
        assert_eq!(format_duration(u64::MAX), "5124095h34m33s");
    }
}
