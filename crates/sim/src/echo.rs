//! Quoting user input in messages. A message that echoes an argument, a
//! token, a file name or a scenario value must not let that input drive
//! the terminal (an ESC starts a control sequence) or flood it (a 5 MB
//! token), so every such value goes through [`echo`].

use std::fmt::Write;

/// Most characters of a value shown; the rest becomes an ellipsis.
pub const ECHO_MAX: usize = 80;
/// Most characters of a file name shown: paths are often longer than a
/// value and cutting them would lose the file, so only absurd ones are.
pub const PATH_MAX_SHOWN: usize = 1024;

/// `s` with control characters written as Rust escapes (`\u{1b}`) and cut
/// to [`ECHO_MAX`] characters followed by `…`.
pub fn echo(s: &str) -> String {
    echo_within(s, ECHO_MAX)
}

/// [`echo`] for a file name.
pub fn echo_path(s: &str) -> String {
    echo_within(s, PATH_MAX_SHOWN)
}

fn echo_within(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        push_escaped(&mut out, c);
    }
    out
}

/// Most characters of another program's message shown (a parser's error,
/// which may quote the input it choked on).
pub const MESSAGE_MAX: usize = 300;

/// [`echo`] for another program's message about user input: escaped, and
/// cut at [`MESSAGE_MAX`] characters, since it may quote a long value.
pub fn echo_message(s: &str) -> String {
    echo_within(s, MESSAGE_MAX)
}

/// Like [`echo`] without the cut, and keeping line breaks: for text that is
/// a whole message (a usage error) rather than one value in it.
pub fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\n' {
            out.push(c);
        } else {
            push_escaped(&mut out, c);
        }
    }
    out
}

fn push_escaped(out: &mut String, c: char) {
    if is_unsafe(c) {
        let _ = write!(out, "\\u{{{:x}}}", c as u32);
    } else {
        out.push(c);
    }
}

/// C0 and C1 controls and DEL, and the bidirectional overrides that make
/// a terminal show text in another order than it is.
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped() {
        assert_eq!(echo("nss1_\u{1b}[31mRED\u{7}"), "nss1_\\u{1b}[31mRED\\u{7}");
        assert_eq!(echo("a\u{9b}b\u{7f}\tc\n"), "a\\u{9b}b\\u{7f}\\u{9}c\\u{a}");
        assert_eq!(escape_controls("a\u{1b}\nb"), "a\\u{1b}\nb");
    }

    #[test]
    fn long_values_are_cut() {
        let long = "x".repeat(5 << 20);
        let shown = echo(&long);
        assert_eq!(shown.chars().count(), ECHO_MAX + 1);
        assert!(shown.ends_with('…'));
        assert_eq!(echo(&"y".repeat(ECHO_MAX)), "y".repeat(ECHO_MAX));
    }
}
