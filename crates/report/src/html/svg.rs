//! The swimlane chart and the counter plot, as inline SVG.
//!
//! Positions are written for the step axis (one column per step); every
//! element that moves also carries its positions on both axes in
//! `data-step` and `data-time` (`name=value;name=value`), which the page's
//! script applies when the reader switches axis.

use super::escape;
use crate::model::{nest, MarkKind, Model, Span, SpanKind};
use crate::steps::time;
use sim::{EventKind, TaskId};
use std::fmt::Write;

/// The chart shows at most the last this many steps.
pub(super) const MAX_STEPS: u64 = 4000;
/// The step listing is included up to this many events.
pub(super) const MAX_EVENTS_LISTED: usize = 20_000;

const LABEL_W: f64 = 150.0;
const AXIS_H: f64 = 40.0;
/// Baselines of the tick labels and of the breaking step's label.
const TICK_Y: f64 = 14.0;
const BREAK_Y: f64 = 32.0;
const PAD: f64 = 5.0;
const MARK_H: f64 = 14.0;
const ROW_H: f64 = 18.0;
const TICK_H: f64 = 7.0;
const PLOT_H: f64 = 150.0;
const GAP: f64 = 22.0;
const MIN_WIDTH: f64 = 1100.0;
const PX_PER_STEP: f64 = 6.0;
const RIGHT: f64 = 180.0;
const CHAR_W: f64 = 6.2;
/// Room a mark's label needs to the right of it.
const LABEL_ROOM: f64 = 260.0;
/// Pixels each counter line is raised above the one drawn before it.
const LINE_OFFSET: f64 = 3.0;
const LIMIT_COLOR: &str = "#d62728";
/// The colour of a sum of counters (the charged total).
const SUM_COLOR: &str = "#6a3d9a";
const PALETTE: [&str; 6] = [
    "#1f77b4", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#e377c2",
];

/// The chart's parts, ready to place in the page.
pub(super) struct Chart {
    /// The lane names (an SVG that does not scroll).
    pub labels: String,
    /// Lanes, flows and counters (an SVG that scrolls).
    pub plot: String,
    /// The counter series' names and colours, as HTML.
    pub series_legend: String,
    /// Set when the chart shows only the end of a long execution.
    pub window_note: Option<String>,
}

fn n(x: f64) -> String {
    format!("{x:.1}")
}

/// The two x axes.
struct Axis {
    /// First and last step shown.
    s0: u64,
    s1: u64,
    /// Pixels per step.
    k: f64,
    t0: u64,
    t1: u64,
    width: f64,
}

impl Axis {
    fn new(m: &Model) -> Axis {
        let s1 = m.last_step().max(1);
        let s0 = s1.saturating_sub(MAX_STEPS - 1).max(1);
        let steps = (s1 - s0 + 1) as f64;
        let width = (steps * PX_PER_STEP).max(MIN_WIDTH);
        let shown = m.events.iter().filter(|e| e.step >= s0);
        let t0 = shown.map(|e| e.time).min().unwrap_or(0);
        Axis {
            s0,
            s1,
            k: width / steps,
            t0,
            t1: m.end_time().max(t0 + 1),
            width,
        }
    }

    fn step_x(&self, step: u64) -> f64 {
        step.saturating_sub(self.s0) as f64 * self.k
    }

    fn time_x(&self, t: u64) -> f64 {
        t.saturating_sub(self.t0) as f64 / (self.t1 - self.t0) as f64 * self.width
    }

    /// A step at the start of its column; a note at the end of its step's.
    fn event_step_x(&self, m: &Model, i: usize) -> f64 {
        let e = &m.events[i];
        match e.kind {
            EventKind::Step => self.step_x(e.step),
            EventKind::Note => self.step_x(e.step + 1),
        }
    }

    fn event_time_x(&self, m: &Model, i: usize) -> f64 {
        self.time_x(m.events[i].time)
    }

    /// A span's left and right edges: (step axis, time axis).
    fn span_x(&self, m: &Model, s: &Span) -> ((f64, f64), (f64, f64)) {
        let last_step = s.last.map_or(self.s1, |l| m.events[l].step);
        let step = (self.event_step_x(m, s.first), self.step_x(last_step + 1));
        let (t0, t1) = m.span_time(s);
        (step, (self.time_x(t0), self.time_x(t1)))
    }

    fn shows(&self, m: &Model, i: usize) -> bool {
        m.events[i].step >= self.s0
    }
}

