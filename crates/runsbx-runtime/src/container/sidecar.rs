//! runsbx.json: what runsbx keeps next to libcontainer's state.

use std::fs;
use std::path::Path;

use libcontainer::oci_spec::runtime::LinuxResources;
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
    /// The container's `linux.resources`: the spec's at create, then as
    /// each `update` left them (read by the next update, which merges into
    /// them as runc does). Written even when empty: a record without the
    /// key was made before runsbx kept it (the bundle's then stand in).
    #[serde(default)]
    pub(super) resources: Option<LinuxResources>,
    /// The poststart and poststop hooks of the config it was created with,
    /// which runsbx runs itself (hooks.rs); libcontainer never saw them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) hooks: Option<crate::hooks::Later>,
    /// No pid namespace of its own (the host's, or one joined): init's
    /// death does not end the container's other processes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) shared_pidns: bool,
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
    #[serde(default)]
    pub(super) shared_pidns: bool,
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

/// The resources runsbx.json records (`Ok(None)`: none), or `Err` with
/// the path when the record predates them or cannot be read.
pub(super) fn recorded_resources(
    dir: &Path,
) -> std::result::Result<Option<LinuxResources>, std::path::PathBuf> {
    let path = dir.join(SIDECAR);
    let value: serde_json::Value = fs::read(&path)
        .ok()
        .and_then(|t| serde_json::from_slice(&t).ok())
        .ok_or_else(|| path.clone())?;
    match value.get("resources") {
        Some(r) => serde_json::from_value(r.clone()).map_err(|_| path),
        None => Err(path),
    }
}

/// Replaces the resources runsbx.json records, leaving the rest of the
/// record as it is (the policy is copied as JSON, never rebuilt), through
/// a temporary file renamed over it: a reader sees the old record or the
/// new one.
pub(super) fn record_resources(dir: &Path, resources: &LinuxResources) -> Result<()> {
    let path = dir.join(SIDECAR);
    let ctx = |what: &str| format!("{what} {}", path.display());
    let text = fs::read(&path).map_err(|e| RuntimeError::io(ctx("read"), e))?;
    let mut value: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| RuntimeError::Spec(format!("{}: {e}", ctx("read"))))?;
    let Some(record) = value.as_object_mut() else {
        return Err(RuntimeError::Spec(format!(
            "{}: not a JSON object",
            ctx("read")
        )));
    };
    let resources =
        serde_json::to_value(resources).map_err(|e| RuntimeError::Spec(e.to_string()))?;
    record.insert("resources".into(), resources);
    let tmp = dir.join(format!(".{SIDECAR}.update"));
    let text = serde_json::to_vec(&value).map_err(|e| RuntimeError::Spec(e.to_string()))?;
    let written = fs::write(&tmp, text).and_then(|_| fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(RuntimeError::io(ctx("write"), e));
    }
    Ok(())
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
            resources: None,
            hooks: None,
            shared_pidns: true,
        };
        write_sidecar(dir.path(), &written).unwrap();
        let read = read_sidecar_strict(dir.path()).unwrap();
        assert_eq!(
            (read.starttime, read.pid, read.no_cgroup, read.cgroup),
            (Some(123), Some(45), true, None)
        );
        let head = read_starttime(dir.path());
        assert!(head.shared_pidns);
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

    #[test]
    fn resources_are_replaced_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let old = r#"{"starttime":7,"policy":{"landlock":[{"x":1}]},"no_cgroup":false}"#;
        fs::write(dir.path().join(SIDECAR), old).unwrap();
        // A record from before resources were kept: the caller falls back.
        assert!(recorded_resources(dir.path()).is_err());
        let r: LinuxResources =
            serde_json::from_value(serde_json::json!({ "pids": { "limit": 9 } })).unwrap();
        record_resources(dir.path(), &r).unwrap();
        assert_eq!(recorded_resources(dir.path()).unwrap(), Some(r));
        let now: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.path().join(SIDECAR)).unwrap()).unwrap();
        assert_eq!(
            now["policy"],
            serde_json::json!({ "landlock": [{ "x": 1 }] })
        );
        assert_eq!(now["starttime"], 7);
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "{left:?}");
        // Recorded as none (a spec without linux.resources).
        fs::write(
            dir.path().join(SIDECAR),
            r#"{"policy":{},"resources":null}"#,
        )
        .unwrap();
        assert_eq!(recorded_resources(dir.path()).unwrap(), None);
    }
}
