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
            let null = open_dev_null_for_write()?;
            nix::unistd::dup2(null.as_raw_fd(), fd)?;
        }
    }
    Ok(())
}

/// The container's /dev/null, opened for writing, checked to be the null
/// device before the workload gets it.
///
/// Stops: the /dev/null redirection of CVE-2025-31133 in runsbx's own step.
/// This runs in init after libcontainer's checks of /dev/null, as the
/// container's root (host root without a user namespace); a /dev/null
/// swapped since (a symlink, or a mount over it from a racing container with
/// a shared /dev) would otherwise become the workload's stdout, open for
/// writing on whatever file it names (`/proc/sys/kernel/core_pattern`).
/// O_NOFOLLOW refuses a final symlink, and the fstat refuses anything but
/// the character device 1:3 (a mount over the name included). No test can
/// win that race reliably from outside; the unit tests below check both
/// refusals.
fn open_dev_null_for_write() -> std::io::Result<std::fs::File> {
    open_null_at(std::path::Path::new("/dev/null"))
}

/// `path` opened write-only if it is the null device: no final symlink
/// followed, no controlling terminal taken, no wait on a FIFO.
fn open_null_at(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let m = f.metadata()?;
    let null = m.file_type().is_char_device()
        && nix::sys::stat::major(m.rdev()) == 1
        && nix::sys::stat::minor(m.rdev()) == 3;
    match null {
        // Blocking again, as a workload expects of its stdout (O_NONBLOCK
        // was only for the open, should a FIFO sit there).
        true => {
            nix::fcntl::fcntl(
                std::os::fd::AsRawFd::as_raw_fd(&f),
                nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
            )?;
            Ok(f)
        }
        false => Err(std::io::Error::other(format!(
            "{} is not the null device (char 1:3); not giving it to the workload as \
             stdio (CVE-2025-31133)",
            path.display()
        ))),
    }
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

/// A descriptor of the creating runsbx that its init must not keep, with
/// the file it names, so that init closes that number only while it still
/// names the same file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotForInit {
    pub fd: RawFd,
    dev: u64,
    ino: u64,
}

/// What the init about to be forked from this process would inherit and
/// must not hold while it waits for `start` ([`close_not_for_init`]):
/// `own`, the create's descriptors (its lock), and every descriptor above
/// the preserved ones (`--preserve-fds`, and `LISTEN_FDS` as libcontainer
/// reads it) that is not close-on-exec. runsbx opens all of its own
/// close-on-exec, so those came from runsbx's caller, left open across its
/// exec: runc's init never gets them (it is exec'd with stdio and the fds
/// it needs), runsbx's is forked and inherits the whole table.
pub fn not_for_init(preserve_fds: i32, own: &[RawFd]) -> Vec<NotForInit> {
    let listen = std::env::var("LISTEN_FDS")
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(0);
    let preserved_end = 3 + preserve_fds.max(0) + listen;
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let open: Vec<RawFd> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    open.into_iter()
        .filter(|&fd| {
            own.contains(&fd)
                || (fd >= preserved_end
                    && nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFD)
                        .is_ok_and(|f| f & libc::FD_CLOEXEC == 0))
        })
        .filter_map(|fd| {
            let st = nix::sys::stat::fstat(fd).ok()?;
            Some(NotForInit {
                fd,
                dev: st.st_dev,
                ino: st.st_ino,
            })
        })
        .collect()
}

/// In init: closes each of `fds` that still names its file.
pub fn close_not_for_init(fds: &[NotForInit]) {
    for held in fds {
        let same = nix::sys::stat::fstat(held.fd)
            .is_ok_and(|st| st.st_dev == held.dev && st.st_ino == held.ino);
        if same {
            let _ = nix::unistd::close(held.fd);
        }
    }
}

/// Restores the default SIGPIPE action (Rust ignores it), so that a command
/// writing into a closed pipe ends quietly instead of panicking in print.
pub fn default_sigpipe() {
    // SAFETY: installing SIG_DFL for SIGPIPE touches no memory of ours.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    use super::{close_not_for_init, not_for_init, open_null_at};
    use std::os::fd::AsRawFd;
    use std::path::Path;

    #[test]
    fn init_is_spared_the_callers_leftovers_and_the_creates_own() {
        let own = std::fs::File::open("/dev/null").unwrap();
        let kept = std::fs::File::open("/").unwrap();
        // A caller's descriptor: open across exec.
        let leftover = std::fs::File::open("/proc/self/cmdline").unwrap();
        nix::fcntl::fcntl(
            leftover.as_raw_fd(),
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
        )
        .unwrap();
        let listed = not_for_init(0, &[own.as_raw_fd()]);
        let fds: Vec<_> = listed.iter().map(|h| h.fd).collect();
        assert!(fds.contains(&own.as_raw_fd()), "{fds:?}");
        assert!(fds.contains(&leftover.as_raw_fd()), "{fds:?}");
        assert!(
            !fds.contains(&kept.as_raw_fd()),
            "close-on-exec: runsbx's own"
        );
        // Preserved: a number below 3 + preserve_fds is left alone.
        let beyond = leftover.as_raw_fd() - 2;
        let preserved: Vec<_> = not_for_init(beyond, &[]).iter().map(|h| h.fd).collect();
        assert!(!preserved.contains(&leftover.as_raw_fd()), "{preserved:?}");
        // Closed only while the number names the same file. At a number
        // far above what the other tests' threads get (the lowest free one).
        let high = 901;
        nix::unistd::dup2(own.as_raw_fd(), high).unwrap();
        let entry = not_for_init(0, &[high])
            .into_iter()
            .find(|h| h.fd == high)
            .unwrap();
        nix::unistd::dup2(leftover.as_raw_fd(), high).unwrap();
        close_not_for_init(&[entry]);
        assert!(
            nix::fcntl::fcntl(high, nix::fcntl::FcntlArg::F_GETFD).is_ok(),
            "another file now"
        );
        nix::unistd::dup2(own.as_raw_fd(), high).unwrap();
        close_not_for_init(&[entry]);
        assert!(nix::fcntl::fcntl(high, nix::fcntl::FcntlArg::F_GETFD).is_err());
    }

    #[test]
    fn only_the_null_device_is_opened_as_dev_null() {
        let null = open_null_at(Path::new("/dev/null")).unwrap();
        let flags = nix::fcntl::fcntl(
            std::os::fd::AsRawFd::as_raw_fd(&null),
            nix::fcntl::FcntlArg::F_GETFL,
        )
        .unwrap();
        assert_eq!(flags & libc::O_NONBLOCK, 0, "left non-blocking");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("null");
        std::fs::write(&file, "").unwrap();
        let err = open_null_at(&file).unwrap_err().to_string();
        assert!(err.contains("not the null device"), "{err}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let err = open_null_at(&link).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP), "{err}");
    }
}
