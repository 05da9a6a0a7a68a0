//! `nssim export SCENARIO --c`: the program compiles without a warning
//! (`cc -Wall -Wextra -Werror`), runs on this machine's kernel, and every
//! outcome it prints is one the model reaches, judged as `nssim run
//! --on-kernel` judges the executor's runs (`--kernel-output`); a scenario
//! with an op the program cannot perform is refused with exit status 2 and
//! the file named.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::{nssim, stderr, stdout};

/// Why a C program cannot be built here, if it cannot.
fn no_compiler() -> Option<String> {
    match Command::new("cc").arg("--version").output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!("`cc --version` failed ({})", o.status)),
        Err(e) => Some(format!("no C compiler `cc` ({e})")),
    }
}

/// Why the program cannot run on this kernel, if it cannot.
fn cannot_run() -> Option<String> {
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    let max = std::fs::read_to_string("/proc/sys/user/max_user_namespaces").unwrap_or_default();
    (max.trim().parse::<u64>().unwrap_or(0) == 0).then(|| "no user namespaces".into())
}

/// A fresh directory for one test's files, readable and searchable by
/// every uid: an `execve` op runs the program again as the task's uid.
fn workdir(test: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let name: String = test
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = std::env::temp_dir().join(format!("nssim-export-c-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a work directory");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

/// Export `scenario` and compile it as `cc -Wall -Wextra -Werror -O2`:
/// the program's path, or `None` (with the skip said) when there is no
/// compiler, which fails the test in CI.
fn build(test: &str, scenario: &str) -> Option<PathBuf> {
    if let Some(why) = no_compiler() {
        support::skip(test, &why, Some("CI"));
        return None;
    }
    let dir = workdir(test);
    let source = dir.join("repro.c");
    let o = nssim(&["export", scenario, "--c", "-o", source.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "export {scenario}: {}",
        stderr(&o)
    );
    let program = dir.join("repro");
    compile_cleanly(scenario, &source, &program, &[]);
    Some(program)
}

/// `cc -Wall -Wextra -Werror -O2 EXTRA -o out source`, which must succeed.
fn compile_cleanly(scenario: &str, source: &Path, out: &Path, extra: &[&str]) {
    let cc = Command::new("cc")
        .args(["-Wall", "-Wextra", "-Werror", "-O2"])
        .args(extra)
        .arg("-o")
        .arg(out)
        .arg(source)
        .output()
        .expect("cc runs");
    assert!(
        cc.status.success(),
        "{scenario}: the program does not compile cleanly:\n{}",
        String::from_utf8_lossy(&cc.stderr)
    );
}

/// Run `program` `repeats` times on the kernel (holding the kernel's
/// turn); what it printed, saved beside it.
fn run_program(program: &Path, repeats: u32) -> PathBuf {
    let _turn = support::kernel_turn();
    let o = Command::new(program)
        .args(["-n", &repeats.to_string()])
        .output()
        .expect("the program runs");
    // 1: its verdict says the scenario's bug reproduced here.
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}: {}\n{}",
        program.display(),
        stdout(&o),
        stderr(&o)
    );
    assert_eq!(
        left_running(program),
        0,
        "processes of the program outlived it"
    );
    let printed = program.with_extension("out");
    std::fs::write(&printed, &o.stdout).expect("saved");
    printed
}

/// The processes of the machine running `program`.
fn left_running(program: &Path) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read_link(e.path().join("exe")).is_ok_and(|exe| exe == program))
        .count()
}

/// The `on_kernel` object of `nssim run --on-kernel --kernel-output`.
fn judged(scenario: &str, printed: &Path) -> serde_json::Value {
    judged_with_status(scenario, printed, 0)
}

/// [`judged`], the run exiting with `status` (1 when the model misses a
/// kernel outcome).
fn judged_with_status(scenario: &str, printed: &Path, status: i32) -> serde_json::Value {
    let o = nssim(&[
        "run",
        "--on-kernel",
        "--kernel-output",
        printed.to_str().unwrap(),
        scenario,
        "--format",
        "json",
    ]);
    let text = stdout(&o);
    let record: serde_json::Value =
        serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}\n{}", stderr(&o)));
    assert_eq!(o.status.code(), Some(status), "{text}");
    record["on_kernel"].clone()
}

/// Export, compile, run `repeats` times, parse, and hold every outcome
/// against the model: they agree.
fn check_on_kernel(test: &str, scenario: &str, repeats: u32) {
    check_on_kernel_verdict(test, scenario, repeats, "agree");
}

