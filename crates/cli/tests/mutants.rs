//! Structure-aware mutation tests: thousands of mutated scenario files,
//! tokens and trace files through the whole pipeline, failing on any
//! panic, abort, hang past its bound or resident set over 1 GiB.
//!
//! Scenario and token mutants run in-process through the fuzz targets'
//! bodies (`nssim_cli::fuzz`), where a panic is caught and the mutant named;
//! a sample of them, and every trace-file mutant, runs through the real
//! binary, where an abort or a signal would show.
//!
//! The generator is seeded: the same mutants on every run.

use crate::support;

use nssim_cli::fuzz::{self, Budget};
use sim::limits::{self, Limit};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{nssim, root, stderr};

/// xorshift64*: small, seeded, the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const ONE_GIB: usize = 1 << 30;
/// A mutant's bound on wall time: the runs are limited to 2 s each.
const HANG_GUARD: Duration = Duration::from_secs(20);

/// Every range the format and the command line check.
fn ranges() -> Vec<Limit> {
    let mut v: Vec<Limit> = limits::EXPLORE.to_vec();
    v.extend([limits::INSTANCES, limits::TASKS, limits::JOBS]);
    v
}

fn base_scenarios() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("sim-scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

/// Table headers' line numbers.
fn tables(lines: &[Vec<u8>]) -> Vec<usize> {
    (0..lines.len())
        .filter(|&i| lines[i].first() == Some(&b'['))
        .collect()
}

/// The span of the table starting at header `i`.
fn table_span(lines: &[Vec<u8>], heads: &[usize], k: usize) -> std::ops::Range<usize> {
    let start = heads[k];
    let end = heads.get(k + 1).copied().unwrap_or(lines.len());
    start..end
}

/// Replace the value after the first `=` of a line.
fn set_value(line: &[u8], value: &str) -> Vec<u8> {
    match line.iter().position(|b| *b == b'=') {
        Some(i) => {
            let mut out = line[..=i].to_vec();
            out.push(b' ');
            out.extend_from_slice(value.as_bytes());
            out
        }
        None => line.to_vec(),
    }
}

fn boundary(rng: &mut Rng) -> (String, String) {
    let l = *rng.pick(&ranges());
    let (min, max) = (i128::from(l.min), i128::from(l.max));
    let v = *rng.pick(&[
        min - 1,
        min,
        max,
        max + 1,
        -1,
        0,
        i128::from(i64::MAX),
        1 << 40,
    ]);
    (l.name.to_string(), v.to_string())
}

/// One mutant of `text`, made of one to three mutations.
fn mutate(text: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = text.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    for _ in 0..1 + rng.below(3) {
        let n = lines.len().max(1);
        let i = rng.below(n).min(lines.len().saturating_sub(1));
        let heads = tables(&lines);
        match rng.below(16) {
            0 if !lines.is_empty() => {
                lines.remove(i);
            }
            1 if !lines.is_empty() => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            2 if !lines.is_empty() => {
                let j = rng.below(lines.len());
                lines.swap(i, j);
            }
            3 if !heads.is_empty() => {
                let span = table_span(&lines, &heads, rng.below(heads.len()));
                lines.drain(span);
            }
            4 if !heads.is_empty() => {
                let span = table_span(&lines, &heads, rng.below(heads.len()));
                let copy: Vec<_> = lines[span].to_vec();
                lines.extend(copy);
            }
            5 if heads.len() >= 2 => {
                let a = rng.below(heads.len() - 1);
                let sa = table_span(&lines, &heads, a);
                let sb = table_span(&lines, &heads, a + 1);
                let mut swapped: Vec<Vec<u8>> = lines[sb.clone()].to_vec();
                swapped.extend(lines[sa.clone()].iter().cloned());
                lines.splice(sa.start..sb.end, swapped);
            }
            6 | 7 if !lines.is_empty() => {
                // A number at or past a range's end, for the range's key
                // or in place of any value.
                let (key, v) = boundary(rng);
                if rng.below(2) == 0 {
                    lines.insert(i, format!("{key} = {v}").into_bytes());
                } else {
                    lines[i] = set_value(&lines[i], &v);
                }
            }
            8 if !lines.is_empty() => {
                let name = *rng.pick(&[
                    "\"v9.9\"",
                    "\"nosuch\"",
                    "\"+no-such-patch\"",
                    "\"unshare(CLONE_NEWFOO)\"",
                    "\"CAP_NOPE\"",
                ]);
                lines[i] = set_value(&lines[i], name);
            }
            9 if !lines.is_empty() => {
                let wrong = *rng.pick(&[
                    "true",
                    "[1, 2]",
                    "{ a = 1 }",
                    "\"text\"",
                    "1.5",
                    "1979-05-27",
                    "nan",
                    "-0",
                ]);
                lines[i] = set_value(&lines[i], wrong);
            }
            10 => {
                let depth = *rng.pick(&[64, 1000, 20_000]);
                let nested = format!("deep = {}1{}", "[".repeat(depth), "]".repeat(depth));
                lines.insert(i.min(lines.len()), nested.into_bytes());
            }
            11 => {
                let depth = *rng.pick(&[64, 1000, 20_000]);
                let nested = format!("deep = {}1{}", "{ a = ".repeat(depth), " }".repeat(depth));
                lines.insert(i.min(lines.len()), nested.into_bytes());
            }
            12 if !lines.is_empty() => {
                let long = format!("\"{}\"", "x".repeat(*rng.pick(&[300, 70_000, 1 << 20])));
                lines[i] = set_value(&lines[i], &long);
            }
            13 if !lines.is_empty() => {
                const BAD: [&[u8]; 4] = [&[0xff], &[0xc3, 0x28], &[0xe2, 0x82], &[0]];
                let bad: &[u8] = BAD[rng.below(BAD.len())];
                let at = rng.below(lines[i].len() + 1);
                lines[i].splice(at..at, bad.iter().copied());
            }
            14 if !lines.is_empty() => {
                let cut = rng.below(lines[i].len() + 1);
                lines[i].truncate(cut);
            }
            _ => {
                let extra = *rng.pick(&[
                    "[[task]]",
                    "[explore]",
                    "[[kernel]]",
                    "unknown_key = 1",
                    "[[userns]]",
                    "= 1",
                    "\"",
                    "[x.y.z]",
                ]);
                lines.insert(i.min(lines.len()), extra.as_bytes().to_vec());
            }
        }
    }
    lines.join(&b'\n')
}

/// Run `work` over `count` items on two threads; each item's result is
/// an error message or nothing. A panic in `work` is caught and named.
fn in_parallel(count: usize, work: &(dyn Fn(usize) -> Result<(), String> + Sync)) -> Vec<String> {
    let next = AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return;
                }
                let start = Instant::now();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(i)));
                let mut msg = match r {
                    Ok(Ok(())) => None,
                    Ok(Err(m)) => Some(m),
                    Err(p) => Some(format!(
                        "panic: {}",
                        p.downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default()
                    )),
                };
                if msg.is_none() && start.elapsed() > HANG_GUARD {
                    msg = Some(format!("took {:?}", start.elapsed()));
                }
                if msg.is_none() && sim::mem::resident_bytes().is_some_and(|r| r > ONE_GIB) {
                    msg = Some("the resident set passed 1 GiB".into());
                }
                if let Some(m) = msg {
                    failures.lock().unwrap().push(format!("mutant {i}: {m}"));
                }
            });
        }
    });
    failures.into_inner().unwrap()
}

