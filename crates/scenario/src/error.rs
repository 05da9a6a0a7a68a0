//! [`ScenarioError`]: one problem in one scenario file, with the position of
//! the offending token, rendered like a rustc diagnostic.

use std::fmt;
use std::ops::Range;

/// One problem with a scenario file.
///
/// `line` and `column` are 1-based and point at the first character of the
/// offending token (columns count characters, not bytes). They are `None`
/// for problems that have no position, such as a file that cannot be read.
///
/// [`Display`](fmt::Display) renders the error like rustc:
///
/// ```text
/// error: unknown kernel profile `v9.9`
///   --> sim-scenarios/x.toml:4:11
///    |
///  4 | profile = "v9.9"
///    |           ^^^^^^ expected one of: v5.6, v5.7, v5.13, v5.14, v5.16, v5.17, v6.2, v6.3
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The file's display name, as given to [`crate::parse`] or
    /// [`crate::load`].
    pub file: String,
    /// 1-based line of the offending token.
    pub line: Option<usize>,
    /// 1-based column (in characters) of the offending token.
    pub column: Option<usize>,
    /// What is wrong, e.g. "unknown kernel profile `v9.9`".
    pub message: String,
    /// What would have been accepted there, e.g. "one of: v5.6, v5.7".
    pub expected: Option<String>,
    /// The rest, boxed to keep `Result<_, ScenarioError>` small.
    detail: Box<Detail>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Detail {
    /// A hint, e.g. "did you mean `unshare`?".
    help: Option<String>,
    /// Byte range of the offending token in the file text.
    span: Option<Range<usize>>,
    /// The source line and the caret, for rendering.
    snippet: Option<Snippet>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Snippet {
    /// The text of the line holding the start of the span, without its line
    /// terminator; for long lines, a window around the span.
    text: String,
    /// Characters of `text` before the caret.
    caret_col: usize,
    /// Width of the caret in characters (at least 1).
    caret: usize,
}

/// Lines longer than this are shown as a window around the caret.
const MAX_LINE: usize = 140;
/// Context kept on each side of the caret in such a window.
const CONTEXT: usize = 40;

impl Snippet {
    fn window(line: &str, col: usize, caret: usize) -> Snippet {
        let chars: Vec<char> = line.chars().collect();
        if chars.len() <= MAX_LINE {
            return Snippet {
                text: line.to_string(),
                caret_col: col,
                caret,
            };
        }
        let caret = caret.min(2 * CONTEXT);
        let from = col.saturating_sub(CONTEXT);
        let to = (col + caret + CONTEXT).min(chars.len());
        let mut text = String::new();
        if from > 0 {
            text.push_str("...");
        }
        text.extend(&chars[from.min(to)..to]);
        if to < chars.len() {
            text.push_str("...");
        }
        Snippet {
            text,
            caret_col: col - from + if from > 0 { 3 } else { 0 },
            caret: caret.min(to.saturating_sub(col)).max(1),
        }
    }
}

impl ScenarioError {
    /// An error without a position (e.g. the file cannot be read).
    pub fn new(file: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            file: file.into(),
            line: None,
            column: None,
            message: message.into(),
            expected: None,
            detail: Box::default(),
        }
    }

    /// An error pointing at byte range `span` of `source`. Out-of-range or
    /// non-boundary spans are clamped, never a panic.
    pub fn at(
        file: impl Into<String>,
        source: &str,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        let start = floor_boundary(source, span.start.min(source.len()));
        let end = floor_boundary(source, span.end.clamp(start, source.len()));
        let (line, column, line_start) = line_col(source, start);
        let line_end = source[line_start..]
            .find('\n')
            .map_or(source.len(), |i| line_start + i);
        let text = source[line_start..line_end].trim_end_matches('\r');
        let visible_end = end.min(line_start + text.len()).max(start);
        let caret = source[start..visible_end].chars().count().max(1);
        let snippet = Snippet::window(text, column - 1, caret);
        ScenarioError {
            file: file.into(),
            line: Some(line),
            column: Some(column),
            message: message.into(),
            expected: None,
            detail: Box::new(Detail {
                help: None,
                span: Some(start..end),
                snippet: Some(snippet),
            }),
        }
    }

    /// Sets what was expected (shown after the caret).
    pub fn with_expected(mut self, expected: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self
    }

    /// Sets a hint (shown as `= help: ...`).
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.detail.help = Some(help.into());
        self
    }

    /// Sets an optional hint.
    pub(crate) fn with_help_opt(mut self, help: Option<String>) -> Self {
        if help.is_some() {
            self.detail.help = help;
        }
        self
    }

    /// Overrides the byte range (e.g. with one of the raw bytes of a file
    /// that is not UTF-8).
    pub(crate) fn set_span(&mut self, span: Range<usize>) {
        self.detail.span = Some(span);
    }

    /// A hint, e.g. "did you mean `unshare`?".
    pub fn help(&self) -> Option<&str> {
        self.detail.help.as_deref()
    }

    /// Byte range of the offending token in the file (for files that are
    /// not UTF-8: of the first invalid byte sequence).
    pub fn span(&self) -> Option<Range<usize>> {
        self.detail.span.clone()
    }

    /// The text of the source line the error points at, as rendered (long
    /// lines are cut to a window around the offending token).
    pub fn source_line(&self) -> Option<&str> {
        self.detail.snippet.as_ref().map(|s| s.text.as_str())
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        render(self, f)
    }
}

