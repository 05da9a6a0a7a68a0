//! The network-namespace conformance cases: the uevent subsystem's own,
//! then those that need the whole simulated machine (the create-and-drop
//! loop of network namespaces under a small limit), asked of the model
//! under the running kernel's profile and of the running kernel.

use crate::setup::Op;

/// The uevent subsystem's conformance cases, then those that need the
/// whole simulated machine: the create-and-drop loop of network namespaces
/// under a small limit.
pub fn conformance_cases() -> Vec<probe::Case> {
    let mut cases = uevent::conformance::conformance_cases();
    cases.push(probe::Case {
        subsystem: "netns",
        name: "netns.create_drop_loop_enospc".into(),
        question: "20 x unshare(CLONE_NEWNET), each dropping the last, under max_net_namespaces = 3 in a new user namespace: does any fail with ENOSPC?".into(),
        model: Box::new(create_drop_loop_model),
        kernel: Box::new(create_drop_loop_kernel),
    });
    cases
}

/// The loop in the model of this host's kernel, in discrete-event order.
fn create_drop_loop_model() -> String {
    use crate::setup::{clone_flags::CLONE_NEWNET, Setup, SysctlSpec, TaskSpec, UserNsSpec};
    let profile = crate::catalog::host_profile();
    let setup = Setup {
        user_namespaces: vec![UserNsSpec {
            name: "probe".into(),
            parent: crate::setup::INIT_USER_NS.into(),
            owner: 0,
        }],
        sysctls: vec![SysctlSpec {
            userns: "probe".into(),
            name: "user.max_net_namespaces".into(),
            value: 3,
        }],
        tasks: vec![TaskSpec {
            name: "looper".into(),
            instances: 1,
            sequential: false,
            userns: "probe".into(),
            uid: 0,
            repeat: 20,
            ops: vec![Op::Unshare {
                flags: CLONE_NEWNET,
            }],
        }],
        ..Setup::default()
    };
    let Ok(patches) = crate::resolve_patches(profile, &[]) else {
        return format!("unknown profile {profile}");
    };
    let spec = crate::RunSpec {
        setup: &setup,
        patches: &patches,
        invariants: &[],
        explore: sim::ExploreConfig::new(sim::StrategySpec::Fair, 1, 1, sim::ExecConfig::default()),
    };
    let out = crate::explore_run(&spec);
    let enospc = out
        .results
        .get("looper")
        .and_then(|r| r.get("unshare(CLONE_NEWNET)"))
        .and_then(|s| s.results.get("ENOSPC"))
        .copied()
        .unwrap_or(0);
    answer(enospc > 0)
}

fn answer(enospc: bool) -> String {
    if enospc { "ENOSPC" } else { "never ENOSPC" }.to_string()
}

/// The same loop on the running kernel, inside `unshare -U -r`.
fn create_drop_loop_kernel() -> probe::KernelAnswer {
    let script = "echo 3 > /proc/sys/user/max_net_namespaces || exit 3; \
                  fail=0; i=0; while [ $i -lt 20 ]; do \
                  unshare -n true 2>/dev/null || fail=$((fail+1)); i=$((i+1)); done; \
                  echo fail=$fail";
    let out = probe::sh_in_userns(script, 60)?;
    let line = out.stdout.trim();
    match line
        .strip_prefix("fail=")
        .and_then(|n| n.parse::<u32>().ok())
    {
        Some(n) => Ok(answer(n > 0)),
        None => Err(probe::Skip(format!(
            "the loop did not run: {line} {}",
            out.stderr.trim()
        ))),
    }
}
