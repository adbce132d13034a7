//! `kill`: signals to init, to a pid namespace without a cgroup, and the
//! pidfd-checked SIGKILL the orphan scan and delete use.

use std::os::fd::OwnedFd;

use libcontainer::container::{Container, ContainerStatus};
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::sidecar::read_starttime;
use super::{status_name, Owned, Runtime};
use crate::cgroup::{cgroup_exists, kill_cgroup_now, signal_cgroup};
use crate::error::{Result, RuntimeError};

impl Runtime {
    /// Whether the state dir of `o`'s id is still `o`'s: after a `delete
    /// --force` from elsewhere the id may name a new container, which the
    /// `_owned` calls below must not touch.
    pub(super) fn still_owned(&self, o: &Owned) -> bool {
        let head = read_starttime(&o.container.root);
        (head.pid, head.starttime) == (o.container.pid().map(|p| p.as_raw()), o.starttime)
    }

    /// SIGKILL for the container this process created (`--timeout`,
    /// `--rss-limit`): init first, a child of this process not yet reaped,
    /// so its PID cannot have been reused; then, while the id is still its
    /// own, every process of its cgroup at once (`kill_cgroup_now`: no
    /// freeze, which a task inside a long call would hold up). Without a
    /// cgroup init is PID 1 of the container's pid namespace
    /// (`verify_cgroup_free`): its death ends every process in it.
    pub fn kill_owned(&self, o: &Owned) -> Result<()> {
        signal_init(&o.container, Signal::SIGKILL)?;
        if !o.cgroup_free && self.still_owned(o) {
            let c = &o.container;
            // As `kill --all`: a stopped container's cgroup may be gone.
            if c.status() == ContainerStatus::Stopped && !cgroup_exists(c) {
                return Ok(());
            }
            return kill_cgroup_now(c.id(), c, &crate::cgroup::manager(c)?);
        }
        Ok(())
    }

    /// `kill ID 0`, as runc: succeeds when the container's init could be
    /// signalled (created, running or paused, and alive), sending nothing;
    /// with `all` (`kill -a ID 0`), also for a stopped container, as
    /// `--all` signals whatever is left of it.
    pub fn kill_check(&self, id: &str, all: bool) -> Result<()> {
        let c = self.load(id)?;
        if all && c.status() == ContainerStatus::Stopped {
            return Ok(());
        }
        let pid = killable(&c, id)?;
        nix::sys::signal::kill(pid, None).map_err(|e| RuntimeError::sys(format!("kill {id}"), e))
    }

    /// Signals init (or, with `all`, every process in the cgroup). Unlike
    /// libcontainer's kill, it writes no state: the status is read from the
    /// process when next loaded, so a signal that stops nothing (SIGWINCH)
    /// does not mark the container stopped, and a concurrent reader never
    /// sees a half-written state.json.
    pub fn kill(&self, id: &str, signal: Signal, all: bool) -> Result<()> {
        let c = self.load(id)?;
        let status = c.status();
        if all {
            if read_starttime(&self.dir(id)).without_cgroup() {
                return signal_pidns(&c, signal);
            }
            // As runc: the cgroup of a stopped container may be gone (systemd
            // removes an empty scope), and then there is nothing to signal.
            if status == ContainerStatus::Stopped && !cgroup_exists(&c) {
                return Ok(());
            }
            return signal_cgroup(id, &crate::cgroup::manager(&c)?, signal);
        }
        let head = read_starttime(&self.dir(id));
        if status == ContainerStatus::Stopped
            && signal == Signal::SIGKILL
            && head.shared_pidns
            && !head.without_cgroup()
            && cgroup_exists(&c)
        {
            // Init is gone, but without a pid namespace of its own that
            // ended none of the others: KILL still stops them all (runc 1.2,
            // `kill KILL [host pidns + init gone]`).
            return signal_cgroup(id, &crate::cgroup::manager(&c)?, signal);
        }
        let pid = killable(&c, id)?;
        // Opened first, so the wait below is on this process, not on a
        // newcomer that took its pid.
        let pidfd = match signal {
            Signal::SIGKILL => crate::sys::pidfd::pidfd_open(pid).ok(),
            _ => None,
        };
        send(pid, signal, || format!("kill {id}"))?;
        if signal == Signal::SIGKILL && head.shared_pidns && !head.without_cgroup() {
            // Without a pid namespace of its own, init's death ends none of
            // the container's other processes: a KILL meant to stop the
            // container would leave them running, outside any supervision
            // once the engine deletes it. As runc (1.2): all of its cgroup.
            signal_cgroup(id, &crate::cgroup::manager(&c)?, signal)?;
        }
        // A frozen process cannot die until thawed (cgroup v1).
        if status == ContainerStatus::Paused && signal == Signal::SIGKILL {
            use libcgroups::common::CgroupManager;
            crate::cgroup::manager(&c)?
                .freeze(libcgroups::common::FreezerState::Thawed)
                .map_err(|e| RuntimeError::cgroup(format!("kill {id}: thaw"), e))?;
        }
        // `kill ID KILL; delete ID` in a script: the kernel ends init's pid
        // namespace before init itself, which takes a moment, and a delete
        // in that moment finds it running. Up to a second, then as runc.
        if let Some(fd) = pidfd {
            use std::os::fd::AsRawFd;
            let _ = crate::sys::pidfd::exited_within(fd.as_raw_fd(), 1000);
        }
        Ok(())
    }
}

