use super::*;

#[test]
fn cgroup_dirs_follow_the_layout() {
    use libcgroups::common::CgroupSetup as S;
    let dirs = |setup, path: &str| {
        let d = Dirs::under(setup, Path::new(path), "memory");
        let show = |p: &PathBuf| p.display().to_string();
        (
            d.v1.as_ref().map(show),
            d.v2.iter().map(show).collect::<Vec<_>>(),
        )
    };
    let v1 = Some("/sys/fs/cgroup/memory/a/b".to_string());
    assert_eq!(dirs(Some(S::Legacy), "/a/b"), (v1.clone(), vec![]));
    assert_eq!(
        dirs(Some(S::Hybrid), "/a/b"),
        (v1.clone(), vec!["/sys/fs/cgroup/unified/a/b".to_string()])
    );
    assert_eq!(
        dirs(Some(S::Unified), "a/b"),
        (None, vec!["/sys/fs/cgroup/a/b".to_string()])
    );
    // Unknown: the three places the runtime always looked.
    assert_eq!(
        dirs(None, "/a/b"),
        (
            v1,
            vec![
                "/sys/fs/cgroup/unified/a/b".to_string(),
                "/sys/fs/cgroup/a/b".to_string()
            ]
        )
    );
}

#[test]
fn cgroup_free_only_when_the_cgroup_would_hold_nothing() {
    // No CAP_MKNOD: the process cannot make a device node.
    let spec = |linux: serde_json::Value, mounts: serde_json::Value| {
        let v = serde_json::json!({ "ociVersion": "1.0.2", "linux": linux, "mounts": mounts,
            "process": { "cwd": "/", "user": { "uid": 0, "gid": 0 },
                         "capabilities": { "bounding": ["CAP_KILL"] } } });
        serde_json::from_value::<libcontainer::oci_spec::runtime::Spec>(v).unwrap()
    };
    let own_pid = serde_json::json!([{ "type": "pid" }, { "type": "mount" }]);
    let none = serde_json::json!([]);
    let plain = spec(serde_json::json!({ "namespaces": own_pid }), none.clone());
    assert!(needs_no_cgroup(&plain));
    let mut hooked = plain.clone();
    hooked.set_hooks(Some(Default::default()));
    assert!(!needs_no_cgroup(&hooked), "a hook may look for the cgroup");
    for (linux, mounts) in [
        (
            serde_json::json!({ "namespaces": [{ "type": "pid" }] }),
            none.clone(),
        ),
        (
            serde_json::json!({ "namespaces": [{ "type": "mount" }] }),
            none.clone(),
        ),
        (
            serde_json::json!({ "namespaces": [{ "type": "pid", "path": "/proc/1/ns/pid" }] }),
            none.clone(),
        ),
        (
            serde_json::json!({ "namespaces": own_pid, "resources": {} }),
            none.clone(),
        ),
        (
            serde_json::json!({ "namespaces": own_pid, "cgroupsPath": "/x" }),
            none.clone(),
        ),
        (
            serde_json::json!({ "namespaces": own_pid }),
            serde_json::json!([{ "destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup" }]),
        ),
        // A bind that may carry device nodes.
        (
            serde_json::json!({ "namespaces": own_pid }),
            serde_json::json!([{ "destination": "/d", "type": "bind", "source": "/dev", "options": ["rbind"] }]),
        ),
    ] {
        assert!(!needs_no_cgroup(&spec(linux.clone(), mounts)), "{linux}");
    }
    let nodev_bind = serde_json::json!([{ "destination": "/d", "type": "bind", "source": "/x",
        "options": ["rbind", "dev", "nodev"] }]);
    assert!(needs_no_cgroup(&spec(
        serde_json::json!({ "namespaces": own_pid }),
        nodev_bind
    )));
    // CAP_MKNOD without a user namespace: a device cgroup is needed.
    let mut mknod = plain.clone();
    let caps: libcontainer::oci_spec::runtime::LinuxCapabilities =
        serde_json::from_value(serde_json::json!({ "bounding": ["CAP_MKNOD"] })).unwrap();
    let mut process = mknod.process().clone().unwrap();
    process.set_capabilities(Some(caps));
    mknod.set_process(Some(process));
    assert!(!needs_no_cgroup(&mknod), "CAP_MKNOD in the bounding set");
    let userns = serde_json::json!([{ "type": "pid" }, { "type": "mount" }, { "type": "user" }]);
    let mut in_userns = spec(serde_json::json!({ "namespaces": userns }), none.clone());
    in_userns.set_process(mknod.process().clone());
    assert!(
        needs_no_cgroup(&in_userns),
        "no device node can be made in a user namespace"
    );
}

#[test]
fn v1_cgroup_lines() {
    let hybrid = "12:pids:/a\n5:memory:/x/y\n3:cpu,cpuacct:/c\n0::/u\n";
    assert_eq!(v1_cgroup_in(hybrid, "memory"), Some("/x/y"));
    assert_eq!(v1_cgroup_in(hybrid, "cpuacct"), Some("/c"));
    assert_eq!(v1_cgroup_in("0::/only/v2\n", "memory"), None);
    assert_eq!(v1_cgroup_in("", "memory"), None);
}

#[test]
fn frozen_reads_from_both_freezers() {
    assert!(is_frozen("FROZEN\n"));
    assert!(is_frozen("FREEZING\n"));
    assert!(!is_frozen("THAWED\n"));
    assert!(is_frozen("populated 1\nfrozen 1\n"));
    assert!(!is_frozen("populated 0\nfrozen 0\n"));
}

/// `exec --cgroup CONTROLLER:PATH` from a library caller, past the CLI's
/// parser: a path out of the container's cgroup is refused before any file
/// is opened.
#[test]
fn a_controller_path_out_of_the_containers_cgroup_is_refused() {
    for sub in ["..", "a/../../b", "/abs"] {
        let err = controller_procs(Path::new("/c"), &[("pids".into(), sub.into())])
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a sub cgroup path"), "{sub}: {err}");
    }
}
