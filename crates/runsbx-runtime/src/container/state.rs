//! `state`, `list`, `ps`, `pause`, `resume`: reading a container, and
//! freezing its cgroup.

use std::fs;

use libcontainer::container::{Container, ContainerStatus};
use nix::unistd::Pid;

use super::sidecar::read_starttime;
use super::{require, status_name, Owned, Runtime, StateView};
use crate::cgroup::no_cgroup;
use crate::error::{Result, RuntimeError};
use crate::spec::Bundle;

impl Runtime {
    /// Whether the kernel OOM-killed something in the memory cgroup of the
    /// container this process created (see [`crate::cgroup::oom_killed`]):
    /// one without a cgroup has no OOM record to read.
    pub fn oom_killed_owned(&self, o: &Owned) -> bool {
        !o.cgroup_free
            && self.still_owned(o)
            && self
                .load(o.container.id())
                .is_ok_and(|c| crate::cgroup::oom_killed(&c))
    }

    pub fn state(&self, id: &str) -> Result<StateView> {
        let c = self.load(id)?;
        Ok(self.view(&c))
    }

    fn view(&self, c: &Container) -> StateView {
        let mut status = c.status();
        let pid = match status {
            ContainerStatus::Stopped => 0,
            _ => c.pid().map(|p| p.as_raw()).unwrap_or(0),
        };
        // Mid-create (prestart and createRuntime hooks run then): no pid
        // recorded yet, which libcontainer reads as stopped, and the bundle
        // recorded is create's config copy until create writes the real one.
        let copy = crate::rootless::ConfigCopy::real_bundle(c.bundle(), &self.root);
        if pid == 0 && copy.is_some() {
            status = ContainerStatus::Creating;
        }
        let bundle = copy.unwrap_or_else(|| c.bundle().clone());
        let rootfs = Bundle::load(&bundle)
            .map(|b| b.rootfs())
            .unwrap_or_else(|_| bundle.join("rootfs"));
        StateView {
            oci_version: super::OCI_VERSION.into(),
            id: c.id().to_string(),
            pid,
            status: status_name(status),
            bundle,
            rootfs,
            created: c
                .created()
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true))
                .unwrap_or_default(),
            owner: c
                .creator()
                .map(|o| o.to_string_lossy().into_owned())
                .unwrap_or_default(),
            annotations: c.state.annotations.clone().filter(|a| !a.is_empty()),
        }
    }

    pub fn pause(&self, id: &str) -> Result<()> {
        let mut c = self.load(id)?;
        if read_starttime(&self.dir(id)).without_cgroup() {
            return Err(no_cgroup(id, "freeze it"));
        }
        require(&c, "pause", "running", |s| s == ContainerStatus::Running)?;
        c.pause()
            .map_err(|e| RuntimeError::lc(format!("container {id:?}"), e))
    }

    pub fn resume(&self, id: &str) -> Result<()> {
        let mut c = self.load(id)?;
        if read_starttime(&self.dir(id)).without_cgroup() {
            return Err(no_cgroup(id, "thaw it"));
        }
        require(&c, "resume", "paused", |s| s == ContainerStatus::Paused)?;
        c.resume()
            .map_err(|e| RuntimeError::lc(format!("container {id:?}"), e))
    }

    /// Every container under the root, oldest first. Entries that cannot be
    /// loaded (a create killed half-way) are skipped.
    pub fn list(&self) -> Result<Vec<StateView>> {
        let entries = match fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(RuntimeError::io(format!("read {}", self.root.display()), e)),
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str() else { continue };
            if id.starts_with('.') {
                continue;
            }
            if let Ok(c) = self.load(id) {
                out.push(self.view(&c));
            }
        }
        out.sort_by(|a, b| a.created.cmp(&b.created));
        Ok(out)
    }

    /// PIDs of every process in the container's cgroup.
    pub fn pids(&self, id: &str) -> Result<Vec<i32>> {
        use libcgroups::common::CgroupManager;
        let c = self.load(id)?;
        if read_starttime(&self.dir(id)).without_cgroup() {
            return match (c.status(), c.pid()) {
                (ContainerStatus::Stopped, _) | (_, None) => Ok(Vec::new()),
                (_, Some(pid)) => crate::pidns::members(pid.as_raw()),
            };
        }
        let mut pids: Vec<i32> = crate::cgroup::manager(&c)?
            .get_all_pids()
            .map_err(|e| RuntimeError::cgroup(format!("ps {id}: cgroup"), e))?
            .into_iter()
            .map(Pid::as_raw)
            .collect();
        pids.sort_unstable();
        Ok(pids)
    }
}
