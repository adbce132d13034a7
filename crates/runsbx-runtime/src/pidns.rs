//! The processes of a container that has no cgroup, found through its
//! init's pid namespace: `ps` and `kill --all` use them where they would
//! read the cgroup's process list.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;

use crate::error::{Result, RuntimeError};

/// `init` and every process in its pid namespace, or below it: a process
/// in a nested pid namespace descends from one in init's (an orphan is
/// reparented to the reaper of its own namespace, which is itself inside).
/// Host PIDs, sorted. A process that exits meanwhile is left out.
pub fn members(init: i32) -> Result<Vec<i32>> {
    let own = ns_of(init)?;
    // Stops: a recycled pid (or a container sharing the host's namespace)
    // turning `ps` into a list, and `kill --all` into a signal, of every
    // process on the host.
    if own == ns_of_self()? {
        return Err(RuntimeError::Proc(format!(
            "pid {init} is in runsbx's own pid namespace, not a container's: not walking it"
        )));
    }
    let mut inside: HashSet<i32> = HashSet::from([init]);
    let mut parent: HashMap<i32, i32> = HashMap::new();
    let entries = fs::read_dir("/proc").map_err(|e| RuntimeError::io("read /proc", e))?;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if ns_of(pid).is_ok_and(|n| n == own) {
            inside.insert(pid);
        } else if let Some(ppid) = ppid(pid) {
            parent.insert(pid, ppid);
        }
    }
    // Descendants of a member, whatever their namespace: repeat until no
    // process joins (a chain of n nested levels takes n rounds).
    loop {
        let joined: Vec<i32> = parent
            .iter()
            .filter(|(_, pp)| inside.contains(pp))
            .map(|(p, _)| *p)
            .collect();
        if joined.is_empty() {
            break;
        }
        for p in joined {
            parent.remove(&p);
            inside.insert(p);
        }
    }
    let mut out: Vec<i32> = inside.into_iter().collect();
    out.sort_unstable();
    Ok(out)
}

/// Whether `pid` is PID 1 of the innermost pid namespace it is in (the
/// last field of NSpid in /proc/<pid>/status): the process whose death
/// ends every other process in that namespace.
pub fn is_namespace_init(pid: i32) -> Result<bool> {
    let path = format!("/proc/{pid}/status");
    let text = fs::read_to_string(&path).map_err(|e| RuntimeError::io(path.clone(), e))?;
    // Read here, parsed by procfs: a failed read keeps its io error.
    let status = <procfs::process::Status as procfs::FromRead>::from_read(text.as_bytes())
        .map_err(|e| RuntimeError::Proc(format!("{path}: {e}")))?;
    let nspid = status
        .nspid
        .ok_or_else(|| RuntimeError::Proc(format!("{path}: no NSpid line")))?;
    Ok(nspid.last() == Some(&1))
}

fn ns_of(pid: i32) -> Result<(u64, u64)> {
    stat_ns(format!("/proc/{pid}/ns/pid"))
}

fn ns_of_self() -> Result<(u64, u64)> {
    stat_ns("/proc/self/ns/pid".into())
}

fn stat_ns(path: String) -> Result<(u64, u64)> {
    fs::metadata(&path)
        .map(|m| (m.dev(), m.ino()))
        .map_err(|e| RuntimeError::io(path, e))
}

fn ppid(pid: i32) -> Option<i32> {
    procfs::process::Process::new(pid)
        .and_then(|p| p.stat())
        .ok()
        .map(|s| s.ppid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_to_walk_its_own_namespace() {
        let me = std::process::id() as i32;
        assert!(members(me).is_err());
        assert_eq!(ppid(me), Some(nix::unistd::getppid().as_raw()));
        // The test runs under a shell or cargo, never as a namespace's init.
        assert!(!is_namespace_init(me).unwrap());
        assert!(is_namespace_init(-1).is_err());
    }
}
