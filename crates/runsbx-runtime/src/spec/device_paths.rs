//! Device nodes in a subdirectory of /dev (`/dev/net/tun`): made only on
//! the fresh tmpfs the spec mounts on /dev.
//!
//! Stops: a device node made on the host (the CVE-2021-30465 race, on
//! `linux.devices`). libcontainer 0.7 resolves a node's path inside the
//! rootfs (`scoped_join`), then creates its directories and the node by
//! path (`create_dir_all`, `mknod`), in init before pivot_root and, without
//! a user namespace, as host root. When the directory holding the node is
//! one another process can write while `create` runs (a /dev bound from a
//! volume that a racing container shares, the rootfs's own /dev, or a mount
//! on /dev/net), that process can swap it for a symlink between the two
//! steps, and the node (`tun`, or a disk's block device, mode 0666) appears
//! in a host directory of its choosing: `cve::cve_2021_30465_*` made it
//! happen 45 times in 250 attempts. On a tmpfs the spec mounts on /dev,
//! made in init's own mount namespace an instant before, nobody else can
//! write. Nodes directly in /dev are not affected: `mknod` does not follow
//! a final symlink. Not covered: a writer of the rootfs's top directory,
//! who can swap `dev` itself (the raced CVE-2026-41579 in
//! docs/security.md, open until libcontainer makes nodes by descriptor). The fix that keeps such bundles working belongs in
//! libcontainer (docs/security.md, "Proposals for libcontainer").

use std::path::Path;

use libcontainer::oci_spec::runtime::Spec;

use super::facts::normalize;
use crate::error::{Result, RuntimeError};

/// Refuses a `linux.devices` entry below a subdirectory of /dev unless
/// that directory lies on a tmpfs mounted on /dev and under no other mount.
pub fn check(spec: &Spec) -> Result<()> {
    let Some(devices) = spec.linux().as_ref().and_then(|l| l.devices().as_ref()) else {
        return Ok(());
    };
    let mounts = spec.mounts().as_deref().unwrap_or(&[]);
    for (i, d) in devices.iter().enumerate() {
        let path = normalize(d.path());
        let Some(dir) = path.parent().filter(|p| *p != Path::new("/dev")) else {
            continue;
        };
        // libcontainer makes mounts in spec order; the last one covering
        // the directory is where the node lands.
        let last = mounts
            .iter()
            .enumerate()
            .rfind(|(_, m)| dir.starts_with(normalize(m.destination())));
        let why = match last {
            Some((_, m))
                if normalize(m.destination()) == Path::new("/dev")
                    && m.typ().as_deref() == Some("tmpfs") =>
            {
                continue
            }
            Some((j, m)) => format!(
                "mounts[{j}] ({} on {}) holds it",
                m.typ().as_deref().unwrap_or("bind"),
                m.destination().display()
            ),
            None => "no tmpfs is mounted on /dev: the rootfs's own directory holds it".into(),
        };
        return Err(RuntimeError::Spec(format!(
            "linux.devices[{i}] ({}): {why}; whoever writes that directory during create \
             could aim the node at a host directory (CVE-2021-30465), so a node below a \
             directory of /dev is made only on a tmpfs mounted on /dev",
            d.path().display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(mounts: serde_json::Value, device: &str) -> Spec {
        serde_json::from_value(json!({
            "ociVersion": "1.0.2",
            "mounts": mounts,
            "linux": { "devices": [{ "path": device, "type": "c", "major": 10, "minor": 200 }] }
        }))
        .unwrap()
    }

    #[test]
    fn nodes_below_a_dev_subdirectory_need_the_dev_tmpfs() {
        let tmpfs = json!({"destination": "/dev", "type": "tmpfs", "source": "tmpfs"});
        let bind =
            json!({"destination": "/dev", "type": "bind", "source": "/v", "options": ["rbind"]});
        let net = json!({"destination": "/dev/net", "type": "bind", "source": "/v", "options": ["rbind"]});
        let pts = json!({"destination": "/dev/pts", "type": "devpts", "source": "devpts"});
        for (mounts, device) in [
            (json!([tmpfs]), "/dev/net/tun"),
            (json!([tmpfs, pts]), "/dev/net/tun"),
            (json!([bind]), "/dev/fuse"),
            (json!([]), "/dev/fuse"),
        ] {
            let r = check(&spec(mounts.clone(), device));
            assert!(r.is_ok(), "{mounts} {device}: {r:?}");
        }
        for (mounts, device, why) in [
            (
                json!([bind]),
                "/dev/net/tun",
                "mounts[0] (bind on /dev) holds it",
            ),
            (
                json!([tmpfs, net]),
                "/dev/net/tun",
                "mounts[1] (bind on /dev/net)",
            ),
            (json!([]), "/dev/dri/card0", "no tmpfs is mounted on /dev"),
            (
                json!([tmpfs, bind]),
                "/dev//net/./tun",
                "mounts[1] (bind on /dev)",
            ),
        ] {
            let err = check(&spec(mounts.clone(), device))
                .unwrap_err()
                .to_string();
            assert!(err.contains(why), "{mounts} {device}: {err}");
            assert!(err.contains("CVE-2021-30465"), "{err}");
        }
    }
}
