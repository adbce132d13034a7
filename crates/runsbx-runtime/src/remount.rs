//! Mount flags a spec asks for that libcontainer 0.7 leaves off, set by
//! runsbx in init once every mount is made.
//!
//! - **cgroup v1** (legacy and hybrid hosts): libcontainer mounts a tmpfs on
//!   the destination and each hierarchy below it (a bind of the host's
//!   hierarchy without a cgroup namespace, a fresh cgroup mount with one)
//!   without `ro`, and without `nosuid`, `nodev`, `noexec` on the binds.
//!   Stops: a container's root writing its own cgroup files, e.g. raising
//!   `pids.max` or `memory.limit_in_bytes` above what the engine set, or
//!   making sub-cgroups (found by runc's integration suite: `runc spec`'s
//!   bundle asks `ro`, as podman's and containerd's do).
//! - **`/dev`**: libcontainer mounts it writable whatever its options say,
//!   since it makes device nodes and mount points in it afterwards. runc
//!   remounts it read-only at the end; so does runsbx (the top mount only:
//!   /dev/pts, /dev/shm, /dev/mqueue keep their own flags).
//! - **an idmapped bind's propagation** (`shared`, `slave`, ...): runsbx
//!   makes the bind before libcontainer (prebind.rs), whose rootfs
//!   propagation would then replace what the mount asked.
//!
//! The Executor applies them (`mount_setattr`, so every mount below the
//! cgroup destination at once), before Landlock and before the workload
//! exists, with CAP_SYS_ADMIN kept through libcontainer's capability drop
//! for that (nnp.rs says why a kept capability cannot reach the workload).
//! A remount that fails stops `create`, naming the mount.

use std::path::{Path, PathBuf};

use libcontainer::oci_spec::runtime::Spec;

use crate::spec::facts;

/// One mount (with `recursive`, every mount below it too) whose attributes
/// runsbx sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remount {
    pub destination: PathBuf,
    /// MOUNT_ATTR_* bits to set.
    pub attr: u64,
    /// MOUNT_ATTR_* bits to clear: the options clear them (`rw`, `suid`, ...).
    pub clear: u64,
    /// MOUNT_ATTR_* bits to clear where the kernel lets the container's
    /// namespace clear them: a bind's flags its options do not name.
    pub clear_unlocked: u64,
    /// MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE, or 0.
    pub propagation: u64,
    pub recursive: bool,
}

/// The per-mount flags runsbx sets and clears, as (set, clear) options.
const FLAG_PAIRS: [(&str, &str, u64); 5] = [
    ("ro", "rw", libc::MOUNT_ATTR_RDONLY),
    ("nosuid", "suid", libc::MOUNT_ATTR_NOSUID),
    ("nodev", "dev", libc::MOUNT_ATTR_NODEV),
    ("noexec", "exec", libc::MOUNT_ATTR_NOEXEC),
    ("nosymfollow", "symfollow", libc::MOUNT_ATTR_NOSYMFOLLOW),
];

/// Options that say something of the mount's access-time flags.
const ATIME: [&str; 8] = [
    "atime",
    "noatime",
    "relatime",
    "norelatime",
    "strictatime",
    "nostrictatime",
    "diratime",
    "nodiratime",
];

/// Whether `option` is one of mount(8)'s, not the filesystem's data: a
/// flag, an atime option, a propagation.
pub(crate) fn is_mount_option(option: &str) -> bool {
    const OTHERS: [&str; 13] = [
        "defaults",
        "async",
        "sync",
        "bind",
        "rbind",
        "private",
        "rprivate",
        "shared",
        "rshared",
        "slave",
        "rslave",
        "unbindable",
        "runbindable",
    ];
    ATIME.contains(&option)
        || OTHERS.contains(&option)
        || FLAG_PAIRS
            .iter()
            .any(|(on, off, _)| option == *on || option == *off)
}

/// For each of `FLAG_PAIRS`: `Some(true)` set, `Some(false)` cleared, by
/// the last option of its pair; `None` not named.
fn asked<'a>(
    options: impl DoubleEndedIterator<Item = &'a str> + Clone,
) -> impl Iterator<Item = (Option<bool>, u64)> {
    FLAG_PAIRS.into_iter().map(move |(on, off, bit)| {
        let last = options
            .clone()
            .rev()
            .find_map(|o| (o == on).then_some(true).or((o == off).then_some(false)));
        (last, bit)
    })
}

