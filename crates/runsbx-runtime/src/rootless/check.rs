//! What of a spec rootless runsbx can honour, refused by name otherwise.
use libcontainer::oci_spec::runtime::{LinuxIdMapping, LinuxNamespaceType, Spec};

use crate::delegation::{self, Delegation};
use crate::error::{Result, RuntimeError};
use crate::spec::facts;

/// Refuses what rootless runsbx cannot do, naming it: resource limits (no
/// cgroup to hold them, or, with a `delegated` cgroup, no controller for
/// them), user namespace mappings other than the caller's, and a
/// process.user that namespace does not map.
pub fn check_spec(spec: &Spec, uid: u32, gid: u32, delegated: Option<&Delegation>) -> Result<()> {
    let limits = facts::requested_limits(spec);
    if let (Some(d), false) = (delegated, limits.is_empty()) {
        // Stops: a limit written to a cgroup whose controller is off, which
        // would fail late (after the cgroup and init exist) or not at all.
        delegation::check_limits(d, &limits).map_err(|e| RuntimeError::Spec(e.to_string()))?;
    } else if !limits.is_empty() {
        let limits: Vec<&str> = limits.iter().map(|(w, _)| *w).collect();
        // Stops: a container that the spec says cannot use more than N
        // bytes or processes running without any such limit.
        return Err(RuntimeError::Spec(format!(
            "linux.resources asks for {}: rootless runsbx runs without cgroups \
             (uid {uid} cannot write this host's cgroups), so the limits would not hold; \
             remove them (--timeout and --rss-limit need no cgroup) or run as root",
            limits.join(", ")
        )));
    }
    // Stops: processes a rootless workload forks outliving kill --all,
    // delete and --timeout. Without a cgroup those reach init only, and only
    // a pid namespace of its own makes SIGKILL to init end every process.
    if !facts::is_new_namespace(spec, LinuxNamespaceType::Pid) {
        return Err(RuntimeError::Spec(
            "linux.namespaces has no new pid namespace: rootless runsbx needs one, since without a \
             cgroup only init's pid namespace holds the container's processes \
             (`runsbx spec --rootless` writes a config that has it)"
                .into(),
        ));
    }
    let userns = facts::is_new_namespace(spec, LinuxNamespaceType::User);
    if !userns {
        return Err(RuntimeError::Spec(
            "linux.namespaces has no new user namespace: an ordinary user needs one \
             (`runsbx spec --rootless` writes a config that has it)"
                .into(),
        ));
    }
    let one = |maps: &[LinuxIdMapping], id: u32, field: &str| -> Result<()> {
        match maps {
            [m] if m.host_id() == id && m.size() == 1 => Ok(()),
            _ => Err(RuntimeError::Spec(format!(
                "linux.{field}: rootless runsbx maps exactly one id, the caller's \
                 ({{\"containerID\": 0, \"hostID\": {id}, \"size\": 1}}); \
                 ranges from /etc/subuid (newuidmap) are not supported"
            ))),
        }
    };
    one(facts::uid_mappings(spec), uid, "uidMappings")?;
    one(facts::gid_mappings(spec), gid, "gidMappings")?;
    if let Some(p) = spec.process() {
        let user = p.user();
        check_mapped(spec, user.uid(), Some(user.gid()), "process.user")?;
    }
    Ok(())
}

/// `exec --user`: only ids the container's user namespace maps exist in
/// it; the kernel's EINVAL would come back as a bare "failed syscall".
pub fn check_exec_user(spec: &Spec, user: Option<(u32, Option<u32>)>) -> Result<()> {
    match user {
        Some((uid, gid)) => check_mapped(spec, uid, gid, "--user"),
        None => Ok(()),
    }
}

