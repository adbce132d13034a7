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

/// One mount (with `recursive`, every mount below it too) whose attributes
/// runsbx sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remount {
    pub destination: PathBuf,
    /// MOUNT_ATTR_* bits to set.
    pub attr: u64,
    /// MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE, or 0.
    pub propagation: u64,
    pub recursive: bool,
}

/// The attributes a mount's options ask for, of those runsbx sets: the last
/// of each pair (`ro`/`rw`, `nosuid`/`suid`, ...) wins.
pub(crate) fn asked_attr<'a>(options: impl DoubleEndedIterator<Item = &'a str> + Clone) -> u64 {
    let last = |on: &str, off: &str| {
        options
            .clone()
            .rev()
            .find_map(|o| (o == on).then_some(true).or((o == off).then_some(false)))
            .unwrap_or(false)
    };
    [
        ("ro", "rw", libc::MOUNT_ATTR_RDONLY),
        ("nosuid", "suid", libc::MOUNT_ATTR_NOSUID),
        ("nodev", "dev", libc::MOUNT_ATTR_NODEV),
        ("noexec", "exec", libc::MOUNT_ATTR_NOEXEC),
    ]
    .into_iter()
    .filter(|(on, off, _)| last(on, off))
    .fold(0, |acc, (_, _, bit)| acc | bit)
}

/// What runsbx must set after libcontainer's mounts, in spec order. Applied
/// on every host, not only cgroup v1 ones: where libcontainer honoured the
/// options (cgroup v2), setting them again changes nothing.
pub fn plan(spec: &Spec) -> Vec<Remount> {
    let mut out = Vec::new();
    for (i, m) in spec.mounts().iter().flatten().enumerate() {
        let options = m.options().as_deref().unwrap_or_default();
        let options = options.iter().map(String::as_str);
        // An idmapped bind's propagation (see prebind.rs).
        if let Ok(Some(idmap)) = crate::prebind::idmap_of(spec, i, m) {
            if !idmap.propagation.is_empty() {
                out.push(Remount {
                    destination: m.destination().clone(),
                    attr: 0,
                    propagation: idmap.propagation.bits(),
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
                propagation: 0,
                recursive,
            });
        }
    }
    out
}

/// In init, after pivot_root: sets each remount's attributes.
pub fn apply(remounts: &[Remount]) -> Result<(), String> {
    for r in remounts {
        crate::sys::mountapi::set_attr_at(&r.destination, r.attr, r.propagation, r.recursive)
            .map_err(|e| {
                format!(
                    "mounts: {}: setting {} as the spec asks: {e}",
                    r.destination.display(),
                    describe(r.attr, r.propagation)
                )
            })?;
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
        assert_eq!(plan(&s).len(), 1);
        let none = spec(json!([{"destination": "/sys/fs/cgroup", "type": "cgroup",
            "source": "cgroup", "options": ["rw", "relatime"]}]));
        assert!(plan(&none).is_empty());
    }

    #[test]
    fn errors_name_the_mount_and_the_flags() {
        assert_eq!(
            describe(libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOEXEC, 0),
            "ro,noexec"
        );
    }
}
