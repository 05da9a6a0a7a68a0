//! `--report FILE.html` for the v6.2 ipc race, opened in headless Chromium:
//! the scripts run, the swimlanes are in the DOM on both axes, the page
//! opens at the first step, every lane shows a step or why it has none,
//! the counter lines lie side by side with the charged total drawn against
//! the limit, and the screenshot shows all of it.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nssim-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// Write the report of the v6.2 race to `file`.
fn write_report(file: &Path) {
    write_report_of("sim-scenarios/ipc-alloc-vs-free.toml", "v6.2", file);
}

/// Write the report of `scenario`'s run on `kernel` to `file`.
fn write_report_of(scenario: &str, kernel: &str, file: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(["run", scenario, "--kernel", kernel, "--report"])
        .arg(file)
        .current_dir(root())
        .output()
        .expect("nssim runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Run headless Chromium on `url` with `mode` (`--dump-dom` or
/// `--screenshot=FILE`), a fresh profile in `dir`, within a minute.
fn chromium(dir: &Path, profile: &str, mode: &str, url: &str) -> Output {
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1400,1000",
            mode,
        ])
        .arg(format!("--user-data-dir={}", dir.join(profile).display()))
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    // Read the DOM as it comes: a page larger than the pipe's buffer
    // would otherwise stop chromium in its write.
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut dom = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut dom);
        dom
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("chromium runs").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within a minute");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut output = child.wait_with_output().expect("chromium's output");
    output.stdout = reader.join().expect("the reader");
    output
}

/// Whether Chromium is here to open the reports; where not, `test` says
/// so (a failure with NSSIM_REQUIRE_CHROMIUM set).
fn chromium_here(test: &str) -> bool {
    let here = Path::new(CHROMIUM).exists();
    if !here {
        support::skip(
            test,
            "chromium is not installed (apt-get install chromium)",
            Some("NSSIM_REQUIRE_CHROMIUM"),
        );
    }
    here
}

/// The opening tag of the page's body, where its script writes what it
/// measured of the layout (`data-overlaps`, `data-hidden-lines`...).
fn body_of(layout: &str) -> &str {
    layout
        .split("<body")
        .nth(1)
        .and_then(|b| b.split('>').next())
        .unwrap_or_else(|| panic!("a body element:\n{layout}"))
}

