//! `delete`: stop what is left of the container and remove its cgroup and
//! state dir.

use std::fs;
use std::path::Path;

use libcontainer::container::{Container, ContainerStatus};
use nix::sys::signal::Signal;

use super::kill::{init_alive, kill_checked, signal_init, wait_init_gone};
use super::lock::{remove_stale_reports, CreateLock, LockFile};
use super::sidecar::{read_hooks, read_starttime};
use super::{status_name, validate_id, Owned, Runtime};
use crate::cgroup::{cgroup_exists, kill_cgroup_path, signal_cgroup};
use crate::error::{Result, RuntimeError};

impl Runtime {
    /// `delete --force` of the container this process created, once it has
    /// reaped init. Without a cgroup (nor an Intel RDT group) that is the
    /// poststop hooks and the state dir: init was PID 1 of its own pid
    /// namespace, which the kernel empties before init's exit can be reaped.
    /// With one, that emptied cgroup is removed directly
    /// (`cgroup::remove_if_empty`); a cgroup still holding processes (no
    /// pid namespace of its own) takes the full delete, which kills them.
    pub fn delete_owned(&self, o: &Owned) -> Result<()> {
        if !self.still_owned(o) {
            return Ok(());
        }
        if o.container.intel_rdt_dir().is_some() {
            return self.delete(o.container.id(), true);
        }
        if o.cgroup_free || crate::cgroup::remove_if_empty(&o.container) {
            return Self::finish_delete(&o.container);
        }
        self.delete(o.container.id(), true)
    }

    /// Deletes a container by one of four strategies: no state.json (a
    /// create in flight or killed half-way), an unloadable state.json, no
    /// cgroup (init stands for the container), or its cgroup.
    pub fn delete(&self, id: &str, force: bool) -> Result<()> {
        validate_id(id)?;
        let dir = self.dir(id);
        if !dir.join("state.json").exists() {
            return self.delete_stateless(id, &dir, force);
        }
        self.stop_dead_create(id, force)?;
        let c = match self.load(id) {
            Ok(c) => c,
            Err(e) if force && !matches!(e, RuntimeError::NotFound(_)) => {
                return self.remove_unloadable(id, &dir, e)
            }
            Err(e) => return Err(e),
        };
        let status = c.status();
        if !force && matches!(status, ContainerStatus::Running | ContainerStatus::Paused) {
            return Err(RuntimeError::WrongState {
                id: id.to_string(),
                status: status_name(status),
                action: "delete",
                wanted: "stopped or created (or --force)",
            });
        }
        let head = read_starttime(&dir);
        let no_cgroup = head.without_cgroup();
        // The engines' usual delete: the workload has exited and its cgroup
        // is empty. Anything still in it takes the full path below.
        if !no_cgroup
            && status == ContainerStatus::Stopped
            && c.intel_rdt_dir().is_none()
            && crate::cgroup::remove_if_empty(&c)
        {
            return Self::finish_delete(&c);
        }
        if no_cgroup {
            Self::stop_init(&c, head.starttime)?;
            if c.intel_rdt_dir().is_none() {
                return Self::finish_delete(&c);
            }
        }
        self.delete_with_cgroup(c, head.starttime, no_cgroup, force)
    }

    /// No state.json: a create in flight, or one killed half-way. Only the
    /// latter's leftovers are ours to remove.
    fn delete_stateless(&self, id: &str, dir: &Path, force: bool) -> Result<()> {
        if !dir.exists() && !force {
            return Err(RuntimeError::NotFound(id.to_string()));
        }
        if !self.root.is_dir() {
            return Ok(());
        }
        let Some(mut lock) = CreateLock::try_take(&self.root, id)? else {
            return Err(busy(id));
        };
        lock.kill_orphans();
        // Its init may live on, waiting for a start that never comes, in
        // the cgroup libcontainer's youki_config.json names.
        if let Ok(config) = libcontainer::config::YoukiConfig::load(dir) {
            kill_cgroup_path(id, config.cgroup_path);
        }
        let _ = fs::remove_dir_all(dir);
        remove_stale_reports(&self.root, id);
        Ok(())
    }

