//! `--pidfd-socket`: hand a pidfd of the container process to the caller
//! over a unix socket, as runc does for containerd.

use std::io::IoSlice;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use nix::sys::socket::{
    connect, sendmsg, socket, AddressFamily, ControlMessage, MsgFlags, SockFlag, SockType, UnixAddr,
};
use nix::unistd::Pid;

use crate::error::{Result, RuntimeError};

fn pidfd_open(pid: Pid) -> std::io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor; we are its only owner.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

pub fn send(socket_path: &Path, pid: Pid) -> Result<()> {
    let ctx = || format!("--pidfd-socket {}", socket_path.display());
    let pidfd = pidfd_open(pid).map_err(|e| RuntimeError::io(ctx(), e))?;
    let sock = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| RuntimeError::sys(ctx(), e))?;
    let addr = UnixAddr::new(socket_path).map_err(|e| RuntimeError::sys(ctx(), e))?;
    connect(sock.as_raw_fd(), &addr).map_err(|e| RuntimeError::sys(ctx(), e))?;
    let fds = [pidfd.as_raw_fd()];
    let name = b"pidfd";
    sendmsg::<()>(
        sock.as_raw_fd(),
        &[IoSlice::new(name)],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )
    .map_err(|e| RuntimeError::sys(ctx(), e))?;
    Ok(())
}
