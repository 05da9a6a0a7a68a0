//! The CI recipes of `docs/cli.md` ("In CI": GitHub Actions, GitLab CI, a
//! Kubernetes Indexed Job, a Slurm job array), run as written: their
//! commands are taken from the book, not copied here, and run by `sh` with
//! `nssim` on the PATH, each shard in a directory of its own as a CI job
//! would, with the job semantics each recipe relies on (a failed step skips
//! the steps after it unless they say `always`; artifacts kept when the
//! recipe says so; a job that needs others runs after them, or not at all).
//!
//! Each recipe runs on a healthy tree (every shard and the merge exit 0)
//! and on one where an expectation only the merge can judge is broken (a
//! scenario expects a violation that no execution reaches: every shard
//! exits 0, the merge exits 1). The tree is a checkout's `sim-scenarios/`
//! cut to a few scenarios of the library, of every strategy, so that the
//! test runs in seconds; `.ci/run` runs the library's four shards whole.

use crate::support::root;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use yaml_rust2::{Yaml, YamlLoader};

/// The scenarios of the test's tree: random, PCT, dfs and fair runs, and
/// the file the cluster recipes name.
const TREE: [&str; 4] = [
    "ipc-alloc-vs-free.toml",
    "ipc-v6.3-window.toml",
    "ipc-v6.3-window-loopers.toml",
    "uevent-enobufs.toml",
];

/// What breaks a tree for the merge only: in each recipe's scenarios, a
/// passing entry now expects a violation (a random run's in the library's
/// recipes, a dfs search's in the cluster recipes').
const BREAKS: [(&str, &str, &str); 2] = [
    (
        "ipc-alloc-vs-free.toml",
        "profile = \"v5.6\"\nexpect = \"pass\"",
        "profile = \"v5.6\"\nexpect = { outcome = \"violation\", invariant = \"ipc.no_false_enospc\" }",
    ),
    (
        "ipc-v6.3-window-loopers.toml",
        "expect = { outcome = \"pass\", exhausted = true }",
        "expect = { outcome = \"violation\", invariant = \"ipc.no_false_enospc\" }",
    ),
];

/// A directory of the test's, fresh.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nssim-recipes-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A checkout as the recipes see it: `sim-scenarios/` with the tree's
/// scenarios, broken or not.
fn checkout(name: &str, broken: bool) -> PathBuf {
    let dir = scratch(name);
    let scenarios = dir.join("sim-scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    for file in TREE {
        let mut text = std::fs::read_to_string(root().join("sim-scenarios").join(file)).unwrap();
        for (target, from, to) in BREAKS.iter().filter(|(f, ..)| broken && *f == file) {
            assert!(text.contains(from), "{target} has `{from}`");
            text = text.replacen(from, to, 1);
        }
        std::fs::write(scenarios.join(file), text).unwrap();
    }
    dir
}

/// A copy of `from` (a checkout, or a job's directory) at `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A directory for the PATH: `nssim` (the binary under test) and what the
/// recipes call besides: `sbatch`, as far as the Slurm recipe uses it (an
/// array job runs its tasks one after another, each with its index and
/// CPUs, its exit status kept in `task-N.status`; a job submitted with
/// `--wrap` after a dependency runs then, and sbatch exits with its
/// status).
fn tools(name: &str) -> PathBuf {
    let dir = scratch(&format!("{name}-bin"));
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_nssim"), dir.join("nssim")).unwrap();
    let sbatch = r#"#!/bin/sh
set -u
case "$1" in
--parsable)
    script=$2
    range=$(sed -n 's/^#SBATCH --array=//p' "$script")
    cpus=$(sed -n 's/^#SBATCH --cpus-per-task=//p' "$script")
    for i in $(seq "${range%-*}" "${range#*-}"); do
        SLURM_ARRAY_TASK_ID=$i SLURM_CPUS_PER_TASK=$cpus sh "$script"
        echo $? >"task-$i.status"
    done
    echo 1001
    ;;
--dependency=afterany:*)
    [ "$2" = --wrap ] || exit 64
    exec sh -c "$3"
    ;;
*) echo "sbatch: $* is not what the recipe does" >&2; exit 64 ;;
esac
"#;
    let path = dir.join("sbatch");
    std::fs::write(&path, sbatch).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// `script` run by `sh` in `dir` with `env` and the tools first on the