/// The attributes a mount's options ask for, of those runsbx sets: the last
/// of each pair (`ro`/`rw`, `nosuid`/`suid`, ...) wins.
pub(crate) fn asked_attr<'a>(options: impl DoubleEndedIterator<Item = &'a str> + Clone) -> u64 {
    asked(options)
        .filter(|(last, _)| *last == Some(true))
        .fold(0, |acc, (_, bit)| acc | bit)
}

/// A bind's flags as runc 1.2 makes them: with no flag among its options
/// (`bind` alone, a propagation), the source's stay (`None`); with any, the
/// bind has the ones its options set and no other: (set, cleared by an
/// option, cleared because no option names it).
fn bind_attrs<'a>(
    options: impl DoubleEndedIterator<Item = &'a str> + Clone,
) -> Option<(u64, u64, u64)> {
    let flagged = options
        .clone()
        .any(|o| ATIME.contains(&o) || FLAG_PAIRS.iter().any(|(on, off, _)| o == *on || o == *off));
    if !flagged {
        return None;
    }
    Some(
        asked(options).fold((0, 0, 0), |(set, clear, unnamed), (last, bit)| match last {
            Some(true) => (set | bit, clear, unnamed),
            Some(false) => (set, clear | bit, unnamed),
            None => (set, clear, unnamed | bit),
        }),
    )
}

/// What runsbx must set after libcontainer's mounts, in spec order. Applied
/// on every host, not only cgroup v1 ones: where libcontainer honoured the
/// options (cgroup v2), setting them again changes nothing.
pub fn plan(spec: &Spec) -> Vec<Remount> {
    let mut out = Vec::new();
    for (i, m) in spec.mounts().iter().flatten().enumerate() {
        let options = m.options().as_deref().unwrap_or_default();
        let options = options.iter().map(String::as_str);
        if facts::is_bind(m) {
            // An idmapped bind's propagation (see prebind.rs).
            let propagation = match crate::prebind::idmap_of(spec, i, m) {
                Ok(Some(idmap)) => idmap.propagation.bits(),
                _ => 0,
            };
            let flags = bind_attrs(options);
            if flags.is_some() || propagation != 0 {
                let (attr, clear, clear_unlocked) = flags.unwrap_or_default();
                out.push(Remount {
                    destination: m.destination().clone(),
                    attr,
                    clear,
                    clear_unlocked,
                    propagation,
                    recursive: false,
                });
            }
            continue;
        }
        let (attr, recursive) = if m.typ().as_deref() == Some("cgroup") {
            (asked_attr(options), true)
        } else if m.destination() == Path::new("/dev") {
            (asked_attr(options) & libc::MOUNT_ATTR_RDONLY, false)
        } else {
            continue;
        };
        if attr != 0 {
            out.push(Remount {
                destination: m.destination().clone(),
                attr,
                clear: 0,
                clear_unlocked: 0,
                propagation: 0,
                recursive,
            });
        }
    }
    out
}

/// In init, after pivot_root: sets each remount's attributes.
pub fn apply(remounts: &[Remount]) -> Result<(), String> {
    use crate::sys::mountapi::{is_mount_root, locked_attr, set_attr_at};
    for r in remounts {
        let failed = |e: std::io::Error| {
            format!(
                "mounts: {}: setting {} as the spec asks: {e}",
                r.destination.display(),
                describe(r.attr, r.propagation)
            )
        };
        let mut clear = r.clear | r.clear_unlocked;
        if clear != 0 || r.propagation != 0 {
            // Stops: clearing a bind's flags on another mount (a later
            // mount of the list covering the bind's destination, a symlink
            // there): only the mount whose root the path is. A bind a later
            // mount hid is left as it is, as runc leaves it.
            match is_mount_root(&r.destination) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) => return Err(failed(e)),
            }
        }
        let attr = |clear| (r.attr, clear, r.propagation);
        match set_attr_at(&r.destination, attr(clear), r.recursive) {
            // In a user namespace the flags of a mount from a more
            // privileged one are locked: those the options do not name
            // stay, as runc 1.2 leaves them; one an option clears fails.
            Err(e) if e.raw_os_error() == Some(libc::EPERM) && r.clear_unlocked != 0 => {
                let locked = locked_attr(&r.destination).map_err(failed)?;
                clear = r.clear | (r.clear_unlocked & !locked);
                set_attr_at(&r.destination, attr(clear), r.recursive).map_err(failed)?;
            }
            other => other.map_err(failed)?,
        }
    }
    Ok(())
}