/// A source line with control characters (other than tab) shown as their
/// Unicode control pictures, one character each, so that a hostile file
/// cannot send escape sequences to the terminal and carets stay aligned.
fn picture(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\t' => c,
            '\0'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
            '\u{7f}' => '\u{2421}',
            c if c.is_control() => '\u{fffd}',
            c => c,
        })
        .collect()
}

/// Messages and file names: control characters as escapes (`\u{1b}`), as
/// every message of nssim shows them.
fn clean(s: &str) -> String {
    sim::echo::escape_controls(s)
}

/// The file name, escaped and cut if absurdly long.
fn file_name(s: &str) -> String {
    sim::echo::echo_path(s)
}

fn render(e: &ScenarioError, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(f, "error: {}", clean(&e.message))?;
    let (Some(line), Some(column), Some(snippet)) = (e.line, e.column, &e.detail.snippet) else {
        write!(f, "  --> {}", file_name(&e.file))?;
        if let Some(expected) = &e.expected {
            write!(f, "\n   = expected {}", clean(expected))?;
        }
        if let Some(help) = &e.detail.help {
            write!(f, "\n   = help: {}", clean(help))?;
        }
        return Ok(());
    };
    let width = line.to_string().len() + 1;
    let pad = " ".repeat(width);
    writeln!(f, "{pad}--> {}:{line}:{column}", file_name(&e.file))?;
    writeln!(f, "{pad} |")?;
    writeln!(f, "{line:>width$} | {}", picture(&snippet.text))?;
    // Keep tabs of the source line so the caret lines up under it.
    let indent: String = snippet
        .text
        .chars()
        .take(snippet.caret_col)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    write!(f, "{pad} | {indent}{}", "^".repeat(snippet.caret))?;
    if let Some(expected) = &e.expected {
        write!(f, " expected {}", clean(expected))?;
    }
    if let Some(help) = &e.detail.help {
        write!(f, "\n{pad} = help: {}", clean(help))?;
    }
    Ok(())
}

/// The largest char boundary of `s` at or below `i`.
pub(crate) fn floor_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// 1-based line and column (in characters) of byte `offset`, and the byte
/// offset where that line starts. `offset` must be a char boundary.
pub(crate) fn line_col(source: &str, offset: usize) -> (usize, usize, usize) {
    let before = &source[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let column = source[line_start..offset].chars().count() + 1;
    (line, column, line_start)
}
