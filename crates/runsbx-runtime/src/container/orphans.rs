//! The orphan scan: what a create killed half-way left running, found by
//! the create lock file its forks inherited.

use std::fs;
use std::path::Path;

use nix::unistd::Pid;

use super::kill::kill_checked;
use super::lock::{CreateLock, LockFile};
use super::{validate_id, Runtime};
use crate::fdinfo::FdInfo;

impl Runtime {
    /// Rootless, before `delete` enters its shim: stops what a create of
    /// `id` killed half-way left ([`CreateLock::kill_orphans`]). In the
    /// shim's user namespace /proc does not show another container's
    /// descriptors; in the caller's own it does (the caller owns theirs).
    pub fn stop_orphans(&self, id: &str) {
        if validate_id(id).is_err() {
            return;
        }
        if let Ok(LockFile::Taken(mut lock)) = CreateLock::try_take_existing(&self.root, id) {
            lock.kill_orphans();
        }
    }
}

impl CreateLock {
    /// SIGKILLs the processes a create of this id that died half-way left
    /// behind and waits up to 5 s for them to exit. Stops: libcontainer's
    /// intermediate process, orphaned by a create killed before it saved its
    /// state, making the container's cgroups after `delete --force` has
    /// removed them, and its init waiting for ever on a channel to its dead
    /// parent inside them. Call it holding the lock, so that no live create
    /// shares the file.
    ///
    /// A process counts only if it holds the file both write-only (the lock
    /// descriptor) and read-only (the marker), as a fork of that create
    /// does: a file-access monitor (fanotify) holds it read-only alone, and
    /// another runsbx trying the lock write-only alone. The scan reads only
    /// /proc's link texts and fdinfo, never the files behind descriptors (a
    /// stat of a hung FUSE or NFS file would hang the delete).
    ///
    /// Rootless, the delete runs in a user namespace of its own, from which
    /// another container's descriptors are not shown: it calls this first
    /// through [`Runtime::stop_orphans`], outside (docs/rootless.md).
    pub(super) fn kill_orphans(&mut self) {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        if !self.existed {
            return;
        }
        if crate::rootless::in_shim() {
            // Nothing to see from here (see above): keep the way to them
            // for a delete that looks from outside.
            self.keep = true;
            return;
        }
        let Ok(meta) = self.file.metadata() else {
            return;
        };
        let Some(name) = self.path.file_name().and_then(|n| n.to_str()) else {
            return;
        };
        let Some(id) = crate::layout::lock_owner(name) else {
            return;
        };
        let me = std::process::id();
        let uid = nix::unistd::geteuid().as_raw();
        let lock = LockName {
            name,
            ino: meta.ino(),
        };
        let holds = |pid: u32| decide(&observe(pid, &lock), &lock, uid, id);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        // Again until a scan finds none: the intermediate may fork init
        // after /proc was read, and a killed process forks no more.
        loop {
            let Ok(procs) = fs::read_dir("/proc") else {
                return;
            };
            let (mut killed, mut unsure) = (Vec::new(), 0);
            for pid in procs
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            {
                if pid == me {
                    continue;
                }
                match holds(pid) {
                    Holds::Neither => continue,
                    Holds::Unsure => {
                        unsure += 1;
                        continue;
                    }
                    Holds::Both => {}
                }
                let pid = Pid::from_raw(pid as i32);
                match kill_checked(pid, || matches!(holds(pid.as_raw() as u32), Holds::Both)) {
                    Ok(Some(pidfd)) => {
                        tracing::debug!(%pid, "delete: killed a process of a create killed half-way");
                        killed.push(pidfd);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(%pid, %e, "delete: cannot stop a process of a create killed half-way")
                    }
                }
            }
            if killed.is_empty() && unsure == 0 {
                return;
            }
            if std::time::Instant::now() >= deadline {
                // Kept, so that the next delete can try again.
                tracing::warn!(
                    id,
                    unsure,
                    "delete: processes of a create killed half-way could not be read"
                );
                self.keep = true;
                return;
            }
            for pidfd in &killed {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                let _ =
                    crate::sys::pidfd::exited_within(pidfd.as_raw_fd(), left.as_millis() as i32);
            }
            if killed.is_empty() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// What a process holds of a create's lock file.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Holds {
    /// Both descriptors a fork of the create inherits.
    Both,
    Neither,
    /// Its descriptors cannot be read, and it is a runsbx of the caller's
    /// for the same id.
    Unsure,
}

/// The lock file the scan looks for: its name in the root and its inode.
pub(super) struct LockName<'a> {
    pub(super) name: &'a str,
    pub(super) ino: u64,
}

impl LockName<'_> {
    /// Whether a descriptor's link text names the file (or names it
    /// unlinked, by a create's clean-up).
    fn named_by(&self, target: &str) -> bool {
        let target = target.strip_suffix(" (deleted)").unwrap_or(target);
        target
            .strip_suffix(self.name)
            .is_some_and(|dir| dir.ends_with('/'))
    }
}