/// [`check_on_kernel`], the verdict `verdict`.
fn check_on_kernel_verdict(test: &str, scenario: &str, repeats: u32, verdict: &str) {
    let Some(program) = build(test, scenario) else {
        return;
    };
    if let Some(why) = cannot_run() {
        support::skip(test, &format!("the program cannot run here ({why})"), None);
        return;
    }
    let printed = run_program(&program, repeats);
    let text = std::fs::read_to_string(&printed).unwrap();
    let parsed = kexec::lines::parse_printed(&text);
    assert_eq!(parsed.runs.len(), repeats as usize, "{text}");
    assert!(parsed.release.is_some(), "{text}");
    for run in &parsed.runs {
        assert!(run.error.is_none() && !run.timed_out, "{text}");
        assert!(!run.calls.is_empty(), "a run without a call: {text}");
    }
    let status = if verdict == "unmet" { 1 } else { 0 };
    let on_kernel = judged_with_status(scenario, &printed, status);
    assert_eq!(on_kernel["verdict"], verdict, "{on_kernel}");
    assert_eq!(on_kernel["repeats"], repeats, "{on_kernel}");
    let _ = std::fs::remove_dir_all(program.parent().unwrap());
}

#[test]
fn the_ids_a_task_sees_print_what_the_model_reports() {
    check_on_kernel(
        "the_ids_a_task_sees_print_what_the_model_reports",
        "sim-scenarios/userns-ids-seen-inside.toml",
        3,
    );
}

#[test]
fn a_set_up_file_opens_as_the_model_says() {
    check_on_kernel(
        "a_set_up_file_opens_as_the_model_says",
        "sim-scenarios/conformance/userns/ltp.userns08.toml",
        3,
    );
}

#[test]
fn the_credential_and_namespace_calls_print_what_the_model_reports() {
    for (test, scenario) in [
        ("capget_in_a_new_namespace", "ltp.userns01"),
        ("capget_after_execve", "ltp.userns06"),
        ("capget_after_setresuid", "caps.uid_changes"),
        ("the_gid_calls", "gid_calls"),
        ("namespace_identities", "ltp.userns05"),
        ("kept_namespace_files", "ltp.userns04"),
        ("events_between_tasks", "ltp.userns03"),
        ("unshare_of_the_file_table", "ltp.unshare01"),
        ("waiting_receives", "../uevent/listener.waits_for_injected"),
        ("a_child_mapped_by_its_parent", "child.mapped_by_parent"),
        (
            "children_inheriting_kept_files",
            "child.inherits_kept_files",
        ),
        ("a_grandchild", "child.nested"),
    ] {
        check_on_kernel(
            test,
            &format!("sim-scenarios/conformance/userns/{scenario}.toml"),
            2,
        );
    }
}

/// The signal ops: a queue over RLIMIT_SIGPENDING, another user's
/// refusal, and the leak scenario's calls, which Linux 6.18 answers as the
/// fixed profile does.
#[test]
fn queued_signals_print_what_the_model_reports() {
    for (test, scenario) in [
        (
            "sigpending_in_a_container",
            "sim-scenarios/conformance/signal/sigpending_limit_in_userns.toml",
        ),
        (
            "a_signal_to_another_user",
            "sim-scenarios/conformance/signal/queue_to_another_user.toml",
        ),
        (
            "a_refused_signal_leaks_nothing",
            "sim-scenarios/ucounts-sigpending-leak.toml",
        ),
    ] {
        check_on_kernel(test, scenario, 2);
    }
}

/// A received uevent's ACTION prints whole, however long, and an empty
/// one prints as empty, not as none (a 2000-byte payload; an empty one).
#[test]
fn received_words_of_any_length_print_what_the_model_reports() {
    for (test, scenario) in [
        (
            "a_word_of_2000_bytes",
            "sim-scenarios/conformance/uevent/inject.fits.toml",
        ),
        (
            "an_empty_word",
            "sim-scenarios/conformance/uevent/inject.empty_payload.toml",
        ),
    ] {
        check_on_kernel(test, scenario, 2);
    }
}