/// PATH: its exit status (-1 for a signal).
fn sh(tools: &Path, dir: &Path, script: &str, env: &[(&str, String)]) -> i32 {
    let path = format!(
        "{}:{}",
        tools.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    let status = out.status.code().unwrap_or(-1);
    eprintln!(
        "$ {script}\n  exit {status}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    status
}

/// The fenced blocks of the book's "In CI" section, in order: (language,
/// text).
fn recipes() -> Vec<(String, String)> {
    let book = std::fs::read_to_string(root().join("docs/cli.md")).unwrap();
    let start = book
        .find("### In CI")
        .expect("docs/cli.md has an In CI section");
    let section = &book[start..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut blocks = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        if let Some(lang) = line.strip_prefix("```").filter(|l| !l.is_empty()) {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            blocks.push((lang.to_string(), body.join("\n") + "\n"));
        }
    }
    blocks
}

fn yaml(text: &str) -> Yaml {
    YamlLoader::load_from_str(text)
        .expect("a recipe is YAML")
        .remove(0)
}

/// The files of `dir` whose names match `pattern` (`shard-*.json`).
fn matching(dir: &Path, pattern: &str) -> Vec<PathBuf> {
    let (prefix, suffix) = pattern.split_once('*').unwrap_or((pattern, ""));
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(prefix)
                && name.ends_with(suffix)
                && name.len() >= prefix.len() + suffix.len()
        })
        .collect();
    found.sort();
    found
}

/// What one run of a recipe did: whether each shard's job succeeded, and
/// the exit status of the merge's last command (`None`: it did not run).
#[derive(Debug)]
struct Ran {
    shards: Vec<bool>,
    merge: Option<i32>,
}

/// A GitHub Actions workflow: its jobs in order; a matrix job once per
/// value; steps that check out, run, upload and download.
fn github_actions(workflow: &Yaml, tree: &Path, tools: &Path, work: &Path) -> Ran {
    let artifacts = work.join("artifacts");
    let mut status: BTreeMap<String, bool> = BTreeMap::new();
    let mut ran = Ran {
        shards: Vec::new(),
        merge: None,
    };
    for (name, job) in workflow["jobs"].as_hash().expect("jobs") {
        let name = name.as_str().unwrap().to_string();
        let needs_met = job["needs"]
            .as_str()
            .is_none_or(|needed| status.get(needed).copied().unwrap_or(false));
        if !needs_met && job["if"].as_str() != Some("always()") {
            continue;
        }
        let matrix: Vec<(String, String)> = match &job["strategy"]["matrix"] {
            Yaml::Hash(_) => matrix_values(&job["strategy"]["matrix"]),
            _ => vec![(String::new(), String::new())],
        };
        let mut all_ok = true;
        for (i, (key, value)) in matrix.iter().enumerate() {
            let dir = work.join(format!("{name}-{i}"));
            let last = github_steps(&job["steps"], (key, value), tree, tools, &dir, &artifacts);
            all_ok &= last == 0;
            if job["strategy"]["matrix"].as_hash().is_some() {
                ran.shards.push(last == 0);
            } else {
                ran.merge = Some(last);
            }
        }
        status.insert(name, all_ok);
    }
    ran
}

/// A matrix of one variable (`shard: [1, 2]`, `SHARD: ["1", "2"]`): a
/// (variable, value) pair per value.
fn matrix_values(matrix: &Yaml) -> Vec<(String, String)> {
    let (key, values) = matrix
        .as_hash()
        .unwrap()
        .iter()
        .next()
        .expect("a matrix variable");
    let key = key.as_str().unwrap().to_string();
    values
        .as_vec()
        .unwrap()
        .iter()
        .map(|v| (key.clone(), scalar(v)))
        .collect()
}

fn scalar(v: &Yaml) -> String {
    match v {
        Yaml::Integer(i) => i.to_string(),
        Yaml::String(s) => s.clone(),
        other => panic!("a scalar, not {other:?}"),
    }
}