fn scenario_mutant(i: usize, bases: &[(String, Vec<u8>)]) -> (String, Vec<u8>) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (i as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9));
    let (name, text) = rng.pick(bases);
    (name.clone(), mutate(text, &mut rng))
}

#[test]
fn ten_thousand_scenario_mutants_parse_check_and_run_in_bounds() {
    let bases = base_scenarios();
    let (refused, ran) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let failures = in_parallel(10_000, &|i| {
        let (_, bytes) = scenario_mutant(i, &bases);
        let Some(sc) = fuzz::scenario_parse(&bytes) else {
            refused.fetch_add(1, Ordering::Relaxed);
            // Refused: with a message that names the file and stays
            // printable (control characters escaped).
            return match scenario::parse_bytes("m.toml", &bytes) {
                Err(e) => {
                    let text = e.to_string();
                    if !text.contains("m.toml") || text.chars().any(|c| c.is_control() && c != '\n')
                    {
                        Err(format!("{text:?}"))
                    } else {
                        Ok(())
                    }
                }
                Ok(_) => Err("parsed on the second try".into()),
            };
        };
        // Thousands of tasks in an execution are run for one mutant in
        // twenty: each costs a second, and the rest cover the same code.
        let tasks: u64 = sc.setup.tasks.iter().map(|t| u64::from(t.instances)).sum();
        if tasks > 500 && i % 20 != 0 {
            return Ok(());
        }
        fuzz::run_scenario(
            &sc,
            Budget {
                shrink: i % 25 == 0,
                ..Budget::default()
            },
        );
        ran.fetch_add(1, Ordering::Relaxed);
        Ok(())
    });
    // The mutants reach both ends of the pipeline.
    let (refused, ran) = (refused.into_inner(), ran.into_inner());
    eprintln!("{refused} refused, {ran} run");
    assert!(
        refused >= 3000 && ran >= 1000,
        "{refused} refused, {ran} run"
    );
    assert!(
        failures.is_empty(),
        "{} failures: {:#?}",
        failures.len(),
        &failures[..failures.len().min(20)]
    );
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nssim-mutants-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The binary ends a command with 0, 1 or 2: never a signal or a panic.
fn ends_cleanly(args: &[&str]) -> Result<(), String> {
    let start = Instant::now();
    let o = nssim(args);
    let err = stderr(&o);
    if !matches!(o.status.code(), Some(0..=2)) {
        return Err(format!(
            "{args:?}: {:?}: {}",
            o.status,
            &err[..err.len().min(2000)]
        ));
    }
    if err.contains("panicked") || err.contains("RUST_BACKTRACE") {
        return Err(format!("{args:?}: {err}"));
    }
    if start.elapsed() > HANG_GUARD {
        return Err(format!("{args:?} took {:?}", start.elapsed()));
    }
    Ok(())
}

#[test]
fn a_sample_of_scenario_mutants_through_the_binary() {
    let bases = base_scenarios();
    let dir = temp_dir("bin");
    let failures = in_parallel(300, &|k| {
        // Every 33rd mutant of the in-process test.
        let i = k * 33;
        let (name, bytes) = scenario_mutant(i, &bases);
        let file = dir.join(format!("{i}-{name}"));
        std::fs::write(&file, &bytes).unwrap();
        ends_cleanly(&[
            "run",
            file.to_str().unwrap(),
            "--iterations",
            "2",
            "--max-steps",
            "5000",
            "--timeout",
            "2s",
            "--jobs",
            "2",
        ])
    });
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "{failures:#?}");
}

