//! runsbx.json: what runsbx keeps next to libcontainer's state.

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, RuntimeError};
use crate::spec::SandboxPolicy;

/// runsbx's own file in each container's state dir, beside libcontainer's.
pub(super) const SIDECAR: &str = "runsbx.json";

/// What runsbx keeps next to libcontainer's state.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Sidecar {
    /// Start time of init (clock ticks since boot, /proc/<pid>/stat field
    /// 22). Stops: a recycled PID making a dead container look alive, and
    /// `kill` signalling the stranger that now holds the PID.
    pub(super) starttime: Option<u64>,
    /// Init's host PID; with `starttime`, which init this record is of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) pid: Option<i32>,
    // No default: a record without it must not read as "no layers".
    pub(super) policy: SandboxPolicy,
    /// Made by a rootless runsbx without a delegated cgroup (or a
    /// foreground run that needed none): the container has no cgroup, so
    /// kill and delete find its processes through init (see rootless.rs).
    #[serde(default)]
    pub(super) no_cgroup: bool,
    /// Made by a rootless runsbx with a delegated cgroup: the container's
    /// cgroup, absolute in the cgroup v2 hierarchy (delegation.rs). Later
    /// commands show its parent in their shim, as the create saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) cgroup: Option<String>,
    /// The poststart and poststop hooks of the config it was created with,
    /// which runsbx runs itself (hooks.rs); libcontainer never saw them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) hooks: Option<crate::hooks::Later>,
}

/// Only the start time, on the path of every command that loads a
/// container: the policy part of the record is skipped, not built.
#[derive(Default, Deserialize)]
pub(super) struct SidecarHead {
    pub(super) starttime: Option<u64>,
    #[serde(default)]
    pub(super) pid: Option<i32>,
    #[serde(default)]
    pub(super) no_cgroup: bool,
    #[serde(default)]
    pub(super) cgroup: Option<String>,
}

impl SidecarHead {
    /// Whether kill, delete, ps and pause must do without a cgroup: none
    /// was made, or the delegated cgroup it was made in is gone (then the
    /// shim's cgroup view is not the container's: a cgroup found at its
    /// path there would be someone else's).
    pub(super) fn without_cgroup(&self) -> bool {
        self.no_cgroup || (self.cgroup.is_some() && crate::rootless::cgroup_gone())
    }
}

pub(super) fn proc_starttime(pid: i32) -> Option<u64> {
    procfs::process::Process::new(pid)
        .ok()?
        .stat()
        .ok()
        .map(|s| s.starttime)
}

pub(super) fn write_sidecar(dir: &Path, sidecar: &Sidecar) -> Result<()> {
    let path = dir.join(SIDECAR);
    let text = serde_json::to_vec(sidecar).map_err(|e| RuntimeError::Spec(e.to_string()))?;
    fs::write(&path, text).map_err(|e| RuntimeError::io(format!("write {}", path.display()), e))
}

pub(super) fn read_sidecar_strict(dir: &Path) -> Result<Sidecar> {
    let path = dir.join(SIDECAR);
    let text = fs::read(&path).map_err(|e| {
        RuntimeError::io(
            format!(
                "{} (the container's policy; not running without it)",
                path.display()
            ),
            e,
        )
    })?;
    serde_json::from_slice(&text).map_err(|e| {
        RuntimeError::Spec(format!(
            "{}: {e} (the container's policy; not running without it)",
            path.display()
        ))
    })
}

/// The hooks runsbx runs at start and delete (none: no record, or none to
/// run).
pub(super) fn read_hooks(dir: &Path) -> crate::hooks::Later {
    #[derive(Deserialize)]
    struct Hooks {
        #[serde(default)]
        hooks: Option<crate::hooks::Later>,
    }
    fs::read(dir.join(SIDECAR))
        .ok()
        .and_then(|t| serde_json::from_slice::<Hooks>(&t).ok())
        .and_then(|h| h.hooks)
        .unwrap_or_default()
}

pub(super) fn read_starttime(dir: &Path) -> SidecarHead {
    fs::read(dir.join(SIDECAR))
        .ok()
        .and_then(|t| serde_json::from_slice(&t).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_head() {
        let dir = tempfile::tempdir().unwrap();
        let written = Sidecar {
            starttime: Some(123),
            pid: Some(45),
            policy: SandboxPolicy::default(),
            no_cgroup: true,
            cgroup: None,
            hooks: None,
        };
        write_sidecar(dir.path(), &written).unwrap();
        let read = read_sidecar_strict(dir.path()).unwrap();
        assert_eq!(
            (read.starttime, read.pid, read.no_cgroup, read.cgroup),
            (Some(123), Some(45), true, None)
        );
        let head = read_starttime(dir.path());
        assert_eq!((head.starttime, head.pid), (Some(123), Some(45)));
        assert!(head.without_cgroup());
    }

    #[test]
    fn strict_read_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let missing = read_sidecar_strict(dir.path()).unwrap_err().to_string();
        assert!(
            missing.contains("(the container's policy; not running without it)"),
            "{missing}"
        );
        // No policy field: not "no layers".
        for text in ["{\"starttime\":1}", "", "{\"policy\":"] {
            fs::write(dir.path().join(SIDECAR), text).unwrap();
            let err = read_sidecar_strict(dir.path()).unwrap_err();
            assert!(matches!(err, RuntimeError::Spec(_)), "{text:?}: {err}");
            // The head alone reads as unknown, never as an error.
            let head = read_starttime(dir.path());
            assert_eq!(head.starttime, (text == "{\"starttime\":1}").then_some(1));
        }
    }
}
