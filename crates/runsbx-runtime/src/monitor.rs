//! Waiting for a container's init in the foreground (`run`, `sandbox`):
//! forward the signals runsbx receives to it and reap it.
//!
//! Signals are taken through a signalfd, blocked only after libcontainer has
//! forked (a blocked mask would be inherited by the workload).

use std::os::fd::AsFd;
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use crate::error::{Result, RuntimeError};

/// Signals passed on to the workload, as runc does (not SIGCHLD, which is
/// ours, nor the ones that stop or kill runsbx regardless).
const FORWARDED: &[Signal] = &[
    Signal::SIGHUP,
    Signal::SIGINT,
    Signal::SIGQUIT,
    Signal::SIGTERM,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGALRM,
    Signal::SIGCONT,
    Signal::SIGWINCH,
    Signal::SIGTSTP,
    Signal::SIGTTIN,
    Signal::SIGTTOU,
    Signal::SIGVTALRM,
    Signal::SIGPROF,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    /// The shell convention runc follows: the code, or 128 + signal number.
    pub fn status(self) -> i32 {
        match self {
            Exit::Code(c) => c,
            Exit::Signal(s) => 128 + s,
        }
    }
}

pub struct Monitor {
    sfd: SignalFd,
    old: SigSet,
}

impl Monitor {
    pub fn new() -> Result<Self> {
        let mut set = SigSet::empty();
        set.add(Signal::SIGCHLD);
        for s in FORWARDED {
            set.add(*s);
        }
        let mut old = SigSet::empty();
        nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), Some(&mut old))
            .map_err(|e| RuntimeError::sys("block signals", e))?;
        let sfd = SignalFd::with_flags(&set, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
            .map_err(|e| RuntimeError::sys("signalfd", e))?;
        Ok(Self { sfd, old })
    }

    /// Waits for `pid` to end, forwarding signals. Every `tick`, `on_tick`
    /// may ask to stop waiting (it is expected to kill the container).
    pub fn wait(
        &self,
        pid: Pid,
        tick: Option<Duration>,
        mut on_tick: impl FnMut() -> bool,
    ) -> Result<Exit> {
        loop {
            if let Some(exit) = reap(pid)? {
                return Ok(exit);
            }
            let timeout = tick
                .map(|t| PollTimeout::try_from(t).unwrap_or(PollTimeout::MAX))
                .unwrap_or(PollTimeout::NONE);
            let mut fds = [PollFd::new(self.sfd.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(0) => {
                    if on_tick() {
                        // The callback killed the container; reap it.
                        return wait_blocking(pid);
                    }
                    continue;
                }
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(RuntimeError::sys("poll signalfd", e)),
            }
            while let Ok(Some(info)) = self.sfd.read_signal() {
                let Ok(sig) = Signal::try_from(info.ssi_signo as i32) else {
                    continue;
                };
                if sig != Signal::SIGCHLD {
                    let _ = kill(pid, sig);
                }
            }
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&self.old), None);
    }
}

fn decode(status: WaitStatus) -> Option<Exit> {
    match status {
        WaitStatus::Exited(_, code) => Some(Exit::Code(code)),
        WaitStatus::Signaled(_, sig, _) => Some(Exit::Signal(sig as i32)),
        _ => None,
    }
}

fn reap(pid: Pid) -> Result<Option<Exit>> {
    loop {
        match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return Ok(None),
            Ok(s) => {
                if let Some(exit) = decode(s) {
                    return Ok(Some(exit));
                }
            }
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(RuntimeError::sys(format!("wait for pid {pid}"), e)),
        }
    }
}

fn wait_blocking(pid: Pid) -> Result<Exit> {
    loop {
        match waitpid(pid, None) {
            Ok(s) => {
                if let Some(exit) = decode(s) {
                    return Ok(exit);
                }
            }
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(RuntimeError::sys(format!("wait for pid {pid}"), e)),
        }
    }
}