/// One GitHub job's steps in `dir`: the exit status of the first step
/// that failed, else of the last one (0).
fn github_steps(
    steps: &Yaml,
    (key, value): (&str, &str),
    tree: &Path,
    tools: &Path,
    dir: &Path,
    artifacts: &Path,
) -> i32 {
    let mut failed = 0;
    for step in steps.as_vec().expect("steps") {
        if failed != 0 && step["if"].as_str() != Some("always()") {
            continue;
        }
        let with = &step["with"];
        let status = match (step["uses"].as_str(), step["run"].as_str()) {
            (Some("actions/checkout@v4"), _) => {
                copy_dir(tree, dir);
                0
            }
            (Some("actions/upload-artifact@v4"), _) => {
                let name = with["name"]
                    .as_str()
                    .unwrap()
                    .replace("${{ matrix.shard }}", value);
                let path = with["path"]
                    .as_str()
                    .unwrap()
                    .replace("${{ matrix.shard }}", value);
                let to = artifacts.join(name);
                std::fs::create_dir_all(&to).unwrap();
                i32::from(std::fs::copy(dir.join(&path), to.join(&path)).is_err())
            }
            (Some("actions/download-artifact@v4"), _) => {
                assert_eq!(with["merge-multiple"].as_bool(), Some(true));
                for stored in std::fs::read_dir(artifacts).into_iter().flatten() {
                    copy_dir(&stored.unwrap().path(), dir);
                }
                0
            }
            (Some(other), _) => panic!("the recipe uses {other}, which this test does not run"),
            (None, Some(run)) => run_line(run, key, value, tools, dir),
            (None, None) => panic!("a step that neither uses nor runs: {step:?}"),
        };
        if failed == 0 {
            failed = status;
        }
    }
    failed
}

/// A step's command, with its matrix value, or `cargo install` of nssim,
/// which the tools' directory stands for: its exit status.
fn run_line(run: &str, key: &str, value: &str, tools: &Path, dir: &Path) -> i32 {
    if installs_nssim(run) {
        return 0;
    }
    let command = run.replace(&format!("${{{{ matrix.{key} }}}}"), value);
    sh(tools, dir, &command, &[])
}

/// `cargo install` of nssim from the checkout, which the tools' directory
/// stands for.
fn installs_nssim(command: &str) -> bool {
    command.trim() == "cargo install --path crates/cli"
}