    /// A create or run killed after libcontainer saved its first state
    /// (before it forked) left its lock file, and what it forked may
    /// still be about to make cgroups, which must go before the clean-up
    /// that follows. A create still running holds the lock: only --force goes
    /// on. With --force the lock is taken even without a file, so that no
    /// create starts while stale report FIFOs and config views go.
    fn stop_dead_create(&self, id: &str, force: bool) -> Result<()> {
        let found = match CreateLock::try_take_existing(&self.root, id)? {
            LockFile::Absent if force => match CreateLock::try_take(&self.root, id)? {
                Some(lock) => LockFile::Taken(lock),
                None => LockFile::Held,
            },
            found => found,
        };
        match found {
            LockFile::Taken(mut lock) => {
                lock.kill_orphans();
                remove_stale_reports(&self.root, id);
            }
            LockFile::Held if !force => return Err(busy(id)),
            LockFile::Held | LockFile::Absent => {}
        }
        Ok(())
    }

    /// A container without a cgroup: its init stands for it (a SIGKILL to
    /// init ends its whole pid namespace; see rootless.rs).
    fn stop_init(c: &Container, starttime: Option<u64>) -> Result<()> {
        if c.status() != ContainerStatus::Stopped {
            signal_init(c, Signal::SIGKILL)?;
        }
        if !wait_init_gone(c, starttime) {
            return Err(RuntimeError::StillAlive(c.id().to_string()));
        }
        Ok(())
    }

    /// A container with a cgroup (or an Intel RDT group): kill what is in
    /// it, wait for it to empty, remove it, then the rest of the delete.
    fn delete_with_cgroup(
        &self,
        mut c: Container,
        starttime: Option<u64>,
        no_cgroup: bool,
        force: bool,
    ) -> Result<()> {
        let id = c.id().to_string();
        let id = id.as_str();
        let status = c.status();
        // One manager for the whole delete: building one scans mountinfo
        // once per controller.
        let manager = match no_cgroup {
            true => None,
            false => match crate::cgroup::manager(&c) {
                Ok(m) => Some(m),
                Err(e) if status != ContainerStatus::Stopped => return Err(e),
                Err(_) => None,
            },
        };
        if let Some(m) = &manager {
            stop_cgroup(&c, m, starttime)?;
            // Also when stopped: a dead init not yet reaped (its runsbx was
            // killed, the host's init reaps it later) still holds the cgroup.
            crate::cgroup::wait_empty(m);
            crate::cgroup::remove_sub_cgroups(&c);
            if !c.systemd() {
                crate::cgroup::remove_hybrid(&c);
            }
        }
        // A zombie the host's init has not reaped yet keeps a v1 cgroup busy
        // even when no pid is listed: retry the removal for a while.
        let mut tries = 0;
        let retry = |tries: &mut u32, e: &dyn std::fmt::Display| {
            *tries += 1;
            tracing::debug!(id, %e, "delete: retrying");
            std::thread::sleep(std::time::Duration::from_millis(250));
        };
        match manager {
            // The manager at hand removes the cgroup: libcontainer's delete
            // would build a second one (a mountinfo scan per v1 controller).
            // It alone cleans up an Intel RDT group.
            Some(m) if c.intel_rdt_dir().is_none() => {
                use libcgroups::common::CgroupManager;
                loop {
                    match m.remove() {
                        Ok(()) => break,
                        Err(e) if tries < 40 => retry(&mut tries, &e),
                        Err(e) => {
                            return Err(RuntimeError::cgroup(
                                format!("container {id:?}: remove cgroup"),
                                e,
                            ))
                        }
                    }
                }
                Self::finish_delete(&c)
            }
            _ => {
                // libcontainer's delete runs no hook: it never saw them.
                let hooks = read_hooks(&c.root);
                loop {
                    match c.delete(force) {
                        Ok(()) => {
                            Self::poststop(&c, hooks);
                            return Ok(());
                        }
                        Err(e @ libcontainer::error::LibcontainerError::CgroupManager(_))
                            if tries < 40 =>
                        {
                            retry(&mut tries, &e)
                        }
                        Err(e) => return Err(RuntimeError::lc(format!("container {id:?}"), e)),
                    }
                }
            }
        }
    }