/// `name="value"` for the step axis, and both axes for the script.
fn dual(step: &[(&str, String)], time: &[(&str, String)]) -> String {
    let join = |kv: &[(&str, String)]| {
        kv.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    };
    let mut s = String::new();
    for (k, v) in step {
        let _ = write!(s, " {k}=\"{v}\"");
    }
    let _ = write!(
        s,
        " data-step=\"{}\" data-time=\"{}\"",
        join(step),
        join(time)
    );
    s
}

/// Left edge and width on both axes, boxes at least `min` wide.
fn x_width(step: (f64, f64), time: (f64, f64), min: f64) -> String {
    let w = |(a, b): (f64, f64)| n((b - a).max(min));
    dual(
        &[("x", n(step.0)), ("width", w(step))],
        &[("x", n(time.0)), ("width", w(time))],
    )
}

/// A counter line: its series, colour and class.
struct Line<'s> {
    series: &'s crate::model::Series,
    color: &'static str,
    class: &'static str,
}

/// One lane: a task's, or the rcu lane.
struct Lane {
    name: String,
    task: Option<TaskId>,
    top: f64,
    rows: usize,
    /// (span index, row).
    spans: Vec<(usize, usize)>,
}

impl Lane {
    fn height(&self) -> f64 {
        2.0 * PAD + MARK_H + self.rows as f64 * ROW_H + TICK_H
    }
    fn row_y(&self, row: usize) -> f64 {
        self.top + PAD + MARK_H + row as f64 * ROW_H
    }
    fn mark_y(&self) -> f64 {
        self.top + PAD + MARK_H / 2.0
    }
    fn tick_y(&self) -> f64 {
        self.row_y(self.rows)
    }
}

/// Rows for spans that nest (deeper ones lower); overlapping spans that
/// do not nest get rows of their own.
fn place_rows(m: &Model, spans: &[usize]) -> (Vec<(usize, usize)>, usize) {
    let intervals: Vec<(u64, u64)> = spans
        .iter()
        .map(|&s| {
            let span = &m.spans[s];
            let end = m.span_end(span).0.max(span.first + 1);
            (span.first as u64, end as u64)
        })
        .collect();
    let places = nest(&intervals);
    let subs = places.iter().map(|p| p.sub + 1).max().unwrap_or(0);
    let mut depth = vec![0; subs];
    for p in &places {
        depth[p.sub] = depth[p.sub].max(p.depth + 1);
    }
    let offsets: Vec<usize> = depth
        .iter()
        .scan(0, |acc, d| {
            let o = *acc;
            *acc += d;
            Some(o)
        })
        .collect();
    let rows = spans
        .iter()
        .zip(&places)
        .map(|(&s, p)| (s, offsets[p.sub] + p.depth))
        .collect();
    (rows, depth.iter().sum::<usize>().max(1))
}

fn lanes(m: &Model, axis: &Axis) -> Vec<Lane> {
    let visible = |s: &Span| s.last.is_none_or(|l| axis.shows(m, l));
    let mut lanes = Vec::new();
    let mut add = |name: String, task: Option<TaskId>, keep: &dyn Fn(&Span) -> bool| {
        let spans: Vec<usize> = (0..m.spans.len())
            .filter(|&s| visible(&m.spans[s]) && keep(&m.spans[s]))
            .collect();
        let (spans, rows) = place_rows(m, &spans);
        lanes.push(Lane {
            name,
            task,
            top: 0.0,
            rows,
            spans,
        });
    };
    for t in m.task_order() {
        add(m.task_name(t).to_string(), Some(t), &|s| s.task == t);
    }
    let rcu_marks = m.marks.iter().any(|mk| m.is_rcu(m.events[mk.event].obj));
    let gps = m.spans.iter().any(|s| s.kind == SpanKind::GracePeriod);
    if gps || rcu_marks {
        add("rcu".into(), None, &|s| s.kind == SpanKind::GracePeriod);
    }
    let mut top = AXIS_H;
    for lane in &mut lanes {
        lane.top = top;
        top += lane.height();
    }
    lanes
}

struct Draw<'m> {
    m: &'m Model<'m>,
    axis: Axis,
    lanes: Vec<Lane>,
    out: String,
    bottom: f64,
    height: f64,
}

