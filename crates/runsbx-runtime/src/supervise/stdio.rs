//! The file status flags of runsbx's stdio, kept across a foreground run.

use std::os::fd::RawFd;

use nix::fcntl::{fcntl, FcntlArg, OFlag};

/// The status flags of fds 0-2 as they were before the run; put back when
/// dropped, whichever way the run ends.
///
/// Stops: a workload leaving the caller's stdin or terminal O_NONBLOCK (the
/// caller's shell then reads EAGAIN), or clearing O_APPEND on an inherited
/// log file, after the run. The workload shares these open file
/// descriptions, so flags it sets are the caller's too. Not covered: what
/// it does with them during the run (writing at the start of a log it
/// cleared O_APPEND on); only a relay of its stdio would stop that
/// (docs/security.md, known gaps).
pub struct StdioFlags(Vec<(RawFd, OFlag)>);

impl StdioFlags {
    pub fn save() -> Self {
        Self::of(&[0, 1, 2])
    }

    fn of(fds: &[RawFd]) -> Self {
        Self(fds.iter().filter_map(|&fd| Some((fd, get(fd)?))).collect())
    }
}

fn get(fd: RawFd) -> Option<OFlag> {
    // A closed stdio fd (EBADF) has nothing to restore.
    fcntl(fd, FcntlArg::F_GETFL)
        .ok()
        .map(OFlag::from_bits_retain)
}

impl Drop for StdioFlags {
    fn drop(&mut self) {
        for &(fd, saved) in &self.0 {
            // F_SETFL sets only what it can (O_APPEND, O_NONBLOCK, O_ASYNC,
            // O_DIRECT, O_NOATIME) and ignores the access mode it reads back.
            if get(fd) != Some(saved) {
                let _ = fcntl(fd, FcntlArg::F_SETFL(saved));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// A pipe stands in for stdio: the test runner's own fds 0-2 are
    /// left alone.
    #[test]
    fn flags_come_back() {
        let (r, w) = nix::unistd::pipe().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let log = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(dir.path().join("log"))
            .unwrap();
        let fds = [r.as_raw_fd(), w.as_raw_fd(), log.as_raw_fd()];
        let before: Vec<_> = fds.iter().map(|&fd| get(fd).unwrap()).collect();
        let saved = StdioFlags::of(&fds);
        fcntl(fds[0], FcntlArg::F_SETFL(before[0] | OFlag::O_NONBLOCK)).unwrap();
        fcntl(fds[1], FcntlArg::F_SETFL(before[1] | OFlag::O_NONBLOCK)).unwrap();
        fcntl(fds[2], FcntlArg::F_SETFL(before[2] - OFlag::O_APPEND)).unwrap();
        assert_ne!(get(fds[2]), Some(before[2]));
        drop(saved);
        let after: Vec<_> = fds.iter().map(|&fd| get(fd).unwrap()).collect();
        assert_eq!(after, before);
    }
}