/// SIGKILLs `pid` if `still()` holds once a pidfd of it is open, through
/// that pidfd: checked after the pidfd pins the process, so a newcomer that
/// took the pid is never signalled. The pidfd of the killed process (to
/// wait on), `None` when it is gone or `still()` no longer holds.
pub(super) fn kill_checked(pid: Pid, still: impl Fn() -> bool) -> std::io::Result<Option<OwnedFd>> {
    use std::os::fd::AsRawFd;
    let pidfd = match crate::sys::pidfd::pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(None),
        Err(e) => return Err(e),
    };
    if !still() {
        return Ok(None);
    }
    match crate::sys::pidfd::signal(pidfd.as_raw_fd(), Signal::SIGKILL) {
        Ok(()) => Ok(Some(pidfd)),
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(None),
        Err(e) => Err(e),
    }
}

/// `kill --all` of a container without a cgroup: every process of its pid
/// namespace (and below), as the cgroup's list would give them. SIGKILL
/// goes to init alone: that ends the whole namespace at once, and a
/// process forking meanwhile cannot outrun it.
pub(super) fn signal_pidns(c: &Container, signal: Signal) -> Result<()> {
    if signal == Signal::SIGKILL || c.status() == ContainerStatus::Stopped {
        return signal_init(c, signal);
    }
    let Some(init) = c.pid() else { return Ok(()) };
    for pid in crate::pidns::members(init.as_raw())? {
        send(Pid::from_raw(pid), signal, || {
            format!("kill {} (pid {pid})", c.id())
        })?;
    }
    Ok(())
}

/// Init's pid, for a container that can be signalled.
fn killable(c: &Container, id: &str) -> Result<Pid> {
    if !c.can_kill() {
        return Err(RuntimeError::WrongState {
            id: id.to_string(),
            status: status_name(c.status()),
            action: "kill",
            wanted: "created, running or paused",
        });
    }
    c.pid().ok_or_else(|| RuntimeError::NoPid(id.to_string()))
}

/// `delete` of a container without a cgroup: signal its init. Every
/// container without one has its own pid namespace (`needs_no_cgroup`,
/// rootless.rs), so SIGKILL to init kills every process in it.
pub(super) fn signal_init(c: &Container, signal: Signal) -> Result<()> {
    if c.status() == ContainerStatus::Stopped {
        return Ok(());
    }
    let Some(pid) = c.pid() else { return Ok(()) };
    send(pid, signal, || format!("kill {}", c.id()))
}

/// Whether init still runs: alive, not a zombie, and (when recorded) still
/// the process that started at `starttime`. Not libcontainer's
/// refresh_status: a stranger that took init's pid would read as a live
/// init and block a delete for good.
pub(super) fn init_alive(pid: Pid, starttime: Option<u64>) -> bool {
    procfs::process::Process::new(pid.as_raw())
        .and_then(|p| p.stat())
        .is_ok_and(|s| !matches!(s.state, 'Z' | 'X') && starttime.is_none_or(|t| t == s.starttime))
}

/// Waits (up to 5 s) until init is a zombie or gone; false if it is not.
pub(super) fn wait_init_gone(c: &Container, starttime: Option<u64>) -> bool {
    let Some(pid) = c.pid() else { return true };
    for _ in 0..2500 {
        if !init_alive(pid, starttime) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    false
}

/// kill(2) where a process already gone (ESRCH) counts as signalled.
fn send(pid: Pid, signal: Signal, context: impl FnOnce() -> String) -> Result<()> {
    match nix::sys::signal::kill(pid, signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
        Err(e) => Err(RuntimeError::sys(context(), e)),
    }
}
