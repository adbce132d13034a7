//! Read-only binds made by runsbx itself, before libcontainer runs, for
//! `sandbox` invoked by root.
//!
//! The workload's root is an unprivileged host user (nobody). libcontainer
//! makes a bundle's bind mounts from inside the container's user namespace,
//! as that user, so it cannot reach a source under a directory only root may
//! search (a pyenv Python under /root, mode 0700). runsbx therefore makes
//! those binds itself, as root, in a private mount namespace of its own
//! process; libcontainer binds the rootfs recursively, so they come along.
//! They vanish with the runsbx process: nothing is left on the host.
//!
//! Stops: nothing more than the config's binds would, and nothing less: the
//! same paths, read-only, nosuid, nodev; inside the container's user
//! namespace they are locked (they come from a more privileged namespace),
//! so the workload cannot unmount them or make them writable.

use std::path::{Path, PathBuf};

use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};

use crate::error::{Result, RuntimeError};

/// The binds made by [`bind_readonly`]; dropping it detaches them, so the
/// bundle directory can be removed without descending into host paths.
#[derive(Debug, Default)]
pub struct Premounted {
    targets: Vec<PathBuf>,
}

impl Drop for Premounted {
    fn drop(&mut self) {
        for t in self.targets.iter().rev() {
            let _ = nix::mount::umount2(t, nix::mount::MntFlags::MNT_DETACH);
        }
    }
}

/// Moves the calling process into a private mount namespace, then binds
/// each host path at the same place under `rootfs`, read-only. Mount points
/// must exist; parents are bound before children.
pub fn bind_readonly(rootfs: &Path, paths: &[PathBuf]) -> Result<Premounted> {
    unshare(CloneFlags::CLONE_NEWNS)
        .map_err(|e| RuntimeError::sys("unshare mount namespace", e))?;
    // Nothing mounted from here on may propagate back to the host.
    mount::<str, str, str, str>(None, "/", None, MsFlags::MS_REC | MsFlags::MS_SLAVE, None)
        .map_err(|e| RuntimeError::sys("make / a slave mount", e))?;
    let mut done = Premounted::default();
    let mut sorted: Vec<&PathBuf> = paths.iter().collect();
    sorted.sort_by_key(|p| p.components().count());
    for src in sorted {
        let rel = src.strip_prefix("/").unwrap_or(src);
        let target = rootfs.join(rel);
        let ctx = |what: &str| format!("{what} {} on {}", src.display(), target.display());
        mount::<Path, Path, str, str>(Some(src.as_path()), &target, None, MsFlags::MS_BIND, None)
            .map_err(|e| RuntimeError::sys(ctx("bind"), e))?;
        done.targets.push(target.clone());
        let ro = MsFlags::MS_BIND
            | MsFlags::MS_REMOUNT
            | MsFlags::MS_RDONLY
            | MsFlags::MS_NOSUID
            | MsFlags::MS_NODEV;
        mount::<str, Path, str, str>(None, &target, None, ro, None)
            .map_err(|e| RuntimeError::sys(ctx("remount read-only"), e))?;
    }
    Ok(done)
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
