//! Mounts that would land on the container's /proc: refused before any
//! fork, as runc refuses them.
//!
//! Stops: a fake /proc (CVE-2019-16884, its regression CVE-2023-27561, and
//! CVE-2019-19921 where the image's symlink `/evil -> /proc` aims a volume
//! at it) and files under /proc swapped by a mount (the redirections of
//! CVE-2025-52881). Over a fake /proc, whatever reads or writes the
//! container's /proc by path after the mounts (an LSM label, a sysctl, a
//! check of the workload's own status) talks to files the image chose.
//! libcontainer 0.7 has runc's check (`check_proc_mount`) but calls it for
//! `proc` and `sysfs` mounts only, so a bind at `/proc` or below passes;
//! its own writes (sysctls, AppArmor) go through a procfs handle of its own
//! (pathrs), which a mount cannot redirect.
//!
//! Each destination is resolved the way libcontainer will resolve it: inside
//! the rootfs, following the image's symlinks (openat2 `RESOLVE_IN_ROOT`).
//! Not covered: a symlink swapped in after this check by a process that
//! writes the rootfs while `create` runs; the Executor's check that /proc
//! is a procfs root (`executor.rs`) catches the fake /proc then, and the
//! proposal for libcontainer is in docs/security.md.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use libcontainer::oci_spec::runtime::Spec;
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};

use super::facts::normalize;
use crate::error::{Result, RuntimeError};

/// The files under /proc a mount may cover: the ones lxcfs emulates, as
/// runc and libcontainer allow.
const ALLOWED_UNDER_PROC: &[&str] = &[
    "/proc/cpuinfo",
    "/proc/diskstats",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/swaps",
    "/proc/uptime",
    "/proc/loadavg",
    "/proc/slabinfo",
    "/proc/sys/kernel/ns_last_pid",
    "/proc/sys/crypto/fips_enabled",
];

/// Refuses a mount other than `proc` whose destination, resolved in
/// `rootfs`, is /proc or under it (but for [`ALLOWED_UNDER_PROC`]).
pub fn check(spec: &Spec, rootfs: &Path) -> Result<()> {
    let Some(mounts) = spec.mounts() else {
        return Ok(());
    };
    let root = nix::fcntl::open(
        rootfs,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map(crate::sys::fds::own)
    .map_err(|e| RuntimeError::sys(format!("open rootfs {}", rootfs.display()), e))?;
    for (i, m) in mounts.iter().enumerate() {
        if m.typ().as_deref() == Some("proc") {
            continue;
        }
        let real = resolve_in_root(&root, m.destination());
        let Ok(under) = real.strip_prefix("/proc") else {
            continue;
        };
        if !under.as_os_str().is_empty() && ALLOWED_UNDER_PROC.iter().any(|a| Path::new(a) == real)
        {
            continue;
        }
        let via = match real.as_path() == normalize(m.destination()) {
            true => String::new(),
            false => format!(" (through a symlink in the rootfs: {})", real.display()),
        };
        return Err(RuntimeError::Spec(format!(
            "mounts[{i}] ({} {} on {}){via}: a mount over /proc or a file in it would give \
             the runtime and the workload a fake procfs (CVE-2019-16884, CVE-2019-19921, \
             CVE-2025-52881); only a proc mount goes there",
            m.typ().as_deref().unwrap_or("bind"),
            m.source()
                .as_deref()
                .map(|s| s.display().to_string())
                .unwrap_or_default(),
            m.destination().display()
        )));
    }
    Ok(())
}

/// Where `dest` lands in the rootfs, as a path from its root: each
/// component looked up in turn, and a symlink replaced by its target (an
/// absolute one from the rootfs's root, `..` never above it), as
/// libcontainer's in-root resolution will do; a name that does not exist
/// is taken as spelled (it will be created as a directory). Symlinks whose
/// target does not exist yet (`/evil -> /proc/sys/kernel` before procfs is
/// mounted) are followed too.
fn resolve_in_root(root: &OwnedFd, dest: &Path) -> PathBuf {
    use std::collections::VecDeque;
    use std::ffi::OsString;
    let mut pending: VecDeque<OsString> = dest
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    let mut resolved = PathBuf::from("/");
    // As the kernel's limit on nested links (ELOOP).
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            resolved.pop();
            continue;
        }
        let candidate = resolved.join(&name);
        match read_link_in_root(root, &candidate) {
            Some(target) if links < 40 => {
                links += 1;
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                for c in target.components().rev() {
                    match c {
                        Component::Normal(n) => pending.push_front(n.to_os_string()),
                        Component::ParentDir => pending.push_front("..".into()),
                        _ => {}
                    }
                }
            }
            _ => resolved = candidate,
        }
    }
    resolved
}

/// The target of `path` (in-root, its parents already free of symlinks)
/// when it is a symlink.
fn read_link_in_root(root: &OwnedFd, path: &Path) -> Option<PathBuf> {
    let rel = path.strip_prefix("/").ok()?;
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let fd = openat2(root.as_raw_fd(), rel, how)
        .map(crate::sys::fds::own)
        .ok()?;
    nix::fcntl::readlinkat(Some(fd.as_raw_fd()), "")
        .ok()
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::symlink;

    fn spec(mounts: serde_json::Value) -> Spec {
        serde_json::from_value(json!({"ociVersion": "1.0.2", "mounts": mounts})).unwrap()
    }

    fn bind(dest: &str) -> serde_json::Value {
        json!({"destination": dest, "type": "bind", "source": "/tmp", "options": ["rbind"]})
    }

    #[test]
    fn mounts_landing_on_proc_are_refused_directly_or_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let rootfs = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(rootfs.join("proc")).unwrap();
        std::fs::create_dir_all(rootfs.join("data")).unwrap();
        symlink("/proc", rootfs.join("evil")).unwrap();
        symlink("../../proc/sys", rootfs.join("data/up")).unwrap();
        symlink("/proc/sys/kernel", rootfs.join("dangling")).unwrap();
        let proc = json!({"destination": "/proc", "type": "proc", "source": "proc"});
        assert!(check(&spec(json!([proc])), &rootfs).is_ok());
        for (dest, via) in [
            ("/proc", false),
            ("/proc/", false),
            ("/proc/sys/kernel/core_pattern", false),
            ("/evil", true),
            ("/evil/self/attr", true),
            ("/data/up/kernel", true),
            ("/dangling/shm_rmid_forced", true),
        ] {
            let err = check(&spec(json!([proc, bind(dest)])), &rootfs)
                .unwrap_err()
                .to_string();
            assert!(err.contains("mounts[1] (bind /tmp on "), "{dest}: {err}");
            assert!(err.contains("CVE-2019-16884"), "{err}");
            assert_eq!(err.contains("through a symlink"), via, "{dest}: {err}");
        }
        for dest in [
            "/proc/meminfo",
            "/data",
            "/data/proc",
            "/procfs",
            "/tmp/proc",
        ] {
            let r = check(&spec(json!([proc, bind(dest)])), &rootfs);
            assert!(r.is_ok(), "{dest}: {r:?}");
        }
    }
}