    /// The end of libcontainer's delete, once init is gone
    /// (`wait_init_gone`) and so is the cgroup, if the container had one:
    /// run the poststop hooks, remove the state dir.
    fn finish_delete(c: &Container) -> Result<()> {
        Self::poststop(c, read_hooks(&c.root));
        match fs::remove_dir_all(&c.root) {
            // A concurrent delete (the run's own, after a `delete --force`)
            // got there first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r.map_err(|e| RuntimeError::io(format!("remove {}", c.root.display()), e)),
        }
    }

    /// The poststop hooks, given the state with status `stopped`, in
    /// runsbx's own namespaces. One that fails is a warning, after which the
    /// others and the delete go on (the runtime-spec's rule).
    fn poststop(c: &Container, hooks: crate::hooks::Later) {
        let state = super::hook_state(c, "stopped");
        crate::hooks::run_warn("poststop", &hooks.poststop, &state);
    }

    /// `delete --force` of a container whose state.json cannot be loaded
    /// (emptied, cut short or edited by hand): kills what is in its cgroup,
    /// found through libcontainer's youki_config.json, and removes the state
    /// dir. An unreadable youki_config.json means the create died before it
    /// forked (libcontainer writes that file first).
    fn remove_unloadable(&self, id: &str, dir: &Path, cause: RuntimeError) -> Result<()> {
        match libcontainer::config::YoukiConfig::load(dir) {
            Ok(config) => {
                tracing::warn!(id, %cause, "state unreadable: killing the cgroup and removing the state dir");
                kill_cgroup_path(id, config.cgroup_path);
            }
            Err(e) => {
                // libcontainer writes youki_config.json before it forks: a
                // create killed while (or before) writing it forked nothing.
                // Clear the default cgroup path anyway, in case.
                tracing::warn!(id, %cause, %e, "state and config unreadable: create died before forking");
                kill_cgroup_path(id, libcontainer::utils::get_cgroup_path(&None, id));
            }
        }
        fs::remove_dir_all(dir)
            .map_err(|e| RuntimeError::io(format!("remove {}", dir.display()), e))
    }
}

/// Kills what is in the cgroup of `c` before its removal.
fn stop_cgroup(
    c: &Container,
    m: &libcgroups::common::AnyCgroupManager,
    starttime: Option<u64>,
) -> Result<()> {
    let id = c.id();
    if c.status() != ContainerStatus::Stopped {
        // Kill everything first and wait for the cgroup to empty:
        // libcontainer removes the cgroup right after signalling, which
        // fails while the processes are still exiting.
        match signal_cgroup(id, m, Signal::SIGKILL) {
            // A create killed before it made the cgroup (its orphans
            // were stopped above): nothing is in it. Init is signalled
            // itself only when its start time was recorded: a bare pid
            // may be someone else's by now (an init that died since).
            Err(_) if !cgroup_exists(c) => {
                if let (Some(pid), Some(t)) = (c.pid(), starttime) {
                    let _ = kill_checked(pid, || init_alive(pid, Some(t)));
                }
            }
            r => r?,
        }
    } else {
        // "Stopped" can be wrong: a create killed before it recorded
        // init's pid reads as stopped while init waits for `start`; and
        // without a pid namespace init's children outlive it. Frozen
        // first, so that a forking chain cannot outrun the kill.
        // Best effort: a stopped container's cgroup may be gone, and
        // an empty one needs no freeze.
        use libcgroups::common::CgroupManager;
        if m.get_all_pids().is_ok_and(|p| !p.is_empty()) {
            let _ = signal_cgroup(id, m, Signal::SIGKILL);
        }
    }
    Ok(())
}

fn busy(id: &str) -> RuntimeError {
    RuntimeError::Busy {
        id: id.to_string(),
        action: "delete",
    }
}
