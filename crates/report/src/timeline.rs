//! The terminal timeline: one column per task (and one for RCU grace
//! periods, one per counter), a row per step, results in the column of the
//! task that got them. Gutters on the left of a task's column show what it
//! holds or is inside of (locks, work runs, grace-period waits, RCU
//! read-side sections); the step that broke the run is marked `▶` and the
//! outcome follows the table with the state at the end.

use crate::model::{MarkKind, Model, Span, SpanKind};
use crate::steps::time;
use sim::EventKind;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// How to draw.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// ANSI colours (for a terminal).
    pub color: bool,
    /// The widest line to draw, in columns (a terminal's width), or
    /// `None` for as wide as the tasks' texts. Columns narrow to fit it;
    /// past that the counter columns go (their values stay in the lines
    /// under the table), and past that the tasks share one column, each
    /// row naming its task.
    pub width: Option<usize>,
}

/// The narrowest width [`Options::width`] is honoured down to.
pub const MIN_WIDTH: usize = 60;

/// Widest text of a task's column, gutters aside.
const TASK_WIDTH: usize = 38;
/// Most gutters a column shows (more nested holds are not drawn).
const MAX_SLOTS: usize = 4;
const RCU_WIDTH: usize = 24;
const COUNTER_WIDTH: usize = 12;
/// Most lines of a counter column's title.
const TITLE_LINES: usize = 5;
/// Width of the outcome's wrapped lines.
const WRAP: usize = 100;
/// A task's column is not narrowed below this.
const MIN_TASK_WIDTH: usize = 12;
/// The step and time at the head of every row.
const ROW_HEAD: usize = 19;
/// What separates two columns (` │ `).
const SEPARATOR: usize = 3;
/// The widest task name of the stacked layout.
const STACKED_NAME_WIDTH: usize = 24;
/// The shared column of the stacked layout is not narrowed below this.
const MIN_STACKED_TEXT: usize = 30;

const BOLD: &str = "1";
const DIM: &str = "2";
const RED: &str = "1;31";
const GREEN: &str = "32";
const YELLOW: &str = "33";