/// POSIX message queues: RLIMIT_MSGQUEUE's EMFILE in a container, an
/// unlink that gives nothing back while a descriptor is open, the sizes an
/// unprivileged creator may not ask for; EPERM and EEXIST for another
/// user; and the regression scenario's calls (which this machine answers
/// as the model does for its root: where root is without CAP_SYS_RESOURCE,
/// as on the project's machine, neither meets the scenario's results, and
/// the verdict says `unmet`).
#[test]
fn message_queues_print_what_the_model_reports() {
    for (test, scenario) in [
        (
            "msgqueue_limit_in_a_container",
            "sim-scenarios/conformance/mqueue/msgqueue_limit_in_userns.toml",
        ),
        (
            "unlink_by_another_user",
            "sim-scenarios/conformance/mqueue/unlink_by_another_user.toml",
        ),
        (
            "a_queue_outlives_its_creators_namespace",
            "sim-scenarios/ucounts-mqueue-outlives-userns.toml",
        ),
    ] {
        check_on_kernel(test, scenario, 2);
    }
    let withheld = kexec::world::withheld_here();
    let verdict = match withheld.contains(&userns::caps::CAP_SYS_RESOURCE) {
        true => "unmet",
        false => "agree",
    };
    check_on_kernel_verdict(
        "a_queue_over_the_boot_rlimit",
        "sim-scenarios/ucounts-init-rlimit-regression.toml",
        2,
        verdict,
    );
}

/// SysV message queues, semaphore sets and keyed segments: every call's
/// errors, keys in two ipc namespaces, the permissions of another user
/// and of root, attachments across a fork and the namespace one holds,
/// and the namespace's limits written and held.
#[test]
fn sysv_message_queues_and_semaphores_print_what_the_model_reports() {
    for (test, scenario) in [
        ("msg_calls", "sim-scenarios/sysvipc-msg-calls.toml"),
        ("sem_calls", "sim-scenarios/sysvipc-sem-calls.toml"),
        (
            "keys_per_namespace",
            "sim-scenarios/sysvipc-keys-per-namespace.toml",
        ),
        ("sysv_permissions", "sim-scenarios/sysvipc-permissions.toml"),
        ("shm_attach", "sim-scenarios/sysvipc-shm-attach.toml"),
        ("ipc_sysctls", "sim-scenarios/sysvipc-ipc-sysctls.toml"),
        (
            "attachment_holds_namespace",
            "sim-scenarios/sysvipc-shm-attachment-holds-namespace.toml",
        ),
    ] {
        check_on_kernel(test, scenario, 2);
    }
}

/// SysV shared memory: who may set kernel.shm_rmid_forced, a segment left
/// behind by a setns (which Linux 6.18 answers as the fixed profile), and
/// RLIMIT_MEMLOCK's ENOMEM and EPERM for SHM_LOCK in a container.
#[test]
fn shared_memory_prints_what_the_model_reports() {
    for (test, scenario) in [
        (
            "rmid_forced_owner",
            "sim-scenarios/conformance/shm/rmid_forced_owner.toml",
        ),
        (
            "exit_after_setns",
            "sim-scenarios/shm-exit-after-setns.toml",
        ),
        (
            "memlock_limit_in_a_container",
            "sim-scenarios/conformance/shm/memlock_limit_in_userns.toml",
        ),
    ] {
        check_on_kernel(test, scenario, 2);
    }
}

/// Pid namespaces: unshare, a fork into the new one, its init's exit,
/// and the create-and-reap loop refused while the last pid's grace period
/// runs.
#[test]
fn pid_namespaces_print_what_the_model_reports() {
    for (test, scenario) in [
        (
            "unshare_fork_and_init_exit",
            "sim-scenarios/conformance/pidns/unshare_fork_and_init_exit.toml",
        ),
        (
            "pidns_create_reap_limit_one",
            "sim-scenarios/pidns-create-reap-limit-one.toml",
        ),
        ("pidns_numbers", "sim-scenarios/pidns-numbers.toml"),
    ] {
        check_on_kernel(test, scenario, 2);
    }
}

#[test]
fn an_ipc_loop_prints_outcomes_the_model_reaches() {
    check_on_kernel("an_ipc_loop", "sim-scenarios/ipc-v6.3-window.toml", 3);
}

#[test]
fn a_user_namespace_clone_and_reap_prints_outcomes_the_model_reaches() {
    check_on_kernel(
        "userns",
        "sim-scenarios/userns-clone-reap-limit-one.toml",
        3,
    );
}

#[test]
fn a_network_namespace_loop_prints_outcomes_the_model_reaches() {
    check_on_kernel(
        "a_network_namespace_loop",
        "sim-scenarios/netns-create-exit-limit-one.toml",
        3,
    );
}