const SCENARIO: &str = "sim-scenarios/ipc-alloc-vs-free.toml";

/// A token of the library's race, from `nssim run`, and its trace file.
fn token_and_trace(dir: &Path) -> (String, Vec<u8>) {
    let trace = dir.join("trace.json");
    let o = nssim(&[
        "run",
        SCENARIO,
        "--kernel",
        "v6.2",
        "--format",
        "json",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let line: serde_json::Value =
        serde_json::from_str(support::stdout(&o).lines().next().unwrap()).unwrap();
    (
        line["token"].as_str().unwrap().to_string(),
        std::fs::read(&trace).unwrap(),
    )
}

const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A mutated token: its text edited, or its fields, past their ranges.
fn token_mutant(good: &str, i: usize) -> String {
    let mut rng = Rng(0x51_7cc1_b727_220a ^ (i as u64).wrapping_mul(0x94d0_49bb_1331_11eb));
    let t = sim::Token::decode(good).unwrap();
    match rng.below(4) {
        0 | 1 => {
            let mut b = good.as_bytes().to_vec();
            for _ in 0..1 + rng.below(3) {
                // Nothing after the prefix is left to edit.
                if b.len() <= 5 {
                    break;
                }
                let at = 5 + rng.below(b.len() - 5);
                match rng.below(4) {
                    0 => b[at] = *rng.pick(B64),
                    1 => {
                        b.remove(at);
                    }
                    2 => b.insert(at, *rng.pick(B64)),
                    _ => b.truncate(at),
                }
            }
            String::from_utf8_lossy(&b).into_owned()
        }
        _ => {
            // Valid checksums, fields at and past their ends.
            let mut t = t;
            let (_, v) = boundary(&mut rng);
            let v: i128 = v.parse().unwrap();
            let v = u64::try_from(v.max(0)).unwrap_or(u64::MAX);
            match rng.below(6) {
                0 => t.cpus = v.min(u64::from(u32::MAX)) as u32,
                1 => t.max_steps = v,
                2 => t.max_virtual_ns = v,
                3 => {
                    t.content = *rng.pick(&[
                        None,
                        Some(sim::ContentHash::Digest(0)),
                        Some(sim::ContentHash::Fnv32(u32::MAX)),
                    ])
                }
                4 => t.context = vec![rng.pick(&["v9.9", "", "v6.2", "+nope"]).to_string()],
                _ => {
                    if let sim::Schedule::Segments(s) = &mut t.schedule {
                        if let Some(seg) = s.first_mut() {
                            seg.steps = v;
                            seg.task = rng.pick(&["looper", "nobody", "kworker"]).to_string();
                        }
                    }
                }
            }
            t.encode()
        }
    }
}

#[test]
fn a_thousand_token_mutants_decode_and_replay_in_bounds() {
    let dir = temp_dir("tokens");
    let (good, _) = token_and_trace(&dir);
    let sc = scenario::load(&root().join(SCENARIO)).unwrap();
    let failures = in_parallel(1000, &|i| {
        let text = token_mutant(&good, i);
        fuzz::token_replay(&sc, text.as_bytes(), Budget::default());
        // One in ten through the binary too.
        if i % 10 == 0 {
            ends_cleanly(&["replay", SCENARIO, &text])?;
        }
        Ok(())
    });
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_thousand_trace_file_mutants_replay_or_are_refused() {
    let dir = temp_dir("traces");
    let (_, trace) = token_and_trace(&dir);
    let failures = in_parallel(1000, &|i| {
        let mut rng = Rng(0xd1b5_4a32_d192_ed03 ^ (i as u64).wrapping_mul(0x2545_f491));
        let mutant = if rng.below(3) == 0 {
            // A field of the document set to a value of another type.
            let mut doc: serde_json::Value = serde_json::from_slice(&trace).unwrap();
            let key = *rng.pick(&[
                "format",
                "format_version",
                "token",
                "trace_hash",
                "outcome",
                "steps",
                "events",
                "scenario",
                "kernel",
                "tasks",
            ]);
            let choices = [
                serde_json::json!("1"),
                serde_json::json!(1.0),
                serde_json::json!(-1),
                serde_json::json!(null),
                serde_json::json!([{"kind": 3}]),
                serde_json::json!({"a": 1}),
                serde_json::json!(u64::MAX),
            ];
            doc[key] = rng.pick(&choices).clone();
            doc.to_string().into_bytes()
        } else {
            mutate(&trace, &mut rng)
        };
        let file = dir.join(format!("{i}.json"));
        std::fs::write(&file, &mutant).unwrap();
        ends_cleanly(&["replay", SCENARIO, file.to_str().unwrap()])
    });
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "{failures:#?}");
}
