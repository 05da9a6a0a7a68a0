//! The examples in docs/scenario-format.md are valid.

const DOC: &str = include_str!("../../../docs/scenario-format.md");

/// The fenced ```toml blocks of the format reference.
fn toml_blocks() -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in DOC.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```toml") => current = Some(String::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn complete_example_parses() {
    let blocks = toml_blocks();
    assert!(blocks.len() >= 2);
    let s = scenario::parse("docs.toml", &blocks[0]).unwrap();
    assert_eq!(s.name, "ipc-alloc-vs-free");
    assert_eq!(s.runs.len(), 2);
    assert_eq!(s.runs[1].label, "v6.3");
}

#[test]
fn integer_forms() {
    let text = blocks_with_seed("0xdead_beef");
    let s = scenario::parse("x.toml", &text).unwrap();
    assert_eq!(s.runs[0].explore.seed, 0xdead_beef);
    let text = blocks_with_seed("0b101");
    assert_eq!(
        scenario::parse("x.toml", &text).unwrap().runs[0]
            .explore
            .seed,
        5
    );
}

fn blocks_with_seed(seed: &str) -> String {
    toml_blocks()[0].replace("seed = 1\n", &format!("seed = {seed}\n"))
}

/// Every reference table of the format (ops, patches, profiles,
/// invariants, sysctls, costs) is the rendering of its declarations.
/// `NSSIM_BLESS=1 cargo test -p nssim-scenario --test integration docs::` rewrites them.
#[test]
fn reference_tables_match_the_declarations() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenario-format.md");
    let mut doc = std::fs::read_to_string(path).unwrap();
    let mut stale = Vec::new();
    for (name, table) in scenario::reference_tables() {
        let start_marker = format!("<!-- table: {name} -->\n");
        let start = doc
            .find(&start_marker)
            .unwrap_or_else(|| panic!("docs/scenario-format.md has no `{start_marker}`"))
            + start_marker.len();
        let end = start
            + doc[start..]
                .find("<!-- end table -->")
                .unwrap_or_else(|| panic!("table `{name}` has no end marker"));
        if doc[start..end] != table {
            stale.push(name);
            doc.replace_range(start..end, &table);
        }
    }
    if std::env::var_os("NSSIM_BLESS").is_some() {
        std::fs::write(path, doc).unwrap();
        return;
    }
    assert!(
        stale.is_empty(),
        "docs/scenario-format.md's tables {stale:?} differ from the declarations; \
         NSSIM_BLESS=1 cargo test -p nssim-scenario --test integration docs:: rewrites them"
    );
}

/// The list after `expected one of:` on the line of `text` that has it.
fn expected_list(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.split_once("expected one of: "))
        .map(|(_, list)| list.trim().to_string())
}

/// The format chapter's example errors that list every op or every
/// profile list what the parser lists today (the op list was once six
/// ops behind).
#[test]
fn example_errors_list_what_the_parser_lists() {
    let scenario = |ops: &str, profile: &str| {
        format!(
            "name = \"x\"\nsummary = \"x\"\n[[task]]\nname = \"t\"\nops = [{ops}]\n[[kernel]]\nprofile = \"{profile}\"\nexpect = \"pass\"\n"
        )
    };
    let cases = [
        (
            "error: unknown operation",
            scenario("\"unshar(CLONE_NEWIPC)\"", "v6.16"),
        ),
        (
            "error: unknown kernel profile",
            scenario("\"fork()\"", "v9.9"),
        ),
    ];
    for (heading, text) in cases {
        let err = scenario::parse("x.toml", &text).unwrap_err().to_string();
        let parser = expected_list(&err).unwrap_or_else(|| panic!("{err}"));
        let example = DOC
            .split("```text\n")
            .find(|block| block.starts_with(heading))
            .unwrap_or_else(|| panic!("no example `{heading}` in docs/scenario-format.md"));
        let block = example.split("```").next().unwrap();
        assert_eq!(
            expected_list(block).as_deref(),
            Some(parser.as_str()),
            "the example `{heading}` of docs/scenario-format.md"
        );
    }
}

#[test]
fn the_site_argument_kind_lists_every_fault_site() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/scenario-format.md"
    ))
    .unwrap();
    let row = doc
        .lines()
        .find(|l| l.starts_with("| site |"))
        .expect("the argument kinds table has a `site` row");
    for site in kernel::ops::FAULT_SITES {
        assert!(
            row.contains(&format!("`{}`", site.name)),
            "the `site` row does not name {}",
            site.name
        );
    }
}

/// The rows of the SysV argument kinds name every ipc sysctl, command
/// and flag the checker takes.
#[test]
fn the_sysv_argument_kinds_list_what_the_checker_takes() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/scenario-format.md"
    ))
    .unwrap();
    let row = |kind: &str| {
        doc.lines()
            .find(|l| l.starts_with(&format!("| {kind} |")))
            .unwrap_or_else(|| panic!("the argument kinds table has a `{kind}` row"))
            .to_string()
    };
    let names = [
        (
            "ipc_sysctl",
            kernel::ops::IPC_SYSCTLS
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>(),
        ),
        (
            "command",
            kernel::ops::IPC_CMDS.iter().map(|c| c.0).collect(),
        ),
        (
            "ipc_flags",
            kernel::ops::IPC_FLAGS.iter().map(|f| f.0).collect(),
        ),
    ];
    for (kind, names) in names {
        let row = row(kind);
        for name in names {
            assert!(
                row.contains(&format!("`{name}`")),
                "the `{kind}` row does not name {name}"
            );
        }
    }
}

/// The section of the format reference under `heading` (a `##` or `###`
/// heading), up to the next heading of its level or above.
fn section(heading: &str) -> &'static str {
    let (start, level) = ["## ", "### "]
        .iter()
        .find_map(|hashes| {
            let marker = format!("\n{hashes}{heading}\n");
            DOC.find(&marker)
                .map(|at| (at + marker.len(), hashes.len() - 1))
        })
        .unwrap_or_else(|| panic!("docs/scenario-format.md has no section `{heading}`"));
    let rest = &DOC[start..];
    let end = rest
        .match_indices("\n#")
        .find(|(at, _)| {
            let hashes = rest[at + 1..].chars().take_while(|c| *c == '#').count();
            hashes <= level
        })
        .map_or(rest.len(), |(at, _)| at);
    &rest[..end]
}

/// Every key the parser accepts is documented in its table's section.
#[test]
fn every_key_the_parser_accepts_is_in_the_format_chapter() {
    for (heading, keys) in scenario::FORMAT_KEYS {
        let text = section(heading);
        for key in *keys {
            assert!(
                text.contains(&format!("`{key}`")),
                "docs/scenario-format.md, section {heading}, does not document `{key}`"
            );
        }
    }
}
