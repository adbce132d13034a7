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

/// Moves the calling process into a private mount namespace, then binds
/// each host path at the same place under `rootfs`, read-only. Mount points
/// must exist; parents are bound before children.
pub fn bind_readonly(rootfs: &Path, paths: &[PathBuf]) -> Result<()> {
    unshare(CloneFlags::CLONE_NEWNS)
        .map_err(|e| RuntimeError::sys("unshare mount namespace", e))?;
    // Nothing mounted from here on may propagate back to the host.
    mount::<str, str, str, str>(None, "/", None, MsFlags::MS_REC | MsFlags::MS_SLAVE, None)
        .map_err(|e| RuntimeError::sys("make / a slave mount", e))?;
    let mut sorted: Vec<&PathBuf> = paths.iter().collect();
    sorted.sort_by_key(|p| p.components().count());
    for src in sorted {
        let rel = src.strip_prefix("/").unwrap_or(src);
        let target = rootfs.join(rel);
        let ctx = |what: &str| format!("{what} {} on {}", src.display(), target.display());
        mount::<Path, Path, str, str>(Some(src.as_path()), &target, None, MsFlags::MS_BIND, None)
            .map_err(|e| RuntimeError::sys(ctx("bind"), e))?;
        let ro = MsFlags::MS_BIND
            | MsFlags::MS_REMOUNT
            | MsFlags::MS_RDONLY
            | MsFlags::MS_NOSUID
            | MsFlags::MS_NODEV;
        mount::<str, Path, str, str>(None, &target, None, ro, None)
            .map_err(|e| RuntimeError::sys(ctx("remount read-only"), e))?;
    }
    Ok(())
}
