//! runc's `tmpcopyup`: a tmpfs that starts with the files the image has at
//! its destination. podman adds it to the tmpfs of `--read-only` (`/tmp`,
//! `/var/tmp`, `/run`) and of `--tmpfs`; libcontainer 0.7 passes it to
//! mount(2) as tmpfs data, which fails (EINVAL) inside init.
//!
//! runsbx makes such a tmpfs itself, with the binds of prebind.rs, in the
//! private mount namespace of the runsbx process before libcontainer forks:
//! created detached (fsopen, fsconfig, fsmount) with the destination's
//! owner and mode, filled from the rootfs, given its flags, then attached on
//! its mount point; the config libcontainer reads no longer lists it.
//!
//! Stops: the copy, done by root, reaching outside the rootfs. The
//! destination is opened with openat2(RESOLVE_IN_ROOT) and everything below
//! it through descriptors, each name opened without following a symlink
//! (symlinks are copied as symlinks, never read through); the mount point
//! is resolved the way prebind.rs resolves it. A copy that cannot be made
//! (ENOSPC past the tmpfs's `size=`, ...) fails the create (closed).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use libcontainer::oci_spec::runtime::{Mount, Spec};
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fchmodat, fstatat, mkdirat, mknodat, FchmodatFlags, Mode, SFlag};
use nix::unistd::{fchownat, Gid, Uid};

use crate::error::{Result, RuntimeError};

/// A tmpfs with `tmpcopyup`: `mounts[index]` of the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyUp {
    pub index: usize,
    pub destination: PathBuf,
    /// Its `key[=value]` options for the filesystem (`size=`, `mode=`, ...).
    pub data: Vec<(String, Option<String>)>,
    /// MOUNT_ATTR_* flags its options set (`ro`, `nosuid`, ...).
    pub attr: u64,
    /// What /proc/mounts shows as its source (`tmpfs` unless it names one).
    pub source: String,
}

fn wants_copy(m: &Mount) -> bool {
    m.typ().as_deref() == Some("tmpfs") && m.options().iter().flatten().any(|o| o == "tmpcopyup")
}

/// The tmpfs mounts of `spec` to make with their image's files, in order.
pub fn plan(spec: &Spec) -> Vec<CopyUp> {
    let mounts: &[Mount] = spec.mounts().as_deref().unwrap_or(&[]);
    mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| wants_copy(m))
        .map(|(index, m)| {
            let options = m.options().as_deref().unwrap_or_default();
            let data = options
                .iter()
                .filter(|o| *o != "tmpcopyup" && !crate::remount::is_mount_option(o))
                .map(|o| match o.split_once('=') {
                    Some((k, v)) => (k.to_string(), Some(v.to_string())),
                    None => (o.clone(), None),
                })
                .collect();
            CopyUp {
                index,
                destination: crate::spec::facts::normalize(m.destination()),
                data,
                attr: crate::remount::asked_attr(options.iter().map(String::as_str)),
                source: m
                    .source()
                    .as_ref()
                    .map(|s| s.display().to_string())
                    .unwrap_or_else(|| "tmpfs".into()),
            }
        })
        .collect()
}

/// Refuses a `tmpcopyup` tmpfs under a mount listed before it: runsbx makes
/// it before libcontainer makes the rest, so that mount would hide it.
pub fn check(spec: &Spec) -> Result<()> {
    let mounts: &[Mount] = spec.mounts().as_deref().unwrap_or(&[]);
    for (index, m) in mounts.iter().enumerate().filter(|(_, m)| wants_copy(m)) {
        let dest = crate::spec::facts::normalize(m.destination());
        let under = mounts[..index]
            .iter()
            .position(|e| dest.starts_with(crate::spec::facts::normalize(e.destination())));
        if let Some(j) = under {
            return Err(RuntimeError::Spec(format!(
                "mounts[{index}] ({}): a tmpcopyup tmpfs under mounts[{j}] ({}) is not \
                 supported: runsbx makes it before the other mounts; list it first",
                m.destination().display(),
                mounts[j].destination().display()
            )));
        }
    }
    Ok(())
}

/// Makes `c` under the rootfs `root` (in runsbx's private mount namespace,
/// see prebind::apply); a mount point that is missing is created owned by
/// `owner`, and the tmpfs then has `owner` and mode 0755.
pub fn apply(root: &OwnedFd, c: &CopyUp, owner: (u32, u32)) -> Result<()> {
    let ctx = |what: &str| {
        format!(
            "mounts[{}] (tmpfs on {}, tmpcopyup): {what}",
            c.index,
            c.destination.display()
        )
    };
    let sys = |what: &str, e: nix::Error| RuntimeError::Mount {
        context: ctx(what),
        err: e,
    };
    let io = |what: &str, e: std::io::Error| match e.raw_os_error() {
        Some(n) => sys(what, nix::errno::Errno::from_raw(n)),
        None => RuntimeError::io(ctx(what), e),
    };
    let rel = c.destination.strip_prefix("/").unwrap_or(&c.destination);
    let source = match crate::prebind::in_root(root, rel, OFlag::O_DIRECTORY) {
        Ok(fd) => Some(reopen_dir(&fd).map_err(|e| sys("open the image's directory", e))?),
        Err(nix::errno::Errno::ENOENT) => None,
        Err(e) => return Err(sys("open the image's directory", e)),
    };
    let (mode, uid, gid) = match &source {
        Some(dir) => {
            let st = nix::sys::stat::fstat(dir.as_raw_fd())
                .map_err(|e| sys("stat the image's directory", e))?;
            (st.st_mode & 0o7777, st.st_uid, st.st_gid)
        }
        None => (0o755, owner.0, owner.1),
    };
    let mut data = vec![("source".to_string(), Some(c.source.clone()))];
    data.extend(c.data.iter().cloned());
    for (key, value) in [
        ("mode", format!("{mode:o}")),
        ("uid", uid.to_string()),
        ("gid", gid.to_string()),
    ] {
        if !data.iter().any(|(k, _)| k == key) {
            data.push((key.to_string(), Some(value)));
        }
    }
    // Filled first, then made read-only if it asks.
    let tmpfs = crate::sys::mountapi::new_tmpfs(&data, 0).map_err(|e| io("create the tmpfs", e))?;
    if let Some(dir) = &source {
        copy_tree(dir, &tmpfs).map_err(|e| sys("copy the image's files", e))?;
    }
    let target = crate::prebind::mountpoint(root, rel, true, owner)
        .map_err(|e| sys("mount point in the rootfs", e))?;
    crate::sys::mountapi::set_tree_attr(&tmpfs, c.attr)
        .map_err(|e| io("set the tmpfs's flags", e))?;
    crate::sys::mountapi::attach_tree(&tmpfs, &target).map_err(|e| io("attach the tmpfs", e))
}

