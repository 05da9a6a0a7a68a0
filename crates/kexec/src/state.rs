//! What a task process carries from op to op: what it knows of its run
//! ([`TaskCtx`]), what it holds in the kernel ([`TaskState`]), and the
//! argument that carries both across its `execve` ([`resume_arg`], read
//! back by [`parse_resume`] when the executor's binary resumes it with
//! [`RESUME_COMMAND`]). The task's start, its ops and the executor's
//! resume all share them, so they sit below each.

use crate::instance::Instance;
use kernel::setup::Setup;
use std::collections::BTreeMap;

/// The hidden command a task's execve resumes it with.
pub const RESUME_COMMAND: &str = "__kernel-resume";

/// What a task process knows of its run.
#[derive(Clone, Copy)]
pub struct TaskCtx<'a> {
    pub setup: &'a Setup,
    pub instances: &'a [Instance],
    pub instance: usize,
    pub results: i32,
    pub plan: i32,
    /// The directory of the set-up's files (empty when it has none).
    pub files_dir: &'a str,
}

/// A live child of the task, and the write end of the pipe it waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Child {
    pub pid: i32,
    pub life: i32,
}

/// What the task holds in the kernel between ops.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TaskState {
    /// Live children, oldest first.
    pub children: Vec<Child>,
    pub sock: Option<i32>,
    /// The uid_map file `open_uid_map_of` keeps open.
    pub opened: Option<i32>,
    /// The `/proc/PID/ns/user` files `open_ns_user` keeps, by name.
    pub ns_files: BTreeMap<String, i32>,
    /// The words the op under way reports (the ACTION of a received
    /// uevent); empty between ops.
    pub texts: Vec<String>,
    /// The ids the last `msgget`, `semget` and `shmget` returned
    /// (numbers the program keeps: a child that acts starts with them, an
    /// execve keeps them).
    pub msqid: Option<i32>,
    pub semid: Option<i32>,
    pub shmid: Option<i32>,
    /// The addresses `shmat` attached at, oldest first: a fork copies the
    /// mappings (a child that acts starts with them), an execve drops
    /// them.
    pub shm_addrs: Vec<usize>,
    /// The level of the pid namespace the scenario's task it descends
    /// from started in (`getpid` reports only below it).
    pub home_pid_level: u32,
}

/// The argument that resumes a task after its execve.
pub fn resume_arg(ctx: &TaskCtx<'_>, pos: u64, state: &TaskState) -> String {
    let children: Vec<String> = state
        .children
        .iter()
        .map(|c| format!("{}:{}", c.pid, c.life))
        .collect();
    // Names are identifiers: no `:`, `,`, `;` or `=` in them.
    let ns_files: Vec<String> = state
        .ns_files
        .iter()
        .map(|(name, fd)| format!("{name}:{fd}"))
        .collect();
    format!(
        "plan={};results={};instance={};pos={pos};sock={};opened={};children={};nsfiles={};shm={};msq={};sem={};home={}",
        ctx.plan,
        ctx.results,
        ctx.instance,
        state.sock.map_or(-1, |s| s as i64),
        state.opened.map_or(-1, |s| s as i64),
        children.join(","),
        ns_files.join(","),
        state.shmid.map_or(-1, i64::from),
        state.msqid.map_or(-1, i64::from),
        state.semid.map_or(-1, i64::from),
        state.home_pid_level,
    )
}

/// A resumed task's position and state.
pub struct Resume {
    pub plan: i32,
    pub results: i32,
    pub instance: usize,
    pub pos: u64,
    pub state: TaskState,
}

fn ns_files(text: &str) -> Option<BTreeMap<String, i32>> {
    if text.is_empty() {
        return Some(BTreeMap::new());
    }
    text.split(',')
        .map(|f| {
            let (name, fd) = f.split_once(':')?;
            Some((name.to_string(), fd.parse().ok()?))
        })
        .collect()
}

fn children(text: &str) -> Option<Vec<Child>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    text.split(',')
        .map(|c| {
            let (pid, life) = c.split_once(':')?;
            Some(Child {
                pid: pid.parse().ok()?,
                life: life.parse().ok()?,
            })
        })
        .collect()
}

pub fn parse_resume(arg: &str) -> Option<Resume> {
    let mut fields: BTreeMap<&str, &str> = BTreeMap::new();
    for part in arg.split(';') {
        let (k, v) = part.split_once('=')?;
        fields.insert(k, v);
    }
    let sock: i32 = fields.get("sock")?.parse().ok()?;
    let opened: i32 = fields.get("opened")?.parse().ok()?;
    Some(Resume {
        plan: fields.get("plan")?.parse().ok()?,
        results: fields.get("results")?.parse().ok()?,
        instance: fields.get("instance")?.parse().ok()?,
        pos: fields.get("pos")?.parse().ok()?,
        state: TaskState {
            children: children(fields.get("children")?)?,
            sock: (sock >= 0).then_some(sock),
            opened: (opened >= 0).then_some(opened),
            ns_files: ns_files(fields.get("nsfiles")?)?,
            texts: Vec::new(),
            shmid: kept_id(fields.get("shm")?)?,
            shm_addrs: Vec::new(),
            home_pid_level: fields.get("home")?.parse().ok()?,
            msqid: kept_id(fields.get("msq")?)?,
            semid: kept_id(fields.get("sem")?)?,
        },
    })
}

/// A kept SysV id, -1 for none.
fn kept_id(text: &str) -> Option<Option<i32>> {
    let id: i32 = text.parse().ok()?;
    Some((id >= 0).then_some(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_argument_reads_back() {
        let setup = Setup::default();
        let ctx = TaskCtx {
            setup: &setup,
            instances: &[],
            instance: 3,
            results: 5,
            plan: 6,
            files_dir: "",
        };
        let state = TaskState {
            children: vec![Child { pid: 100, life: 8 }, Child { pid: 101, life: 9 }],
            sock: Some(7),
            opened: Some(11),
            ns_files: [("one".to_string(), 12), ("two".to_string(), 13)].into(),
            texts: Vec::new(),
            msqid: Some(32768),
            semid: None,
            shmid: Some(1),
            shm_addrs: Vec::new(),
            home_pid_level: 2,
        };
        let back = parse_resume(&resume_arg(&ctx, 9, &state)).unwrap();
        assert_eq!(
            (back.plan, back.results, back.instance, back.pos),
            (6, 5, 3, 9)
        );
        assert_eq!(back.state, state);
        let empty = TaskState::default();
        let back = parse_resume(&resume_arg(&ctx, 0, &empty)).unwrap();
        assert_eq!(back.state, empty);
        assert!(parse_resume("plan=x").is_none());
    }
}
