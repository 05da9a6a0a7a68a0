//! The scenario library built into the binary (see `build.rs`).
//!
//! `nssim scenarios` lists it and `nssim run --library` runs it. A path on
//! the command line that is not on the disk but names the library's
//! (`sim-scenarios/`, `sim-scenarios/NAME.toml`, a directory of it, or a
//! scenario's name alone) is read from it: the README's commands and the
//! replay commands nssim prints work from any directory, and the records
//! are those of a run in the checkout, byte for byte.

use crate::error::CliError;
use crate::options::Format;
use scenario::Scenario;
use serde_json::json;
use sim::echo::echo;
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/library.rs"));

/// Where the library's paths are, in the checkout and in records.
pub const ROOT: &str = "sim-scenarios";

/// The library proper, in name order: the files directly in
/// `sim-scenarios/`, then the regressions (`sim-scenarios/regressions/`,
/// each a defect once found and fixed). The conformance cases below it
/// are `nssim conformance`'s.
pub fn library() -> impl Iterator<Item = (&'static str, &'static str)> {
    FILES.iter().copied().filter(|(rel, _)| in_library(rel))
}

/// A file of `dir` (a path below `sim-scenarios/`, `""` for the library)
/// as `nssim run DIR` reads it on disk: directly in it, or in its
/// regressions ([`scenario::discover`]).
fn in_dir(dir: &str, rel: &str) -> bool {
    let Some(rest) = rel.strip_prefix(dir) else {
        return false;
    };
    match rest.split_once('/') {
        None => true,
        Some((sub, file)) => sub == scenario::REGRESSIONS && !file.contains('/'),
    }
}

fn in_library(rel: &str) -> bool {
    in_dir("", rel)
}

/// The embedded files anywhere under directory `dir` of the library, in
/// path order, as (path below `dir`, text).
pub fn under(dir: &str) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
    FILES
        .iter()
        .filter_map(move |(rel, text)| Some((rel.strip_prefix(dir)?.strip_prefix('/')?, *text)))
}

