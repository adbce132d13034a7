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
pub fn remove_tree(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::symlink_metadata(path)?.dev();
    remove_under(path, dev)
}

fn remove_under(path: &Path, dev: u64) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path)?;
    if meta.dev() != dev {
        return Err(std::io::Error::other(format!(
            "{} is on another filesystem (a mount?); not removing it",
            path.display()
        )));
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            remove_under(&entry?.path(), dev)?;
        }
        std::fs::remove_dir(path)
    } else {
        std::fs::remove_file(path)
    }
}
