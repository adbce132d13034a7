//! No unix socket of the host within the kernel's reach.
//!
//! The kernel profile allows `connect` on unix stream sockets, and neither
//! seccomp (the address is behind a pointer) nor Landlock (ABI 7 has no right
//! for it) can tell which socket is connected to. A read-only bind does not
//! help either: connecting needs write permission on the socket inode, which
//! a read-only mount does not take away. So the only sockets the kernel may
//! reach are the ones it makes itself, and runsbx checks, before it starts,
//! that the paths it binds hold no other.
//!
//! Stops: a kernel talking to a host service through a socket under a `--ro`
//! directory or left in a shared workdir (a desktop bus, an agent, a
//! database). Not covered: a socket made there by the host while the kernel
//! runs, and the system directories (`/usr`, `/lib` …), which are not
//! scanned: no service puts its socket there, and `/run`, `/var` and `/tmp`
//! are never bound. docs/sandbox.md says so.
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use super::JupyterError;

/// Most entries checked below one bind before runsbx gives up (and refuses).
pub const MAX_ENTRIES: usize = 200_000;

/// Fails on the first unix socket at or below any of `roots`. Symlinks are
/// not followed: their targets are either bound too (and checked) or not
/// visible in the sandbox.
pub fn no_sockets(roots: &[PathBuf], limit: usize) -> Result<(), JupyterError> {
    for root in roots {
        let mut seen = 0usize;
        walk(root, root, &mut seen, limit)?;
    }
    Ok(())
}

fn walk(bound: &Path, path: &Path, seen: &mut usize, limit: usize) -> Result<(), JupyterError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(JupyterError::io(
                format!("checking {} for sockets", path.display()),
                e,
            ))
        }
    };
    visit(bound, path, meta.file_type(), seen, limit)
}

fn visit(
    bound: &Path,
    path: &Path,
    kind: fs::FileType,
    seen: &mut usize,
    limit: usize,
) -> Result<(), JupyterError> {
    *seen += 1;
    if *seen > limit {
        return Err(JupyterError::TooLarge {
            bound: bound.to_path_buf(),
            limit,
        });
    }
    if kind.is_socket() {
        return Err(JupyterError::Socket {
            path: path.to_path_buf(),
            bound: bound.to_path_buf(),
        });
    }
    if !kind.is_dir() {
        return Ok(());
    }
    let entries = fs::read_dir(path)
        .map_err(|e| JupyterError::io(format!("checking {} for sockets", path.display()), e))?;
    for entry in entries {
        let entry = entry
            .map_err(|e| JupyterError::io(format!("checking {} for sockets", path.display()), e))?;
        // d_type from getdents: no stat per entry.
        let kind = entry.file_type().map_err(|e| {
            JupyterError::io(
                format!("checking {} for sockets", entry.path().display()),
                e,
            )
        })?;
        visit(bound, &entry.path(), kind, seen, limit)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn finds_a_socket_deep_down_and_passes_a_clean_tree() {
        let t = tempfile::tempdir().unwrap();
        let deep = t.path().join("a/b/c");
        fs::create_dir_all(&deep).unwrap();
        fs::write(deep.join("file"), b"x").unwrap();
        std::os::unix::fs::symlink("/run", t.path().join("a/link")).unwrap();
        no_sockets(&[t.path().to_path_buf()], MAX_ENTRIES).unwrap();
        let _l = UnixListener::bind(deep.join("s")).unwrap();
        let e = no_sockets(
            &[t.path().join("missing"), t.path().to_path_buf()],
            MAX_ENTRIES,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("a/b/c/s is a unix socket the sandbox could connect to"),
            "{e}"
        );
        // A bind of the socket itself.
        let e = no_sockets(&[deep.join("s")], MAX_ENTRIES)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is a unix socket"), "{e}");
    }

    #[test]
    fn gives_up_past_the_limit() {
        let t = tempfile::tempdir().unwrap();
        for i in 0..5 {
            fs::write(t.path().join(i.to_string()), b"").unwrap();
        }
        let e = no_sockets(&[t.path().to_path_buf()], 3)
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than 3 entries"), "{e}");
        no_sockets(&[t.path().to_path_buf()], 6).unwrap();
    }
}
