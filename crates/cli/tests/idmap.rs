//! `nssim idmap check` as an administrator runs it: the seed's five-line
//! uid and gid maps, the sixth line that only the 340-extent layout takes,
//! unprivileged writers, and bad input.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Output, Stdio};

const SEED_MAP: &str =
    "999 999 1\n1001 1001 1\n0 1000000 999\n1000 1001000 1\n1002 1001002 999998998\n";

fn check(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(["idmap", "check"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nssim runs");
    // nssim may exit on bad arguments before it reads its input.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn json(args: &[&str], stdin: &str) -> (Option<i32>, Value) {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let o = check(&all, stdin);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), v)
}

#[test]
fn the_seed_maps_are_accepted_from_v4_15_on() {
    for kernel in ["v4.15", "v4.20", "v6.3"] {
        for map in ["uid", "gid"] {
            let (code, v) = json(&["--kernel", kernel, "--map", map], SEED_MAP);
            assert_eq!(code, Some(0), "{kernel} {map}: {v}");
            assert_eq!(v["accepted"], true);
            assert_eq!(v["errno"], Value::Null);
            assert_eq!(v["extents"].as_array().unwrap().len(), 5);
            assert_eq!(v["extents"][2]["lower_first"], 1_000_000);
        }
    }
}

#[test]
fn a_sixth_line_is_einval_on_the_5_extent_layout_only() {
    let six = format!("{SEED_MAP}1000000000 2000000000 1\n");
    for map in ["uid", "gid"] {
        let (code, v) = json(&["--kernel", "v4.14", "--map", map], &six);
        assert_eq!(code, Some(1));
        assert_eq!(v["accepted"], false);
        assert_eq!(v["errno"], "EINVAL");
        assert_eq!(v["rule"], "parse.too_many_extents");
        assert_eq!(v["extents"], Value::Array(vec![]));
        let (_, v) = json(&["--kernel", "v4.14", "--map", map], SEED_MAP);
        assert_eq!(v["accepted"], true, "five lines fit in v4.14");
        let (code, v) = json(&["--kernel", "v4.15", "--map", map], &six);
        assert_eq!((code, &v["accepted"]), (Some(0), &Value::Bool(true)));
        // Above five extents the forward array is sorted by first id.
        let firsts: Vec<u64> = v["extents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["first"].as_u64().unwrap())
            .collect();
        assert_eq!(firsts, [0, 999, 1000, 1001, 1002, 1000000000]);
    }
}

#[test]
fn an_unprivileged_writer_may_map_only_its_own_id() {
    let me = [
        "--writer",
        "unprivileged",
        "--writer-uid",
        "1000",
        "--writer-gid",
        "1000",
    ];
    let (_, v) = json(&me, "0 1000 1\n");
    assert_eq!(
        (v["accepted"].clone(), v["rule"].clone()),
        (Value::Bool(true), "permitted.self_map".into())
    );
    let (_, v) = json(&me, "0 1001 1\n");
    assert_eq!(v["errno"], "EPERM");
    let mut gid = me.to_vec();
    gid.extend(["--map", "gid"]);
    let (_, v) = json(&gid, "0 1000 1\n");
    assert_eq!(v["errno"], "EPERM", "a gid self-map needs setgroups deny");
    gid.push("--setgroups-deny");
    let (_, v) = json(&gid, "0 1000 1\n");
    assert_eq!(v["accepted"], true);
}

#[test]
fn mapping_parent_root_needs_cap_setfcap_from_v5_12() {
    let args = [
        "--without-cap",
        "CAP_SETFCAP",
        "--writer-uid",
        "1000",
        "--writer-gid",
        "1000",
    ];
    let mut new = args.to_vec();
    new.extend(["--kernel", "v5.12"]);
    assert_eq!(json(&new, "0 0 1\n").1["rule"], "permitted.setfcap_root");
    let mut old = args.to_vec();
    old.extend(["--kernel", "v5.11"]);
    assert_eq!(json(&old, "0 0 1\n").1["accepted"], true);
}

#[test]
fn text_output_shows_the_kernel_id_table() {
    let o = check(&["--kernel", "v4.15"], SEED_MAP);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        text.starts_with("uid_map write on v4.15: accepted"),
        "{text}"
    );
    assert!(
        text.contains("      1002      1001002      1001002    999998998"),
        "{text}"
    );
}

#[test]
fn bad_input_is_a_clear_error_with_exit_2() {
    for (args, needle) in [
        (vec!["--kernel", "v9.9"], "unknown kernel profile"),
        (vec!["/nonexistent/map"], "cannot read /nonexistent/map"),
        (vec!["--without-cap", "CAP_FLY"], "unknown capability"),
        (
            vec!["--patch", "idmap-340-extents"],
            "expected +NAME or -NAME",
        ),
        (vec!["--writer-uid", "4294967295"], "not mapped"),
    ] {
        let o = check(&args, "0 0 1\n");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn a_parent_map_confines_the_child_and_inside_writers_may_only_self_map() {
    let dir = std::env::temp_dir().join(format!("nssim-idmap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let parent = dir.join("parent.map");
    std::fs::write(&parent, "0 100000 65536\n").unwrap();
    let parent = parent.to_str().unwrap();
    // Root of the parent namespace (kernel uid 100000) maps its ids 0..999.
    let (code, v) = json(&["--parent-map", parent], "0 0 1000\n");
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["extents"][0]["lower_first"], 100_000);
    // Ids outside the parent's map are refused.
    let (_, v) = json(&["--parent-map", parent], "0 65536 1\n");
    assert_eq!(v["rule"], "translate.parent_map");
    // The creator writing from inside may map only itself.
    let (_, v) = json(&["--writer", "inside"], "0 0 1\n");
    assert_eq!(v["rule"], "permitted.self_map");
    let (_, v) = json(&["--writer", "inside"], "0 0 2\n");
    assert_eq!(v["rule"], "permitted.cap_setid");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The kernel refuses a write of a page or more, so `idmap check` reads at
/// most one page: an endless input (`/dev/zero`) or a long one ends with
/// that rule instead of being read whole.
#[test]
fn input_past_a_page_is_refused_without_reading_it_all() {
    let o = Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(["idmap", "check", "/dev/zero"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("write.offset_or_size"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let long = "0 0 1\n".repeat(20_000);
    let o = check(&[], &long);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("write.offset_or_size"));
    let just_under = format!("0 0 1{}\n", " ".repeat(4096 - 7));
    assert_eq!(just_under.len(), 4095);
    let o = check(&[], &just_under);
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("write.offset_or_size"),
        "a write shorter than a page is judged by its content"
    );
}
