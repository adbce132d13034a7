use crate::spec::Validated;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::*;
use crate::spec::{Bundle, SandboxPolicy};
use libcontainer::oci_spec::runtime::{LinuxNamespaceType, Spec};
use runsbx_policy::landlock::{FsRight, LandlockPolicy};

fn no_host_ns(_: &Path, _: LinuxNamespaceType) -> bool {
    false
}

fn host(abi: Option<u8>) -> Host {
    Host {
        kernel_abi: abi,
        is_host_namespace: no_host_ns,
    }
}

/// A tight config: user namespace mapping 0 to 65534, every namespace, no
/// capabilities, a read-only root, a deny-by-default seccomp profile.
fn tight() -> Value {
    json!({
        "ociVersion": "1.0.2",
        "root": { "path": "rootfs", "readonly": true },
        "process": {
            "user": { "uid": 0, "gid": 0 },
            "args": ["/bin/true"],
            "env": ["PATH=/bin", "SECRET=hunter2"],
            "cwd": "/",
            "capabilities": { "bounding": [], "effective": [], "permitted": [], "inheritable": [], "ambient": [] },
            "noNewPrivileges": false,
            "rlimits": [ { "type": "RLIMIT_NOFILE", "soft": 256, "hard": 512 } ]
        },
        "mounts": [
            { "destination": "/proc", "type": "proc", "source": "proc" },
            { "destination": "/data", "type": "bind", "source": "/srv/data", "options": ["rbind", "rw"] }
        ],
        "linux": {
            "namespaces": [ { "type": "user" }, { "type": "pid" }, { "type": "network" },
                            { "type": "ipc" }, { "type": "uts" }, { "type": "mount" } ],
            "uidMappings": [ { "containerID": 0, "hostID": 65534, "size": 1 } ],
            "gidMappings": [ { "containerID": 0, "hostID": 65534, "size": 1 } ],
            "resources": { "memory": { "limit": 1048576 }, "pids": { "limit": 32 } },
            "seccomp": { "defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86_64"],
                "syscalls": [
                    { "names": ["read", "write", "exit_group"], "action": "SCMP_ACT_ALLOW" },
                    { "names": ["socket"], "action": "SCMP_ACT_ALLOW",
                      "args": [ { "index": 0, "value": 1, "op": "SCMP_CMP_EQ" } ] } ] }
        }
    })
}

fn read_only_layer(paths: &[&str]) -> LandlockPolicy {
    let p: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    LandlockPolicy::sandbox(&p, &[])
}

fn validated(config: &Value, landlock: Vec<LandlockPolicy>) -> Validated {
    let spec: Spec = serde_json::from_value(config.clone()).expect("spec");
    let seccomp = spec.linux().as_ref().and_then(|l| l.seccomp().clone());
    Validated {
        bundle: Bundle {
            dir: PathBuf::from("/bundle"),
            raw: config.clone(),
            spec,
        },
        policy: SandboxPolicy { seccomp, landlock },
        seccomp: None,
        operator_layer: false,
    }
}

fn explain_config(config: &Value, landlock: Vec<LandlockPolicy>, abi: Option<u8>) -> Explanation {
    let found = Executable::Found {
        path: "/bin/true".into(),
    };
    explain(&validated(config, landlock), found, &host(abi))
}

fn codes(e: &Explanation) -> Vec<&'static str> {
    e.warnings.iter().map(|w| w.code).collect()
}

fn names(rights: &[FsRight]) -> Vec<String> {
    rights.iter().map(|r| r.name().to_string()).collect()
}

// ---- host root ------------------------------------------------------------------