/// setns, a uevent injected and received, and an execve that resumes the
/// task in the program itself.
#[test]
fn setns_uevents_and_execve_print_outcomes_the_model_reaches() {
    check_on_kernel(
        "setns_uevents_and_execve",
        "sim-scenarios/netns-setns.toml",
        2,
    );
    check_on_kernel(
        "execve",
        "sim-scenarios/userns-creator-writes-limit.toml",
        2,
    );
}

/// The program and the executor show a deterministic scenario's one
/// outcome alike.
#[test]
fn the_program_shows_what_the_executor_shows() {
    let scenario = "sim-scenarios/userns-nesting-depth.toml";
    let Some(program) = build("the_program_shows_what_the_executor_shows", scenario) else {
        return;
    };
    if let Some(why) = cannot_run() {
        support::skip(
            "same",
            &format!("the program cannot run here ({why})"),
            None,
        );
        return;
    }
    let printed = run_program(&program, 2);
    let from_program = judged(scenario, &printed)["kernel_outcomes"].clone();
    let executor = {
        let _turn = support::kernel_turn();
        nssim(&[
            "run",
            "--on-kernel",
            scenario,
            "--repeat",
            "2",
            "--format",
            "json",
        ])
    };
    let record: serde_json::Value = serde_json::from_str(stdout(&executor).trim()).unwrap();
    let outcomes = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|o| o["outcome"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        outcomes(&from_program),
        outcomes(&record["on_kernel"]["kernel_outcomes"])
    );
    let _ = std::fs::remove_dir_all(program.parent().unwrap());
}

