//! `--pidfd-socket`: hand a pidfd of the container process to the caller
//! over a unix socket, as runc does for containerd.

use std::io::IoSlice;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use nix::sys::socket::{
    connect, sendmsg, socket, AddressFamily, ControlMessage, MsgFlags, SockFlag, SockType, UnixAddr,
};
use nix::unistd::Pid;

use crate::error::{Result, RuntimeError};

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
pub fn open_self() -> Result<OwnedFd> {
    pidfd_open(nix::unistd::getpid()).map_err(|e| RuntimeError::io("pidfd_open(self)", e))
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

/// `--pidfd-socket`: the unix socket a pidfd of the container's process
/// goes to. Connected before anything is made, as runc dials it first: a
/// socket that cannot be reached fails the command with nothing created or
/// started. The pidfd is sent once the process exists ([`Self::send`]).
pub struct PidfdSocket {
    sock: OwnedFd,
    path: PathBuf,
}

impl PidfdSocket {
    pub fn connect(path: &Path) -> Result<Self> {
        let ctx = || format!("--pidfd-socket {}", path.display());
        let sock = socket(
            AddressFamily::Unix,
            SockType::Stream,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(|e| RuntimeError::sys(ctx(), e))?;
        let addr = UnixAddr::new(path).map_err(|e| RuntimeError::sys(ctx(), e))?;
        connect(sock.as_raw_fd(), &addr).map_err(|e| RuntimeError::sys(ctx(), e))?;
        Ok(Self {
            sock,
            path: path.to_path_buf(),
        })
    }

    /// Sends a pidfd of `pid` (SCM_RIGHTS, with the name "pidfd").
    pub fn send(&self, pid: Pid) -> Result<()> {
        let ctx = || format!("--pidfd-socket {}", self.path.display());
        let pidfd = pidfd_open(pid).map_err(|e| RuntimeError::io(ctx(), e))?;
        let fds = [pidfd.as_raw_fd()];
        let name = b"pidfd";
        sendmsg::<()>(
            self.sock.as_raw_fd(),
            &[IoSlice::new(name)],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::empty(),
            None,
        )
        .map_err(|e| RuntimeError::sys(ctx(), e))?;
        Ok(())
    }
}
