//! The self-contained HTML report of one execution: what ran (scenario,
//! kernel, patches), how it ended (outcome, the state that broke it), the
//! swimlane timeline and counter plots as inline SVG over the step order
//! or virtual time, the token and the replay command. CSS and the small
//! script that switches the axis are inline: the file needs no network.

mod svg;

use crate::model::Model;
use crate::steps;
use sim::{Event, Outcome};
use std::fmt::Write;

/// What the page says about the run besides the trace.
pub struct Page<'a> {
    pub scenario: &'a str,
    pub summary: &'a str,
    /// The scenario file as given on the command line.
    pub file: String,
    /// The kernel run's label.
    pub kernel: &'a str,
    pub profile: &'a str,
    /// The patches that were on and change code the scenario's ops run
    /// through.
    pub patches: Vec<&'a str>,
    /// The other patches that were on.
    pub other_patches: Vec<&'a str>,
    pub token: &'a str,
    pub replay_command: &'a str,
    /// Words for a note's value, for the step listing.
    pub describe: &'a dyn Fn(&Event) -> Option<String>,
}

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// Text safe inside HTML elements and quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Render the page.
pub fn render(m: &Model, page: &Page) -> String {
    let mut out = String::new();
    let title = format!(
        "{} [{}]: {}",
        page.scenario,
        page.kernel,
        m.report.outcome.kind()
    );
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body data-outcome=\"{}\">\n",
        escape(&title),
        m.report.outcome.kind()
    );
    header(&mut out, m, page);
    out.push_str("<div class=\"top\">\n");
    facts(&mut out, m, page);
    outcome(&mut out, m);
    out.push_str("</div>\n");
    timeline(&mut out, m);
    listing(&mut out, m, page);
    let _ = write!(
        out,
        "<footer>Written by nssim from one recorded execution. Replay it with the command above; \
         <code>--timeline</code> draws it in a terminal, <code>--perfetto FILE</code> for ui.perfetto.dev.</footer>\n\
         <script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    );
    out
}

fn header(out: &mut String, m: &Model, page: &Page) {
    let _ = write!(
        out,
        "<header>\n<h1>{} <span class=\"kernel\">{}</span> <span class=\"badge {}\">{}</span></h1>\n<p class=\"summary\">{}</p>\n</header>\n",
        escape(page.scenario),
        escape(page.kernel),
        m.report.outcome.kind(),
        m.report.outcome.kind(),
        escape(page.summary)
    );
}