#[test]
fn host_uid_table() {
    let map = |c, h, size| Mapping {
        container_id: c,
        host_id: h,
        size,
    };
    type Row<'a> = (u32, bool, bool, &'a [Mapping], Option<u32>);
    let rows: &[Row] = &[
        // No user namespace: the container uid is the host uid.
        (0, false, false, &[], Some(0)),
        (1000, false, false, &[], Some(1000)),
        // A new one: the mappings decide.
        (0, true, false, &[map(0, 65534, 1)], Some(65534)),
        (5, true, false, &[map(0, 100000, 65536)], Some(100005)),
        (
            1000,
            true,
            false,
            &[map(0, 100000, 1000), map(1000, 0, 1)],
            Some(0),
        ),
        (2000, true, false, &[map(0, 100000, 1000)], None),
        (0, true, false, &[], None),
        (
            u32::MAX,
            true,
            false,
            &[map(u32::MAX - 1, u32::MAX, 2)],
            None,
        ),
        // A joined one: unknown from the spec.
        (0, true, true, &[map(0, 0, 1)], None),
    ];
    for (uid, userns, joined, maps, want) in rows {
        assert_eq!(
            host_id(*uid, *userns, *joined, maps),
            *want,
            "uid {uid} userns {userns} joined {joined} {maps:?}"
        );
    }
}

#[test]
fn host_root_with_and_without_user_namespace() {
    let e = explain_config(&tight(), vec![], Some(7));
    assert_eq!(e.user.host_uid, Some(65534));
    assert!(!e.user.host_root);
    assert!(!codes(&e).contains(&"host-root"));

    let mut c = tight();
    c["linux"]["uidMappings"] = json!([ { "containerID": 0, "hostID": 0, "size": 1 } ]);
    let e = explain_config(&c, vec![], Some(7));
    assert!(e.user.host_root);
    assert!(codes(&e).contains(&"host-root"), "{:?}", codes(&e));
    assert!(!codes(&e).contains(&"no-user-namespace"));

    let mut c = tight();
    c["linux"]["namespaces"].as_array_mut().unwrap().remove(0);
    let e = explain_config(&c, vec![], Some(7));
    assert!(e.user.host_root);
    let got = codes(&e);
    assert!(
        got.contains(&"host-root") && got.contains(&"no-user-namespace"),
        "{got:?}"
    );

    c["process"]["user"]["uid"] = json!(1000);
    let e = explain_config(&c, vec![], Some(7));
    assert_eq!(e.user.host_uid, Some(1000));
    assert!(!codes(&e).contains(&"host-root"));
}

// ---- Landlock access at a path ---------------------------------------------------------

#[test]
fn best_effort_drops_what_the_kernel_lacks() {
    let mut p = read_only_layer(&["/usr"]);
    p.best_effort = true;
    // What it leaves at a path: runsbx_policy::landlock::access's tests.
    let e = explain_config(&tight(), vec![p.clone()], Some(3));
    assert!(codes(&e).contains(&"landlock-downgrade"), "{:?}", codes(&e));
    let w = e
        .warnings
        .iter()
        .find(|w| w.code == "landlock-downgrade")
        .unwrap();
    assert!(
        w.message.contains("ioctl_dev (needs ABI 5)"),
        "{}",
        w.message
    );
    assert!(w.message.contains("kernel ABI 3"), "{}", w.message);

    // Not best effort: nothing is dropped (preflight refuses it instead).
    p.best_effort = false;
    let e = explain_config(&tight(), vec![p], Some(3));
    assert!(!codes(&e).contains(&"landlock-downgrade"));
}

// ---- warnings ---------------------------------------------------------------------

#[test]
fn a_tight_bundle_has_no_warnings_beyond_landlock() {
    let e = explain_config(&tight(), vec![], Some(7));
    assert_eq!(codes(&e), ["no-landlock"]);
    let e = explain_config(&tight(), vec![read_only_layer(&["/"])], Some(7));
    assert!(e.warnings.is_empty(), "{:?}", e.warnings);
    // Facts that need no warning.
    assert!(e.no_new_privs.effective && !e.no_new_privs.spec);
    assert_eq!(e.env, ["PATH", "SECRET"], "names only");
    assert!(!serde_json::to_string(&e).unwrap().contains("hunter2"));
    assert!(!e.to_text().contains("hunter2"));
    let sc = e.seccomp.as_ref().unwrap();
    assert_eq!(
        (
            sc.allowed_syscalls,
            sc.denied_syscalls,
            sc.conditional_rules
        ),
        (3, 0, 1)
    );
    assert_eq!(sc.default_action, "SCMP_ACT_ERRNO");
    assert_eq!(e.cgroup.memory_limit, Some(1048576));
    assert_eq!(e.cgroup.pids_limit, Some(32));
    assert_eq!(e.rlimits[0].kind, "RLIMIT_NOFILE");
}

