use super::*;
use crate::discover::discover;
use serde_json::json;

fn opts(workdir: &Path) -> GenerateOptions {
    GenerateOptions {
        workdir: workdir.to_path_buf(),
        env: vec![("HOME".into(), workdir.to_string_lossy().into_owned())],
        host_ids: (1000, 1000),
        rlimits: vec![],
        seccomp: Some(
            serde_json::from_value(json!({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": []}))
                .unwrap(),
        ),
        landlock: Some(marker()),
        net: false,
    }
}

/// A policy the tests look for in the output.
fn marker() -> LandlockPolicy {
    LandlockPolicy::sandbox(&[PathBuf::from("/marker")], &[])
}

fn discovered() -> Discovery {
    discover(&["true".to_string()], "/usr/bin:/bin", &[]).unwrap()
}

#[test]
fn config_is_a_valid_oci_spec_with_the_sandbox_shape() {
    let t = tempfile::tempdir().unwrap();
    let wd = t.path().canonicalize().unwrap();
    let d = discovered();
    let v = generate(&d, &opts(&wd)).unwrap().to_json().unwrap();

    // It parses as an OCI spec with the runtime's own types.
    let spec: oci_spec::runtime::Spec = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(spec.version(), OCI_VERSION);

    assert_eq!(v["root"], json!({"path": "rootfs", "readonly": true}));
    assert_eq!(v["hostname"], "sandbox");
    let p = &v["process"];
    assert_eq!(p["terminal"], false);
    assert_eq!(p["noNewPrivileges"], true);
    assert_eq!(p["user"], json!({"uid": 0, "gid": 0}));
    assert_eq!(p["cwd"], wd.to_string_lossy().as_ref());
    assert_eq!(p["args"], json!(d.args));
    for set in [
        "bounding",
        "effective",
        "inheritable",
        "permitted",
        "ambient",
    ] {
        assert_eq!(p["capabilities"][set], json!([]), "{set}");
    }
    assert_eq!(
        p["rlimits"],
        json!([{"type": "RLIMIT_CORE", "soft": 0, "hard": 0},
               {"type": "RLIMIT_NOFILE", "soft": 1024, "hard": 1024}])
    );
    assert_eq!(p["landlock"], marker().to_json());
    assert_eq!(v["linux"]["seccomp"]["defaultAction"], "SCMP_ACT_ERRNO");

    let ns: Vec<&str> = v["linux"]["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        ns,
        ["user", "pid", "network", "mount", "ipc", "uts", "cgroup"]
    );
    assert_eq!(
        v["linux"]["uidMappings"],
        json!([{"containerID": 0, "hostID": 1000, "size": 1}])
    );
    assert_eq!(
        v["linux"]["gidMappings"],
        json!([{"containerID": 0, "hostID": 1000, "size": 1}])
    );
    assert!(v["linux"].get("resources").is_none());
    let devs: Vec<&str> = v["linux"]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        devs,
        [
            "/dev/null",
            "/dev/zero",
            "/dev/full",
            "/dev/random",
            "/dev/urandom"
        ]
    );
    assert!(v["linux"]["maskedPaths"]
        .as_array()
        .unwrap()
        .contains(&json!("/proc/kcore")));
    assert!(v["linux"]["readonlyPaths"]
        .as_array()
        .unwrap()
        .contains(&json!("/proc/sys")));
}

/// Every procfs path the sandbox's Landlock policy grants is bound onto
/// itself (a rule on an unpinned procfs dentry is lost when the kernel
/// reclaims it), `/proc/self` through a child of the directory it resolves
/// to in init.
#[test]
fn every_procfs_path_landlock_grants_is_pinned() {
    use runsbx_policy::landlock::{PROC_SELF, PROC_SELF_PIN, PROC_SELF_RESOLVED};
    let t = tempfile::tempdir().unwrap();
    let wd = t.path().canonicalize().unwrap();
    let v = generate(&discovered(), &opts(&wd))
        .unwrap()
        .to_json()
        .unwrap();
    let pinned: Vec<&str> = v["linux"]["readonlyPaths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    let policy = LandlockPolicy::sandbox(&[PathBuf::from("/usr")], &[wd]).list_proc();
    let granted: Vec<PathBuf> = policy
        .path_beneath
        .iter()
        .flat_map(|r| r.paths.iter().cloned())
        .filter(|p| p.starts_with("/proc") && p != Path::new("/proc"))
        .collect();
    assert_eq!(granted.len(), 4, "{granted:?}");
    for path in granted {
        let path = path.to_str().unwrap();
        let pin = if path == PROC_SELF {
            // Pinned through a direct child (a dentry holds its parent).
            assert_eq!(
                Path::new(PROC_SELF_PIN).parent(),
                Some(Path::new(PROC_SELF_RESOLVED))
            );
            PROC_SELF_PIN
        } else {
            path
        };
        assert!(
            pinned.contains(&pin),
            "{path} is granted but {pin} not pinned: {pinned:?}"
        );
    }
    // runc's read-only paths stay, first.
    let runc = crate::runc_spec::READONLY_PATHS;
    assert_eq!(pinned[..runc.len()], runc);
}

#[test]
fn mounts_are_proc_dev_ro_binds_then_the_workdir() {
    let t = tempfile::tempdir().unwrap();
    let wd = t.path().canonicalize().unwrap();
    let d = discovered();
    let v = generate(&d, &opts(&wd)).unwrap().to_json().unwrap();
    let mounts = v["mounts"].as_array().unwrap();
    let dests: Vec<&str> = mounts
        .iter()
        .map(|m| m["destination"].as_str().unwrap())
        .collect();
    assert_eq!(dests[0], "/proc");
    assert_eq!(dests[1], "/dev");
    assert_eq!(mounts[1]["type"], "tmpfs");
    for (m, p) in mounts[2..mounts.len() - 1].iter().zip(&d.ro_paths) {
        assert_eq!(m["destination"], p.to_string_lossy().as_ref());
        assert_eq!(m["source"], m["destination"]);
        assert_eq!(m["options"], json!(["bind", "ro", "nosuid", "nodev"]));
    }
    assert_eq!(mounts.len(), 3 + d.ro_paths.len());
    let last = mounts.last().unwrap();
    assert_eq!(last["destination"], wd.to_string_lossy().as_ref());
    assert_eq!(
        last["options"],
        json!(["bind", "rw", "nosuid", "nodev", "noexec"])
    );
    // Nothing else: no /sys, no /tmp, no /dev/pts|shm|mqueue.
    for forbidden in ["/sys", "/tmp", "/dev/pts", "/dev/shm", "/dev/mqueue"] {
        assert!(!dests.contains(&forbidden), "{forbidden}");
    }
}

#[test]
fn host_network_drops_only_the_network_namespace() {
    let t = tempfile::tempdir().unwrap();
    let mut o = opts(&t.path().canonicalize().unwrap());
    o.net = true;
    o.seccomp = None;
    o.landlock = None;
    let v = generate(&discovered(), &o).unwrap().to_json().unwrap();
    let ns = v["linux"]["namespaces"].as_array().unwrap();
    assert_eq!(ns.len(), 6);
    assert!(!ns.contains(&json!({"type": "network"})));
    assert!(v["linux"].get("seccomp").is_none());
    assert!(v["process"].get("landlock").is_none());
}

#[test]
fn workdir_table() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let wd = base.join("wd");
    let ro_dir = base.join("ro");
    std::fs::create_dir_all(wd.join("sub")).unwrap();
    std::fs::create_dir_all(ro_dir.join("inner")).unwrap();
    std::fs::write(base.join("file"), b"").unwrap();
    std::os::unix::fs::symlink("/", base.join("rootlink")).unwrap();
    let ro = vec![ro_dir.clone(), PathBuf::from("/usr/bin/true")];
    let cases: Vec<(PathBuf, Option<&str>)> = vec![
        (wd.clone(), None),
        (ro_dir.join("inner"), None), // inside a read-only dir: bound on top
        (
            PathBuf::from("/"),
            Some("refusing the root directory as the writable workdir"),
        ),
        (
            base.join("rootlink"),
            Some("refusing the root directory as the writable workdir"),
        ),
        (PathBuf::from("rel/dir"), Some("must be an absolute path")),
        (ro_dir.clone(), Some("contains the read-only runtime path")),
        (base.clone(), Some("contains the read-only runtime path")),
        (
            PathBuf::from("/usr"),
            Some("contains the read-only runtime path /usr/bin/true"),
        ),
        (base.join("file"), Some("not a directory")),
        (base.join("missing"), Some("No such file")),
    ];
    for (w, want) in cases {
        let got = validate_workdir(&w, &ro);
        match (want, got) {
            (None, Ok(())) => {}
            (Some(msg), Err(e)) => {
                let e = e.to_string();
                assert!(
                    e.starts_with(&format!("--workdir {}: ", w.display())),
                    "{e}"
                );
                assert!(e.contains(msg), "{w:?}: {e}");
            }
            (want, got) => panic!("{w:?}: want {want:?}, got {got:?}"),
        }
    }
}

#[test]
fn generate_refuses_a_bad_workdir() {
    let e = generate(&discovered(), &opts(Path::new("/")))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "--workdir /: refusing the root directory as the writable workdir"
    );
}

#[test]
fn host_ids_table() {
    let wd = Path::new("/w");
    // A user maps to itself whatever owns the dir.
    assert_eq!(host_ids((1000, 1001), wd, (0, 0)).unwrap(), (1000, 1001));
    // Root maps to the workdir's unprivileged owner, never to 0.
    assert_eq!(host_ids((0, 0), wd, (1000, 100)).unwrap(), (1000, 100));
    assert_eq!(
        host_ids((0, 0), wd, (NOBODY, NOBODY)).unwrap(),
        (NOBODY, NOBODY)
    );
    let e = host_ids((0, 0), wd, (0, 5)).unwrap_err().to_string();
    assert!(e.starts_with("--workdir /w: owned by root"), "{e}");
    // Group root alone would make the workload's group host root; the
    // refusal names the group, not the (unprivileged) owner.
    let e = host_ids((0, 0), wd, (NOBODY, 0)).unwrap_err().to_string();
    assert!(
        e.starts_with("--workdir /w: owned by uid 65534 but group root (gid 0)"),
        "{e}"
    );
    assert!(!e.contains("owned by root"), "{e}");
}

#[test]
fn rlimit_table() {
    assert_eq!(rlimit_name("nofile").unwrap(), "RLIMIT_NOFILE");
    assert_eq!(rlimit_name("RLIMIT_AS").unwrap(), "RLIMIT_AS");
    assert_eq!(
        rlimit_name("bogus").unwrap_err().to_string(),
        "--rlimit bogus: unknown resource"
    );
    let m = merge_rlimits(&[("NOFILE".into(), 64, 64), ("as".into(), 1 << 30, 1 << 30)]).unwrap();
    assert_eq!(
        m,
        vec![
            ("RLIMIT_AS".to_string(), 1 << 30, 1 << 30),
            ("RLIMIT_CORE".to_string(), 0, 0),
            ("RLIMIT_NOFILE".to_string(), 64, 64),
        ]
    );
    let e = merge_rlimits(&[("NOFILE".into(), 10, 5)])
        .unwrap_err()
        .to_string();
    assert_eq!(e, "--rlimit NOFILE: soft limit 10 is above hard limit 5");
}