fn check_mapped(spec: &Spec, uid: u32, gid: Option<u32>, what: &str) -> Result<()> {
    if !facts::maps_id(facts::uid_mappings(spec), uid) {
        return Err(RuntimeError::Spec(format!(
            "{what} {uid}: the container's user namespace does not map uid {uid} (rootless: only its root, the caller)"
        )));
    }
    if let Some(gid) = gid {
        if !facts::maps_id(facts::gid_mappings(spec), gid) {
            return Err(RuntimeError::Spec(format!(
                "{what} {uid}:{gid}: the container's user namespace does not map gid {gid} (rootless: only its root group, the caller's)"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(linux: serde_json::Value) -> Spec {
        serde_json::from_value(serde_json::json!({
            "ociVersion": "1.0.2",
            "root": {"path": "rootfs"},
            "linux": linux,
        }))
        .unwrap()
    }

    fn userns_linux(extra: serde_json::Value) -> serde_json::Value {
        let mut l = serde_json::json!({
            "namespaces": [{"type": "user"}, {"type": "pid"}, {"type": "mount"}],
            "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}],
            "gidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}],
        });
        for (k, v) in extra.as_object().unwrap() {
            l[k] = v.clone();
        }
        l
    }

    #[test]
    fn accepts_the_callers_single_mapping() {
        check_spec(&spec(userns_linux(serde_json::json!({}))), 1000, 1000, None).unwrap();
        // Device rules need no cgroup rootless.
        let devices =
            serde_json::json!({"resources": {"devices": [{"allow": false, "access": "rwm"}]}});
        check_spec(&spec(userns_linux(devices)), 1000, 1000, None).unwrap();
    }

    #[test]
    fn refuses_limits_naming_them() {
        let r =
            serde_json::json!({"resources": {"memory": {"limit": 1048576}, "pids": {"limit": 5}}});
        let err = check_spec(&spec(userns_linux(r)), 1000, 1000, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("memory limits, a pids limit"), "{err}");
        assert!(err.contains("without cgroups"), "{err}");
        let r = serde_json::json!({"resources": {"cpu": {"quota": 1000}}});
        let err = check_spec(&spec(userns_linux(r)), 1000, 1000, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("cpu limits"), "{err}");
    }

    #[test]
    fn refuses_other_mappings() {
        let other =
            serde_json::json!({"uidMappings": [{"containerID": 0, "hostID": 0, "size": 1}]});
        assert!(check_spec(&spec(userns_linux(other)), 1000, 1000, None).is_err());
        let range =
            serde_json::json!({"gidMappings": [{"containerID": 0, "hostID": 1000, "size": 65536}]});
        assert!(check_spec(&spec(userns_linux(range)), 1000, 1000, None).is_err());
        let mut as_1000 = spec(userns_linux(serde_json::json!({})));
        as_1000.set_process(Some(
            serde_json::from_value(
                serde_json::json!({"user": {"uid": 1000, "gid": 0}, "cwd": "/"}),
            )
            .unwrap(),
        ));
        let err = check_spec(&as_1000, 1000, 1000, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("process.user 1000"), "{err}");
        let none = spec(serde_json::json!({"namespaces": [{"type": "pid"}, {"type": "mount"}]}));
        assert!(check_spec(&none, 1000, 1000, None)
            .unwrap_err()
            .to_string()
            .contains("user namespace"));
        let shared_pid =
            spec(serde_json::json!({"namespaces": [{"type": "user"}, {"type": "mount"}]}));
        assert!(check_spec(&shared_pid, 1000, 1000, None)
            .unwrap_err()
            .to_string()
            .contains("no new pid namespace"));
    }

    #[test]
    fn exec_user_must_be_mapped() {
        let s = spec(userns_linux(serde_json::json!({})));
        check_exec_user(&s, None).unwrap();
        check_exec_user(&s, Some((0, Some(0)))).unwrap();
        let err = check_exec_user(&s, Some((5, None)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not map uid 5"), "{err}");
        assert!(check_exec_user(&s, Some((0, Some(1)))).is_err());
    }
}
