use std::path::PathBuf;

use super::{Result, SuperviseError};
use crate::guard::{self, Expect};

/// What every generated sandbox must look like from the host.
pub fn sandbox_posture() -> Expect {
    Expect {
        no_new_privs: true,
        seccomp: true,
        no_caps: true,
        not_host_root: true,
        namespaces: vec!["user", "pid", "net", "mnt", "ipc", "uts"],
        max_fd: Some(2),
        ..Default::default()
    }
}

/// `expect` without namespaces (`--isolation landlock`), checked after
/// exec: the fd table is the workload's by then, and the bounding set may
/// remain unless runsbx ran as root (an ordinary user cannot drop it; no
/// user namespace does).
pub(super) fn without_namespaces(expect: &Expect, was_root: bool) -> Expect {
    Expect {
        namespaces: Vec::new(),
        max_fd: None,
        bounding_may_remain: !was_root,
        ..expect.clone()
    }
}

/// Fails, naming what is off, unless `pid` matches `expect`.
pub fn check_posture(pid: i32, expect: &Expect) -> Result<()> {
    // A live thread's view: the leader may have ended while others run.
    let dir = guard::live_task(pid).unwrap_or_else(|| PathBuf::from(format!("/proc/{pid}")));
    let off = guard::posture(&dir, expect).map_err(SuperviseError::PostureUnreadable)?;
    if !off.is_empty() {
        return Err(SuperviseError::Posture(off));
    }
    Ok(())
}