/// Draw the chart of `m`.
pub(super) fn chart(m: &Model) -> Chart {
    let axis = Axis::new(m);
    let lanes = lanes(m, &axis);
    let bottom = lanes.last().map_or(AXIS_H, |l| l.top + l.height());
    let plot_h = if m.series.is_empty() {
        0.0
    } else {
        GAP + PLOT_H
    };
    let mut d = Draw {
        m,
        axis,
        lanes,
        out: String::new(),
        bottom,
        height: bottom + plot_h + 12.0,
    };
    d.plot();
    let window_note = (d.axis.s0 > 1).then(|| {
        format!(
            "This execution has {} steps: the chart shows the last {} (steps {} to {}), where it ended. \
             --timeline and --perfetto show all of it.",
            d.axis.s1,
            d.axis.s1 - d.axis.s0 + 1,
            d.axis.s0,
            d.axis.s1
        )
    });
    Chart {
        labels: d.labels(),
        plot: std::mem::take(&mut d.out),
        series_legend: d.series_legend(),
        window_note,
    }
}

impl Draw<'_> {
    fn plot(&mut self) {
        let _ = write!(
            self.out,
            "<svg id=\"lanes\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\">\n\
             <defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"7\" refY=\"4\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\">\
             <path d=\"M0,0 L8,4 L0,8 z\" class=\"arrowhead\"/></marker></defs>\n",
            n(self.axis.width + RIGHT),
            n(self.height)
        );
        self.backgrounds();
        self.step_ticks_axis();
        self.time_ticks_axis();
        for k in 0..self.lanes.len() {
            self.lane(k);
        }
        self.flows();
        self.counters();
        self.breaking();
        self.out.push_str("</svg>\n");
    }

    fn backgrounds(&mut self) {
        for (k, lane) in self.lanes.iter().enumerate() {
            let task = lane.task.map_or("rcu".to_string(), |t| t.to_string());
            let _ = writeln!(
                self.out,
                "<rect class=\"lane{}\" data-task=\"{}\" x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                if k % 2 == 1 { " odd" } else { "" },
                escape(&task),
                n(lane.top),
                n(self.axis.width + RIGHT),
                n(lane.height())
            );
        }
    }

    /// Grid lines and labels of the step axis.
    fn step_ticks_axis(&mut self) {
        let a = &self.axis;
        let every = nice(1, |s| s as f64 * a.k >= 60.0);
        let first = a.s0.div_ceil(every) * every;
        let ticks: Vec<(f64, String)> = (first..=a.s1)
            .step_by(every as usize)
            .map(|s| (a.step_x(s), s.to_string()))
            .collect();
        self.axis_group("step", "", &ticks);
    }

    fn time_ticks_axis(&mut self) {
        let a = &self.axis;
        let span = (a.t1 - a.t0) as f64;
        let every = nice(1, |t| t as f64 / span * a.width >= 90.0);
        let first = a.t0.div_ceil(every) * every;
        let ticks: Vec<(f64, String)> = (first..=a.t1)
            .step_by(every as usize)
            .map(|t| (a.time_x(t), tick_time(t)))
            .collect();
        self.axis_group("time", " style=\"display:none\"", &ticks);
    }

    fn axis_group(&mut self, class: &str, style: &str, ticks: &[(f64, String)]) {
        let _ = writeln!(self.out, "<g class=\"axis {class}\"{style}>");
        for (x, label) in ticks {
            let _ = writeln!(
                self.out,
                "<line class=\"grid\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/><text class=\"tick\" x=\"{}\" y=\"{}\">{}</text>",
                n(TICK_Y + 4.0),
                n(self.height),
                n(x + 2.0),
                n(TICK_Y),
                escape(label),
                x = n(*x),
            );
        }
        self.out.push_str("</g>\n");
    }

    fn lane(&mut self, k: usize) {
        let spans = std::mem::take(&mut self.lanes[k].spans);
        for &(s, row) in &spans {
            self.span_box(k, s, row);
        }
        self.lanes[k].spans = spans;
        if let Some(t) = self.lanes[k].task {
            self.run_ticks(k, t);
            if let Some(why) = self.idle(t) {
                let lane = &self.lanes[k];
                let _ = writeln!(
                    self.out,
                    "<text class=\"never-ran\" x=\"8\" y=\"{}\">{why}</text>",
                    n(lane.top + lane.height() / 2.0 + 4.0)
                );
            }
        }
        self.marks(k);
    }

    /// Why task `t`'s lane has no step: it never ran, or not in the steps
    /// the chart shows.
    fn idle(&self, t: TaskId) -> Option<&'static str> {
        let m = self.m;
        let steps = |shown: bool| {
            m.events.iter().enumerate().any(|(i, e)| {
                e.task == t && e.kind == EventKind::Step && (!shown || self.axis.shows(m, i))
            })
        };
        match (steps(false), steps(true)) {
            (false, _) => Some("never ran"),
            (true, false) => Some("did not run in the steps shown"),
            (true, true) => None,
        }
    }

    fn span_box(&mut self, k: usize, s: usize, row: usize) {
        let m = self.m;
        let span = &m.spans[s];
        let (step, tm) = self.axis.span_x(m, span);
        let y = self.lanes[k].row_y(row);
        let label = box_label(m, span, self.lanes[k].task.is_none());
        let (t0, t1) = m.span_time(span);
        let info = format!("{} ({} – {})", m.describe_span(span), time(t0), time(t1));
        let mut class = format!("span {}", span.kind.as_str());
        if span.failed {
            class.push_str(" failed");
        }
        if span.last.is_none() {
            class.push_str(" open");
        }
        let fits = label.chars().count() as f64 * CHAR_W + 6.0 <= step.1 - step.0;
        let _ = writeln!(
            self.out,
            "<g class=\"{class}\" data-info=\"{info}\"><title>{info}</title><rect{} y=\"{}\" height=\"{}\" rx=\"3\"/>\
             <text{} y=\"{}\"{}>{}</text></g>",
            x_width(step, tm, 2.0),
            n(y + 1.0),
            n(ROW_H - 2.0),
            dual(&[("x", n(step.0 + 3.0))], &[("x", n(tm.0 + 3.0))]),
            n(y + ROW_H / 2.0 + 4.0),
            if fits { "" } else { " style=\"display:none\"" },
            escape(&label),
            info = escape(&info),
        );
    }

    /// A thin mark under the lane for every step the task ran.
    fn run_ticks(&mut self, k: usize, t: TaskId) {
        let m = self.m;
        let y = self.lanes[k].tick_y();
        for (i, e) in m.events.iter().enumerate() {
            if e.task != t || e.kind != EventKind::Step || !self.axis.shows(m, i) {
                continue;
            }
            let x = self.axis.step_x(e.step);
            let gap = (self.axis.k * 0.2).min(1.0);
            let tx = self.axis.time_x(e.time);
            let tx1 = self.axis.time_x(m.step_end(i).1);
            let what = format!("{} {}", e.label, m.object(e.obj));
            let _ = writeln!(
                self.out,
                "<rect class=\"run\"{} y=\"{}\" height=\"{}\"><title>step {}: {} ({})</title></rect>",
                x_width((x, x + self.axis.k - gap), (tx, tx1), 1.0),
                n(y + 1.0),
                n(TICK_H - 2.0),
                e.step,
                escape(what.trim_end()),
                time(e.time)
            );
        }
    }

    fn marks(&mut self, k: usize) {
        let m = self.m;
        let lane = &self.lanes[k];
        let y = lane.mark_y();
        let mine = |i: usize| {
            let e = &m.events[i];
            match lane.task {
                Some(t) => e.task == t && !m.is_rcu(e.obj),
                None => m.is_rcu(e.obj),
            }
        };
        let mut s = String::new();
        for mk in m
            .marks
            .iter()
            .filter(|mk| mine(mk.event) && self.axis.shows(m, mk.event))
        {
            let e = &m.events[mk.event];
            let sx = self.axis.event_step_x(m, mk.event);
            let tx = self.axis.event_time_x(m, mk.event);
            let who = lane
                .task
                .map_or(format!(" ({})", m.task_name(e.task)), |_| String::new());
            let title = format!("{}{who}, after step {} ({})", mk.text, e.step, time(e.time));
            let _ = writeln!(s, "{}", mark_symbol(mk.kind, sx, tx, y, &escape(&title)));
            let failure = matches!(
                mk.kind,
                MarkKind::Error | MarkKind::UseAfterFree | MarkKind::Panic
            );
            if (failure && !mk.told_by_its_call) || lane.task.is_none() {
                let _ = writeln!(
                    s,
                    "<text class=\"mark-label {}\"{} y=\"{}\">{}</text>",
                    mark_class(mk.kind),
                    self.beside(sx, tx),
                    n(y + 4.0),
                    escape(&format!("{}{who}", mk.text))
                );
            }
        }
        self.out.push_str(&s);
    }

    /// Where a mark's label goes on both axes: to the right of the mark,
    /// or to its left near the right edge.
    fn beside(&self, sx: f64, tx: f64) -> String {
        let place = |x: f64| {
            if x > self.axis.width - LABEL_ROOM {
                (n(x - 7.0), "end".to_string())
            } else {
                (n(x + 7.0), "start".to_string())
            }
        };
        let ((s, s_anchor), (t, t_anchor)) = (place(sx), place(tx));
        dual(
            &[("x", s), ("text-anchor", s_anchor)],
            &[("x", t), ("text-anchor", t_anchor)],
        )
    }

    fn lane_of(&self, t: TaskId) -> Option<&Lane> {
        self.lanes.iter().find(|l| l.task == Some(t))
    }

    /// An arrow from each `schedule_work` to the `work_run` it caused.
    fn flows(&mut self) {
        let m = self.m;
        let a = &self.axis;
        let mut s = String::new();
        for f in &m.flows {
            if !a.shows(m, f.from) {
                continue;
            }
            let (from, to) = (&m.events[f.from], &m.events[f.to]);
            let (Some(l1), Some(l2)) = (self.lane_of(from.task), self.lane_of(to.task)) else {
                continue;
            };
            let (y1, y2) = (l1.tick_y() + TICK_H / 2.0, l2.tick_y() + TICK_H / 2.0);
            let half = a.k / 2.0;
            let path = |x1: f64, x2: f64| {
                let ym = (y1 + y2) / 2.0;
                format!(
                    "M{} {} C{} {} {} {} {} {}",
                    n(x1),
                    n(y1),
                    n(x1),
                    n(ym),
                    n(x2),
                    n(ym),
                    n(x2),
                    n(y2)
                )
            };
            let step_d = path(a.step_x(from.step) + half, a.step_x(to.step) + half);
            let time_d = path(a.time_x(from.time), a.time_x(to.time));
            let _ = writeln!(
                s,
                "<path class=\"flow\"{} marker-end=\"url(#arrow)\"><title>{} queued {} at step {}; {} ran it at step {}</title></path>",
                dual(&[("d", step_d)], &[("d", time_d)]),
                escape(m.task_name(from.task)),
                escape(&m.object(f.obj)),
                from.step,
                escape(m.task_name(to.task)),
                to.step
            );
        }
        self.out.push_str(&s);
    }

    /// A red line through every lane at the step that broke the run.
    fn breaking(&mut self) {
        let Some(b) = self.m.breaking else {
            return;
        };
        let e = &self.m.events[b];
        let sx = self.axis.step_x(e.step) + self.axis.k / 2.0;
        let tx = self.axis.time_x(e.time);
        let _ = writeln!(
            self.out,
            "<g class=\"breaking\"><line{} y1=\"{}\" y2=\"{}\"/><text{} y=\"{}\">▶ step {}</text></g>",
            dual(
                &[("x1", n(sx)), ("x2", n(sx))],
                &[("x1", n(tx)), ("x2", n(tx))]
            ),
            n(BREAK_Y + 3.0),
            n(self.height - 4.0),
            dual(&[("x", n(sx + 4.0))], &[("x", n(tx + 4.0))]),
            n(BREAK_Y),
            e.step
        );
    }

    fn plot_top(&self) -> f64 {
        self.bottom + GAP
    }

    fn value_max(&self) -> i64 {
        let m = self.m;
        m.series
            .iter()
            .chain(&m.sums)
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .max()
            .unwrap_or(1)
            .max(1)
    }

    fn y_of(&self, v: i64) -> f64 {
        let top = self.plot_top();
        top + PLOT_H - v.max(0) as f64 / self.value_max() as f64 * (PLOT_H - 12.0)
    }

    fn counters(&mut self) {
        if self.m.series.is_empty() {
            return;
        }
        let (top, w) = (self.plot_top(), n(self.axis.width));
        let _ = writeln!(
            self.out,
            "<rect class=\"plot-area\" x=\"0\" y=\"{}\" width=\"{w}\" height=\"{}\"/>",
            n(top),
            n(PLOT_H)
        );
        for v in [0, self.value_max()] {
            let y = n(self.y_of(v));
            let _ = writeln!(
                self.out,
                "<line class=\"grid\" x1=\"0\" x2=\"{w}\" y1=\"{y}\" y2=\"{y}\"/>"
            );
        }
        // Lines that are not the limit are raised a few pixels each, the
        // first one too, so that two at the same value (a count that
        // reaches its limit) lie side by side instead of one hiding the
        // other.
        let mut raise = 0.0;
        for line in lines(self.m) {
            if !line.series.limit {
                raise += LINE_OFFSET;
            }
            let lift = if line.series.limit { 0.0 } else { raise };
            self.series_line(&line, lift);
        }
    }

    fn series_line(&mut self, line: &Line<'_>, lift: f64) {
        let m = self.m;
        let mut by_time = line.series.points.clone();
        by_time.sort_by_key(|&(i, _)| (m.events[i].time, i));
        let step_pts = self.polyline(&line.series.points, lift, |i| self.axis.event_step_x(m, i));
        let time_pts = self.polyline(&by_time, lift, |i| self.axis.event_time_x(m, i));
        if step_pts.is_empty() {
            return;
        }
        let _ = writeln!(
            self.out,
            "<polyline class=\"{}\" stroke=\"{}\"{}><title>{}</title></polyline>",
            line.class,
            line.color,
            dual(&[("points", step_pts)], &[("points", time_pts)]),
            escape(&line.series.name)
        );
    }

    /// A step function through `points` (event, value), from the value
    /// before the window to the right edge, `lift` pixels up.
    fn polyline(&self, points: &[(usize, i64)], lift: f64, x_of: impl Fn(usize) -> f64) -> String {
        let m = self.m;
        let before = points
            .iter()
            .filter(|p| !self.axis.shows(m, p.0))
            .map(|p| p.1)
            .next_back();
        let mut pts: Vec<String> = Vec::new();
        let mut last = before;
        let y = |v: i64| n(self.y_of(v) - lift);
        if let Some(v) = before {
            pts.push(format!("0,{}", y(v)));
        }
        for &(i, v) in points.iter().filter(|p| self.axis.shows(m, p.0)) {
            let x = n(x_of(i));
            if let Some(prev) = last {
                pts.push(format!("{x},{}", y(prev)));
            }
            pts.push(format!("{x},{}", y(v)));
            last = Some(v);
        }
        if let Some(v) = last {
            pts.push(format!("{},{}", n(self.axis.width), y(v)));
        }
        pts.join(" ")
    }

    /// The lane names, level with the lanes.
    fn labels(&self) -> String {
        let mut s = format!(
            "<svg class=\"labels\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\">\n",
            n(LABEL_W),
            n(self.height)
        );
        let _ = writeln!(
            s,
            "<g class=\"axis step\"><text class=\"axis-name\" x=\"8\" y=\"{y}\">step</text></g>\
             <g class=\"axis time\" style=\"display:none\"><text class=\"axis-name\" x=\"8\" y=\"{y}\">virtual time</text></g>",
            y = n(TICK_Y)
        );
        for lane in &self.lanes {
            let caption = match lane.task {
                None => "grace periods",
                Some(t) => self.idle(t).unwrap_or(""),
            };
            let y = lane.top + lane.height() / 2.0;
            let _ = writeln!(
                s,
                "<text class=\"lane-name\" x=\"8\" y=\"{}\">{}</text><text class=\"caption\" x=\"8\" y=\"{}\">{caption}</text>",
                n(y),
                escape(&lane.name),
                n(y + 13.0)
            );
        }
        if !self.m.series.is_empty() {
            let top = self.plot_top();
            let _ = writeln!(
                s,
                "<text class=\"lane-name\" x=\"8\" y=\"{}\">counters</text>",
                n(top + PLOT_H / 2.0)
            );
            for v in [0, self.value_max()] {
                let _ = writeln!(
                    s,
                    "<text class=\"tick\" text-anchor=\"end\" x=\"{}\" y=\"{}\">{v}</text>",
                    n(LABEL_W - 6.0),
                    n(self.y_of(v) + 4.0)
                );
            }
        }
        s.push_str("</svg>\n");
        s
    }

    fn series_legend(&self) -> String {
        if self.m.series.is_empty() {
            return String::new();
        }
        let mut s = String::from("<ul class=\"series-legend\">");
        for line in lines(self.m) {
            let Some(&(_, v)) = line.series.points.last() else {
                continue;
            };
            let limit = if line.series.limit {
                " (limit, dashed)"
            } else {
                ""
            };
            let _ = write!(
                s,
                "<li><span class=\"swatch\" style=\"background:{}\"></span>{}{limit}: {v} at the end</li>",
                line.color,
                escape(&line.series.name)
            );
        }
        s.push_str("</ul>\n");
        s
    }
}