fn facts(out: &mut String, m: &Model, page: &Page) {
    let list = |names: &[&str]| {
        names
            .iter()
            .map(|p| escape(p))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut patches = match page.patches.is_empty() {
        true => "none that change code this scenario runs".to_string(),
        false => list(&page.patches),
    };
    if !page.other_patches.is_empty() {
        let _ = write!(
            patches,
            " <details class=\"other-patches\"><summary>and {} more, for code this scenario does not run</summary>{}</details>",
            page.other_patches.len(),
            list(&page.other_patches)
        );
    }
    let tasks: Vec<String> = m
        .task_order()
        .iter()
        .map(|&t| escape(m.task_name(t)))
        .collect();
    let rows = [
        ("scenario file", format!("<code>{}</code>", escape(&page.file))),
        ("kernel", format!("{} (profile {})", escape(page.kernel), escape(page.profile))),
        ("patches on", patches),
        ("tasks", tasks.join(", ")),
        (
            "execution",
            format!(
                "{} steps, {} of virtual time",
                m.report.steps,
                steps::time(m.report.virtual_ns)
            ),
        ),
        ("token", format!("<code class=\"token\">{}</code>", escape(page.token))),
        (
            "replay",
            format!(
                "<code id=\"replay\">{}</code> <button type=\"button\" id=\"copy\" title=\"copy the command\">copy</button>",
                whole_words(page.replay_command)
            ),
        ),
    ];
    out.push_str("<section class=\"facts\">\n<h2>The run</h2>\n<table>\n");
    for (name, value) in rows {
        let _ = writeln!(out, "<tr><th>{name}</th><td>{value}</td></tr>");
    }
    out.push_str("</table>\n</section>\n");
}

fn outcome_title(o: &Outcome) -> String {
    match o {
        Outcome::Pass => "Pass: every task finished and no invariant broke".into(),
        Outcome::Violation { invariant, .. } => format!("Violation of {invariant}"),
        Outcome::Deadlock { .. } => "Deadlock".into(),
        Outcome::Panic { task, .. } => format!("Panic in {task}"),
        Outcome::UseAfterFree { object, .. } => format!("Use after free of {object}"),
        Outcome::Limit { which, .. } => format!("Limit reached: {which}"),
    }
}

fn outcome(out: &mut String, m: &Model) {
    let o = &m.report.outcome;
    let _ = write!(
        out,
        "<section class=\"outcome {}\">\n<h2>{}</h2>\n",
        o.kind(),
        escape(&outcome_title(o))
    );
    if o.is_failure() {
        let _ = writeln!(out, "<p class=\"detail\">{}</p>", escape(&o.to_string()));
    }
    if let Some(b) = m.breaking {
        let e = &m.events[b];
        let what = format!("{} {}", e.label, m.object(e.obj));
        let _ = writeln!(
            out,
            "<p class=\"where\">▶ It ends at step {} ({}): <b>{}</b> {}</p>",
            e.step,
            steps::time(e.time),
            escape(m.task_name(e.task)),
            escape(what.trim_end())
        );
    }
    end_state(out, m);
    out.push_str("</section>\n");
}

fn end_state(out: &mut String, m: &Model) {
    let counters = m.final_counters();
    if !counters.is_empty() {
        out.push_str("<h3>Counters at the end</h3>\n<table class=\"counters\">\n");
        for (s, v) in counters {
            let limit = if s.limit {
                " <span class=\"limit\">limit</span>"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "<tr><th>{}{limit}</th><td>{v}</td></tr>",
                escape(&s.name)
            );
        }
        out.push_str("</table>\n");
    }
    let open: Vec<String> = m
        .spans
        .iter()
        .filter(|s| s.last.is_none())
        .map(|s| format!("<li>{}</li>", escape(&m.describe_span(s))))
        .collect();
    if !open.is_empty() {
        let _ = writeln!(
            out,
            "<h3>Still open at the end</h3>\n<ul>{}</ul>",
            open.join("")
        );
    }
}

fn timeline(out: &mut String, m: &Model) {
    let chart = svg::chart(m);
    out.push_str("<section class=\"timeline\">\n<h2>Timeline</h2>\n<div class=\"toolbar\">\n");
    out.push_str(
        "<span class=\"axis-choice\">x axis: <button type=\"button\" data-axis=\"step\" class=\"on\">step order</button>\
         <button type=\"button\" data-axis=\"time\">virtual time</button></span>\n",
    );
    out.push_str(&legend(&chart.plot));
    out.push_str("</div>\n");
    if let Some(note) = &chart.window_note {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    out.push_str(
        "<p class=\"note time-note\">Under the random, pct and dfs strategies each task's clock \
         only approximates the timing of this interleaving: in virtual time, one task's steps may \
         appear earlier than steps that came before them. The step order is exact.</p>\n",
    );
    let _ = write!(
        out,
        "<div class=\"chart\">\n{}<div class=\"scroll\" id=\"scroll\">\n{}</div>\n</div>\n",
        chart.labels, chart.plot
    );
    out.push_str(&chart.series_legend);
    out.push_str(
        "<p id=\"info\" class=\"info\">Point at a box for details; click it to keep them here.</p>\n</section>\n",
    );
}

/// `text` with each space-separated word kept whole (`white-space:
/// nowrap`): a line breaks between words, never inside a token or path.
fn whole_words(text: &str) -> String {
    text.split(' ')
        .map(|w| format!("<span class=\"word\">{}</span>", escape(w)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The legend of what the chart shows: an entry for each kind of box and
/// mark the run drew (`plot` is the chart's SVG).
fn legend(plot: &str) -> String {
    let boxes = [
        ("syscall", "syscall"),
        ("lock", "lock held"),
        ("grace-period", "grace period"),
        ("work", "work item running"),
        ("rcu-read", "rcu read-side section"),
    ];
    let marks = [
        ("class=\"mark ok\"", "<span class=\"sym ok\">●</span>result"),
        (
            "class=\"mark err\"",
            "<span class=\"sym err big\">●</span>error",
        ),
        (
            "class=\"mark queued\"",
            "<span class=\"sym queued\">○</span>released, waiting to be freed",
        ),
        (
            "class=\"mark free\"",
            "<span class=\"sym free\">×</span>freed",
        ),
        (
            "class=\"mark uaf\"",
            "<span class=\"sym err\">✖</span>use after free",
        ),
        (
            "class=\"mark panic\"",
            "<span class=\"sym err\">●</span>panic",
        ),
        (
            "class=\"mark exit\"",
            "<span class=\"sym grey\">●</span>exit",
        ),
        (
            "class=\"mark note\"",
            "<span class=\"sym grey\">●</span>note",
        ),
        (
            "class=\"flow\"",
            "<span class=\"sym flow\">⤳</span>work queued → run",
        ),
        (
            "class=\"breaking\"",
            "<span class=\"sym break\">┃</span>the breaking step",
        ),
    ];
    let mut s = String::from("<span class=\"legend\">");
    for (class, text) in boxes {
        let drawn = [" ", "\""]
            .iter()
            .any(|end| plot.contains(&format!("class=\"span {class}{end}")));
        if drawn {
            let _ = write!(s, "<span class=\"key {class}\"></span>{text} ");
        }
    }
    for (drawn, html) in marks {
        if plot.contains(drawn) {
            let _ = write!(s, "{html} ");
        }
    }
    s.push_str("</span>\n");
    s
}

fn listing(out: &mut String, m: &Model, page: &Page) {
    out.push_str("<details class=\"listing\">\n<summary>Every step, as <code>nssim replay</code> prints it</summary>\n");
    if m.events.len() <= svg::MAX_EVENTS_LISTED {
        let text = steps::render(m.report, page.describe);
        let _ = writeln!(out, "<pre>{}</pre>", escape(&text));
    } else {
        let _ = writeln!(
            out,
            "<p>{} events: too many for this page; <code>nssim replay</code> prints them all.</p>",
            m.events.len()
        );
    }
    out.push_str("</details>\n");
}
