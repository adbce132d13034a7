//! The bundle of a root `sandbox`, built in a private mount namespace of
//! the runsbx process: a tmpfs holding config.json and the rootfs, and the
//! read-only binds of the runtime paths made by runsbx itself.
//!
//! Why the binds: the workload's root is an unprivileged host user
//! (nobody). libcontainer makes a bundle's bind mounts from inside the
//! container's user namespace, as that user, so it cannot reach a source
//! under a directory only root may search (a pyenv Python under /root, mode
//! 0700). runsbx makes them as root; libcontainer binds the rootfs
//! recursively, so they come along. Why the tmpfs: everything vanishes with
//! one detach (or with the process): nothing is left on the host, and the
//! clean-up never walks through a bind into host files.
//!
//! Stops: nothing more than the config's binds would, and nothing less: the
//! same paths, read-only, nosuid, nodev; inside the container's user
//! namespace they are locked (they come from a more privileged namespace),
//! so the workload cannot unmount them or make them writable.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{unshare, CloneFlags};

use crate::error::{Result, RuntimeError};

/// A tmpfs at `dir`, visible to this process and its children only;
/// dropping it detaches the tmpfs and every bind beneath it.
#[derive(Debug)]
pub struct Scratch {
    dir: PathBuf,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = umount2(&self.dir, MntFlags::MNT_DETACH);
    }
}

/// Moves the calling process into a private mount namespace and mounts a
/// tmpfs (mode 0711: the container's root must traverse it) on `dir`.
pub fn scratch(dir: &Path) -> Result<Scratch> {
    unshare(CloneFlags::CLONE_NEWNS)
        .map_err(|e| RuntimeError::sys("unshare mount namespace", e))?;
    // Nothing mounted from here on may propagate back to the host.
    mount::<str, str, str, str>(None, "/", None, MsFlags::MS_REC | MsFlags::MS_SLAVE, None)
        .map_err(|e| RuntimeError::sys("make / a slave mount", e))?;
    mount::<str, Path, str, str>(
        Some("tmpfs"),
        dir,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=0711,size=16m"),
    )
    .map_err(|e| RuntimeError::sys(format!("mount tmpfs on {}", dir.display()), e))?;
    Ok(Scratch {
        dir: dir.to_path_buf(),
    })
}

/// Moves the calling process into a private mount namespace in which no
/// cgroup filesystem is mounted: /sys/fs/cgroup is detached (with every
/// controller beneath it) and covered by an empty read-only tmpfs.
/// libcontainer then finds no controller and runs the container without a
/// cgroup, skipping the per-controller directories, writes and mountinfo
/// scans of cgroup set-up and removal. Only for containers that need no
/// cgroup (see `Runtime::create`); the host's cgroups are untouched.
pub fn without_cgroups() -> Result<()> {
    unshare(CloneFlags::CLONE_NEWNS)
        .map_err(|e| RuntimeError::sys("unshare mount namespace", e))?;
    mount::<str, str, str, str>(None, "/", None, MsFlags::MS_REC | MsFlags::MS_SLAVE, None)
        .map_err(|e| RuntimeError::sys("make / a slave mount", e))?;
    let dir = Path::new("/sys/fs/cgroup");
    match nix::mount::umount2(dir, nix::mount::MntFlags::MNT_DETACH) {
        // EINVAL: nothing mounted there (a host without cgroups).
        Ok(()) | Err(nix::errno::Errno::EINVAL) => {}
        Err(e) => return Err(RuntimeError::sys("detach /sys/fs/cgroup", e)),
    }
    mount::<str, Path, str, str>(
        Some("none"),
        dir,
        Some("tmpfs"),
        MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some("size=4k,mode=0555"),
    )
    .map_err(|e| RuntimeError::sys("mount an empty tmpfs on /sys/fs/cgroup", e))
}

