//! A catalogue of malformed scenario files: each must be rejected with an
//! error at the exact line and column of the offending token, saying what
//! is wrong.

use scenario::{parse, parse_bytes, ScenarioError};

/// A valid file; cases below edit it.
const BASE: &str = r#"name = "x"
summary = "s"
[[task]]
name = "a"
ops = ["unshare(CLONE_NEWIPC)"]
[[kernel]]
profile = "v6.2"
expect = "pass"
"#;

/// `BASE` with `from` replaced by `to` (which must occur exactly once).
fn edit(from: &str, to: &str) -> String {
    assert_eq!(BASE.matches(from).count(), 1, "{from}");
    BASE.replacen(from, to, 1)
}

fn err_of(text: &str) -> ScenarioError {
    match parse("t.toml", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

/// Asserts the error's position and that its rendering contains each of
/// `fragments`.
#[track_caller]
fn check(text: &str, pos: Option<(usize, usize)>, fragments: &[&str]) {
    let e = err_of(text);
    let rendered = e.to_string();
    assert_eq!(
        e.line.zip(e.column),
        pos,
        "wrong position\n{rendered}\n--- for ---\n{text}"
    );
    assert_eq!(e.file, "t.toml");
    for f in fragments {
        assert!(rendered.contains(f), "missing {f:?} in\n{rendered}");
    }
}

#[test]
fn base_is_valid() {
    parse("t.toml", BASE).unwrap();
}

#[test]
fn toml_syntax_errors() {
    check(
        &edit("summary = \"s\"", "summary = "),
        Some((2, 11)),
        &["invalid TOML"],
    );
    check(
        &edit("name = \"a\"", "name = \"a"),
        Some((4, 10)),
        &["invalid TOML"],
    );
    check(
        &edit("[[kernel]]", "[[kernel]"),
        Some((6, 10)),
        &["invalid TOML"],
    );
    check(
        &edit("name = \"a\"", "name = \"a\"\nname = \"b\""),
        Some((5, 1)),
        &["invalid TOML", "duplicate key"],
    );
}

#[test]
fn empty_files() {
    check("", None, &["empty scenario file", "--> t.toml"]);
    check("# only a comment\n\n", None, &["empty scenario file"]);
}

#[test]
fn not_utf8() {
    let mut bytes = BASE.as_bytes().to_vec();
    // Byte 4 of line 2 ("summary").
    let at = BASE.find("summary").unwrap() + 3;
    bytes[at] = 0xc3;
    bytes[at + 1] = 0x28;
    let e = parse_bytes("t.toml", &bytes).unwrap_err();
    assert_eq!((e.line, e.column), (Some(2), Some(4)), "{e}");
    assert!(e.message.contains("not UTF-8"), "{e}");
    assert!(e.message.contains(&format!("byte offset {at}")), "{e}");
    let e = parse_bytes("t.toml", b"\xff\xfe\x00\x01").unwrap_err();
    assert_eq!((e.line, e.column), (Some(1), Some(1)), "{e}");
    // NUL and other control characters in UTF-8 text are TOML errors.
    check("name = \"x\u{0}\"", Some((1, 10)), &["invalid TOML"]);
}

#[test]
fn unknown_keys_at_every_level() {
    check(
        &edit("summary", "nmae = \"y\"\nsummary"),
        Some((2, 1)),
        &[
            "unknown key `nmae`",
            "did you mean `name`?",
            "one of: name, summary",
        ],
    );
    check(
        &edit("[[task]]", "[explore]\nstratgy = \"dfs\"\n[[task]]"),
        Some((4, 1)),
        &[
            "unknown key `stratgy` in [explore]",
            "did you mean `strategy`?",
        ],
    );
    check(
        &edit("name = \"a\"", "name = \"a\"\ninstance = 2"),
        Some((5, 1)),
        &[
            "unknown key `instance` in [[task]]",
            "did you mean `instances`?",
        ],
    );
    check(
        &edit(
            "expect = \"pass\"",
            "expect = { outcome = \"pass\", invariants = \"x\" }",
        ),
        Some((8, 30)),
        &[
            "unknown key `invariants` in `expect`",
            "one of: outcome, invariant",
        ],
    );
    check(
        &edit(
            "expect = \"pass\"",
            "expect = \"pass\"\nexplore = { cpu = 3 }",
        ),
        Some((9, 13)),
        &[
            "unknown key `cpu` in `explore` of [[kernel]]",
            "did you mean `cpus`?",
        ],
    );
    check(
        &edit(
            "[[task]]",
            "[[userns]]\nname = \"u\"\nowner_uid = 5\n[[task]]",
        ),
        Some((5, 1)),
        &["unknown key `owner_uid` in [[userns]]"],
    );
}

#[test]
fn wrong_types() {
    check(
        &edit("name = \"x\"", "name = 5"),
        Some((1, 8)),
        &[
            "wrong type for `name`: found an integer",
            "expected a string",
        ],
    );
    check(
        &edit("[[task]]", "[explore]\nseed = 1.5\n[[task]]"),
        Some((4, 8)),
        &[
            "wrong type for `seed`: found a float",
            "expected an integer in 0..=",
        ],
    );
    check(
        &edit("[[task]]\nname = \"a\"", "[task]\nname = \"a\""),
        Some((3, 1)),
        &[
            "wrong type for `task`: found a table",
            "write [[task]] for each entry",
        ],
    );
    check(
        &edit(
            "ops = [\"unshare(CLONE_NEWIPC)\"]",
            "ops = \"unshare(CLONE_NEWIPC)\"",
        ),
        Some((5, 7)),
        &[
            "wrong type for `ops`: found a string",
            "an array of operation strings",
        ],
    );
    check(
        &edit("expect = \"pass\"", "expect = true"),
        Some((8, 10)),
        &["wrong type for `expect`: found a boolean"],
    );
    check(
        &edit("[[task]]", "[[explore]]\nseed = 1\n[[task]]"),
        Some((3, 1)),
        &[
            "wrong type for `explore`: found an array",
            "write [explore]",
        ],
    );
}

#[test]
fn missing_keys() {
    check(
        &edit("summary = \"s\"\n", ""),
        Some((1, 1)),
        &["missing key `summary`"],
    );
    check(
        &edit("ops = [\"unshare(CLONE_NEWIPC)\"]\n", ""),
        Some((3, 1)),
        &["missing key `ops` in [[task]] `a`"],
    );
    check(
        &edit("profile = \"v6.2\"\n", ""),
        Some((6, 1)),
        &["missing key `profile` in [[kernel]]"],
    );
    check(
        &edit("expect = \"pass\"", "expect = { invariant = \"lifetime\" }"),
        Some((8, 10)),
        &["missing key `outcome` in `expect`"],
    );
    check(
        &edit("[[task]]\nname = \"a\"", "[[task]]"),
        Some((3, 1)),
        &["missing key `name` in [[task]]"],
    );
}

#[test]
fn names() {
    check(
        &edit("name = \"x\"", "name = \"Bad Name\""),
        Some((1, 8)),
        &["invalid name `Bad Name`", "a-z, 0-9, ., _ and -"],
    );
    check(
        &edit("name = \"a\"", "name = \"a.b\""),
        Some((4, 8)),
        &["invalid name `a.b`", "a-z, 0-9, _ and -"],
    );
    check(
        &edit("expect", "label = \"has space\"\nexpect"),
        Some((8, 9)),
        &["invalid label `has space`"],
    );
    check(
        &edit("summary = \"s\"", "summary = \"  \""),
        Some((2, 11)),
        &["empty summary"],
    );
}

#[test]
fn unknown_catalog_names() {
    check(
        &edit("v6.2", "v9.9"),
        Some((7, 11)),
        &[
            "unknown kernel profile `v9.9`",
            "one of: v3.10, v3.11, v4.8, v4.9, v4.14",
            "v5.6, v5.7",
            "v6.2, v6.3",
        ],
    );
    check(
        &edit(
            "expect",
            "patches = [\"+ipc-async-free\", \"+ipc-bath-free\"]\nexpect",
        ),
        Some((8, 31)),
        &[
            "unknown patch `ipc-bath-free`",
            "did you mean `+ipc-batch-free`?",
        ],
    );
    check(
        &edit(
            "summary",
            "invariants = [\"ipc.no_false_enospc\", \"ucounts.balance\"]\nsummary",
        ),
        Some((2, 38)),
        &[
            "unknown invariant `ucounts.balance`",
            "did you mean `ucounts.balanced`?",
        ],
    );
    check(
        &edit(
            "[[task]]",
            "[sysctl]\n\"user.max_ipc_namespace\" = 3\n[[task]]",
        ),
        Some((4, 1)),
        &[
            "unknown sysctl `user.max_ipc_namespace`",
            "did you mean `user.max_ipc_namespaces`?",
        ],
    );
    check(
        &edit("[[task]]", "[sysctl]\nuser.max_foo = 3\n[[task]]"),
        Some((4, 6)),
        &["unknown sysctl `user.max_foo`"],
    );
    check(
        &edit("[[task]]", "[costs]\nrcu_grace = \"8ms\"\n[[task]]"),
        Some((4, 1)),
        &[
            "unknown cost `rcu_grace`",
            "did you mean `rcu_grace_period`?",
        ],
    );
    check(
        &edit("[[task]]", "[explore]\nstrategy = \"bfs\"\n[[task]]"),
        Some((4, 12)),
        &["unknown strategy `bfs`", "one of: random, pct, dfs, fair"],
    );
    check(
        &edit("expect = \"pass\"", "expect = \"passed\""),
        Some((8, 10)),
        &["unknown outcome `passed`", "did you mean `pass`?"],
    );
}

#[test]
fn patch_toggles() {
    check(
        &edit("expect", "patches = [\"ipc-batch-free\"]\nexpect"),
        Some((8, 12)),
        &[
            "patch toggle `ipc-batch-free` needs a `+` or `-` prefix",
            "\"+ipc-batch-free\"",
        ],
    );
    check(
        &edit(
            "expect",
            "patches = [\"+ipc-batch-free\", \"-ipc-batch-free\"]\nexpect",
        ),
        Some((8, 31)),
        &["patch `ipc-batch-free` is toggled twice"],
    );
    check(
        &edit("expect", "patches = \"+ipc-batch-free\"\nexpect"),
        Some((8, 11)),
        &["wrong type for `patches`"],
    );
}

#[test]
fn numbers() {
    check(
        &edit(
            "[[task]]",
            "[sysctl]\n\"user.max_ipc_namespaces\" = 2147483648\n[[task]]",
        ),
        Some((4, 29)),
        &[
            "`user.max_ipc_namespaces` must be in 0..=2_147_483_647, not 2_147_483_648",
            "an integer in 0..=2_147_483_647",
        ],
    );
    check(
        &edit(
            "[[task]]",
            "[sysctl]\n\"user.max_ipc_namespaces\" = -1\n[[task]]",
        ),
        Some((4, 29)),
        &["`user.max_ipc_namespaces` must be in 0..=2_147_483_647, not -1"],
    );
    check(
        &edit("[[task]]", "[explore]\niterations = 0\n[[task]]"),
        Some((4, 14)),
        &["`iterations` must be in 1..=1_000_000_000, not 0"],
    );
    check(
        &edit("name = \"a\"", "name = \"a\"\nrepeat = 0"),
        Some((5, 10)),
        &["`repeat` must be in 1..=1_000_000_000, not 0"],
    );
    check(
        &edit("name = \"a\"", "name = \"a\"\ninstances = 0"),
        Some((5, 13)),
        &["`instances` must be in 1..=16_000, not 0"],
    );
    check(
        &edit("name = \"a\"", "name = \"a\"\ninstances = 100_001"),
        Some((5, 13)),
        &["`instances` must be in 1..=16_000, not 100_001"],
    );
    check(
        &edit("name = \"a\"", "name = \"a\"\nsequential = 1"),
        Some((5, 14)),
        &["`sequential`", "a boolean (true or false)"],
    );
    check(
        &edit("name = \"a\"", "name = \"a\"\nuid = -1"),
        Some((5, 7)),
        &["`uid` must be in 0..=4_294_967_295, not -1"],
    );
    check(
        &edit("[[task]]", "[explore]\ncpus = 5000\n[[task]]"),
        Some((4, 8)),
        &["`cpus` must be in 1..=1_024, not 5_000"],
    );
    check(
        &edit("[[task]]", "[explore]\npct_depth = 65\n[[task]]"),
        Some((4, 13)),
        &["`pct_depth` must be in 1..=64, not 65"],
    );
    check(
        &edit(
            "[[task]]",
            "[explore]\nmax_steps = 1_000_000_000_001\n[[task]]",
        ),
        Some((4, 13)),
        &["`max_steps` must be in 1..=1_000_000_000_000, not 1_000_000_000_001"],
    );
    check(
        &edit("[[task]]", "[explore]\nseed = -3\n[[task]]"),
        Some((4, 8)),
        &["`seed` must be in 0..=18_446_744_073_709_551_615, not -3"],
    );
    // No bound is "none"; any other word is refused where it is written.
    check(
        &edit(
            "[[task]]",
            "[explore]\npreemption_bound = \"nope\"\n[[task]]",
        ),
        Some((4, 20)),
        &["`preemption_bound` takes an integer in 0..=64 or \"none\", not \"nope\""],
    );
    check(
        &edit("[[task]]", "[explore]\npreemption_bound = 65\n[[task]]"),
        Some((4, 20)),
        &["`preemption_bound` must be in 0..=64, not 65"],
    );
}

#[test]
fn durations() {
    check(
        &edit("[[task]]", "[costs]\nsyscall = \"1.5ns\"\n[[task]]"),
        Some((4, 11)),
        &[
            "invalid duration for `syscall`",
            "whole number of nanoseconds",
        ],
    );
    check(
        &edit("[[task]]", "[costs]\nsyscall = \"-5ms\"\n[[task]]"),
        Some((4, 11)),
        &["negative duration"],
    );
    check(
        &edit("[[task]]", "[costs]\nsyscall = -5\n[[task]]"),
        Some((4, 11)),
        &["`syscall` must be in 0..=18_446_744_073_709_551_615, not -5"],
    );
    check(
        &edit("[[task]]", "[costs]\nsyscall = \"\"\n[[task]]"),
        Some((4, 11)),
        &["empty duration"],
    );
    check(
        &edit("[[task]]", "[costs]\nsyscall = \"5 parsecs\"\n[[task]]"),
        Some((4, 11)),
        &["unknown unit `parsecs`"],
    );
    check(
        &edit(
            "[[task]]",
            "[explore]\nmax_virtual_time = \"99999999999h\"\n[[task]]",
        ),
        Some((4, 20)),
        &["too large"],
    );
    check(
        &edit("[[task]]", "[explore]\nmax_virtual_time = 0\n[[task]]"),
        Some((4, 20)),
        &["`max_virtual_time` must be at least 1ns"],
    );
    check(
        &edit("[[task]]", "[costs]\nsyscall = 1.5\n[[task]]"),
        Some((4, 11)),
        &[
            "wrong type for `syscall`: found a float",
            "integer nanoseconds",
        ],
    );
}

/// Ops: errors point inside the op string.
#[test]
fn ops() {
    let op = |o: &str| edit("\"unshare(CLONE_NEWIPC)\"", &format!("\"{o}\""));
    check(
        &op("unshar(CLONE_NEWIPC)"),
        Some((5, 9)),
        &["unknown operation `unshar`", "did you mean `unshare`?"],
    );
    check(
        &op("unshare(CLONE_NEWUTS)"),
        Some((5, 17)),
        &[
            "unknown clone flag `CLONE_NEWUTS`",
            "one of: CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET",
        ],
    );
    check(
        &op("unshare(CLONE_NEWIPC|)"),
        Some((5, 30)),
        &["expected a clone flag"],
    );
    check(
        &op("sleep(10us) x"),
        Some((5, 21)),
        &["unexpected `x` after the closing `)`"],
    );
    check(
        &op("sleep(10us, 5)"),
        Some((5, 21)),
        &["`sleep` takes 1 argument, found 2", "sleep(duration)"],
    );
    check(
        &op("sysctl_write(user.max_ipc_namespaces)"),
        Some((5, 45)),
        &[
            "`sysctl_write` takes 2 arguments, found 1",
            "sysctl_write(sysctl, integer)",
        ],
    );
    check(
        &op("sleep()"),
        Some((5, 14)),
        &["`sleep` takes 1 argument, found 0"],
    );
    check(
        &op("sysctl_write(user.max_ipc_namespaces, lots)"),
        Some((5, 47)),
        &["`lots` is not a non-negative integer", "0..=2147483647"],
    );
    check(
        &op("sysctl_write(user.max_ipc_namespaces, -1)"),
        Some((5, 47)),
        &["negative value `-1`"],
    );
    check(
        &op("sysctl_write(user.max_ipc_namespaces, 2147483648)"),
        Some((5, 47)),
        &["out of range"],
    );
    check(
        &op("sysctl_write(user.max_pipes, 1)"),
        Some((5, 22)),
        &["unknown sysctl `user.max_pipes`"],
    );
    check(
        &op("mq_path_walk(b)"),
        Some((5, 22)),
        &["no task named `b` in this scenario", "expected `a`"],
    );
    check(
        &op("lock(1abc)"),
        Some((5, 14)),
        &["`1abc` is not a valid name", "[A-Za-z_][A-Za-z0-9_]*"],
    );
    check(
        &op("sleep(10 parsecs)"),
        Some((5, 15)),
        &["unknown unit `parsecs`"],
    );
    check(
        &edit("\"unshare(CLONE_NEWIPC)\"", "'bug(boom)'"),
        Some((5, 13)),
        &["expected a double-quoted string", "bug(\"string\")"],
    );
    check(
        &edit("\"unshare(CLONE_NEWIPC)\"", "'bug(\"boom)'"),
        Some((5, 13)),
        &["unterminated string"],
    );
    check(
        &op("sleep 10us"),
        Some((5, 15)),
        &["expected `(` after `sleep`, found `1`"],
    );
    check(
        &op("sleep(10us"),
        Some((5, 19)),
        &["expected `,` or `)`, found the end of the operation"],
    );
    check(&op(""), Some((5, 9)), &["empty operation"]);
    check(
        &op("mq_path_walk(\\\"a\\\")"),
        Some((5, 22)),
        &["expected a bare task, found a quoted string"],
    );
    check(
        &edit("ops = [\"unshare(CLONE_NEWIPC)\"]", "ops = []"),
        Some((5, 7)),
        &["has no operations"],
    );
    check(
        &edit(
            "ops = [\"unshare(CLONE_NEWIPC)\"]",
            "ops = [\"sleep(1)\", 5]",
        ),
        Some((5, 20)),
        &["wrong type for `ops`: found an integer"],
    );
}

/// The SysV ipc arguments: flags with a mode, a command the op takes, a
/// semaphore operation in range.
#[test]
fn sysv_ipc_arguments() {
    let op = |o: &str| edit("\"unshare(CLONE_NEWIPC)\"", &format!("\"{o}\""));
    parse("t.toml", &op("msgget(7, IPC_CREAT | IPC_EXCL | 0600)")).unwrap();
    parse("t.toml", &op("semop(0, -1)")).unwrap();
    check(
        &op("msgget(7, IPC_CREATE)"),
        Some((5, 19)),
        &["unknown ipc flag `IPC_CREATE`", "did you mean `IPC_CREAT`?"],
    );
    check(
        &op("msgget(7, IPC_CREAT | 600)"),
        Some((5, 31)),
        &["a mode is octal with a leading 0: 0600"],
    );
    check(
        &op("msgget(7, 01000)"),
        Some((5, 19)),
        &["mode `01000` is above 0777"],
    );
    check(
        &op("msgget(7, 0600 | 0644)"),
        Some((5, 26)),
        &["a second mode"],
    );
    check(
        &op("msgctl(GETVAL)"),
        Some((5, 16)),
        &["msgctl does not take GETVAL", "one of: IPC_RMID, IPC_STAT"],
    );
    check(
        &op("semop(0, -40000)"),
        Some((5, 18)),
        &["value `-40000` is out of range", "-32767..=32767"],
    );
    check(
        &op("semop(0, x)"),
        Some((5, 18)),
        &["`x` is not an integer"],
    );
}

#[test]
fn op_positions_inside_other_string_forms() {
    // A multi-line literal string: the error is on the string's second line.
    check(
        &edit("[\"unshare(CLONE_NEWIPC)\"]", "['''\nsleep(\n  10qs)''']"),
        Some((7, 3)),
        &["unknown unit `qs`"],
    );
    // Escapes before the error: the column still lands on the token.
    check(
        &edit("\"unshare(CLONE_NEWIPC)\"", "\"\\u0073leep(1qs)\""),
        Some((5, 20)),
        &["unknown unit `qs`"],
    );
}

#[test]
fn references() {
    check(
        &edit("name = \"a\"", "name = \"a\"\nuserns = \"contianer\""),
        Some((5, 10)),
        &["no user namespace named `contianer`", "expected `init`"],
    );
    let two_userns = edit(
        "[[task]]",
        "[[userns]]\nname = \"child\"\nparent = \"outer\"\n[[userns]]\nname = \"outer\"\n[[task]]",
    );
    check(
        &two_userns,
        Some((5, 10)),
        &[
            "parent user namespace `outer` is defined later",
            "parents must come before",
        ],
    );
    check(
        &edit(
            "[[task]]",
            "[[userns]]\nname = \"u\"\n[[userns]]\nname = \"u\"\n[[task]]",
        ),
        Some((6, 8)),
        &["duplicate user namespace name `u`", "first used on line 4"],
    );
    check(
        &edit("[[task]]", "[[userns]]\nname = \"init\"\n[[task]]"),
        Some((4, 8)),
        &["`init` is the initial user namespace"],
    );
    check(
        &edit(
            "[[task]]",
            "[[userns]]\nname = \"u\"\nparent = \"nope\"\n[[task]]",
        ),
        Some((5, 10)),
        &["no user namespace named `nope`"],
    );
    check(
        &format!("{BASE}[[task]]\nname = \"a\"\nops = [\"sleep(1)\"]\n"),
        Some((10, 8)),
        &["duplicate task name `a`", "first used on line 4"],
    );
}

#[test]
fn expectations() {
    check(
        &edit("expect = \"pass\"", "expect = \"violation\""),
        Some((8, 10)),
        &["outcome `violation` needs the invariant"],
    );
    check(
        &edit("expect = \"pass\"", "expect = { outcome = \"violation\" }"),
        Some((8, 10)),
        &["outcome `violation` needs `invariant`"],
    );
    check(
        &edit(
            "expect = \"pass\"",
            "expect = { outcome = \"deadlock\", invariant = \"lifetime\" }",
        ),
        Some((8, 34)),
        &["`invariant` is only allowed with outcome `violation`, not `deadlock`"],
    );
    check(
        &edit(
            "expect = \"pass\"",
            "expect = { outcome = \"violation\", invariant = \"ipc.no_enospc\" }",
        ),
        Some((8, 47)),
        &["unknown invariant `ipc.no_enospc`"],
    );
    check(
        &edit("summary", "invariants = [\"lifetime\"]\nsummary").replace(
            "expect = \"pass\"",
            "expect = { outcome = \"violation\", invariant = \"ucounts.balanced\" }",
        ),
        Some((9, 47)),
        &["invariant `ucounts.balanced` is not checked by this scenario"],
    );
    check(
        &edit("expect = \"pass\"\n", ""),
        Some((6, 1)),
        &["missing key `expect` in [[kernel]]"],
    );
    // Only the exhaustive search can be exhausted.
    check(
        &edit(
            "expect = \"pass\"",
            "expect = { outcome = \"pass\", exhausted = true }",
        ),
        Some((8, 30)),
        &["`exhausted` needs strategy \"dfs\", not \"random\""],
    );
    check(
        &edit(
            "expect = \"pass\"",
            "expect = { outcome = \"pass\", exhausted = \"yes\" }",
        ),
        Some((8, 42)),
        &["wrong type for `exhausted`: found a string"],
    );
    let dfs = edit(
        "expect = \"pass\"",
        "expect = { outcome = \"pass\", exhausted = true }\nexplore = { strategy = \"dfs\" }",
    );
    assert!(parse("t.toml", &dfs).unwrap().runs[0].expect.exhausted);
}

#[test]
fn tasks_and_kernels_required() {
    let no_task =
        "name = \"x\"\nsummary = \"s\"\n[[kernel]]\nprofile = \"v6.2\"\nexpect = \"pass\"\n";
    check(no_task, Some((1, 1)), &["missing key `task`"]);
    check(
        &no_task.replace("summary = \"s\"", "summary = \"s\"\ntask = []"),
        Some((3, 8)),
        &["no tasks", "at least one [[task]]"],
    );
    let no_kernel = "name = \"x\"\nsummary = \"s\"\n[[task]]\nname = \"a\"\nops = [\"sleep(1)\"]\n";
    check(no_kernel, Some((1, 1)), &["missing key `kernel`"]);
    check(
        &no_kernel.replace("summary = \"s\"", "summary = \"s\"\nkernel = []"),
        Some((3, 10)),
        &["no kernels to run"],
    );
    check(
        &format!("{BASE}[[kernel]]\nprofile = \"v6.2\"\nexpect = \"pass\"\n"),
        Some((10, 11)),
        &["duplicate kernel label `v6.2`", "first used on line 7"],
    );
    check(
        &format!("{BASE}[[kernel]]\nprofile = \"v6.3\"\nlabel = \"v6.2\"\nexpect = \"pass\"\n"),
        Some((11, 9)),
        &["duplicate kernel label `v6.2`"],
    );
    check(
        &edit(
            "[[task]]",
            "[sysctl]\n\"user.max_ipc_namespaces\" = 1\nuser.max_ipc_namespaces = 2\n[[task]]",
        ),
        Some((5, 6)),
        &["sysctl `user.max_ipc_namespaces` is set twice"],
    );
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    // Run on a small stack to make an overflow likely if recursion were
    // unbounded anywhere.
    std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            let n = 100_000;
            let arrays = format!("a = {}{}", "[".repeat(n), "]".repeat(n));
            assert!(parse("t.toml", &arrays).is_err());
            let tables = format!("a = {}{}", "{b = ".repeat(n), "}".repeat(n));
            assert!(parse("t.toml", &tables).is_err());
            let dotted = format!("[sysctl]\n{}x = 1\n", "user.".repeat(n));
            assert!(parse("t.toml", &dotted).is_err());
            let header = format!("[{}]\n", vec!["sysctl"; n].join("."));
            assert!(parse("t.toml", &header).is_err());
            let mixed = format!("{BASE}explore = {}", "[{a=".repeat(n));
            assert!(parse("t.toml", &mixed).is_err());
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn control_characters_are_not_sent_to_the_terminal() {
    let e = err_of(&edit("summary", "\"\\u001b[31mred\" = 1\nsummary"));
    assert_eq!((e.line, e.column), (Some(2), Some(1)));
    let rendered = e.to_string();
    assert!(!rendered.contains('\u{1b}'), "{rendered:?}");
    assert!(
        rendered.contains("unknown key `\\u{1b}[31mred`"),
        "{rendered}"
    );
    let e = parse_bytes("t.toml", b"name = \"x\"\x00\x1b\xff").unwrap_err();
    let rendered = e.to_string();
    assert!(
        !rendered.contains('\u{1b}') && !rendered.contains('\0'),
        "{rendered:?}"
    );
    assert_eq!((e.line, e.column), (Some(1), Some(13)));
}

#[test]
fn a_file_name_with_control_characters_is_escaped() {
    let e = parse("evil\u{1b}]0;pwned\u{7}.toml", "name = 1").unwrap_err();
    let rendered = e.to_string();
    assert!(
        !rendered.contains('\u{1b}') && !rendered.contains('\u{7}'),
        "{rendered:?}"
    );
    assert!(
        rendered.contains("--> evil\\u{1b}]0;pwned\\u{7}.toml:1:1"),
        "{rendered}"
    );
    let long = format!("{}.toml", "d/".repeat(5000));
    let rendered = parse(&long, "name = 1").unwrap_err().to_string();
    assert!(
        rendered.len() < 2000 && rendered.contains('…'),
        "{rendered}"
    );
}

#[test]
fn long_lines_are_windowed() {
    let long = format!("{}\"v9.9\"", " ".repeat(5000));
    let e = err_of(&edit("\"v6.2\"", &long));
    assert_eq!((e.line, e.column), (Some(7), Some(5011)));
    let rendered = e.to_string();
    assert!(rendered.lines().all(|l| l.len() < 300), "{rendered}");
    assert!(rendered.contains("...  "), "{rendered}");
}

#[test]
fn long_values_are_cut_in_messages() {
    let long = "q".repeat(5000);
    for text in [
        edit(
            "[[task]]",
            &format!("[explore]\nstrategy = \"{long}\"\n[[task]]"),
        ),
        edit(
            "[[task]]",
            &format!("[explore]\nmax_virtual_time = \"1{long}\"\n[[task]]"),
        ),
        edit("[[task]]", &format!("[explore]\n{long} = 1\n[[task]]")),
    ] {
        let e = err_of(&text);
        assert!(e.message.len() < 400, "{}", e.message);
        assert!(e.message.contains('…'), "{}", e.message);
    }
}

#[test]
fn files_and_the_ops_that_open_them() {
    let with_file = |file: &str, op: &str| {
        edit("[[task]]", &format!("{file}\n[[task]]"))
            .replace("\"unshare(CLONE_NEWIPC)\"", &format!("\"{op}\""))
    };
    let secret = "[[file]]\nname = \"secret\"\nmode = 0o600";
    // The good form, to hold the cases below to.
    parse("t.toml", &with_file(secret, "open(secret, O_RDWR)")).unwrap();
    check(
        &with_file("", "open(secret, O_RDONLY)"),
        Some((6, 14)),
        &[
            "no file named `secret` in this scenario",
            "[[file]] name = \"secret\"",
        ],
    );
    check(
        &with_file(secret, "open(secrte, O_RDONLY)"),
        Some((8, 14)),
        &["no file named `secrte`", "did you mean `secret`?"],
    );
    check(
        &with_file(secret, "open(secret, O_RDONLI)"),
        Some((8, 22)),
        &["unknown access mode `O_RDONLI`", "did you mean `O_RDONLY`?"],
    );
    check(
        &with_file(
            "[[file]]\nname = \"secret\"\nmode = 0o1777",
            "open(secret, O_RDONLY)",
        ),
        Some((5, 8)),
        &["mode", "0o640"],
    );
    check(
        &with_file("[[file]]\nname = \"secret\"", "open(secret, O_RDONLY)"),
        Some((3, 1)),
        &["mode"],
    );
    check(
        &with_file(
            "[[file]]\nname = \"secret\"\nmode = 0o600\n[[file]]\nname = \"secret\"\nmode = 0o600",
            "open(secret, O_RDONLY)",
        ),
        Some((7, 8)),
        &["duplicate file name `secret`"],
    );
    check(
        &with_file(
            "[[file]]\nname = \"secret\"\nmode = 0o600\nowner = -1",
            "open(secret, O_RDONLY)",
        ),
        Some((6, 9)),
        &["owner", "0..=4_294_967_294"],
    );
}

#[test]
fn a_wait_no_task_posts_is_refused_where_it_is_written() {
    check(
        &edit(
            "\"unshare(CLONE_NEWIPC)\"",
            "\"post(ready)\", \"wait(ready)\", \"wait(go)\"",
        ),
        Some((5, 38)),
        &[
            "`wait(go)` can never return: no task posts `go`",
            "a `post(go)` in some task",
        ],
    );
}

#[test]
fn clone_takes_no_flag_that_only_unshare_takes() {
    check(
        &edit(
            "\"unshare(CLONE_NEWIPC)\"",
            "\"clone(CLONE_NEWUSER|CLONE_FILES)\"",
        ),
        Some((5, 15)),
        &[
            "clone takes no CLONE_FS or CLONE_FILES",
            "unshare takes them",
        ],
    );
    parse(
        "t.toml",
        &edit("unshare(CLONE_NEWIPC)", "unshare(CLONE_FS|CLONE_FILES)"),
    )
    .unwrap();
}

/// `BASE` whose task `a` forks `kid` with `op` and has `block` after it
/// (the `[[task.child]]` tables).
fn with_child(op: &str, extra: &str, block: &str) -> String {
    let task = format!("ops = [\"{op}\"]\n{extra}{block}");
    edit("ops = [\"unshare(CLONE_NEWIPC)\"]\n", &format!("{task}\n"))
}

#[test]
fn children_that_act_are_checked_where_they_are_written() {
    let kid = "[[task.child]]\nname = \"kid\"\nops = [\"getresuid()\"]\n";
    let good = with_child("fork_child(kid)", "", kid);
    let sc = parse("t.toml", &good).unwrap();
    assert_eq!(sc.setup.children.len(), 1);
    assert_eq!(sc.setup.children[0].name, "a/kid");
    assert_eq!(sc.setup.children[0].parent, "a");
    // A fork of a block the task does not have.
    check(
        &with_child("fork_child(kyd)", "", kid),
        Some((5, 20)),
        &["no child named `kyd` under this task", "kid"],
    );
    check(
        &with_child("fork_child(kid)", "", ""),
        Some((5, 20)),
        &["this task has no [[task.child]] blocks"],
    );
    // A block nothing forks, and one forked twice.
    check(
        &with_child("getresuid()", "", kid),
        Some((7, 8)),
        &["child `kid` of `a` is never forked", "`fork_child(kid)`"],
    );
    check(
        &good.replace(
            "[\"fork_child(kid)\"]",
            "[\"fork_child(kid)\", \"clone_child(CLONE_NEWUSER, kid)\"]",
        ),
        Some((5, 27)),
        &["child `kid` is forked a second time"],
    );
    // A task with children runs once.
    check(
        &with_child("fork_child(kid)", "instances = 2\n", kid),
        Some((6, 13)),
        &[
            "task `a` has [[task.child]] blocks, so it runs once",
            "no `instances`",
        ],
    );
    check(
        &with_child("fork_child(kid)", "repeat = 3\n", kid),
        Some((6, 10)),
        &["so it runs once", "no `repeat`"],
    );
    // Names: unique among siblings, keys known, targets by full name.
    check(
        &with_child("fork_child(kid)", "", &format!("{kid}{kid}")),
        Some((10, 8)),
        &["duplicate child name `kid` under `a`"],
    );
    check(
        &with_child("fork_child(kid)", "", &kid.replace("name", "nmae")),
        Some((7, 1)),
        &["unknown key `nmae` in [[task.child]]"],
    );
    let target = with_child(
        "fork_child(kid)",
        "",
        &kid.replace("getresuid()", "read_uid_map_of(a/kyd)"),
    );
    check(&target, Some((8, 25)), &["no task named `a/kyd`", "a/kid"]);
    parse(
        "t.toml",
        &with_child(
            "fork_child(kid)",
            "",
            &kid.replace("getresuid()", "read_uid_map_of(a/kid)"),
        ),
    )
    .unwrap();
    // Results may name the child; children nest, but not without end.
    let expected = good.replace(
        "expect = \"pass\"",
        "expect = { outcome = \"pass\", results = { \"a/kid\" = { getresuid = \"ok\" } } }",
    );
    parse("t.toml", &expected).unwrap();
    let mut deep = String::new();
    let mut path = String::from("task");
    let mut op = "fork_child(c)".to_string();
    for _ in 0..9 {
        path.push_str(".child");
        deep.push_str(&format!("[[{path}]]\nname = \"c\"\nops = [\"{op}\"]\n"));
        op = "fork_child(c)".to_string();
    }
    let e = err_of(&with_child("fork_child(c)", "", &deep));
    assert!(
        e.to_string().contains("children nest more than 8 deep"),
        "{e}"
    );
}

#[test]
fn pid_ns_depth_is_bounded_and_stands_alone() {
    check(
        &edit("name = \"a\"", "name = \"a\"\npid_ns_depth = 33"),
        Some((5, 16)),
        &["`pid_ns_depth`", "0..=32"],
    );
    check(
        &edit("name = \"a\"", "name = \"a\"\npid_ns_depth = 3\nnproc = 10"),
        Some((5, 16)),
        &["`pid_ns_depth` cannot be combined with `nproc`"],
    );
    let limited = edit(
        "summary = \"s\"",
        "summary = \"s\"\nsysctl = { user = { max_pid_namespaces = 40 } }",
    )
    .replacen("name = \"a\"", "name = \"a\"\npid_ns_depth = 3", 1);
    check(
        &limited,
        Some((6, 16)),
        &["`pid_ns_depth` cannot be combined with the initial namespace's `user.max_pid_namespaces`"],
    );
}

/// `calls` lists the first calls of one label in order; an op name that
/// stands for several labels of the task has no one order of calls.
#[test]
fn calls_of_an_op_name_with_several_labels_is_refused() {
    let text = BASE
        .replace(
            r#"ops = ["unshare(CLONE_NEWIPC)"]"#,
            r#"ops = ["unshare(CLONE_NEWIPC)", "unshare(CLONE_NEWNET)"]"#,
        )
        .replace(
            r#"expect = "pass""#,
            r#"expect = { outcome = "pass", results = { a = { unshare = { calls = ["ok", "ok"] } } } }"#,
        );
    check(
        &text,
        Some((8, 48)),
        &[
            "`calls` of `unshare` in `a`",
            "2 labels (unshare(CLONE_NEWIPC), unshare(CLONE_NEWNET))",
            "one label as the key",
        ],
    );
    let one_label = text.replace(
        r#"a = { unshare = { calls"#,
        r#"a = { "unshare(CLONE_NEWNET)" = { calls"#,
    );
    parse("t.toml", &one_label).unwrap();
}