/// The counter lines, in drawing order: each series, then the sums.
fn lines<'m>(m: &'m Model) -> Vec<Line<'m>> {
    let series = m.series.iter().enumerate().map(|(k, s)| Line {
        series: s,
        color: if s.limit {
            LIMIT_COLOR
        } else {
            PALETTE[k % PALETTE.len()]
        },
        class: if s.limit { "series limit" } else { "series" },
    });
    let sums = m.sums.iter().map(|s| Line {
        series: s,
        color: SUM_COLOR,
        class: "series sum",
    });
    series.chain(sums).collect()
}

/// A round time for an axis tick: `0`, `250ns`, `5ms`, `2.5us`.
fn tick_time(ns: u64) -> String {
    let (unit, scale) = match ns {
        0 => return "0".into(),
        1..=999 => ("ns", 1.0),
        1_000..=999_999 => ("us", 1e3),
        1_000_000..=999_999_999 => ("ms", 1e6),
        _ => ("s", 1e9),
    };
    let value = format!("{:.3}", ns as f64 / scale);
    let value = value.trim_end_matches('0').trim_end_matches('.');
    format!("{value}{unit}")
}

/// The smallest of 1, 2, 5, 10, 20, 50... (times `unit`) that `wide_enough`.
fn nice(unit: u64, wide_enough: impl Fn(u64) -> bool) -> u64 {
    let mut base = unit;
    loop {
        for f in [1, 2, 5] {
            if wide_enough(base * f) {
                return base * f;
            }
        }
        match base.checked_mul(10) {
            Some(b) => base = b,
            None => return base,
        }
    }
}