/// Binds each host path at the same place under `rootfs`, read-only,
/// nosuid, nodev, in the current (private) mount namespace, the way
/// prebind.rs makes a bundle's (sys::mountapi::bind_at: never writable).
/// Mount points must exist; parents are bound before children.
pub fn bind_readonly(rootfs: &Path, paths: &[PathBuf]) -> Result<()> {
    let attr =
        crate::prebind::mount_attr(MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV);
    let mut sorted: Vec<&PathBuf> = paths.iter().collect();
    sorted.sort_by_key(|p| p.components().count());
    for src in sorted {
        let rel = src.strip_prefix("/").unwrap_or(src);
        let target = rootfs.join(rel);
        let ctx = |what: &str| format!("{what} {} on {}", src.display(), target.display());
        // The rootfs is runsbx's own tmpfs: its mount points are no one
        // else's symlinks, but none is followed anyway.
        let fd = nix::fcntl::open(
            &target,
            nix::fcntl::OFlag::O_PATH
                | nix::fcntl::OFlag::O_NOFOLLOW
                | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(|e| RuntimeError::sys(ctx("open the mount point for"), e))?;
        let fd = crate::sys::fds::own(fd);
        crate::sys::mountapi::bind_at(src, &fd, false, attr).map_err(|(step, e)| {
            RuntimeError::sys(
                ctx(step),
                nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
            )
        })?;
    }
    Ok(())
}

/// Removes a directory tree without ever crossing into another filesystem:
/// an entry on a different device (a mount still in place) is left alone.
/// Stops: deleting host files through a bind mount left in a bundle.
///
/// Walks by directory fds (openat O_DIRECTORY|O_NOFOLLOW, unlinkat), one
/// level open at a time, climbing back through ".." checked against the
/// (dev, inode) recorded on the way down. Stops: a workload leaving a tree
/// too deep for a path (ENAMETOOLONG past 4096 bytes) or for the stack, so
/// that the private workdir stayed behind; a symlink is unlinked, never
/// followed, and a directory swapped for another on the way back up makes
/// the removal fail rather than delete elsewhere.
pub fn remove_tree(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.is_dir() {
        return std::fs::remove_file(path);
    }
    let top = open_dir(None, path.as_os_str())?;
    // The directory looked at, not one swapped in since.
    if dev_ino(&top)? != (meta.dev(), meta.ino()) {
        return Err(std::io::Error::other(format!(
            "{} changed during removal; not removing it",
            path.display()
        )));
    }
    remove_contents(path, top, (meta.dev(), meta.ino()))?;
    std::fs::remove_dir(path)
}

fn open_dir(at: Option<&OwnedFd>, name: &std::ffi::OsStr) -> std::io::Result<OwnedFd> {
    use nix::fcntl::OFlag;
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let dirfd = at.map(|fd| fd.as_raw_fd());
    let fd = nix::fcntl::openat(dirfd, name, flags, nix::sys::stat::Mode::empty())?;
    Ok(crate::sys::fds::own(fd))
}

fn dev_ino(fd: &OwnedFd) -> std::io::Result<(u64, u64)> {
    let st = nix::sys::stat::fstat(fd.as_raw_fd())?;
    Ok((st.st_dev, st.st_ino))
}

/// The first entry of `dir` other than "." and "..", read afresh: every
/// entry seen before was removed, so what remains is what is left to do.
fn first_entry(dir: &OwnedFd) -> std::io::Result<Option<std::ffi::OsString>> {
    use std::os::unix::ffi::OsStrExt;
    // A new open of ".": its own read offset, starting at the beginning.
    let fresh = open_dir(Some(dir), std::ffi::OsStr::new("."))?;
    let mut d = nix::dir::Dir::from_fd(std::os::fd::IntoRawFd::into_raw_fd(fresh))?;
    for entry in d.iter() {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            return Ok(Some(std::ffi::OsStr::from_bytes(&name).to_os_string()));
        }
    }
    Ok(None)
}

/// Empties the directory open as `top` (at `root`, identified by `id`).
fn remove_contents(root: &Path, top: OwnedFd, id: (u64, u64)) -> std::io::Result<()> {
    use nix::sys::stat::{fstatat, SFlag};
    use nix::unistd::{unlinkat, UnlinkatFlags};
    let dev = id.0;
    // The names and identities of the directories above `cur`, for the
    // climb back and for messages.
    let mut above: Vec<(std::ffi::OsString, (u64, u64))> = Vec::new();
    let mut cur = top;
    loop {
        let Some(name) = first_entry(&cur)? else {
            // `cur` is empty: climb to its parent and remove it there.
            let Some((name, parent_id)) = above.pop() else {
                return Ok(());
            };
            let parent = open_dir(Some(&cur), std::ffi::OsStr::new(".."))?;
            if dev_ino(&parent)? != parent_id {
                return Err(std::io::Error::other(format!(
                    "a directory under {} moved during removal; not removing it",
                    root.display()
                )));
            }
            unlinkat(
                Some(parent.as_raw_fd()),
                name.as_os_str(),
                UnlinkatFlags::RemoveDir,
            )?;
            cur = parent;
            continue;
        };
        let st = fstatat(
            Some(cur.as_raw_fd()),
            name.as_os_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )?;
        let elsewhere = || {
            let mut p = root.to_path_buf();
            p.extend(above.iter().map(|(n, _)| n));
            std::io::Error::other(format!(
                "{} is on another filesystem (a mount?); not removing it",
                p.join(&name).display()
            ))
        };
        if st.st_dev != dev {
            return Err(elsewhere());
        }
        if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFDIR {
            unlinkat(
                Some(cur.as_raw_fd()),
                name.as_os_str(),
                UnlinkatFlags::NoRemoveDir,
            )?;
            continue;
        }
        let child = open_dir(Some(&cur), &name)?;
        // Checked again on the fd: a mount put there since the fstatat.
        if dev_ino(&child)?.0 != dev {
            return Err(elsewhere());
        }
        above.push((name, dev_ino(&cur)?));
        cur = child;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree deeper than PATH_MAX, with a symlink out of it at the bottom:
    /// all of it goes, and the symlink's target stays.
    #[test]
    fn removes_a_tree_deeper_than_a_path_and_follows_no_symlink() {
        use nix::sys::stat::{mkdirat, Mode};
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "x").unwrap();
        let root = tmp.path().join("tree");
        std::fs::create_dir(&root).unwrap();
        let mut cur = open_dir(None, root.as_os_str()).unwrap();
        // 3,000 levels of "d/": 6,000 characters.
        for _ in 0..3000 {
            mkdirat(Some(cur.as_raw_fd()), "d", Mode::from_bits_truncate(0o700)).unwrap();
            cur = open_dir(Some(&cur), std::ffi::OsStr::new("d")).unwrap();
        }
        nix::unistd::symlinkat(&outside, Some(cur.as_raw_fd()), "link").unwrap();
        drop(cur);
        remove_tree(&root).unwrap();
        assert!(!root.exists());
        assert!(outside.join("keep").exists());
    }
}
