//! Raw descriptor helpers.
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};

/// Borrows a descriptor number that the caller knows to be open for the
/// rest of the process's life (an fd inherited across fork until exec).
pub fn borrow(fd: RawFd) -> BorrowedFd<'static> {
    // SAFETY: callers pass only descriptors they hold open until exec or
    // exit; a closed number would make writes fail with EBADF, not UB.
    unsafe { BorrowedFd::borrow_raw(fd) }
}

/// Owns a descriptor that a successful nix 0.29 open/openat/openat2 just
/// returned as a bare number, so that it is closed on every path.
pub fn own(fd: RawFd) -> OwnedFd {
    use std::os::fd::FromRawFd;
    // SAFETY: the caller passes a descriptor the kernel has just opened for
    // it, which nothing else holds or closes.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// libcontainer 0.7 re-points stdio that was /dev/null on the host at the
/// container's /dev/null, but opens it read-only: a workload whose stdout is
/// /dev/null then fails every write with EIO/EBADF. Reopen stdout and stderr
/// write-only when they are /dev/null (rdev 1:3) and not writable.
pub fn fix_dev_null_stdio() -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    for fd in [1, 2] {
        let Ok(st) = nix::sys::stat::fstat(fd) else {
            continue;
        };
        let is_null = st.st_mode & libc::S_IFMT == libc::S_IFCHR
            && nix::sys::stat::major(st.st_rdev) == 1
            && nix::sys::stat::minor(st.st_rdev) == 3;
        let Ok(flags) = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL) else {
            continue;
        };
        if is_null && flags & libc::O_ACCMODE == libc::O_RDONLY {
            let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
            nix::unistd::dup2(null.as_raw_fd(), fd)?;
        }
    }
    Ok(())
}

/// Takes ownership of a descriptor the caller of runsbx handed down (e.g.
/// `--status-fd 3`), marking it close-on-exec so it never reaches a
/// container. Fails when the number is not open.
pub fn take_inherited(fd: RawFd) -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    nix::fcntl::fcntl(
        fd,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )?;
    // SAFETY: fcntl just proved the descriptor open, and the caller gave it
    // to runsbx for its exclusive use.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Restores the default SIGPIPE action (Rust ignores it), so that a command
/// writing into a closed pipe ends quietly instead of panicking in print.
pub fn default_sigpipe() {
    // SAFETY: installing SIG_DFL for SIGPIPE touches no memory of ours.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