/// Every scenario of the library exports and compiles cleanly, or is
/// refused for an op the program cannot perform.
#[test]
fn every_library_scenario_compiles_cleanly_or_is_refused_for_its_op() {
    const REFUSED_OPS: [&str; 6] = [
        "lock(",
        "unlock(",
        "bug(",
        "mq_path_walk(",
        "uevent_device_event(",
        "fail_alloc(",
    ];
    if let Some(why) = no_compiler() {
        support::skip("every_library_scenario_compiles_cleanly", &why, Some("CI"));
        return;
    }
    let dir = workdir("library");
    let listed = stdout(&nssim(&["scenarios", "--format", "json"]));
    let mut compiled = 0;
    for line in listed.lines() {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        let (name, path) = (
            entry["name"].as_str().unwrap(),
            entry["path"].as_str().unwrap(),
        );
        let text = std::fs::read_to_string(support::root().join(path)).unwrap();
        // An op is written at the start of a quoted string (`"lock(A)"`
        // or `'lock(A)'`, not the end of `"shm_lock()"`).
        let refusable = REFUSED_OPS
            .iter()
            .any(|op| text.contains(&format!("\"{op}")) || text.contains(&format!("'{op}")));
        // A regression's name is `regressions/NAME`: one file name each.
        let file = name.replace('/', "-");
        let source = dir.join(format!("{file}.c"));
        let o = nssim(&["export", name, "--c", "-o", source.to_str().unwrap()]);
        if refusable {
            assert_eq!(o.status.code(), Some(2), "{name} is not refused");
            assert!(stderr(&o).contains(path), "{}", stderr(&o));
            continue;
        }
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        // Compiled, not linked (`-c`): linking took two fifths of the
        // time, and the tests above link and run a program of each kind.
        compile_cleanly(name, &source, &dir.join(format!("{file}.o")), &["-c"]);
        compiled += 1;
    }
    assert!(compiled >= 30, "only {compiled} scenarios export");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_opening_comment_names_the_file_its_expectation_and_the_kernel_functions() {
    let o = nssim(&["export", "ipc-alloc-vs-free", "--c", "--kernel", "v6.2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let comment = &text[..text.find("*/").expect("an opening comment")];
    // Its words, without the comment's line breaks and leading stars.
    let flat = comment
        .lines()
        .flat_map(|l| {
            l.trim_start()
                .trim_start_matches(['/', '*'])
                .split_whitespace()
        })
        .collect::<Vec<_>>()
        .join(" ");
    for wanted in [
        "ipc-alloc-vs-free: unshare(CLONE_NEWIPC) in a loop",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "Kernel entry `v6.2` (profile v6.2): the model expects violation of",
        "ksys_unshare (kernel/fork.c)",
        "create_ipc_ns (ipc/namespace.c)",
        "sysctl user.max_ipc_namespaces = 3",
    ] {
        assert!(flat.contains(wanted), "{wanted} is not in\n{comment}");
    }
    // Without --kernel, the first entry that expects a violation; a
    // scenario without one, its first entry.
    let first = stdout(&nssim(&["export", "ipc-alloc-vs-free", "--c"]));
    assert!(first.contains("Kernel entry `v6.2`"), "{first}");
    let passing = stdout(&nssim(&["export", "netns-setns", "--c"]));
    assert!(passing.contains("Kernel entry `v6.9`"), "{passing}");
    let bad = nssim(&["export", "ipc-alloc-vs-free", "--c", "--kernel", "v9.9"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("v6.2"), "{}", stderr(&bad));
}

#[test]
fn a_scenario_with_an_op_the_program_cannot_perform_is_refused() {
    let o = nssim(&["export", "sim-scenarios/deadlock-abba.toml", "--c"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("sim-scenarios/deadlock-abba.toml") && err.contains("runs lock"),
        "{err}"
    );
    assert!(stdout(&o).is_empty());
    // A file of one's own, with -o: refused before anything is written.
    let dir = workdir("refused");
    let file = dir.join("device.toml");
    let text = std::fs::read_to_string(
        support::root().join("sim-scenarios/uevent-leak-into-container.toml"),
    )
    .unwrap();
    std::fs::write(&file, text).unwrap();
    let out = dir.join("repro.c");
    let o = nssim(&[
        "export",
        file.to_str().unwrap(),
        "--c",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(file.to_str().unwrap()) && err.contains("uevent_device_event"),
        "{err}"
    );
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_output_that_no_program_printed_is_bad_input() {
    let dir = workdir("not-printed");
    let file = dir.join("out.txt");
    std::fs::write(&file, "hello\n").unwrap();
    let o = nssim(&[
        "run",
        "--on-kernel",
        "--kernel-output",
        file.to_str().unwrap(),
        "ipc-alloc-vs-free",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("holds no run"), "{}", stderr(&o));
    let two = nssim(&[
        "run",
        "--on-kernel",
        "--kernel-output",
        file.to_str().unwrap(),
        "ipc-alloc-vs-free",
        "ipc-v6.3-window",
    ]);
    assert_eq!(two.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kernel outcome the model cannot reach, on a scenario whose
/// exhaustive search is small: once a preemption more no longer widens
/// it, the search for the outcome stops going deeper (it repeated the
/// same exhausted search a hundred times over before).
#[test]
fn an_exhausted_search_is_not_repeated_deeper_for_a_missing_outcome() {
    let dir = workdir("unreachable");
    let printed = dir.join("out.txt");
    let mut text = String::from("K\t6.18.0\nN\t0\nB\t100\nR\t0\t0\tok\t-\n");
    for op in 1..=3 {
        text.push_str(&format!("R\t0\t{op}\tESRCH\t-\n"));
    }
    for op in 4..=6 {
        text.push_str(&format!("R\t0\t{op}\tEAGAIN\t-\n"));
    }
    std::fs::write(&printed, text).unwrap();
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../sim-scenarios/conformance/signal/sigpending_limit_in_userns.toml"
    );
    let on_kernel = judged_with_status(scenario, &printed, 1);
    assert_eq!(on_kernel["verdict"], "model-misses", "{on_kernel}");
    let searches: Vec<String> = on_kernel["model_search"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    let deeper = searches
        .iter()
        .filter(|s| s.starts_with("dfs (preemption bound"))
        .count();
    assert!(deeper <= 3, "{searches:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run the running kernel showed in about one of a hundred repeats of
/// `ipc-charge-in-progress`: the second looper's first unshare fails while
/// the first holds two namespaces, and it gets its one namespace only after
/// the first looper's third, so that the first looper fails from its fourth
/// on. One round of random and PCT samples does not reach it; the directed
/// search does, and the verdict is that the model reaches what the kernel
/// showed.
#[test]
fn a_rare_kernel_outcome_is_reached_by_the_directed_search() {
    let dir = workdir("directed");
    let printed = dir.join("out.txt");
    let first = ["ok", "ok", "ok"].into_iter().chain(["ENOSPC"; 7]);
    let second = ["ENOSPC", "ok"].into_iter().chain(["ENOSPC"; 8]);
    let mut text = String::from("K\t6.18.0\nN\t0\nB\t100\n");
    for result in first {
        text.push_str(&format!("R\t0\t0\t{result}\t-\n"));
    }
    for result in second {
        text.push_str(&format!("R\t1\t0\t{result}\t-\n"));
    }
    std::fs::write(&printed, text).unwrap();
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../sim-scenarios/regressions/ipc-charge-in-progress.toml"
    );
    let on_kernel = judged(scenario, &printed);
    assert_eq!(on_kernel["verdict"], "agree", "{on_kernel}");
    let searches = on_kernel["model_search"].to_string();
    assert!(
        searches.contains("directed at kernel outcome 1 of 1") && searches.contains("reached"),
        "{searches}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--timeout` bounds a scenario's check on the kernel whole: the model's
/// search for an outcome it cannot reach (here EPERM from every unshare)
/// stops at the deadline and says so, instead of spending its whole step
/// budget after the kernel's side.
#[test]
fn the_models_search_after_the_kernel_side_stops_at_the_timeout() {
    let dir = workdir("deadline");
    let printed = dir.join("out.txt");
    let mut text = String::from("K\t6.18.0\nN\t0\nB\t100\n");
    for call in 0..20 {
        text.push_str(&format!("R\t0\t{call}\tEPERM\t-\n"));
    }
    std::fs::write(&printed, text).unwrap();
    let out = support::ends_within(
        &[
            "run",
            "--on-kernel",
            "--kernel-output",
            printed.to_str().unwrap(),
            "sim-scenarios/ipc-alloc-vs-free.toml",
            "--format",
            "json",
            "--timeout",
            "1s",
        ],
        std::time::Duration::from_secs(30),
    );
    let record: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let on_kernel = &record["on_kernel"];
    assert_eq!(on_kernel["verdict"], "model-misses", "{on_kernel}");
    let searches = on_kernel["model_search"].as_array().unwrap();
    assert_eq!(
        searches.last().and_then(|s| s.as_str()),
        Some("stopped at the --timeout deadline"),
        "{on_kernel}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The program's verdict on this kernel (exit status and last line), run
/// `runs` times with `--runs`.
fn verdict_of(program: &Path, runs: u32) -> (Option<i32>, String) {
    let _turn = support::kernel_turn();
    let o = Command::new(program)
        .args(["--runs", &runs.to_string()])
        .output()
        .expect("the program runs");
    let text = stdout(&o);
    let last = text.lines().last().unwrap_or_default().to_string();
    (o.status.code(), last)
}

/// The exported program says whether the scenario's bug reproduced on
/// the running kernel: `netns-create-drop-fix`'s violation (ENOSPC while a
/// dropped network namespace waits for cleanup_net, its `results`) shows
/// on this kernel, exit 1; `ipc-alloc-vs-free`'s v6.2 violation (ENOSPC
/// while freed ipc namespaces wait, found in the model's violating
/// execution) was fixed in v6.3 and does not, exit 0. A scenario whose
/// violation no call result shows gets no verdict, exit 0.
#[test]
fn the_program_says_whether_the_bug_reproduced() {
    let test = "the_program_says_whether_the_bug_reproduced";
    if let Some(why) = cannot_run() {
        support::skip(test, &why, None);
        return;
    }
    let Some(shows) = build(test, "sim-scenarios/netns-create-drop-fix.toml") else {
        return;
    };
    let (status, last) = verdict_of(&shows, 3);
    assert_eq!(status, Some(1), "{last}");
    assert!(
        last.starts_with("reproduced in ")
            && last.contains(" of 3 runs (first: run ")
            && last.ends_with("): looper unshare_and_exit returned ENOSPC"),
        "{last}"
    );
    let Some(fixed) = build(
        &format!("{test}-fixed"),
        "sim-scenarios/ipc-alloc-vs-free.toml",
    ) else {
        return;
    };
    let source = std::fs::read_to_string(fixed.with_file_name("repro.c")).unwrap();
    assert!(
        source.contains("looper unshare(CLONE_NEWIPC)")
            && source.contains("returned ENOSPC (the symptom of ipc.no_false_enospc"),
        "the symptom comes from the model's violating execution"
    );
    let (status, last) = verdict_of(&fixed, 3);
    assert_eq!(status, Some(0), "{last}");
    assert_eq!(last, "not reproduced in 3 runs");
    let Some(silent) = build(
        &format!("{test}-silent"),
        "sim-scenarios/idmap-cve-2018-18955.toml",
    ) else {
        return;
    };
    let (status, last) = verdict_of(&silent, 1);
    assert_eq!(status, Some(0), "{last}");
    assert!(last.starts_with("no verdict: "), "{last}");
}