#[test]
fn weak_spots_are_warned_about() {
    type Edit = fn(&mut Value);
    let rows: &[(&str, Edit)] = &[
        ("host-network", |c| {
            c["linux"]["namespaces"]
                .as_array_mut()
                .unwrap()
                .retain(|n| n["type"] != "network")
        }),
        ("host-pid", |c| {
            c["linux"]["namespaces"]
                .as_array_mut()
                .unwrap()
                .retain(|n| n["type"] != "pid")
        }),
        ("no-user-namespace", |c| {
            c["linux"]["namespaces"]
                .as_array_mut()
                .unwrap()
                .retain(|n| n["type"] != "user")
        }),
        ("capability", |c| {
            c["process"]["capabilities"]["bounding"] = json!(["CAP_SYS_ADMIN"]);
        }),
        ("no-seccomp", |c| {
            c["linux"].as_object_mut().unwrap().remove("seccomp");
        }),
        ("seccomp-allow-default", |c| {
            c["linux"]["seccomp"]["defaultAction"] = json!("SCMP_ACT_ALLOW");
        }),
        ("writable-runtime-path", |c| {
            c["mounts"][1]["destination"] = json!("/usr/lib");
        }),
    ];
    let layer = || {
        vec![
            read_only_layer(&["/"]),
            LandlockPolicy::sandbox(&[], &[PathBuf::from("/")]),
        ]
    };
    for (code, edit) in rows {
        let mut c = tight();
        edit(&mut c);
        // The writable-runtime-path row needs a layer that leaves writing.
        let layers = if *code == "writable-runtime-path" {
            vec![LandlockPolicy::sandbox(&[], &[PathBuf::from("/")])]
        } else {
            vec![layer()[0].clone()]
        };
        let e = explain_config(&c, layers, Some(7));
        assert!(codes(&e).contains(code), "{code}: {:?}", e.warnings);
        assert!(
            e.to_text().contains(&format!("warning: {code}: ")),
            "{code}"
        );
    }
    let mut c = tight();
    c["process"]["capabilities"]["permitted"] = json!(["CAP_SYS_ADMIN"]);
    c["process"]["capabilities"]["bounding"] = json!(["CAP_SYS_ADMIN", "CAP_KILL"]);
    let e = explain_config(&c, layer(), Some(7));
    let caps: Vec<&str> = e
        .warnings
        .iter()
        .filter(|w| w.code == "capability")
        .map(|w| w.message.as_str())
        .collect();
    assert_eq!(
        caps,
        [
            "keeps CAP_KILL (bounding)",
            "keeps CAP_SYS_ADMIN (bounding, permitted)"
        ]
    );
}

#[test]
fn writable_runtime_path_depends_on_bind_and_landlock() {
    let mut c = tight();
    c["mounts"][1]["destination"] = json!("/etc");
    // No Landlock: a rw bind over /etc is writable.
    let e = explain_config(&c, vec![], Some(7));
    assert!(codes(&e).contains(&"writable-runtime-path"));
    // Landlock leaves only read there: not writable in effect.
    let e = explain_config(&c, vec![read_only_layer(&["/"])], Some(7));
    assert!(!codes(&e).contains(&"writable-runtime-path"));
    assert_eq!(
        e.mounts[1].landlock.as_deref(),
        Some(&names(&[FsRight::Execute, FsRight::ReadFile, FsRight::ReadDir])[..])
    );
    // ro, or a tmpfs (nothing of the host's): no warning.
    c["mounts"][1]["options"] = json!(["rbind", "ro"]);
    assert!(!codes(&explain_config(&c, vec![], Some(7))).contains(&"writable-runtime-path"));
    c["mounts"][1] = json!({ "destination": "/etc", "type": "tmpfs", "source": "tmpfs" });
    assert!(!codes(&explain_config(&c, vec![], Some(7))).contains(&"writable-runtime-path"));
    // A data directory: no warning.
    let e = explain_config(&tight(), vec![], Some(7));
    assert!(!codes(&e).contains(&"writable-runtime-path"));
}