/// A GitLab CI pipeline: its jobs in order; `parallel:matrix` as one job
/// per value with the variable set; a job that needs others runs when they
/// succeeded, or always with `when: always`; artifacts kept on success,
/// or always with `when: always`.
fn gitlab(pipeline: &Yaml, tree: &Path, tools: &Path, work: &Path) -> Ran {
    let artifacts = work.join("artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let mut status: BTreeMap<String, bool> = BTreeMap::new();
    let mut ran = Ran {
        shards: Vec::new(),
        merge: None,
    };
    for (name, job) in pipeline.as_hash().expect("jobs") {
        let name = name.as_str().unwrap().to_string();
        let needs_met = job["needs"].as_vec().is_none_or(|needs| {
            needs
                .iter()
                .all(|n| status.get(n.as_str().unwrap()).copied().unwrap_or(false))
        });
        if !needs_met && job["when"].as_str() != Some("always") {
            continue;
        }
        let matrix = &job["parallel"]["matrix"];
        let variables: Vec<(String, String)> = match matrix.as_vec() {
            Some(m) => matrix_values(&m[0]),
            None => vec![],
        };
        let runs = if variables.is_empty() {
            vec![None]
        } else {
            variables.iter().map(Some).collect()
        };
        let mut all_ok = true;
        for (i, var) in runs.into_iter().enumerate() {
            let dir = work.join(format!("{name}-{i}"));
            copy_dir(tree, &dir);
            copy_dir(&artifacts, &dir);
            let env: Vec<(&str, String)> =
                var.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            let mut last = 0;
            for line in job["script"].as_vec().expect("a script") {
                let line = line.as_str().unwrap();
                if !installs_nssim(line) {
                    last = sh(tools, &dir, line, &env);
                }
                if last != 0 {
                    break;
                }
            }
            let ok = last == 0;
            let keep = ok || job["artifacts"]["when"].as_str() == Some("always");
            for pattern in job["artifacts"]["paths"].as_vec().into_iter().flatten() {
                for file in matching(&dir, pattern.as_str().unwrap())
                    .into_iter()
                    .filter(|_| keep)
                {
                    std::fs::copy(&file, artifacts.join(file.file_name().unwrap())).unwrap();
                }
            }
            all_ok &= ok;
            if var.is_some() {
                ran.shards.push(ok);
            } else {
                ran.merge = Some(last);
            }
        }
        status.insert(name, all_ok);
    }
    ran
}

/// A Kubernetes Indexed Job: each completion index runs the container's
/// command with `JOB_COMPLETION_INDEX`, the volume's mount path standing
/// for a directory of the test's; then the merge, in a pod that mounts
/// the same volume.
fn kubernetes(job: &Yaml, merge: &str, tree: &Path, tools: &Path, work: &Path) -> Ran {
    let spec = &job["spec"];
    let container = &spec["template"]["spec"]["containers"][0];
    let mount = container["volumeMounts"][0]["mountPath"].as_str().unwrap();
    let volume = work.join("volume");
    std::fs::create_dir_all(&volume).unwrap();
    let on_volume = |text: &str| text.replace(mount, &volume.display().to_string());
    let command: Vec<&str> = container["command"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(command, ["sh", "-c"], "the container runs its args with sh");
    let args = on_volume(container["args"][0].as_str().unwrap());
    let completions = spec["completions"].as_i64().unwrap();
    let shards = (0..completions)
        .map(|i| {
            let pod = work.join(format!("pod-{i}"));
            copy_dir(tree, &pod);
            sh(
                tools,
                &pod,
                &args,
                &[("JOB_COMPLETION_INDEX", i.to_string())],
            ) == 0
        })
        .collect();
    let pod = work.join("merge-pod");
    copy_dir(tree, &pod);
    Ran {
        shards,
        merge: Some(sh(tools, &pod, &on_volume(merge), &[])),
    }
}

/// A Slurm job array and its dependent merge, submitted as the recipe
/// does (with the `sbatch` of `tools`).
fn slurm(script: &str, submit: &str, tree: &Path, tools: &Path, work: &Path) -> Ran {
    let dir = work.join("cluster");
    copy_dir(tree, &dir);
    std::fs::write(dir.join("proof.sh"), script).unwrap();
    let merged = sh(tools, &dir, submit, &[]);
    let range = script
        .lines()
        .find_map(|l| l.strip_prefix("#SBATCH --array="))
        .expect("an array");
    let (first, last) = range.split_once('-').unwrap();
    let shards = (first.parse::<u64>().unwrap()..=last.parse().unwrap())
        .map(|i| {
            let status = std::fs::read_to_string(dir.join(format!("task-{i}.status")));
            status.is_ok_and(|s| s.trim() == "0")
        })
        .collect();
    Ran {
        shards,
        merge: Some(merged),
    }
}

/// Each recipe of the book, by name, run on `tree`.
fn run_recipes(tree: &Path, tools: &Path, work: &Path) -> Vec<(&'static str, Ran)> {
    let blocks = recipes();
    let langs: Vec<&str> = blocks.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(
        langs,
        ["yaml", "yaml", "yaml", "sh", "sh", "sh"],
        "the In CI section's blocks: GitHub, GitLab, Kubernetes and its merge, Slurm's script and its submission"
    );
    let text = |i: usize| blocks[i].1.as_str();
    vec![
        (
            "GitHub Actions",
            github_actions(&yaml(text(0)), tree, tools, &work.join("github")),
        ),
        (
            "GitLab CI",
            gitlab(&yaml(text(1)), tree, tools, &work.join("gitlab")),
        ),
        (
            "Kubernetes",
            kubernetes(
                &yaml(text(2)),
                text(3),
                tree,
                tools,
                &work.join("kubernetes"),
            ),
        ),
        (
            "Slurm",
            slurm(text(4), text(5), tree, tools, &work.join("slurm")),
        ),
    ]
}

#[test]
fn every_recipe_of_the_book_is_green_on_a_healthy_tree() {
    let tools = tools("healthy");
    let tree = checkout("healthy", false);
    for (recipe, ran) in run_recipes(&tree, &tools, &scratch("healthy-work")) {
        assert!(!ran.shards.is_empty(), "{recipe}: {ran:?}");
        assert!(
            ran.shards.iter().all(|ok| *ok),
            "{recipe}: a shard failed: {ran:?}"
        );
        assert_eq!(ran.merge, Some(0), "{recipe}: {ran:?}");
    }
}

#[test]
fn every_recipes_merge_is_red_when_only_the_merge_can_see_the_break() {
    let tools = tools("broken");
    let tree = checkout("broken", true);
    for (recipe, ran) in run_recipes(&tree, &tools, &scratch("broken-work")) {
        assert!(
            ran.shards.iter().all(|ok| *ok),
            "{recipe}: each shard alone has nothing wrong: {ran:?}"
        );
        assert_eq!(ran.merge, Some(1), "{recipe}: {ran:?}");
    }
}