/// `fd` (an O_PATH directory) opened for reading its entries.
fn reopen_dir(fd: &OwnedFd) -> nix::Result<OwnedFd> {
    let raw = openat(
        Some(fd.as_raw_fd()),
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    Ok(crate::sys::fds::own(raw))
}

/// Copies what the directory `from` holds into the directory `to`: files,
/// directories, symlinks (as links), fifos, sockets and device nodes, with
/// their owners and modes (setuid bits included, set after the owner).
fn copy_tree(from: &OwnedFd, to: &OwnedFd) -> nix::Result<()> {
    let entries = nix::dir::Dir::openat(
        Some(from.as_raw_fd()),
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let names: Vec<std::ffi::CString> = {
        let mut entries = entries;
        entries
            .iter()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_owned())
            .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
            .collect()
    };
    let (src, dst) = (Some(from.as_raw_fd()), Some(to.as_raw_fd()));
    for name in names {
        let name = name.as_c_str();
        let st = fstatat(src, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)?;
        let kind = SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits());
        let perm = Mode::from_bits_truncate(st.st_mode & 0o7777);
        let nofollow = OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match kind {
            SFlag::S_IFDIR => {
                mkdirat(dst, name, Mode::from_bits_truncate(0o700))?;
                let inner = crate::sys::fds::own(openat(
                    src,
                    name,
                    OFlag::O_RDONLY | OFlag::O_DIRECTORY | nofollow,
                    Mode::empty(),
                )?);
                let made = crate::sys::fds::own(openat(
                    dst,
                    name,
                    OFlag::O_PATH | OFlag::O_DIRECTORY | nofollow,
                    Mode::empty(),
                )?);
                copy_tree(&inner, &made)?;
            }
            SFlag::S_IFREG => {
                let open = |dir, flags, mode| {
                    openat(dir, name, flags | nofollow, mode)
                        .map(|fd| std::fs::File::from(crate::sys::fds::own(fd)))
                };
                let mut input = open(src, OFlag::O_RDONLY, Mode::empty())?;
                let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL;
                let mut output = open(dst, flags, Mode::from_bits_truncate(0o600))?;
                std::io::copy(&mut input, &mut output).map_err(|e| {
                    nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO))
                })?;
            }
            SFlag::S_IFLNK => {
                let target = nix::fcntl::readlinkat(src, name)?;
                nix::unistd::symlinkat(target.as_os_str(), dst, name)?;
            }
            _ => mknodat(dst, name, kind, Mode::from_bits_truncate(0o600), st.st_rdev)?,
        }
        fchownat(
            dst,
            name,
            Some(Uid::from_raw(st.st_uid)),
            Some(Gid::from_raw(st.st_gid)),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )?;
        if kind != SFlag::S_IFLNK {
            fchmodat(dst, name, perm, FchmodatFlags::NoFollowSymlink)?;
        }
    }
    Ok(())
}

/// The config libcontainer is shown lacks these mounts (see prebind::without).
pub fn indexes(copies: &[CopyUp]) -> impl Iterator<Item = usize> + '_ {
    copies.iter().map(|c| c.index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn spec(mounts: serde_json::Value) -> Spec {
        serde_json::from_value(serde_json::json!({"ociVersion": "1.0.2", "mounts": mounts}))
            .unwrap()
    }

    #[test]
    fn podmans_tmpfs_options_split_into_flags_and_data() {
        let s = spec(serde_json::json!([
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
             "options": ["rw", "rprivate", "nosuid", "nodev", "tmpcopyup", "size=65536k", "huge"]},
            {"destination": "/run", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]},
        ]));
        let got = plan(&s);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].index, 1);
        assert_eq!(got[0].destination, Path::new("/tmp"));
        assert_eq!(
            got[0].data,
            [
                ("size".to_string(), Some("65536k".to_string())),
                ("huge".to_string(), None)
            ]
        );
        assert_eq!(
            got[0].attr,
            libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV
        );
        assert!(check(&s).is_ok());
        let under = spec(serde_json::json!([
            {"destination": "/run", "type": "tmpfs", "source": "tmpfs"},
            {"destination": "/run/x", "type": "tmpfs", "source": "tmpfs", "options": ["tmpcopyup"]},
        ]));
        assert!(check(&under)
            .unwrap_err()
            .to_string()
            .contains("under mounts[0] (/run)"));
    }
}