/// The embedded files `path` names, as (path in records, text): a
/// directory's files directly in it, or one file.
pub fn lookup(path: &Path) -> Option<Vec<(String, &'static str)>> {
    let s = path.to_str()?;
    let s = s.strip_prefix("./").unwrap_or(s).trim_end_matches('/');
    let rel = match s.strip_prefix(ROOT) {
        Some("") => "",
        Some(rest) => rest.strip_prefix('/')?,
        None => s,
    };
    let record = |(f, text): &(&str, &'static str)| (format!("{ROOT}/{f}"), *text);
    let dir = if rel.is_empty() {
        String::new()
    } else {
        format!("{rel}/")
    };
    let in_dir: Vec<_> = FILES
        .iter()
        .filter(|(f, _)| in_dir(&dir, f))
        .map(record)
        .collect();
    if !in_dir.is_empty() {
        return Some(in_dir);
    }
    let file = if rel.ends_with(".toml") {
        rel.to_string()
    } else {
        format!("{rel}.toml")
    };
    FILES
        .iter()
        .find(|(f, _)| *f == file)
        .map(|entry| vec![record(entry)])
}

/// One embedded file, parsed; its path is the checkout's.
pub fn parse(path: &str, text: &str) -> Result<Scenario, CliError> {
    let mut sc = scenario::parse(path, text)?;
    sc.path = PathBuf::from(path);
    Ok(sc)
}

/// The scenarios of the command line's paths: files, directories of
/// `*.toml` files, and where a path is not on the disk, the library's
/// files it names. A file that does not parse does not stop the others:
/// its error is among the second list, for the caller to report.
/// The scenario files that could not be read, each with its error.
pub type Unparsed = Vec<(PathBuf, CliError)>;

pub fn load(paths: &[PathBuf]) -> Result<(Vec<Scenario>, Unparsed), CliError> {
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for path in paths {
        if std::fs::symlink_metadata(path).is_err() {
            if let Some(files) = lookup(path) {
                for (p, text) in files {
                    out.push(parse(&p, text)?);
                }
                continue;
            }
        }
        let files = scenario::discover(std::slice::from_ref(path)).map_err(|e| {
            let mut e = CliError::from(e);
            if std::fs::symlink_metadata(path).is_err() {
                e.0.push_str(&not_built_in(path));
            }
            e
        })?;
        for f in files {
            match scenario::load(&f) {
                Ok(sc) => out.push(sc),
                Err(e) => bad.push((f, CliError::from(e))),
            }
        }
    }
    Ok((out, bad))
}

/// The help of an error about `path`, on neither the disk nor in the
/// library: the library's scenario it was likely meant to name.
fn not_built_in(path: &Path) -> String {
    let given = path.to_string_lossy();
    let given = given.strip_prefix("./").unwrap_or(&given);
    let given = given
        .strip_prefix(ROOT)
        .map_or(given, |g| g.trim_start_matches('/'));
    let names = library().map(|(rel, _)| listed_name(rel));
    match scenario::did_you_mean(given.trim_end_matches(".toml"), names) {
        Some(hint) => format!(
            "\n  = help: nor is it a built-in scenario: {hint} (`nssim scenarios` lists them)"
        ),
        None => "\n  = help: nor is it a built-in scenario; `nssim scenarios` lists them".into(),
    }
}

/// One scenario file (`nssim replay`'s): from the disk, or the library's.
pub fn load_one(path: &Path) -> Result<Scenario, CliError> {
    if std::fs::symlink_metadata(path).is_err() {
        if let Some([(p, text)]) = lookup(path).as_deref() {
            return parse(p, text);
        }
    }
    scenario::load(path).map_err(|e| {
        let mut e = CliError::from(e);
        if std::fs::symlink_metadata(path).is_err() {
            e.0.push_str(&not_built_in(path));
        }
        e
    })
}

/// The library as `nssim run --library` runs it.
pub fn load_library() -> Result<Vec<Scenario>, CliError> {
    library()
        .map(|(rel, text)| parse(&format!("{ROOT}/{rel}"), text))
        .collect()
}

/// A file's name as `nssim scenarios` lists it and `nssim run` takes it:
/// its path under `sim-scenarios/` without `.toml`.
fn listed_name(rel: &str) -> &str {
    rel.strip_suffix(".toml").unwrap_or(rel)
}

/// `nssim scenarios`: a line per scenario of the library (and, with
/// `all`, per conformance case), its name and summary.
pub fn list(all: bool, format: Format) -> Result<bool, CliError> {
    let files: Vec<_> = FILES
        .iter()
        .filter(|(rel, _)| all || in_library(rel))
        .collect();
    let mut rows = Vec::new();
    for (rel, text) in &files {
        let path = format!("{ROOT}/{rel}");
        rows.push((listed_name(rel), parse(&path, text)?.summary, path));
    }
    let width = rows.iter().map(|(n, ..)| n.len()).max().unwrap_or(0);
    for (name, summary, path) in &rows {
        match format {
            Format::Text => println!("{name:width$}  {}", first_line(summary)),
            Format::Json => println!(
                "{}",
                json!({ "name": name, "path": path, "summary": summary })
            ),
        }
    }
    if format == Format::Text {
        let cases = FILES.len() - library().count();
        let more = if all {
            String::new()
        } else {
            format!(" ({cases} conformance cases with --all)")
        };
        println!(
            "{} scenarios{more}. `nssim scenarios show NAME` prints one; `nssim run NAME` runs one and `nssim run --library` the library.",
            rows.len()
        );
    }
    Ok(true)
}

fn first_line(summary: &str) -> &str {
    summary.lines().next().unwrap_or("").trim()
}

/// `nssim scenarios show NAME`: the file as it is.
pub fn show(name: &Path) -> Result<bool, CliError> {
    match lookup(name).as_deref() {
        Some([(_, text)]) => {
            print!("{text}");
            Ok(true)
        }
        Some(many) => Err(CliError(format!(
            "error: `{}` is a directory of {} built-in scenarios; `nssim scenarios --all` lists them",
            echo(&name.to_string_lossy()),
            many.len()
        ))),
        None => Err(CliError(format!(
            "error: no built-in scenario is named `{}`; `nssim scenarios` lists them",
            echo(&name.to_string_lossy())
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checkout's `sim-scenarios/`, every `*.toml` under it.
    fn on_disk(dir: &Path, rel: &str, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).expect("the checkout has sim-scenarios/") {
            let path = entry.expect("readable").path();
            let name = path
                .file_name()
                .expect("named")
                .to_string_lossy()
                .into_owned();
            let rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if path.is_dir() {
                on_disk(&path, &rel, out);
            } else if rel.ends_with(".toml") {
                out.push((rel, std::fs::read(&path).expect("readable")));
            }
        }
    }

    #[test]
    fn the_built_in_library_is_the_checkouts() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sim-scenarios");
        let mut disk = Vec::new();
        on_disk(&root, "", &mut disk);
        disk.sort();
        let built_in: Vec<(String, Vec<u8>)> = FILES
            .iter()
            .map(|(rel, text)| (rel.to_string(), text.as_bytes().to_vec()))
            .collect();
        let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&built_in), names(&disk));
        assert_eq!(built_in, disk, "a file differs from its built-in copy");
        assert!(library().count() >= 30 && FILES.len() > library().count());
    }

    #[test]
    fn a_path_names_the_library_files_it_would_on_disk() {
        let one = |p: &str| {
            lookup(Path::new(p)).map(|v| v.into_iter().map(|(p, _)| p).collect::<Vec<_>>())
        };
        let file = vec!["sim-scenarios/ipc-alloc-vs-free.toml".to_string()];
        for p in [
            "ipc-alloc-vs-free",
            "ipc-alloc-vs-free.toml",
            "sim-scenarios/ipc-alloc-vs-free.toml",
            "./sim-scenarios/ipc-alloc-vs-free.toml",
        ] {
            assert_eq!(one(p), Some(file.clone()), "{p}");
        }
        let top = one("sim-scenarios/").expect("the library");
        assert_eq!(top.len(), library().count());
        assert!(top.windows(2).all(|w| w[0] < w[1]), "in name order");
        let uevent = one("sim-scenarios/conformance/uevent").expect("a directory");
        assert!(uevent
            .iter()
            .all(|p| p.starts_with("sim-scenarios/conformance/uevent/")));
        for p in [
            "nope",
            "sim-scenariosx",
            "sim-scenarios/nope.toml",
            "/sim-scenarios",
        ] {
            assert_eq!(one(p), None, "{p}");
        }
    }
}
