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
    let spec = |linux: serde_json::Value, mounts: serde_json::Value| {
        let v = serde_json::json!({ "ociVersion": "1.0.2", "linux": linux, "mounts": mounts });
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
    ] {
        assert!(!needs_no_cgroup(&spec(linux.clone(), mounts)), "{linux}");
    }
}

#[test]
fn v1_cgroup_lines() {
    let hybrid = "12:pids:/a\n5:memory:/x/y\n3:cpu,cpuacct:/c\n0::/u\n";
    assert_eq!(v1_cgroup_in(hybrid, "memory"), Some("/x/y"));
    assert_eq!(v1_cgroup_in(hybrid, "cpuacct"), Some("/c"));
    assert_eq!(v1_cgroup_in("0::/only/v2\n", "memory"), None);
    assert_eq!(v1_cgroup_in("", "memory"), None);
}
