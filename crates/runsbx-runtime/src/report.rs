//! The channel that brings an error raised in the container's init after
//! `start` (Landlock, seccomp, exec) back to whoever runs `start` or `run`.
//! libcontainer alone only logs it and exits init with 255.
//!
//! A FIFO in the container's state dir (a pipe when the same process
//! creates and starts: `run`, `sandbox`). `create` makes it and opens it
//! O_RDWR|O_CLOEXEC before libcontainer forks, so init inherits a descriptor.
//! `start` opens the read end before it signals init. Then either init writes
//! its error and exits, or its exec succeeds and the close-on-exec descriptor
//! disappears; in both cases the reader sees EOF once init is gone, and the
//! bytes before EOF are the error. Works for `run` and for `create`/`start`
//! in separate processes alike, and needs nothing from inside the rootfs.
//!
//! Stops: a start that reports success while the sandbox layers failed to
//! apply (the workload never runs in that case: init exits before exec).

use std::fs;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::stat::Mode;

use crate::error::{Result, RuntimeError};

/// runc's name for its start barrier, which this FIFO is too: tools that
/// list what a created init may hold (runc's own suite) know it.
pub const REPORT_FIFO: &str = "exec.fifo";

/// The name before 2026-12: containers created by an older runsbx.
const OLD_REPORT_FIFO: &str = "runsbx-report.fifo";

/// How long `start` waits for init to exec or fail before assuming it runs.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// The write end init inherits, made before libcontainer forks.
pub struct PendingReport(Pending);

enum Pending {
    /// Made before the container dir exists; moved into it once created,
    /// for a `start` in another process.
    Fifo { path: PathBuf, fd: OwnedFd },
    /// For a caller that starts the container itself (`run`, `sandbox`):
    /// nothing to create, rename and unlink in the state dir.
    Pipe { read: OwnedFd, write: OwnedFd },
}

impl PendingReport {
    pub fn new(root: &Path, id: &str) -> Result<Self> {
        // One name per id: the caller holds the id's create lock, so no
        // other create of it is alive, and a FIFO left by one killed before
        // its commit is replaced here.
        let path = crate::layout::report(root, id);
        let _ = fs::remove_file(&path);
        nix::unistd::mkfifo(&path, Mode::from_bits_truncate(0o600))
            .map_err(|e| RuntimeError::sys(format!("mkfifo {}", path.display()), e))?;
        // O_RDWR: opening a FIFO this way never blocks, and keeps it open for
        // init, which inherits this descriptor across libcontainer's fork.
        let fd = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| {
                let _ = fs::remove_file(&path);
                RuntimeError::io(format!("open {}", path.display()), e)
            })?;
        Ok(Self(Pending::Fifo {
            path,
            fd: fd.into(),
        }))
    }

    /// A pipe, for a create whose caller starts the container in the same
    /// process (`Runtime::start` finds the read end in memory).
    pub fn pipe() -> Result<Self> {
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| RuntimeError::sys("pipe for init's report", e))?;
        nix::fcntl::fcntl(
            read.as_raw_fd(),
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )
        .map_err(|e| RuntimeError::sys("pipe for init's report", e))?;
        Ok(Self(Pending::Pipe { read, write }))
    }

    /// The descriptor number init writes its error to.
    pub fn raw_fd(&self) -> RawFd {
        match &self.0 {
            Pending::Fifo { fd, .. } => fd.as_raw_fd(),
            Pending::Pipe { write, .. } => write.as_raw_fd(),
        }
    }

    /// What init inherits of the channel but does not use: a pipe's read
    /// end (the write end, close-on-exec, stays with it until exec).
    pub fn not_for_init(&self) -> Option<RawFd> {
        match &self.0 {
            Pending::Fifo { .. } => None,
            Pending::Pipe { read, .. } => Some(read.as_raw_fd()),
        }
    }

    /// Drops our copy of the write end, so that only init keeps it open; a
    /// FIFO moves into the container's state dir, a pipe's read end is
    /// returned.
    pub fn commit(self, container_dir: &Path) -> Result<Option<ReportReader>> {
        let (path, _fd) = match self.0 {
            Pending::Pipe { read, write: _ } => {
                return Ok(Some(ReportReader {
                    fd: read,
                    path: None,
                }))
            }
            Pending::Fifo { path, fd } => (path, fd),
        };
        let dest = container_dir.join(REPORT_FIFO);
        match fs::rename(&path, &dest) {
            Ok(()) => Ok(None),
            Err(e) => {
                let _ = fs::remove_file(&path);
                Err(RuntimeError::io(format!("rename {}", path.display()), e))
            }
        }
    }

    pub fn abandon(self) {
        if let Pending::Fifo { path, .. } = self.0 {
            let _ = fs::remove_file(path);
        }
    }
}

/// The read end, opened by `start` before it signals init.
#[derive(Debug)]
pub struct ReportReader {
    fd: OwnedFd,
    /// The FIFO, removed once read; none for a pipe.
    path: Option<PathBuf>,
}

impl ReportReader {
    /// `None` when the container has no report FIFO (already started).
    pub fn open(container_dir: &Path) -> Result<Option<Self>> {
        for name in [REPORT_FIFO, OLD_REPORT_FIFO] {
            let path = container_dir.join(name);
            match fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
            {
                Ok(f) => {
                    return Ok(Some(Self {
                        fd: f.into(),
                        path: Some(path),
                    }))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(RuntimeError::io(format!("open {}", path.display()), e)),
            }
        }
        Ok(None)
    }

    /// Waits until init has exec'd the workload (Ok) or reported an error.
    pub fn wait(self) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        let mut msg = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match nix::unistd::read(self.fd.as_raw_fd(), &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    msg.extend_from_slice(&buf[..n]);
                    continue;
                }
                Err(nix::errno::Errno::EAGAIN) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(RuntimeError::sys("read init report", e)),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!("init did not exec within {START_TIMEOUT:?}; assuming it runs");
                break;
            }
            let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
            let ms = left.as_millis().min(u16::MAX as u128) as u16;
            match poll(&mut fds, PollTimeout::from(ms)) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(RuntimeError::sys("poll init report", e)),
            }
        }
        if let Some(path) = &self.path {
            let _ = fs::remove_file(path);
        }
        if msg.is_empty() {
            Ok(())
        } else {
            let text = String::from_utf8_lossy(&msg);
            Err(RuntimeError::Init(text.trim().to_string()))
        }
    }
}

/// Init side: writes the error text to the inherited descriptor. Best effort:
/// init is about to exit non-zero whatever happens here.
pub fn send(fd: RawFd, msg: &str) {
    let mut bytes = msg.as_bytes();
    // A FIFO write of at most PIPE_BUF bytes is atomic.
    if bytes.len() > 4000 {
        bytes = &bytes[..4000];
    }
    let _ = nix::unistd::write(crate::sys::fds::borrow(fd), bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A container created by a runsbx from before the rename still starts.
    #[test]
    fn start_finds_the_fifo_under_either_name() {
        for name in [REPORT_FIFO, OLD_REPORT_FIFO] {
            let dir = tempfile::tempdir().unwrap();
            nix::unistd::mkfifo(&dir.path().join(name), Mode::from_bits_truncate(0o600)).unwrap();
            let reader = ReportReader::open(dir.path()).unwrap().unwrap();
            assert_eq!(
                reader.path.as_deref(),
                Some(dir.path().join(name).as_path())
            );
        }
        let empty = tempfile::tempdir().unwrap();
        assert!(ReportReader::open(empty.path()).unwrap().is_none());
    }
}
