//! pidfds: open one, poll it for the process's exit, signal through it.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use nix::unistd::Pid;

pub fn pidfd_open(pid: Pid) -> std::io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor; we are its only owner.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// A pidfd of the calling process (close-on-exec, as every pidfd), which a
/// child it forks can poll to learn whether it still lives, in any pid
/// namespace (where getppid() says 0 for a parent outside).
pub fn open_self() -> std::io::Result<OwnedFd> {
    pidfd_open(nix::unistd::getpid())
}

/// Whether the process behind `pidfd` has exited (its pidfd polls readable).
pub fn exited(pidfd: RawFd) -> std::io::Result<bool> {
    exited_within(pidfd, 0)
}

/// Whether the process behind `pidfd` exits (or is a zombie) within
/// `timeout_ms` milliseconds.
pub fn exited_within(pidfd: RawFd, timeout_ms: i32) -> std::io::Result<bool> {
    let mut fds = [libc::pollfd {
        fd: pidfd,
        events: libc::POLLIN,
        revents: 0,
    }];
    // SAFETY: one valid pollfd, its length, a timeout in milliseconds.
    match unsafe { libc::poll(fds.as_mut_ptr(), 1, timeout_ms) } {
        n if n < 0 => Err(std::io::Error::last_os_error()),
        _ if fds[0].revents & libc::POLLNVAL != 0 => {
            Err(std::io::Error::from_raw_os_error(libc::EBADF))
        }
        _ => Ok(fds[0].revents & libc::POLLIN != 0),
    }
}

/// Sends `signal` through a pidfd: it reaches the process the pidfd was
/// opened on, never one that reused its pid.
pub fn signal(pidfd: RawFd, signal: nix::sys::signal::Signal) -> std::io::Result<()> {
    // SAFETY: a descriptor, a signal number, no siginfo, no flags.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd,
            signal as libc::c_int,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A process held by a pidfd: its signals reach it and never a process
/// that reused its pid.
pub struct Pidfd(OwnedFd);

impl Pidfd {
    pub fn open(pid: i32) -> std::io::Result<Self> {
        pidfd_open(Pid::from_raw(pid)).map(Self)
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        signal(self.0.as_raw_fd(), sig)
    }

    /// Whether the process exits (or is a zombie) within `timeout_ms`.
    pub fn exited_within(&self, timeout_ms: i32) -> std::io::Result<bool> {
        use std::os::fd::AsRawFd;
        exited_within(self.0.as_raw_fd(), timeout_ms)
    }
}
