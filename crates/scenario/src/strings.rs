//! Positions inside TOML string values: maps a byte offset of the decoded
//! string back to a byte offset of the file, so that errors in op strings
//! can point inside them.

use std::ops::Range;

/// Maps offsets of a decoded TOML string to offsets in the source.
pub(crate) struct StringMap {
    /// `map[i]` is the source offset of the character that produced decoded
    /// byte `i`; `map[len]` is where the content ends in the source.
    map: Vec<usize>,
    /// The whole token (with quotes), used when no map could be built.
    token: Range<usize>,
}

impl StringMap {
    /// Builds the map for the string token at `token` in `source`, whose
    /// decoded value is `value`. Falls back to pointing at the whole token
    /// when the token cannot be decoded to exactly `value`.
    pub(crate) fn new(source: &str, token: Range<usize>, value: &str) -> StringMap {
        let map = source
            .get(token.clone())
            .and_then(|raw| decode_map(raw, value))
            .map(|m| m.into_iter().map(|o| o + token.start).collect())
            .unwrap_or_default();
        StringMap { map, token }
    }

    /// Source range of decoded range `r`.
    pub(crate) fn range(&self, r: Range<usize>) -> Range<usize> {
        if self.map.is_empty() {
            return self.token.clone();
        }
        let last = self.map.len() - 1;
        let start = self.map[r.start.min(last)];
        let end = self.map[r.end.min(last)].max(start);
        start..end
    }
}

/// For a raw string token (with its quotes), the source offset (relative
/// to the token) of every decoded byte, plus one for the end; `None` if the
/// decoding does not reproduce `value`.
fn decode_map(raw: &str, value: &str) -> Option<Vec<usize>> {
    let (open, literal) = if raw.starts_with("'''") {
        (3, true)
    } else if raw.starts_with("\"\"\"") {
        (3, false)
    } else if raw.starts_with('\'') {
        (1, true)
    } else if raw.starts_with('"') {
        (1, false)
    } else {
        return None;
    };
    if raw.len() < 2 * open {
        return None;
    }
    let mut start = open;
    let end = raw.len() - open;
    if open == 3 {
        // A newline right after the opening delimiter is trimmed.
        if raw[start..].starts_with("\r\n") {
            start += 2;
        } else if raw[start..].starts_with('\n') {
            start += 1;
        }
    }
    let content = raw.get(start..end)?;
    let mut out = String::with_capacity(content.len());
    let mut map = Vec::with_capacity(content.len() + 1);
    let push = |out: &mut String, map: &mut Vec<usize>, c: char, at: usize| {
        out.push(c);
        map.extend(std::iter::repeat_n(at, c.len_utf8()));
    };
    let mut chars = content.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let at = start + i;
        if literal || c != '\\' {
            push(&mut out, &mut map, c, at);
            continue;
        }
        let (_, e) = chars.next()?;
        let simple = match e {
            'b' => Some('\u{8}'),
            't' => Some('\t'),
            'n' => Some('\n'),
            'f' => Some('\u{c}'),
            'r' => Some('\r'),
            'e' => Some('\u{1b}'),
            '"' => Some('"'),
            '\\' => Some('\\'),
            _ => None,
        };
        if let Some(s) = simple {
            push(&mut out, &mut map, s, at);
            continue;
        }
        let digits = match e {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            ' ' | '\t' | '\r' | '\n' if open == 3 => {
                // Line-ending backslash: skip all blanks and newlines.
                while chars
                    .peek()
                    .is_some_and(|&(_, c)| matches!(c, ' ' | '\t' | '\r' | '\n'))
                {
                    chars.next();
                }
                continue;
            }
            _ => return None,
        };
        let mut code = 0u32;
        for _ in 0..digits {
            let (_, d) = chars.next()?;
            code = code * 16 + d.to_digit(16)?;
        }
        push(&mut out, &mut map, char::from_u32(code)?, at);
    }
    map.push(end);
    (out == value).then_some(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(src: &str, value: &str, decoded: Range<usize>, want: &str) {
        let m = StringMap::new(src, 0..src.len(), value);
        let r = m.range(decoded);
        assert_eq!(&src[r], want, "{src}");
    }

    #[test]
    fn maps() {
        check("'sleep(1x)'", "sleep(1x)", 6..8, "1x");
        check("\"sleep(1x)\"", "sleep(1x)", 6..8, "1x");
        check(r#""a\tb(1x)""#, "a\tb(1x)", 4..6, "1x");
        check(r#""a\u00e9b(1x)""#, "aéb(1x)", 1..3, "\\u00e9");
        check(r#""a\u00e9b(1x)""#, "aéb(1x)", 5..7, "1x");
        check("'''\nab'''", "ab", 1..2, "b");
        check("\"\"\"\\\n   ab\"\"\"", "ab", 0..2, "ab");
        // Mismatch: whole token.
        check("'abc'", "xyz", 1..2, "'abc'");
    }
}
