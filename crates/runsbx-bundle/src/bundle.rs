//! Writing a generated bundle to disk.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use oci_spec::runtime::Mount;

use crate::config::SandboxConfig;
use crate::error::BundleError;
use crate::generate::ROOTFS;

/// Creates `dir` (or uses it when it exists and is empty), `dir/rootfs`
/// (0755) with the mount points and the user database (see
/// [`crate::userdb`]), and `dir/config.json` (0644). Refuses a non-empty
/// directory rather than mixing a new config with old files.
pub fn write_bundle(dir: &Path, config: &SandboxConfig) -> Result<(), BundleError> {
    let bad = |reason: String| BundleError::Bundle {
        path: dir.to_path_buf(),
        reason,
    };
    match std::fs::read_dir(dir) {
        Ok(mut rd) => {
            if rd.next().is_some() {
                return Err(bad("exists and is not empty".into()));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(dir)
                .map_err(|e| bad(e.to_string()))?;
        }
        Err(e) => return Err(bad(e.to_string())),
    }
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create(dir.join(ROOTFS))
        .map_err(|e| bad(format!("{ROOTFS}: {e}")))?;
    let mounts = config.mounts();
    make_mountpoints(&dir.join(ROOTFS), mounts).map_err(bad)?;
    for (path, text) in crate::userdb::user_db(config.spec()) {
        // A bind the operator asked for (`--ro /etc/passwd`) is shown instead.
        if !mounts.iter().any(|m| m.destination() == Path::new(path)) {
            write_new(&dir.join(ROOTFS), path, text.as_bytes()).map_err(bad)?;
        }
    }
    let mut text = serde_json::to_vec_pretty(&config.to_json()?).map_err(|e| bad(e.to_string()))?;
    text.push(b'\n');
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(dir.join("config.json"))
        .and_then(|mut f| f.write_all(&text))
        .map_err(|e| bad(format!("config.json: {e}")))
}

/// Writes a new file (0644) at container path `path` in `rootfs`, making
/// its parent directories (0755).
fn write_new(rootfs: &Path, path: &str, text: &[u8]) -> Result<(), String> {
    let target = rootfs.join(path.trim_start_matches('/'));
    if let Some(parent) = target.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(|e| format!("{path}: {e}"))?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&target)
        .and_then(|mut f| f.write_all(text))
        .map_err(|e| format!("{path}: {e}"))
}

/// Creates every mount destination in the rootfs: a file for a bind of a
/// file, a directory otherwise. The container's root is an unprivileged host
/// user and could not create them in a rootfs owned by the invoker; a
/// read-only rootfs could not take them at all.
pub fn make_mountpoints(rootfs: &Path, mounts: &[Mount]) -> Result<(), String> {
    for m in mounts {
        let dest = m.destination().display();
        let rel = m.destination().strip_prefix("/").unwrap_or(m.destination());
        if rel.as_os_str().is_empty() {
            continue;
        }
        let target = rootfs.join(rel);
        let is_file = m.typ().as_deref() == Some("bind")
            && m.source()
                .as_ref()
                .is_some_and(|s| std::fs::metadata(s).is_ok_and(|md| !md.is_dir()));
        let dir = if is_file {
            target.parent()
        } else {
            Some(target.as_path())
        };
        if let Some(dir) = dir {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(dir)
                .map_err(|e| format!("mountpoint {dest}: {e}"))?;
        }
        if is_file && !target.exists() {
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o644)
                .open(&target)
                .map_err(|e| format!("mountpoint {dest}: {e}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::os::unix::fs::PermissionsExt;

    fn config(mut v: Value) -> SandboxConfig {
        v["ociVersion"] = "1.0.2".into();
        SandboxConfig::new(serde_json::from_value(v).unwrap(), None)
    }

    #[test]
    fn writes_rootfs_and_config() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("b/nested");
        write_bundle(&dir, &config(serde_json::json!({}))).unwrap();
        let root = std::fs::metadata(dir.join("rootfs")).unwrap();
        assert!(root.is_dir());
        assert_eq!(std::fs::read_dir(dir.join("rootfs")).unwrap().count(), 0);
        let cfg = std::fs::metadata(dir.join("config.json")).unwrap();
        assert_eq!(cfg.permissions().mode() & 0o777, 0o644);
        let v: Value =
            serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
        assert_eq!(v["ociVersion"], "1.0.2");
    }

    #[test]
    fn writes_the_user_database_unless_a_bind_takes_its_place() {
        let t = tempfile::tempdir().unwrap();
        let host_file = t.path().join("host-group");
        std::fs::write(&host_file, b"staff:x:50:\n").unwrap();
        let dir = t.path().join("b");
        let config = config(serde_json::json!({
            "process": {"user": {"uid": 0, "gid": 0}, "cwd": "/w"},
            "mounts": [{"destination": "/etc/group", "type": "bind",
                        "source": host_file, "options": ["bind", "ro"]}],
        }));
        write_bundle(&dir, &config).unwrap();
        let rootfs = dir.join("rootfs");
        let passwd = std::fs::read_to_string(rootfs.join("etc/passwd")).unwrap();
        assert_eq!(passwd, "root:x:0:0:root:/w:/usr/sbin/nologin\n");
        let meta = std::fs::metadata(rootfs.join("etc/passwd")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o644);
        // The bind's mount point, empty: the operator's file is shown there.
        assert_eq!(std::fs::read(rootfs.join("etc/group")).unwrap(), b"");
    }

    #[test]
    fn refuses_a_non_empty_dir() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("x"), b"").unwrap();
        let e = write_bundle(t.path(), &config(serde_json::json!({})))
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("exists and is not empty"), "{e}");
        assert!(!t.path().join("config.json").exists());
    }
}