fn describe(attr: u64, propagation: u64) -> String {
    [
        (attr, libc::MOUNT_ATTR_RDONLY, "ro"),
        (attr, libc::MOUNT_ATTR_NOSUID, "nosuid"),
        (attr, libc::MOUNT_ATTR_NODEV, "nodev"),
        (attr, libc::MOUNT_ATTR_NOEXEC, "noexec"),
        (propagation, libc::MS_SHARED, "shared"),
        (propagation, libc::MS_SLAVE, "slave"),
        (propagation, libc::MS_PRIVATE, "private"),
        (propagation, libc::MS_UNBINDABLE, "unbindable"),
    ]
    .into_iter()
    .filter(|(of, bit, _)| of & bit != 0)
    .map(|(_, _, name)| name)
    .collect::<Vec<_>>()
    .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(mounts: serde_json::Value) -> Spec {
        serde_json::from_value(json!({"ociVersion": "1.0.2", "mounts": mounts})).unwrap()
    }

    #[test]
    fn runc_specs_cgroup_mount_is_made_readonly_recursively() {
        let s = spec(json!([
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
             "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]},
        ]));
        assert_eq!(
            plan(&s),
            vec![Remount {
                destination: "/sys/fs/cgroup".into(),
                attr: libc::MOUNT_ATTR_RDONLY
                    | libc::MOUNT_ATTR_NOSUID
                    | libc::MOUNT_ATTR_NODEV
                    | libc::MOUNT_ATTR_NOEXEC,
                clear: 0,
                clear_unlocked: 0,
                propagation: 0,
                recursive: true,
            }]
        );
    }

    #[test]
    fn dev_gets_only_readonly_and_only_when_asked() {
        let rw = spec(
            json!([{"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
            "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]}]),
        );
        assert!(plan(&rw).is_empty());
        let ro = spec(
            json!([{"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
            "options": ["nosuid", "ro", "mode=755"]}]),
        );
        assert_eq!(
            plan(&ro),
            vec![Remount {
                destination: "/dev".into(),
                attr: libc::MOUNT_ATTR_RDONLY,
                clear: 0,
                clear_unlocked: 0,
                propagation: 0,
                recursive: false
            }]
        );
    }

    #[test]
    fn the_last_of_each_pair_wins_and_other_mounts_are_left_alone() {
        let s = spec(json!([
            {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
             "options": ["ro", "rw", "suid", "nosuid"]},
            {"destination": "/data", "type": "bind", "source": "/tmp", "options": ["ro"]},
        ]));
        assert_eq!(plan(&s)[0].attr, libc::MOUNT_ATTR_NOSUID);
        assert_eq!(plan(&s)[0].clear_unlocked, 0);
        assert_eq!(plan(&s).len(), 2);
        let none = spec(json!([{"destination": "/sys/fs/cgroup", "type": "cgroup",
            "source": "cgroup", "options": ["rw", "relatime"]}]));
        assert!(plan(&none).is_empty());
    }

    /// runc 1.2: a bind keeps its source's flags unless its options name
    /// one; then it has exactly those its options set.
    #[test]
    fn a_bind_has_the_flags_its_options_name_or_its_sources() {
        let s = spec(json!([
            {"destination": "/keep", "type": "bind", "source": "/tmp", "options": ["rbind", "rprivate"]},
            {"destination": "/ro", "type": "bind", "source": "/tmp", "options": ["bind", "ro", "suid"]},
            {"destination": "/at", "source": "/tmp", "options": ["bind", "noatime"]},
        ]));
        let got = plan(&s);
        assert_eq!(got.len(), 2);
        let others =
            libc::MOUNT_ATTR_NODEV | libc::MOUNT_ATTR_NOEXEC | libc::MOUNT_ATTR_NOSYMFOLLOW;
        assert_eq!(
            (
                got[0].destination.to_str(),
                got[0].attr,
                got[0].clear,
                got[0].clear_unlocked
            ),
            (
                Some("/ro"),
                libc::MOUNT_ATTR_RDONLY,
                libc::MOUNT_ATTR_NOSUID,
                others
            )
        );
        assert_eq!(
            (got[1].attr, got[1].clear, got[1].clear_unlocked),
            (
                0,
                0,
                others | libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOSUID
            )
        );
    }

    #[test]
    fn errors_name_the_mount_and_the_flags() {
        assert_eq!(
            describe(libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOEXEC, 0),
            "ro,noexec"
        );
    }
}