/// What /proc shows of one process, as far as the scan needs it.
#[derive(Debug)]
pub(super) enum Seen {
    /// Each descriptor's link text, with its fdinfo when the text names
    /// the lock file (`None`: unreadable, or closed meanwhile).
    Fds(Vec<(String, Option<FdInfo>)>),
    /// Its descriptors cannot be read: its real uid and argv instead
    /// (/proc status and cmdline, which need no access to the process).
    Unreadable {
        uid: Option<u32>,
        argv: Option<Vec<u8>>,
    },
}

/// Reads what [`decide`] needs of `pid`. Only /proc's link texts and
/// fdinfo, never the files behind descriptors.
fn observe(pid: u32, lock: &LockName) -> Seen {
    let unreadable = || Seen::Unreadable {
        uid: procfs::process::Process::new(pid as i32)
            .and_then(|p| p.status())
            .ok()
            .map(|s| s.ruid),
        // By hand: procfs's cmdline() wants UTF-8 and drops empty args.
        argv: fs::read(format!("/proc/{pid}/cmdline")).ok(),
    };
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return unreadable();
    };
    let mut seen = Vec::new();
    for fd in fds.flatten() {
        let target = match fs::read_link(fd.path()) {
            Ok(t) => t.to_string_lossy().into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return unreadable(),
            Err(_) => continue,
        };
        let info = match lock.named_by(&target) {
            true => {
                let path = Path::new("/proc")
                    .join(pid.to_string())
                    .join("fdinfo")
                    .join(fd.file_name());
                fs::read_to_string(path)
                    .ok()
                    .and_then(|t| FdInfo::parse(&t))
            }
            false => None,
        };
        seen.push((target, info));
    }
    Seen::Fds(seen)
}

/// Whether a process is a fork of a dead create of `id` (run by `uid`),
/// from what [`observe`] saw. It counts only if it holds the lock file both
/// write-only (the lock) and read-only (the marker), not as an `O_PATH`
/// handle: a file-access monitor holds it read-only alone, another runsbx
/// trying the lock write-only alone.
pub(super) fn decide(seen: &Seen, lock: &LockName, uid: u32, id: &str) -> Holds {
    let fds = match seen {
        Seen::Fds(fds) => fds,
        // Unreadable: a process of ours in the middle of changing its
        // credentials (dumpable again soon), or another user's.
        Seen::Unreadable { uid: owner, argv } => {
            return match *owner == Some(uid) && argv.as_deref().is_some_and(|a| names_id(a, id)) {
                true => Holds::Unsure,
                false => Holds::Neither,
            }
        }
    };
    let (mut write, mut read) = (false, false);
    for (target, info) in fds {
        if !lock.named_by(target) {
            continue;
        }
        let mode = info
            .filter(|i| i.ino == lock.ino && i.flags & libc::O_PATH == 0)
            .map(|i| i.flags & libc::O_ACCMODE);
        match mode {
            Some(libc::O_WRONLY) => write = true,
            Some(libc::O_RDONLY) => read = true,
            _ => {}
        }
    }
    match write && read {
        true => Holds::Both,
        false => Holds::Neither,
    }
}

/// Whether a NUL-separated argv is a runsbx's (by the file name of its
/// first word) and names `id` among its arguments.
fn names_id(argv: &[u8], id: &str) -> bool {
    let mut args = argv.split(|b| *b == 0);
    let runsbx = args
        .next()
        .and_then(|a| a.rsplit(|b| *b == b'/').next())
        .is_some_and(|a| a.starts_with(b"runsbx"));
    runsbx && args.any(|a| a == id.as_bytes())
}

#[cfg(test)]
#[path = "orphans_tests.rs"]
mod tests;
