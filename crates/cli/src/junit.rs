//! JUnit XML for CI: one test case per (scenario, kernel) run; a run whose
//! outcome is not the expected one is a failure carrying the outcome, the
//! token and the replay command.

use std::fmt::Write;

/// One run as JUnit sees it.
pub struct Case {
    pub scenario: String,
    pub kernel: String,
    /// Wall-clock milliseconds the run took.
    pub wall_ms: u64,
    pub passed: bool,
    /// Why the run was skipped (another shard makes it), if it was.
    pub skipped: Option<String>,
    /// What happened and how to replay it (the failure's text).
    pub message: String,
    pub details: String,
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// Milliseconds as JUnit's seconds (`1.250`).
fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// The whole report, as one `<testsuites>` with a suite per scenario.
pub fn render(cases: &[Case]) -> String {
    let mut suites: Vec<(&str, Vec<&Case>)> = Vec::new();
    for c in cases {
        match suites.iter_mut().find(|(name, _)| *name == c.scenario) {
            Some((_, list)) => list.push(c),
            None => suites.push((&c.scenario, vec![c])),
        }
    }
    let failures = cases.iter().filter(|c| !c.passed).count();
    let total = seconds(cases.iter().map(|c| c.wall_ms).sum());
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"nssim\" tests=\"{}\" failures=\"{failures}\" time=\"{total}\">",
        cases.len()
    );
    for (name, list) in suites {
        let failed = list.iter().filter(|c| !c.passed).count();
        let time = seconds(list.iter().map(|c| c.wall_ms).sum());
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failed}\" time=\"{time}\">",
            escape(name),
            list.len()
        );
        for c in list {
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\"",
                escape(&c.scenario),
                escape(&c.kernel),
                seconds(c.wall_ms)
            );
            if let Some(why) = &c.skipped {
                let _ = writeln!(
                    out,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                    escape(why)
                );
            } else if c.passed {
                out.push_str("/>\n");
            } else {
                let _ = writeln!(
                    out,
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                    escape(&c.message),
                    escape(&c.details)
                );
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_carry_their_message_and_text_is_escaped() {
        let xml = render(&[
            Case {
                scenario: "a<b".into(),
                kernel: "v6.2".into(),
                wall_ms: 1250,
                passed: false,
                skipped: None,
                message: "violation & more".into(),
                details: "token nss1_x\nreplay: nssim replay f nss1_x".into(),
            },
            Case {
                scenario: "a<b".into(),
                kernel: "v6.3".into(),
                wall_ms: 5,
                passed: true,
                skipped: None,
                message: String::new(),
                details: String::new(),
            },
            Case {
                scenario: "a<b".into(),
                kernel: "v6.9".into(),
                wall_ms: 0,
                passed: true,
                skipped: Some("not in this shard".into()),
                message: String::new(),
                details: String::new(),
            },
        ]);
        assert!(
            xml.contains("<testsuite name=\"a&lt;b\" tests=\"3\" failures=\"1\" time=\"1.255\">")
        );
        assert!(xml.contains("<testcase classname=\"a&lt;b\" name=\"v6.9\" time=\"0.000\">\n      <skipped message=\"not in this shard\"/>"));
        assert!(xml.contains("<failure message=\"violation &amp; more\">"));
        assert!(xml.contains("<testcase classname=\"a&lt;b\" name=\"v6.2\" time=\"1.250\">"));
        assert!(xml.contains("<testcase classname=\"a&lt;b\" name=\"v6.3\" time=\"0.005\"/>"));
    }
}