fn paint(s: &str, sgr: &str, on: bool) -> String {
    if on && !sgr.is_empty() && !s.is_empty() {
        format!("\x1b[{sgr}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

/// `s` cut to `width` characters (the last one `…` when cut), then padded.
fn fit(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return format!("{s}{}", " ".repeat(width - n));
    }
    let cut: String = s.chars().take(width.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// `s` fitted to `width`, the text painted and the padding not.
fn painted(s: &str, width: usize, sgr: &str, on: bool) -> String {
    let fitted = fit(s, width);
    let text = fitted.trim_end();
    let pad = width - text.chars().count();
    format!("{}{}", paint(text, sgr, on), " ".repeat(pad))
}

/// Glyphs of a gutter: start, middle, end, a span of one row; colour.
fn glyphs(kind: SpanKind) -> ([char; 4], &'static str) {
    match kind {
        SpanKind::Lock => (['┏', '┃', '┗', '▪'], YELLOW),
        SpanKind::Work => (['╓', '║', '╙', '▫'], "35"),
        SpanKind::GracePeriod => (['┌', '┆', '└', '·'], GREEN),
        SpanKind::RcuRead => (['╭', '│', '╰', '◦'], "36"),
        SpanKind::Syscall => ([' '; 4], ""),
    }
}

/// One printed row: a step, or a note worth its own line.
struct Row {
    event: usize,
    /// Counters that changed here: (series, new value).
    counters: Vec<(usize, i64)>,
}

/// Notes drawn as gutters or counter cells rather than rows.
fn folded(label: &str) -> bool {
    matches!(
        label,
        "acquired" | "released" | "gp_start" | "gp_end" | "work_done"
    ) || label.starts_with("counter:")
}

struct Rows {
    rows: Vec<Row>,
    /// For each event, the row that shows it.
    row_of: Vec<usize>,
}

fn build_rows(m: &Model) -> Rows {
    let mut rows: Vec<Row> = Vec::new();
    let mut row_of = Vec::with_capacity(m.events.len());
    for (i, e) in m.events.iter().enumerate() {
        let joins = e.kind == EventKind::Note
            && folded(e.label)
            && rows
                .last()
                .is_some_and(|r| m.events[r.event].task == e.task);
        if !joins {
            rows.push(Row {
                event: i,
                counters: Vec::new(),
            });
        }
        row_of.push(rows.len() - 1);
    }
    for (s, series) in m.series.iter().enumerate() {
        let mut before = None;
        for &(i, v) in &series.points {
            if before != Some(v) {
                rows[row_of[i]].counters.push((s, v));
            }
            before = Some(v);
        }
    }
    Rows { rows, row_of }
}

/// A gutter bar: which slot, which rows (inclusive), what kind.
struct Bar {
    slot: usize,
    /// Still open when the execution ended.
    open: bool,
    first: usize,
    last: usize,
    kind: SpanKind,
}

/// The gutters of one column: bars sorted by first row.
struct Gutter {
    slots: usize,
    bars: Vec<Bar>,
}

impl Gutter {
    fn new(spans: &[&Span], rows: &Rows) -> Gutter {
        let end_row = rows.rows.len().saturating_sub(1);
        let mut ranges: Vec<(usize, usize, SpanKind, bool)> = spans
            .iter()
            .map(|s| {
                let last = s.last.map_or(end_row, |l| rows.row_of[l]);
                (rows.row_of[s.first], last, s.kind, s.last.is_none())
            })
            .collect();
        ranges.sort_by_key(|r| (r.0, std::cmp::Reverse(r.1)));
        let mut busy_until: Vec<usize> = Vec::new();
        let mut bars = Vec::new();
        for (first, last, kind, open) in ranges {
            let free = busy_until.iter().position(|&b| b < first);
            let slot = match free {
                Some(s) => s,
                None if busy_until.len() < MAX_SLOTS => {
                    busy_until.push(0);
                    busy_until.len() - 1
                }
                None => continue,
            };
            busy_until[slot] = last;
            bars.push(Bar {
                slot,
                open,
                first,
                last,
                kind,
            });
        }
        Gutter {
            slots: busy_until.len(),
            bars,
        }
    }
}

/// Draws a gutter row by row.
struct GutterCursor<'g> {
    gutter: &'g Gutter,
    next: usize,
    active: Vec<Option<&'g Bar>>,
}

impl<'g> GutterCursor<'g> {
    fn new(gutter: &'g Gutter) -> Self {
        GutterCursor {
            gutter,
            next: 0,
            active: vec![None; gutter.slots],
        }
    }

    /// The gutter at `row` (rows must come in order).
    fn draw(&mut self, row: usize, color: bool) -> String {
        while let Some(b) = self.gutter.bars.get(self.next).filter(|b| b.first <= row) {
            self.active[b.slot] = Some(b);
            self.next += 1;
        }
        let mut out = String::new();
        for slot in &mut self.active {
            let Some(b) = *slot else {
                out.push(' ');
                continue;
            };
            let (g, sgr) = glyphs(b.kind);
            let ends = row == b.last && !b.open;
            let c = match (row == b.first, ends) {
                (true, true) => g[3],
                (true, false) => g[0],
                (false, true) => g[2],
                (false, false) => g[1],
            };
            out.push_str(&paint(&c.to_string(), sgr, color));
            if row >= b.last {
                *slot = None;
            }
        }
        out
    }
}

/// A column of the table: a task's, or the rcu column.
struct Column {
    task: Option<usize>,
    title: String,
    width: usize,
    gutter: Gutter,
}

struct Table<'m> {
    m: &'m Model<'m>,
    rows: Rows,
    tasks: Vec<Column>,
    rcu: Option<Column>,
    /// Text of the rcu column by row.
    rcu_text: HashMap<usize, String>,
    counter_titles: Vec<Vec<String>>,
    /// Mark by event.
    marks: HashMap<usize, usize>,
    /// Steps that enter a syscall.
    syscalls: HashSet<usize>,
    flow_from: HashMap<usize, usize>,
    flow_to: HashMap<usize, usize>,
    unrun: HashSet<usize>,
    color: bool,
    layout: Layout,
}

/// How the table fits its width.
#[derive(Debug, Clone, Copy)]
struct Layout {
    /// The widest line, when one is given.
    width: Option<usize>,
    /// The counter columns are drawn.
    counters: bool,
    /// The tasks share one column: (the width of the task names, of
    /// their texts).
    stacked: Option<(usize, usize)>,
}

/// Render the timeline of `m`.
pub fn render(m: &Model, opts: &Options) -> String {
    let mut t = Table::new(m, opts.color);
    t.fit(opts.width.map(|w| w.max(MIN_WIDTH)));
    let mut out = String::new();
    t.legend(&mut out);
    t.header(&mut out);
    t.body(&mut out);
    t.outcome(&mut out);
    out
}

impl<'m> Table<'m> {
    fn new(m: &'m Model<'m>, color: bool) -> Self {
        let rows = build_rows(m);
        let marks: HashMap<usize, usize> = m
            .marks
            .iter()
            .enumerate()
            .map(|(k, mk)| (mk.event, k))
            .collect();
        let tasks = m
            .task_order()
            .into_iter()
            .map(|t| task_column(m, &rows, &marks, t))
            .collect();
        let gps: Vec<&Span> = spans_of(m, |s| s.kind == SpanKind::GracePeriod);
        let rcu_text = rcu_texts(m, &rows, &gps);
        let rcu = (!rcu_text.is_empty()).then(|| Column {
            task: None,
            title: "rcu".into(),
            width: RCU_WIDTH,
            gutter: Gutter::new(&gps, &rows),
        });
        Table {
            counter_titles: m.series.iter().map(|s| wrap_title(&s.name)).collect(),
            marks,
            syscalls: spans_of(m, |s| s.kind == SpanKind::Syscall)
                .iter()
                .map(|s| s.first)
                .collect(),
            flow_from: m.flows.iter().map(|f| (f.from, f.to)).collect(),
            flow_to: m.flows.iter().map(|f| (f.to, f.from)).collect(),
            unrun: m.unrun.iter().copied().collect(),
            m,
            rows,
            tasks,
            rcu,
            rcu_text,
            color,
            layout: Layout {
                width: None,
                counters: true,
                stacked: None,
            },
        }
    }

    /// Width of the table's lines as its columns are now.
    fn table_width(&self) -> usize {
        let columns: usize = self
            .columns()
            .map(|c| SEPARATOR + c.gutter.slots + c.width)
            .sum();
        let counters = if self.layout.counters {
            self.counter_titles.len() * (SEPARATOR + COUNTER_WIDTH)
        } else {
            0
        };
        ROW_HEAD + columns + counters
    }

    /// Fit the table to `width`: narrow the widest columns, then leave the
    /// counters out, then stack the tasks in one column.
    fn fit(&mut self, width: Option<usize>) {
        self.layout.width = width;
        let Some(width) = width else {
            return;
        };
        while self.table_width() > width {
            let widest = self
                .tasks
                .iter_mut()
                .chain(self.rcu.iter_mut())
                .filter(|c| c.width > MIN_TASK_WIDTH)
                .max_by_key(|c| c.width);
            match widest {
                Some(c) => c.width -= 1,
                None => break,
            }
        }
        if self.table_width() > width {
            self.layout.counters = false;
        }
        if self.table_width() <= width {
            return;
        }
        let names = self
            .columns()
            .map(|c| c.title.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, STACKED_NAME_WIDTH);
        let rest = width.saturating_sub(ROW_HEAD + 2 * SEPARATOR + MAX_SLOTS + names);
        let with_counters = self.counter_titles.len() * (SEPARATOR + COUNTER_WIDTH);
        self.layout.counters = rest >= MIN_STACKED_TEXT + with_counters;
        let text = if self.layout.counters {
            rest - with_counters
        } else {
            rest
        };
        self.layout.stacked = Some((names, text.max(MIN_TASK_WIDTH)));
    }

    fn legend(&self, out: &mut String) {
        let c = self.color;
        let gutters = [
            ("┏┃┗", YELLOW, "lock held"),
            ("╓║╙", "35", "work item running"),
            ("┌┆└", GREEN, "waiting for a grace period"),
            ("╭│╰", "36", "rcu read-side section"),
        ]
        .map(|(g, sgr, what)| {
            (
                format!("{g} {what}"),
                format!("{} {what}", paint(g, sgr, c)),
            )
        });
        let flows = [
            "→N queued work runs at step N (→never: not by the end),",
            "←N it was queued at step N;",
        ]
        .map(|t| (t.to_string(), t.to_string()));
        let broke = (
            "▶ the step that broke the run".to_string(),
            format!("{} the step that broke the run", paint("▶", RED, c)),
        );
        let width = self.layout.width.unwrap_or(usize::MAX);
        for line in flow(&gutters, "  ", width) {
            let _ = writeln!(out, "{line}");
        }
        let mut second: Vec<(String, String)> = flows.to_vec();
        second.push(broke);
        for line in flow(&second, " ", width) {
            let _ = writeln!(out, "{line}");
        }
        if !self.layout.counters && !self.counter_titles.is_empty() {
            let note =
                "counters are not drawn at this width: their values at the end are under the table";
            for line in wrap(note, width.min(WRAP)) {
                let _ = writeln!(out, "{}", paint(&line, DIM, c));
            }
        }
        out.push('\n');
    }

    fn columns(&self) -> impl Iterator<Item = &Column> {
        self.tasks.iter().chain(self.rcu.iter())
    }

    fn header(&self, out: &mut String) {
        if let Some((names, text)) = self.layout.stacked {
            return self.stacked_header(out, names, text);
        }
        let lines = self.counter_lines();
        for line in 0..lines {
            let mut s = self.header_head(line);
            for col in self.columns() {
                let title = if line == 0 { col.title.as_str() } else { "" };
                s.push_str(" │ ");
                s.push_str(&fit(title, col.gutter.slots + col.width));
            }
            self.counter_titles_line(line, &mut s);
            let _ = writeln!(out, "{}", paint(s.trim_end(), BOLD, self.color));
        }
        let mut rule = "─".repeat(ROW_HEAD + 1);
        for col in self.columns() {
            rule.push('┼');
            rule.push_str(&"─".repeat(col.gutter.slots + col.width + 2));
        }
        self.counter_rule(&mut rule);
        // As wide as the widest row: no space after its last column.
        rule.pop();
        let _ = writeln!(out, "{rule}");
    }

    /// The header of the stacked layout: one column of task names, one
    /// of their texts.
    fn stacked_header(&self, out: &mut String, names: usize, text: usize) {
        let slots = self.stacked_slots();
        for line in 0..self.counter_lines() {
            let mut s = self.header_head(line);
            let (task, what) = if line == 0 {
                ("task", "what")
            } else {
                ("", "")
            };
            s.push_str(&format!(" │ {}", fit(task, names)));
            s.push_str(&format!(" │ {}", fit(what, slots + text)));
            self.counter_titles_line(line, &mut s);
            let _ = writeln!(out, "{}", paint(s.trim_end(), BOLD, self.color));
        }
        let mut rule = "─".repeat(ROW_HEAD + 1);
        for w in [names, slots + text] {
            rule.push('┼');
            rule.push_str(&"─".repeat(w + 2));
        }
        self.counter_rule(&mut rule);
        // As wide as the widest row: no space after its last column.
        rule.pop();
        let _ = writeln!(out, "{rule}");
    }

    /// Lines of the header: those of the longest counter title drawn.
    fn counter_lines(&self) -> usize {
        if !self.layout.counters {
            return 1;
        }
        self.counter_titles
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(1)
            .max(1)
    }

    fn header_head(&self, line: usize) -> String {
        if line == 0 {
            format!("{:>7} {:>11}", "step", "time")
        } else {
            " ".repeat(ROW_HEAD)
        }
    }

    fn counter_titles_line(&self, line: usize, s: &mut String) {
        if !self.layout.counters {
            return;
        }
        for title in &self.counter_titles {
            s.push_str(" │ ");
            s.push_str(&fit(title.get(line).map_or("", |t| t), COUNTER_WIDTH));
        }
    }

    fn counter_rule(&self, rule: &mut String) {
        if !self.layout.counters {
            return;
        }
        for _ in &self.counter_titles {
            rule.push('┼');
            rule.push_str(&"─".repeat(COUNTER_WIDTH + 2));
        }
    }

    /// Gutter slots of the stacked layout: the most any task's column
    /// has.
    fn stacked_slots(&self) -> usize {
        self.columns().map(|c| c.gutter.slots).max().unwrap_or(0)
    }

    fn body(&self, out: &mut String) {
        let mut cursors: Vec<GutterCursor> = self
            .columns()
            .map(|c| GutterCursor::new(&c.gutter))
            .collect();
        for (r, row) in self.rows.rows.iter().enumerate() {
            let mut line = self.row_head(row);
            let task = self.m.events[row.event].task;
            match self.layout.stacked {
                Some((names, text)) => {
                    self.stacked_cells(r, row, (names, text), &mut cursors, &mut line)
                }
                None => {
                    for (k, col) in self.columns().enumerate() {
                        line.push_str(" │ ");
                        line.push_str(&cursors[k].draw(r, self.color));
                        let text = match col.task {
                            Some(t) if t == task => self.cell(row),
                            Some(_) => (String::new(), ""),
                            None => (self.rcu_text.get(&r).cloned().unwrap_or_default(), GREEN),
                        };
                        line.push_str(&painted(&text.0, col.width, text.1, self.color));
                    }
                }
            }
            self.counter_cells(row, &mut line);
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }

    /// A row of the stacked layout: its task's name, that task's gutter
    /// and its text, with what the rcu column would show after it.
    fn stacked_cells(
        &self,
        r: usize,
        row: &Row,
        (names, text): (usize, usize),
        cursors: &mut [GutterCursor],
        line: &mut String,
    ) {
        let task = self.m.events[row.event].task;
        let slots = self.stacked_slots();
        let mut gutter = String::new();
        let mut drawn = 0;
        for (k, col) in self.columns().enumerate() {
            let g = cursors[k].draw(r, self.color);
            if col.task == Some(task) {
                gutter = g;
                drawn = col.gutter.slots;
            }
        }
        let (mut cell, style) = self.cell(row);
        if let Some(rcu) = self.rcu_text.get(&r) {
            cell = format!("{cell} · rcu: {rcu}");
        }
        line.push_str(&format!(" │ {}", fit(self.m.task_name(task), names)));
        line.push_str(" │ ");
        line.push_str(&gutter);
        line.push_str(&" ".repeat(slots - drawn));
        line.push_str(&painted(&cell, text, style, self.color));
    }

    fn row_head(&self, row: &Row) -> String {
        let e = &self.m.events[row.event];
        if e.kind == EventKind::Note {
            return " ".repeat(19);
        }
        if self.m.breaking == Some(row.event) {
            let head = format!("▶{:>6} {:>11}", e.step, time(e.time));
            return paint(&head, RED, self.color);
        }
        format!("{:>7} {:>11}", e.step, time(e.time))
    }

    /// The text of the row's own task, and its style.
    fn cell(&self, row: &Row) -> (String, &'static str) {
        let i = row.event;
        let e = &self.m.events[i];
        if e.kind == EventKind::Note {
            return match self.marks.get(&i).map(|&k| &self.m.marks[k]) {
                Some(mk) => (format!("= {}", mk.text), mark_style(mk.kind)),
                None => (format!("= {}", e.label), DIM),
            };
        }
        let mut text = e.label.to_string();
        let obj = self.m.object(e.obj);
        if !obj.is_empty() {
            text = format!("{text} {obj}");
        }
        if let Some(to) = self.flow_from.get(&i) {
            text = format!("{text} →{}", self.m.events[*to].step);
        }
        if self.unrun.contains(&i) {
            text = format!("{text} →never");
        }
        if let Some(from) = self.flow_to.get(&i) {
            text = format!("{text} ←{}", self.m.events[*from].step);
        }
        let style = if self.m.breaking == Some(i) {
            RED
        } else if self.syscalls.contains(&i) {
            BOLD
        } else {
            ""
        };
        (text, style)
    }

    fn counter_cells(&self, row: &Row, line: &mut String) {
        if !self.layout.counters {
            return;
        }
        for (s, series) in self.m.series.iter().enumerate() {
            line.push_str(" │ ");
            let value = row.counters.iter().find(|c| c.0 == s).map(|c| c.1);
            let text = value.map_or(String::new(), |v| v.to_string());
            let style = if series.limit { DIM } else { BOLD };
            line.push_str(&painted(&text, COUNTER_WIDTH, style, self.color));
        }
    }

    fn outcome(&self, out: &mut String) {
        let m = self.m;
        let c = self.color;
        out.push('\n');
        if let Some(b) = m.breaking {
            let e = &m.events[b];
            let what = format!("{} {}", e.label, m.object(e.obj));
            let head = format!(
                "▶ step {} at {}, {}: {}",
                e.step,
                time(e.time),
                m.task_name(e.task),
                what.trim_end()
            );
            let lines = match self.layout.width {
                Some(_) => wrap(&head, self.wrap_width()),
                None => vec![head],
            };
            for (k, line) in lines.iter().enumerate() {
                let indent = if k == 0 { "" } else { "  " };
                let _ = writeln!(out, "{indent}{}", paint(line, RED, c));
            }
        }
        let outcome = m.report.outcome.to_string();
        let sgr = if m.report.outcome.is_failure() {
            RED
        } else {
            GREEN
        };
        for (k, line) in wrap(&outcome, self.wrap_width()).iter().enumerate() {
            let indent = if k == 0 { "" } else { "  " };
            let _ = writeln!(out, "{indent}{}", paint(line, sgr, c));
        }
        self.end_state(out);
    }

    fn end_state(&self, out: &mut String) {
        let m = self.m;
        let counters: Vec<String> = m
            .final_counters()
            .iter()
            .map(|(s, v)| {
                let limit = if s.limit { " (limit)" } else { "" };
                format!("{} {v}{limit}", s.name)
            })
            .collect();
        if !counters.is_empty() {
            let text = format!("counters at the end: {}", counters.join(", "));
            for (k, line) in wrap(&text, self.wrap_width()).iter().enumerate() {
                let _ = writeln!(out, "{}{line}", if k == 0 { "" } else { "  " });
            }
        }
        let open: Vec<&Span> = m.spans.iter().filter(|s| s.last.is_none()).collect();
        if !open.is_empty() {
            let _ = writeln!(out, "still open at the end:");
            for s in open {
                let what = m.describe_span(s);
                let lines = match self.layout.width {
                    Some(_) => wrap(&what, self.wrap_width() - 2),
                    None => vec![what],
                };
                for (k, line) in lines.iter().enumerate() {
                    let indent = if k == 0 { "  " } else { "    " };
                    let _ = writeln!(out, "{indent}{line}");
                }
            }
        }
    }

    /// The width of the wrapped lines under the table: [`WRAP`], or less
    /// to leave room for their indent of two columns in a given width.
    fn wrap_width(&self) -> usize {
        match self.layout.width {
            Some(w) => w.min(WRAP) - 2,
            None => WRAP,
        }
    }
}

/// `items` (plain, painted) in lines of at most `width` columns, joined
/// by `sep`.
fn flow(items: &[(String, String)], sep: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let (mut line, mut len) = (String::new(), 0);
    for (plain, painted) in items {
        let n = plain.chars().count();
        if len > 0 && len + sep.len() + n > width {
            lines.push(std::mem::take(&mut line));
            len = 0;
        }
        if len > 0 {
            line.push_str(sep);
            len += sep.len();
        }
        line.push_str(painted);
        len += n;
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn mark_style(kind: MarkKind) -> &'static str {
    match kind {
        MarkKind::Ok => GREEN,
        MarkKind::Error | MarkKind::UseAfterFree | MarkKind::Panic => RED,
        MarkKind::Queued | MarkKind::Freed => YELLOW,
        MarkKind::Exit | MarkKind::Note => DIM,
    }
}

fn spans_of<'m>(m: &'m Model, keep: impl Fn(&Span) -> bool) -> Vec<&'m Span> {
    m.spans.iter().filter(|s| keep(s)).collect()
}

fn task_column(m: &Model, rows: &Rows, marks: &HashMap<usize, usize>, t: usize) -> Column {
    let held = spans_of(m, |s| s.task == t && s.kind != SpanKind::Syscall);
    let widest = rows
        .rows
        .iter()
        .filter(|r| m.events[r.event].task == t)
        .map(|r| row_text_len(m, marks, r.event))
        .max()
        .unwrap_or(0);
    let title = m.task_name(t).to_string();
    Column {
        task: Some(t),
        width: widest.max(title.chars().count()).clamp(4, TASK_WIDTH),
        title,
        gutter: Gutter::new(&held, rows),
    }
}

/// About how wide a row's text is (for sizing its column).
fn row_text_len(m: &Model, marks: &HashMap<usize, usize>, i: usize) -> usize {
    let e = &m.events[i];
    let obj = m.object(e.obj).chars().count();
    match e.kind {
        EventKind::Step => e.label.chars().count() + obj + 6,
        EventKind::Note => match marks.get(&i) {
            Some(&k) => m.marks[k].text.chars().count() + 2,
            None => e.label.chars().count() + 2,
        },
    }
}

/// The rcu column: grace periods starting and ending, facts about RCU.
fn rcu_texts(m: &Model, rows: &Rows, gps: &[&Span]) -> HashMap<usize, String> {
    let mut text = HashMap::new();
    for mk in &m.marks {
        let e = &m.events[mk.event];
        if m.is_rcu(e.obj) {
            let what = mk.text.trim_end_matches(" rcu").replace(" rcu ", " ");
            text.insert(
                rows.row_of[mk.event],
                format!("{what} ({})", m.task_name(e.task)),
            );
        }
    }
    for s in gps {
        let who = m.task_name(s.task);
        text.insert(rows.row_of[s.first], format!("grace period ({who})"));
        if let Some(l) = s.last {
            text.insert(rows.row_of[l], format!("grace period over ({who})"));
        }
    }
    text
}

/// A counter's name over at most [`TITLE_LINES`] lines of [`COUNTER_WIDTH`]
/// (five: a counter at one of several levels names it,
/// `user namespaces alive · ucounts(c1, uid 0)`); a word
/// too long for a line breaks after its underscores.
fn wrap_title(name: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in name.split_whitespace() {
        let pieces: Vec<&str> = if word.chars().count() > COUNTER_WIDTH {
            word.split_inclusive('_').collect()
        } else {
            vec![word]
        };
        for (k, piece) in pieces.into_iter().enumerate() {
            let sep = if line.is_empty() || k > 0 { "" } else { " " };
            let len = line.chars().count() + sep.len() + piece.chars().count();
            if !line.is_empty() && len > COUNTER_WIDTH {
                lines.push(std::mem::take(&mut line));
            } else {
                line.push_str(sep);
            }
            line.push_str(piece);
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    if lines.len() > TITLE_LINES {
        let rest = lines[TITLE_LINES - 1..].join(" ");
        lines.truncate(TITLE_LINES - 1);
        lines.push(rest);
    }
    lines
}

/// Words of `text` over lines of at most `width` characters (longer words
/// get a line of their own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let len = line.chars().count() + word.chars().count() + 1;
        if !line.is_empty() && len > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}
