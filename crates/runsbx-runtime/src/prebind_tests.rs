use super::*;

fn spec(mounts: serde_json::Value, userns: bool) -> Spec {
    let mut linux = serde_json::json!({
        "namespaces": [{"type": "pid"}, {"type": "mount"}],
    });
    if userns {
        linux["namespaces"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"type": "user"}));
        linux["uidMappings"] = serde_json::json!([{"containerID": 0, "hostID": 65534, "size": 1}]);
        linux["gidMappings"] = serde_json::json!([{"containerID": 0, "hostID": 65534, "size": 1}]);
    }
    serde_json::from_value(serde_json::json!({
        "ociVersion": "1.0.2",
        "root": {"path": "rootfs"},
        "mounts": mounts,
        "linux": linux,
    }))
    .unwrap()
}

/// A 0700 directory holding `file` and `dir/`, and a 0755 one holding the same.
fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let private = t.path().join("private");
    let open = t.path().join("open");
    for d in [&private, &open] {
        std::fs::create_dir_all(d.join("dir")).unwrap();
        std::fs::write(d.join("file"), b"x").unwrap();
    }
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    (t, private, open)
}

fn ro(src: &Path, dest: &str) -> serde_json::Value {
    serde_json::json!({"destination": dest, "type": "bind", "source": src,
                       "options": ["bind", "ro", "nosuid", "nodev"]})
}

#[test]
fn only_unreachable_readonly_binds_in_a_user_namespace() {
    // Root's own metadata checks: the test relies on a uid 65534 that owns
    // nothing here, and on 0700 stopping it.
    let (_t, private, open) = tree();
    let mounts = serde_json::json!([
        {"destination": "/proc", "type": "proc", "source": "proc"},
        ro(&private.join("file"), "/p/file"),
        ro(&private.join("dir"), "/p/dir"),
        ro(&open.join("file"), "/o/file"),
        {"destination": "/rw", "type": "bind", "source": private.join("dir"), "options": ["rbind", "rw"]},
        {"destination": "/odd", "type": "bind", "source": private.join("dir"), "options": ["rbind", "ro", "idmap"]},
        {"destination": "/rec", "type": "bind", "source": private.join("dir"), "options": ["rbind", "ro", "noexec"]},
    ]);
    let got = plan(&spec(mounts.clone(), true), Path::new("/b"));
    let summary: Vec<(usize, &str, bool, bool, MsFlags)> = got
        .iter()
        .map(|b| {
            (
                b.index,
                b.destination.to_str().unwrap(),
                b.is_dir,
                b.recursive,
                b.flags,
            )
        })
        .collect();
    let nn = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    assert_eq!(
        summary,
        vec![
            (1, "/p/file", false, false, nn),
            (2, "/p/dir", true, false, nn),
            (
                6,
                "/rec",
                true,
                true,
                MsFlags::MS_RDONLY | MsFlags::MS_NOEXEC
            ),
        ]
    );
    // No user namespace, or one whose root is host root: libcontainer
    // mounts as host root and reaches everything.
    assert!(plan(&spec(mounts.clone(), false), Path::new("/b")).is_empty());
    let mut s = spec(mounts, true);
    let mut linux = s.linux().clone().unwrap();
    linux.set_uid_mappings(Some(vec![LinuxIdMapping::default()]));
    s.set_linux(Some(linux));
    assert!(container_root(&s).is_none());
}

#[test]
fn a_bind_under_an_earlier_mount_stays_with_libcontainer() {
    // libcontainer would mount the tmpfs after runsbx's bind and hide it;
    // a bind listed before the tmpfs is fine (the tmpfs covers it either way).
    let (_t, private, _open) = tree();
    let mounts = serde_json::json!([
        ro(&private.join("file"), "/opt/before"),
        {"destination": "/opt", "type": "tmpfs", "source": "tmpfs"},
        ro(&private.join("file"), "/opt/./after"),
        ro(&private.join("dir"), "/srv"),
        ro(&private.join("file"), "/srv/inner"),
    ]);
    let got: Vec<usize> = plan(&spec(mounts, true), Path::new("/b"))
        .iter()
        .map(|b| b.index)
        .collect();
    // 4 lies under 3, which runsbx makes too, in order.
    assert_eq!(got, vec![0, 3, 4]);
}

#[test]
fn the_config_shown_to_libcontainer_lacks_exactly_those_mounts() {
    let raw = serde_json::json!({"mounts": [{"destination": "/a"}, {"destination": "/b"}, {"destination": "/c"}]});
    let b = PreBind {
        index: 1,
        source: "/x".into(),
        real: "/x".into(),
        destination: "/b".into(),
        recursive: false,
        flags: MsFlags::MS_RDONLY,
        is_dir: true,
    };
    assert_eq!(
        without(&raw, &[b])["mounts"],
        serde_json::json!([{"destination": "/a"}, {"destination": "/c"}])
    );
}
