//! `--pidfd-socket`: hand a pidfd of the container process to the caller
//! over a unix socket, as runc does for containerd.

use std::io::IoSlice;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::sys::socket::{
    connect, sendmsg, socket, AddressFamily, ControlMessage, MsgFlags, SockFlag, SockType, UnixAddr,
};
use nix::unistd::Pid;

use crate::error::{Result, RuntimeError};
use crate::sys::pidfd::pidfd_open;

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
