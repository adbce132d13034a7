use std::fs;
use std::io::Write;
use std::os::fd::RawFd;
use std::path::Path;

use super::{Result, SuperviseError};

/// Writes a file without following a symlink at its path. Stops: a
/// workload that can write the report's directory (a shared bind) planting
/// a symlink so that runsbx, as root, overwrites a host file.
pub(super) fn write_no_follow(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(path)?;
    f.write_all(bytes)
}

/// Takes ownership of an inherited descriptor, refusing stdio and closed
/// ones; it is close-on-exec, so it never reaches the container.
pub fn status_file(fd: RawFd) -> Result<fs::File> {
    if fd <= 2 {
        return Err(SuperviseError::StatusFdStdio(fd));
    }
    crate::sys::fds::take_inherited(fd).map_err(|source| SuperviseError::StatusFd { fd, source })
}

/// Refuses a `--workdir` that holds the temporary directory, where
/// [`super::sandbox::materialize`] makes the private bundle: the bundle
/// (config.json, the rootfs) would sit inside the directory the workload
/// may write. Stops: the bare "failed to prepare rootfs" that libcontainer
/// gave for it, and a workload reaching the bundle of its own or a later
/// run. Both paths are compared resolved (symlinks, `..`).
pub fn check_workdir_holds_no_bundle(workdir: &Path) -> Result<()> {
    let tmp = std::env::temp_dir();
    let resolved = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if resolved(&tmp).starts_with(resolved(workdir)) {
        return Err(SuperviseError::Message(format!(
            "--workdir {}: holds the temporary directory {} where runsbx makes the private \
             bundle, which the workload could then reach; choose a directory below it, or set \
             TMPDIR elsewhere",
            workdir.display(),
            tmp.display()
        )));
    }
    Ok(())
}