fn box_label(m: &Model, s: &Span, rcu_lane: bool) -> String {
    match s.kind {
        SpanKind::Syscall => m.call(s),
        SpanKind::GracePeriod if rcu_lane => format!("grace period ({})", m.task_name(s.task)),
        SpanKind::GracePeriod => "waits for a grace period".into(),
        SpanKind::RcuRead => "rcu read-side".into(),
        SpanKind::Lock | SpanKind::Work => s.name.clone(),
    }
}

fn mark_class(kind: MarkKind) -> &'static str {
    match kind {
        MarkKind::Ok => "ok",
        MarkKind::Error => "err",
        MarkKind::Queued => "queued",
        MarkKind::Freed => "free",
        MarkKind::UseAfterFree => "uaf",
        MarkKind::Exit => "exit",
        MarkKind::Panic => "panic",
        MarkKind::Note => "note",
    }
}

fn mark_symbol(kind: MarkKind, sx: f64, tx: f64, y: f64, title: &str) -> String {
    let class = mark_class(kind);
    let glyph = match kind {
        MarkKind::Freed => Some("×"),
        MarkKind::UseAfterFree => Some("✖"),
        _ => None,
    };
    match glyph {
        Some(g) => format!(
            "<text class=\"mark {class}\"{} y=\"{}\" text-anchor=\"middle\">{g}<title>{title}</title></text>",
            dual(&[("x", n(sx))], &[("x", n(tx))]),
            n(y + 5.0)
        ),
        None => {
            let r = if kind == MarkKind::Error { 5.0 } else { 3.5 };
            format!(
                "<circle class=\"mark {class}\"{} cy=\"{}\" r=\"{r}\"><title>{title}</title></circle>",
                dual(&[("cx", n(sx))], &[("cx", n(tx))]),
                n(y)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{nice, tick_time};

    #[test]
    fn ticks_are_round_and_short() {
        assert_eq!(tick_time(0), "0");
        assert_eq!(tick_time(250), "250ns");
        assert_eq!(tick_time(2_500), "2.5us");
        assert_eq!(tick_time(5_000_000), "5ms");
        assert_eq!(tick_time(1_190_000_000), "1.19s");
    }

    #[test]
    fn tick_spacing_is_1_2_or_5_times_a_power_of_ten() {
        assert_eq!(nice(1, |s| s >= 1), 1);
        assert_eq!(nice(1, |s| s >= 3), 5);
        assert_eq!(nice(1, |s| s >= 7), 10);
        assert_eq!(nice(1, |s| s >= 1_500), 2_000);
    }
}