#[test]
fn a_namespace_joined_from_the_host_counts_as_shared() {
    fn all_host(_: &Path, _: LinuxNamespaceType) -> bool {
        true
    }
    let mut c = tight();
    for n in c["linux"]["namespaces"].as_array_mut().unwrap() {
        if n["type"] == "network" {
            n["path"] = json!("/proc/1/ns/net");
        }
    }
    let v = validated(&c, vec![read_only_layer(&["/"])]);
    let found = Executable::Found {
        path: "/bin/true".into(),
    };
    let e = explain(&v, found.clone(), &host(Some(7)));
    assert!(!codes(&e).contains(&"host-network"));
    let h = Host {
        kernel_abi: Some(7),
        is_host_namespace: all_host,
    };
    let e = explain(&v, found, &h);
    assert!(codes(&e).contains(&"host-network"), "{:?}", e.warnings);
    let net = e.namespaces.iter().find(|n| n.kind == "network").unwrap();
    assert_eq!(
        net.mode,
        NsMode::Joined {
            path: "/proc/1/ns/net".into(),
            host: true
        }
    );
}

// ---- finding the executable ----------------------------------------------------------

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("runsbx-explain-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn exe(path: &Path, mode: u32) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, "#!/bin/sh\n").unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// rootfs/bin -> /usr/bin (absolute, so it must resolve in the container),
/// /usr a bind of host/usr holding usr/bin/sh -> dash.
fn layout(t: &TempDir, args: &[&str], env: &[&str]) -> Bundle {
    let rootfs = t.0.join("rootfs");
    fs::create_dir_all(rootfs.join("usr")).unwrap();
    fs::create_dir_all(rootfs.join("dev")).unwrap();
    symlink("/usr/bin", rootfs.join("bin")).unwrap();
    exe(&t.0.join("hostusr/bin/dash"), 0o755);
    exe(&t.0.join("hostusr/bin/noexec"), 0o644);
    symlink("dash", t.0.join("hostusr/bin/sh")).unwrap();
    let config = json!({
        "ociVersion": "1.0.2",
        "root": { "path": "rootfs" },
        "process": { "user": { "uid": 0, "gid": 0 }, "args": args, "env": env, "cwd": "/" },
        "mounts": [
            { "destination": "/usr", "type": "bind", "source": t.0.join("hostusr"), "options": ["rbind", "ro"] },
            { "destination": "/dev", "type": "tmpfs", "source": "tmpfs" }
        ],
        "linux": {}
    });
    Bundle {
        dir: t.0.clone(),
        spec: serde_json::from_value(config.clone()).unwrap(),
        raw: config,
    }
}

#[test]
fn executable_is_resolved_in_the_container_view() {
    let t = TempDir::new("exe");
    let found = |args: &[&str], env: &[&str]| {
        let b = layout(&t, args, env);
        let r = find_executable(&b).map_err(|e| e.to_string());
        let _ = fs::remove_dir_all(&t.0);
        fs::create_dir_all(&t.0).unwrap();
        r
    };
    let at = |p: &str| Ok(Executable::Found { path: p.into() });
    assert_eq!(found(&["/bin/sh"], &[]), at("/bin/sh"));
    assert_eq!(found(&["sh"], &["PATH=/sbin:/bin"]), at("/bin/sh"));
    assert_eq!(
        found(&["sh"], &[]),
        at("/usr/bin/sh"),
        "init's default PATH"
    );
    assert_eq!(
        found(&["/bin/nonexistent"], &[]),
        Err("exec /bin/nonexistent: No such file or directory (os error 2)".into())
    );
    assert_eq!(
        found(&["nonexistent"], &["PATH=/bin"]),
        Err("exec: \"nonexistent\": executable file not found in $PATH".into())
    );
    assert_eq!(
        found(&["/bin/noexec"], &[]),
        Err("exec /bin/noexec: permission denied (no execute bit)".into())
    );
    assert_eq!(
        found(&["/usr"], &[]),
        Err("exec /usr: not a regular file".into())
    );
    assert!(
        matches!(found(&["/dev/x"], &[]), Ok(Executable::NotChecked { ref reason }) if reason.contains("tmpfs")),
        "under a tmpfs: not checked"
    );
}
