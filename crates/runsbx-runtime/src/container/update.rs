//! `update` and `events`: a container's cgroup limits changed, and its
//! usage read, as runc does both.

use std::time::{Duration, Instant};

use libcontainer::container::{Container, ContainerStatus};
use libcontainer::oci_spec::runtime::LinuxResources;

use super::sidecar::{read_starttime, record_resources, recorded_resources};
use super::{require, Runtime};
use crate::cgroup::{self, no_cgroup};
use crate::error::{Result, RuntimeError};
use crate::events::Event;
use crate::resources::{self, ResourceUpdate};
use crate::spec::Bundle;

/// How often `events` looks for an OOM kill and for the container's end.
const EVENTS_TICK: Duration = Duration::from_millis(100);

impl Runtime {
    /// Merges `u` into the container's resources, writes them to its
    /// cgroup and records them for the next update. On a write that fails
    /// half-way, the recorded resources are written back (as runc does)
    /// and the record stays as it was.
    pub fn update(&self, id: &str, u: &ResourceUpdate) -> Result<()> {
        let c = self.with_cgroup(id, "update", "apply resources to")?;
        let dir = self.dir(id);
        let old = match recorded_resources(&dir) {
            Ok(r) => r,
            // Made by a runsbx that did not record them: the bundle's.
            Err(_) => Bundle::load(c.bundle())?
                .spec
                .linux()
                .as_ref()
                .and_then(|l| l.resources().clone()),
        };
        let new = resources::merge(old.as_ref(), u);
        let oom = |r: &LinuxResources| {
            r.memory()
                .and_then(|m| m.disable_oom_killer())
                .unwrap_or(false)
        };
        // One manager for both writes: building one scans mountinfo once per
        // v1 controller.
        let m = cgroup::manager(&c)?;
        if let Err(e) = cgroup::apply_resources(&c, &m, &resources::to_apply(&new), oom(&new)) {
            if let Some(old) = &old {
                let restored = cgroup::apply_resources(&c, &m, &resources::to_apply(old), oom(old));
                if let Err(r) = restored {
                    tracing::warn!("update {id}: restoring the old resources: {r}");
                }
            }
            return Err(e);
        }
        record_resources(&dir, &new)
    }

    /// `events --stats`: one stats event.
    pub fn stats_event(&self, id: &str) -> Result<Event> {
        let c = self.with_cgroup(id, "events", "read statistics from")?;
        Ok(Event::stats(id, &cgroup::stats(&c, &cgroup::manager(&c)?)?))
    }

    /// `events`: a stats event every `interval` and an `oom` event for
    /// every OOM kill, handed to `emit`, until the container stops or is
    /// deleted (then Ok) or `emit` fails (its error).
    pub fn events(
        &self,
        id: &str,
        interval: Duration,
        emit: &mut dyn FnMut(&Event) -> std::io::Result<()>,
    ) -> Result<()> {
        let io = |e| RuntimeError::io(format!("events {id}: write"), e);
        let c = self.with_cgroup(id, "events", "read statistics from")?;
        // Built once: a manager scans mountinfo once per v1 controller.
        let m = cgroup::manager(&c)?;
        let mut ooms = cgroup::oom_kills(&c);
        let mut next = Instant::now();
        loop {
            // The count is read after the status: a kill that ends the
            // container is counted before the container reads as stopped.
            let live = self
                .load(id)
                .is_ok_and(|c| c.status() != ContainerStatus::Stopped);
            let kills = cgroup::oom_kills(&c);
            for _ in ooms..kills {
                emit(&Event::oom(id)).map_err(io)?;
            }
            ooms = ooms.max(kills);
            if !live {
                return Ok(());
            }
            if Instant::now() >= next {
                match cgroup::stats(&c, &m) {
                    Ok(s) => emit(&Event::stats(id, &s)).map_err(io)?,
                    // As runc: a failed read is logged and the next tried.
                    Err(e) => tracing::warn!("{e}"),
                }
                next += interval;
            }
            std::thread::sleep(EVENTS_TICK.min(next.saturating_duration_since(Instant::now())));
        }
    }

    /// A container that is not stopped and has a cgroup, for `action`.
    fn with_cgroup(&self, id: &str, action: &'static str, what: &'static str) -> Result<Container> {
        let c = self.load(id)?;
        require(&c, action, "created, running or paused", |s| {
            s != ContainerStatus::Stopped
        })?;
        if read_starttime(&self.dir(id)).without_cgroup() {
            return Err(no_cgroup(id, what));
        }
        Ok(c)
    }
}
