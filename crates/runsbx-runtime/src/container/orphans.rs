//! The orphan scan: what a create killed half-way left running, found by
//! the create lock file its forks inherited.

use std::fs;
use std::path::Path;

use nix::unistd::Pid;

use super::kill::kill_checked;
use super::lock::{CreateLock, LockFile};
use super::{validate_id, Runtime};

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
        let Some(id) = name
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(".create"))
        else {
            return;
        };
        let (suffix, deleted) = (format!("/{name}"), format!("/{name} (deleted)"));
        let me = std::process::id();
        let uid = nix::unistd::geteuid().as_raw();
        let holds = |pid: u32| -> Holds {
            // Unreadable: a process of ours in the middle of changing its
            // credentials (dumpable again soon), or another user's.
            let unreadable = || match runsbx_of_id(pid, uid, id) {
                true => Holds::Unsure,
                false => Holds::Neither,
            };
            let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
                return unreadable();
            };
            let (mut write, mut read) = (false, false);
            for fd in fds.flatten() {
                let target = match fs::read_link(fd.path()) {
                    Ok(t) => t,
                    Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                        return unreadable()
                    }
                    Err(_) => continue,
                };
                let target = target.to_string_lossy();
                if !target.ends_with(&suffix) && !target.ends_with(&deleted) {
                    continue;
                }
                match fd_mode(pid, &fd.file_name(), meta.ino()) {
                    Some(libc::O_WRONLY) => write = true,
                    Some(libc::O_RDONLY) => read = true,
                    _ => {}
                }
            }
            match write && read {
                true => Holds::Both,
                false => Holds::Neither,
            }
        };
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
enum Holds {
    /// Both descriptors a fork of the create inherits.
    Both,
    Neither,
    /// Its descriptors cannot be read, and it is a runsbx of the caller's
    /// for the same id.
    Unsure,
}

/// Whether `pid` runs as `uid` and is a runsbx whose arguments name `id`
/// (/proc status and cmdline, which need no access to the process).
fn runsbx_of_id(pid: u32, uid: u32, id: &str) -> bool {
    let owner = fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u32>().ok())
        });
    if owner != Some(uid) {
        return false;
    }
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let mut args = cmdline.split(|b| *b == 0);
    let runsbx = args
        .next()
        .and_then(|a| a.rsplit(|b| *b == b'/').next())
        .is_some_and(|a| a.starts_with(b"runsbx"));
    runsbx && args.any(|a| a == id.as_bytes())
}

/// The access mode (`O_RDONLY`, `O_WRONLY`, `O_RDWR`) of descriptor `fd` of
/// `pid` when it is open on inode `ino` and not an `O_PATH` handle, from
/// /proc fdinfo.
fn fd_mode(pid: u32, fd: &std::ffi::OsStr, ino: u64) -> Option<i32> {
    let path = Path::new("/proc")
        .join(pid.to_string())
        .join("fdinfo")
        .join(fd);
    let info = fs::read_to_string(path).ok()?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    let flags = i32::from_str_radix(&field("flags:")?, 8).ok()?;
    let same = field("ino:")?.parse::<u64>().ok()? == ino;
    (same && flags & libc::O_PATH == 0).then_some(flags & libc::O_ACCMODE)
}
