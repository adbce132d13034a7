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
fn only_unreachable_plain_binds_in_a_user_namespace() {
    // Root's own metadata checks: the test relies on a uid 65534 that owns
    // nothing here, and on 0700 stopping it.
    let (_t, private, open) = tree();
    let mounts = serde_json::json!([
        {"destination": "/proc", "type": "proc", "source": "proc"},
        ro(&private.join("file"), "/p/file"),
        ro(&private.join("dir"), "/p/dir"),
        ro(&open.join("file"), "/o/file"),
        {"destination": "/rw", "type": "bind", "source": private.join("dir"), "options": ["rbind", "rw"]},
        {"destination": "/other", "type": "bind", "source": private.join("dir"), "options": ["rbind", "relatime"]},
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
            // Reachable, but listed before an idmapped bind (6), which
            // runsbx makes before libcontainer: made in order with it.
            (3, "/o/file", false, false, nn),
            // Read-write, as runc makes it (it opens the source first).
            (4, "/rw", true, true, MsFlags::empty()),
            // idmapped (the container's mapping): made by runsbx whatever
            // the container's root reaches.
            (6, "/odd", true, true, MsFlags::MS_RDONLY),
            (
                7,
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
    assert_eq!(
        without(&raw, &[1])["mounts"],
        serde_json::json!([{"destination": "/a"}, {"destination": "/c"}])
    );
}

fn idmapped(extra: serde_json::Value) -> Mount {
    let mut m = serde_json::json!({"destination": "/m", "source": "src", "options": ["bind"]});
    m.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(m).unwrap()
}

#[test]
fn an_idmapped_bind_takes_its_own_mapping_or_the_containers() {
    let own = idmapped(serde_json::json!({
        "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536},
                        {"containerID": 70000, "hostID": 1, "size": 1}],
        "gidMappings": [{"containerID": 0, "hostID": 200000, "size": 10}],
    }));
    let got = idmap_of(&spec(serde_json::json!([]), false), 3, &own)
        .unwrap()
        .unwrap();
    assert_eq!(
        got.from,
        MapFrom::Maps {
            uid: "0 100000 65536\n70000 1 1\n".into(),
            gid: "0 200000 10\n".into()
        }
    );
    assert!(!got.recursive);
    assert!(got.propagation.is_empty());

    let implied = idmapped(serde_json::json!({"options": ["rbind", "ridmap", "rshared"]}));
    let got = idmap_of(&spec(serde_json::json!([]), true), 0, &implied)
        .unwrap()
        .unwrap();
    assert_eq!(
        got.from,
        MapFrom::Maps {
            uid: "0 65534 1\n".into(),
            gid: "0 65534 1\n".into()
        }
    );
    assert!(got.recursive);
    assert_eq!(got.propagation, MsFlags::MS_SHARED);

    let mut joined = spec(serde_json::json!([]), false);
    let mut linux = joined.linux().clone().unwrap();
    let mut ns = linux.namespaces().clone().unwrap();
    ns.push(
        serde_json::from_value(serde_json::json!({"type": "user", "path": "/proc/9/ns/user"}))
            .unwrap(),
    );
    linux.set_namespaces(Some(ns));
    joined.set_linux(Some(linux));
    let flagged = idmapped(serde_json::json!({"options": ["bind", "idmap"]}));
    let got = idmap_of(&joined, 0, &flagged).unwrap().unwrap();
    assert_eq!(got.from, MapFrom::Joined("/proc/9/ns/user".into()));

    let plain = idmapped(serde_json::json!({}));
    assert_eq!(idmap_of(&joined, 0, &plain), Ok(None));
}

#[test]
fn an_idmapped_bind_runsbx_cannot_make_is_named() {
    let no_userns = spec(serde_json::json!([]), false);
    let cases = [
        (
            serde_json::json!({"options": ["rbind", "idmap"]}),
            "mounts[2] (/m): idmap without uidMappings and gidMappings takes the container's user namespace, and it has none",
        ),
        (
            serde_json::json!({"type": "tmpfs", "options": ["idmap"], "uidMappings": [], "gidMappings": []}),
            "mounts[2] (/m): only a bind mount can be idmapped",
        ),
        (
            serde_json::json!({"uidMappings": [{"containerID": 0, "hostID": 1, "size": 1}]}),
            "mounts[2] (/m): uidMappings and gidMappings go together",
        ),
        (
            serde_json::json!({"options": ["bind", "idmap", "mode=755"], "uidMappings": [], "gidMappings": []}),
            "mounts[2] (/m): option \"mode=755\" is not supported on an idmapped bind",
        ),
    ];
    for (extra, want) in cases {
        let mut m = idmapped(extra.clone());
        if extra.get("type").is_some() {
            m.set_options(Some(vec!["idmap".into()]));
        }
        assert_eq!(idmap_of(&no_userns, 2, &m).unwrap_err(), want, "{extra}");
    }
}

#[test]
fn an_idmapped_bind_under_an_earlier_mount_is_refused() {
    let t = tempfile::tempdir().unwrap();
    std::fs::create_dir(t.path().join("src")).unwrap();
    let maps = serde_json::json!([{"containerID": 0, "hostID": 100000, "size": 1}]);
    let mounts = |dest: &str| {
        serde_json::json!([
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs"},
            {"destination": dest, "source": "src", "options": ["bind"],
             "uidMappings": maps, "gidMappings": maps},
        ])
    };
    assert!(check_idmaps(&spec(mounts("/srv/x"), false), t.path()).is_ok());
    let err = check_idmaps(&spec(mounts("/tmp/x"), false), t.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "config.json: mounts[1] (/tmp/x): an idmapped bind under mounts[0] (/tmp) is not supported: runsbx \
         makes idmapped binds (and the plain binds before them) before the other mounts; list it \
         first"
    );
}
