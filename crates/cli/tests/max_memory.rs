//! `--max-memory` bounds what the process holds, not only what its
//! allocator counted: a `dfs` run of 5 000 tasks with `--max-memory 512m`
//! never has more than 600 MB resident. The peak is the kernel's count for
//! the child (`ru_maxrss` of the children waited for), so this binary
//! holds this one test only.

use crate::support;

use support::{nssim, stdout};

fn peak_resident_of_children() -> u64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) },
        0
    );
    // Kilobytes on Linux.
    usage.ru_maxrss as u64 * 1024
}

#[test]
fn a_run_under_max_memory_never_holds_more_than_600_mb() {
    let dir = std::env::temp_dir().join(format!("nssim-max-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text =
        std::fs::read_to_string(support::root().join("sim-scenarios/ipc-alloc-vs-free.toml"))
            .unwrap();
    let file = dir.join("dfs.toml");
    std::fs::write(
        &file,
        text.replace("repeat = 20", "instances = 5000\nrepeat = 3"),
    )
    .unwrap();
    let o = nssim(&[
        "run",
        file.to_str().unwrap(),
        "--kernel",
        "v6.3",
        "--strategy",
        "dfs",
        "--max-memory",
        "512m",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("limit: the process held") && out.contains("past --max-memory 512m"),
        "{out}"
    );
    let peak = peak_resident_of_children();
    assert!(peak > 64 << 20, "the child was measured: {peak}");
    assert!(peak <= 600_000_000, "peak resident set {peak} bytes");
    std::fs::remove_dir_all(&dir).unwrap();
}