fn dom(dir: &Path, profile: &str, url: &str) -> String {
    let o = chromium(dir, profile, "--dump-dom", url);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// (distinct colours, share of pixels that are not the page's white, pixels
/// of the syscall boxes' blue).
fn pixel_variety(png_file: &Path) -> (usize, f64, usize) {
    let decoder = png::Decoder::new(std::fs::File::open(png_file).expect("the screenshot"));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    assert_eq!((info.width, info.height), (1400, 1000));
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    let distinct: std::collections::HashSet<&[u8]> = pixels.iter().copied().collect();
    let white = pixels.iter().filter(|p| p[..3] == [255, 255, 255]).count();
    let blue = pixels
        .iter()
        .filter(|p| p[..3] == [0x4c, 0x78, 0xa8])
        .count();
    (
        distinct.len(),
        1.0 - white as f64 / pixels.len() as f64,
        blue,
    )
}

/// Pixels of colour `rgb` in the screenshot.
fn pixels_of(png_file: &Path, rgb: [u8; 3]) -> usize {
    let decoder = png::Decoder::new(std::fs::File::open(png_file).expect("the screenshot"));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    buf[..info.buffer_size()]
        .chunks(channels)
        .filter(|p| p[..3] == rgb)
        .count()
}

#[test]
fn the_report_of_the_v6_2_race_renders_in_chromium() {
    let dir = temp_dir("html");
    let file = dir.join("race.html");
    write_report(&file);
    let page = std::fs::read_to_string(&file).expect("the report");
    assert!(
        page.contains("ipc-alloc-vs-free") && page.contains("Violation of ipc.no_false_enospc")
    );
    assert!(page.contains(
        "<span class=\"word\">sim-scenarios/ipc-alloc-vs-free.toml</span> <span class=\"word\">nss1_"
    ));
    // Objects named for what they are; the failing call in red with its
    // errno.
    assert!(page.contains("ucounts(init, uid 0): ipc_namespaces"));
    assert!(page.contains("init: max_ipc_namespaces"));
    assert!(failing_call(&page).contains("unshare ENOSPC"), "{page}");
    // Syscall boxes are the scenario's ops; the failing one is red.
    assert!(page.contains(
        "<g class=\"span syscall failed\" data-info=\"looper: in unshare(CLONE_NEWIPC) → ENOSPC"
    ));
    if !chromium_here("the_report_of_the_v6_2_race_renders_in_chromium") {
        return;
    }
    let url = format!("file://{}", file.display());
    let step = dom(&dir, "profile-step", &url);
    assert!(step.contains("data-rendered=\"step\""), "the script ran");
    assert!(
        step.matches("<rect class=\"lane").count() >= 2,
        "a lane per task"
    );
    assert!(step.contains("<g class=\"span syscall"), "syscall boxes");
    assert!(step.contains("<g class=\"span lock"), "lock boxes");
    assert!(step.contains(">looper</text>") && step.contains(">kworker</text>"));
    let time = dom(&dir, "profile-time", &format!("{url}#axis=time"));
    assert!(
        time.contains("data-rendered=\"time\""),
        "the time axis was drawn"
    );
    assert!(time.contains("class=\"axis step\" style=\"display: none;\""));

    // The page measures its own layout at 1400x1000: no label over a box
    // or another label, no word of the facts (a token, a path) broken
    // over two lines; and its legend names only what the run drew.
    let layout = dom(&dir, "profile-layout", &format!("{url}#layout"));
    let body = body_of(&layout);
    assert!(
        body.contains("data-overlaps=\"0\""),
        "labels overlap: {body}"
    );
    assert!(
        body.contains("data-broken-words=\"0\""),
        "a word is broken: {body}"
    );
    // It opens at the first step (the whole run fits), every lane shows a
    // step or says why it has none, and no counter line lies on another.
    assert!(
        body.contains("data-scrolled=\"0\""),
        "opens scrolled: {body}"
    );
    assert!(
        body.contains("data-blank-lanes=\"0\""),
        "a blank lane: {body}"
    );
    assert!(
        body.contains("data-hidden-lines=\"0\""),
        "a counter line hides another: {body}"
    );
    assert!(
        layout.contains("<text class=\"never-ran\"") && layout.contains(">never ran</text>"),
        "the kworker's lane says it never ran"
    );
    // The charged total (alive + pending free) is drawn against the
    // limit, and reaches it.
    assert!(layout.contains("<polyline class=\"series sum\""));
    for end in [
        "max_ipc_namespaces (limit, dashed): 3 at the end",
        "ipc namespaces charged (alive + pending free): 3 at the end",
    ] {
        assert!(layout.contains(end), "{end}");
    }
    // Only the patches that change code the scenario runs are listed; the
    // others are behind a summary.
    let patches = layout
        .split("<th>patches on</th><td>")
        .nth(1)
        .and_then(|p| p.split(" <details").next())
        .expect("the patches row");
    assert_eq!(
        patches,
        "ipc-async-free, ucounts-atomic-count, ucounts-hold-userns, ucounts-put-dec-and-lock"
    );
    let legend = layout
        .split("<span class=\"legend\">")
        .nth(1)
        .and_then(|l| l.split("</span>\n").next())
        .expect("the legend");
    for drawn in ["syscall", "lock held", "error", "the breaking step"] {
        assert!(
            legend.contains(drawn),
            "{drawn} is drawn but not in the legend: {legend}"
        );
    }
    // v6.2's worker never runs in this execution: no grace period, no
    // work item, no RCU reader on the page, so none in the legend.
    for absent in [
        "grace period",
        "work item running",
        "rcu read-side section",
        "work queued",
    ] {
        assert!(
            !legend.contains(absent),
            "{absent} is in the legend but not drawn: {legend}"
        );
    }

    let shot = dir.join("race.png");
    chromium(
        &dir,
        "profile-shot",
        &format!("--screenshot={}", shot.display()),
        &url,
    );
    let (colours, inked, blue) = pixel_variety(&shot);
    for (line, rgb) in [
        ("alive", [0x1f, 0x77, 0xb4]),
        ("pending free", [0x8c, 0x56, 0x4b]),
        ("charged", [0x6a, 0x3d, 0x9a]),
        ("limit", [0xd6, 0x27, 0x28]),
    ] {
        let seen = pixels_of(&shot, rgb);
        assert!(seen > 100, "{seen} pixels of the {line} line in view");
    }
    assert!(colours > 100, "{colours} colours: a blank page?");
    assert!(
        inked > 0.05,
        "only {:.1}% of the page is drawn",
        inked * 100.0
    );
    assert!(blue > 200, "{blue} pixels of syscall boxes in view");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The text of the first error mark's label: a failing call, drawn red.
fn failing_call(page: &str) -> String {
    page.split("<text class=\"mark-label err\"")
        .nth(1)
        .and_then(|t| t.split('>').nth(1))
        .and_then(|t| t.split('<').next())
        .unwrap_or_default()
        .to_string()
}

/// The user-namespace race (a credential put whose RCU callback is not yet
/// queued, `max_user_namespaces = 1`) gets the ipc race's treatment: the
/// counters of user namespaces alive, pending free and charged against
/// the limit, objects named for what they are, the failing call red with
/// its errno; in Chromium the layout holds and the screenshot shows the
/// lines.
#[test]
fn the_report_of_a_user_namespace_race_shows_counters_names_and_the_failing_call() {
    let dir = temp_dir("html-userns");
    let file = dir.join("userns.html");
    write_report_of(
        "sim-scenarios/userns-create-drop-fix-window.toml",
        "v6.16+fix-pct",
        &file,
    );
    let page = std::fs::read_to_string(&file).expect("the report");
    assert!(page.contains("Violation of userns.no_false_enospc"));
    // One level's limit is set (the container's): its counters, under
    // their plain names; what the ucount holds reaches the limit while
    // no user namespace is alive.
    for end in [
        "max_user_namespaces (limit, dashed): 1 at the end",
        "user namespaces charged (the ucount): 1 at the end",
        "user namespaces alive: 0 at the end",
        "user namespaces pending free: 1 at the end",
    ] {
        assert!(page.contains(end), "{end}");
    }
    assert!(page.contains("ucounts(container, uid 1000): user_namespaces"));
    assert!(page.contains("container: max_user_namespaces"));
    assert_eq!(failing_call(&page), "create_user_ns ENOSPC");
    assert!(page.contains(">unshare_and_exit(CLONE_NEWUSER)</text></g>"));
    if !chromium_here(
        "the_report_of_a_user_namespace_race_shows_counters_names_and_the_failing_call",
    ) {
        return;
    }
    let url = format!("file://{}", file.display());
    let layout = dom(&dir, "profile-layout", &format!("{url}#layout"));
    let body = body_of(&layout);
    for measured in [
        "data-overlaps=\"0\"",
        "data-blank-lanes=\"0\"",
        "data-hidden-lines=\"0\"",
    ] {
        assert!(body.contains(measured), "{measured}: {body}");
    }
    let shot = dir.join("userns.png");
    chromium(
        &dir,
        "profile-shot",
        &format!("--screenshot={}", shot.display()),
        &url,
    );
    for (line, rgb) in [
        ("first counter", [0x1f, 0x77, 0xb4]),
        ("limit and the failing call", [0xd6, 0x27, 0x28]),
    ] {
        let seen = pixels_of(&shot, rgb);
        assert!(seen > 100, "{seen} pixels of the {line} in view");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Limits at three nesting levels: each level's counters are drawn apart,
/// named by the level (`user namespaces alive · ucounts(c1, uid 1000)`,
/// `c2: max_user_namespaces`), and the labels of the failures do not lie
/// on one another (a kernel function's ENOSPC inside a call whose box
/// says ENOSPC keeps its words to its tooltip).
#[test]
fn nested_limits_are_drawn_level_by_level() {
    let dir = temp_dir("html-nested");
    let file = dir.join("nested.html");
    write_report_of("sim-scenarios/userns-limits-nested.toml", "v5.13", &file);
    let page = std::fs::read_to_string(&file).expect("the report");
    for end in [
        "user namespaces alive · ucounts(c1, uid 1000): 1 at the end",
        "user namespaces alive · ucounts(init, uid 1000): 2 at the end",
        "user namespaces charged (the ucount) · ucounts(c2, uid 1000): 0 at the end",
        "c2: max_user_namespaces (limit, dashed): 2 at the end",
        "init: max_user_namespaces (limit, dashed): 4 at the end",
    ] {
        assert!(page.contains(end), "{end}");
    }
    assert!(page.contains("clone(CLONE_NEWUSER) → ENOSPC"));
    if !chromium_here("nested_limits_are_drawn_level_by_level") {
        return;
    }
    let url = format!("file://{}", file.display());
    let layout = dom(&dir, "profile-layout", &format!("{url}#layout"));
    let body = body_of(&layout);
    for measured in ["data-overlaps=\"0\"", "data-hidden-lines=\"0\""] {
        assert!(body.contains(measured), "{measured}: {body}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
