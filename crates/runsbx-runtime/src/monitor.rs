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
use nix::unistd::Pid;

use crate::error::{Result, RuntimeError};
use crate::sys::wait::{wait4, Usage};

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
    /// Signals answered with SIGKILL to the workload instead of being
    /// passed on (see [`Monitor::kill_on`]).
    kill_on: Vec<Signal>,
    /// Run on SIGWINCH instead of forwarding it (see [`Monitor::on_winch`]).
    on_winch: Option<Box<dyn Fn()>>,
    /// Continue the workload whenever it stops (see
    /// [`Monitor::continue_stopped`]).
    continue_stopped: bool,
    /// Leave the signals blocked when dropped (see [`Monitor::keep_blocked`]).
    keep_blocked: bool,
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
        Ok(Self {
            sfd,
            old,
            kill_on: Vec::new(),
            on_winch: None,
            continue_stopped: false,
            keep_blocked: false,
        })
    }

    /// When dropped, leaves the signals blocked (they stay pending) instead
    /// of restoring the mask: the caller restores it once its own clean-up
    /// is done, so that a SIGTERM arriving meanwhile cannot end the process
    /// half way through it.
    pub fn keep_blocked(&mut self) {
        self.keep_blocked = true;
    }

    /// Turns these signals, when runsbx receives them, into SIGKILL for the
    /// workload. The workload is PID 1 of its pid namespace, where a signal
    /// it has no handler for is ignored: forwarded SIGTERM would not stop a
    /// program that never asked to handle it. `sandbox` uses this so that a
    /// supervisor's SIGTERM stops the sandbox.
    pub fn kill_on(mut self, signals: &[Signal]) -> Self {
        self.kill_on = signals.to_vec();
        self
    }

    /// Calls `f` on SIGWINCH rather than passing it on: a workload on a
    /// pty of runsbx's gets its SIGWINCH from the kernel when `f` resizes
    /// the pty (console/relay.rs).
    pub fn on_winch(mut self, f: impl Fn() + 'static) -> Self {
        self.on_winch = Some(Box::new(f));
        self
    }

    /// Sends SIGCONT to the workload whenever it is found stopped on a
    /// SIGCHLD (`sandbox --isolation landlock`).
    ///
    /// Stops: a workload without a pid namespace stopping itself (SIGSTOP,
    /// or SIGTSTP/SIGTTIN/SIGTTOU, to itself: the seccomp allowlist lets it
    /// signal itself) and sitting until `--timeout`. In the namespace mode
    /// it is PID 1 of its namespace, where the kernel drops those signals;
    /// here the stop lasts until runsbx reads the SIGCHLD. The state is
    /// read from /proc on every SIGCHLD rather than taken from its
    /// `ssi_code`: a second stop while the first SIGCHLD is pending is
    /// merged into it.
    pub fn continue_stopped(mut self) -> Self {
        self.continue_stopped = true;
        self
    }

    /// Waits for `pid` to end, forwarding signals. Every `tick`, `on_tick`
    /// may ask to stop waiting (it is expected to have killed the container).
    pub fn wait(
        &self,
        pid: Pid,
        tick: Option<Duration>,
        mut on_tick: impl FnMut() -> bool,
    ) -> Result<Finished> {
        // A stop before SIGCHLD was blocked (Monitor::new) sent no signal
        // this could read.
        if self.continue_stopped && is_stopped(pid) {
            let _ = kill(pid, Signal::SIGCONT);
        }
        loop {
            if let Some(done) = reap(pid, false)? {
                return Ok(done);
            }
            let timeout = tick
                .map(|t| PollTimeout::try_from(t).unwrap_or(PollTimeout::MAX))
                .unwrap_or(PollTimeout::NONE);
            let mut fds = [PollFd::new(self.sfd.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(0) => {
                    if on_tick() {
                        if let Some(done) = reap(pid, true)? {
                            return Ok(done);
                        }
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
                if self.kill_on.contains(&sig) {
                    let _ = kill(pid, Signal::SIGKILL);
                } else if let (Signal::SIGWINCH, Some(f)) = (sig, &self.on_winch) {
                    f();
                } else if sig != Signal::SIGCHLD {
                    let _ = kill(pid, sig);
                } else if self.continue_stopped && is_stopped(pid) {
                    let _ = kill(pid, Signal::SIGCONT);
                }
            }
        }
    }
}

/// How the workload ended, with its resource usage.
#[derive(Debug, Clone, Copy)]
pub struct Finished {
    pub exit: Exit,
    pub usage: Usage,
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if !self.keep_blocked {
            let _ =
                nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&self.old), None);
        }
    }
}

/// Whether `pid` is in the stopped state (`T` in /proc/<pid>/stat).
fn is_stopped(pid: Pid) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command name, which may hold ") ".
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('T'))
    })
}

fn reap(pid: Pid, block: bool) -> Result<Option<Finished>> {
    loop {
        let Some(r) =
            wait4(pid, block).map_err(|e| RuntimeError::io(format!("wait for pid {pid}"), e))?
        else {
            return Ok(None);
        };
        let exit = if libc::WIFEXITED(r.status) {
            Exit::Code(libc::WEXITSTATUS(r.status))
        } else if libc::WIFSIGNALED(r.status) {
            Exit::Signal(libc::WTERMSIG(r.status))
        } else {
            continue;
        };
        return Ok(Some(Finished {
            exit,
            usage: r.usage,
        }));
    }
}
