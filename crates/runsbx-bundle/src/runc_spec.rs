//! Pure: the config.json `runsbx spec` writes, which is what `runc spec`
//! (and `runc spec --rootless`) of runc 1.1 write, in the same bytes: runc's
//! key order, a tab per level, no newline at the end. Tools and test suites
//! written for runc edit that file with sed or jq and expect its values (the
//! hostname `runc`, `sh` on a terminal, no cgroup namespace), so runsbx
//! writes it as runc does rather than oci-spec's default.
//!
//! The structs below exist for their field order, which serde keeps and
//! which is runc's; their values are in [`runc_spec`].

use serde::Serialize;

/// runc 1.1's `specs.Version`.
const VERSION: &str = "1.0.2-dev";

/// runc's masked paths (`linux.maskedPaths`), which generated sandboxes
/// use too (less `/sys/firmware`: they have no `/sys`).
pub const MASKED_PATHS: [&str; 10] = [
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/sys/firmware",
    "/proc/scsi",
];

/// runc's read-only paths (`linux.readonlyPaths`).
pub const READONLY_PATHS: [&str; 5] = [
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// The capabilities runc's default grants, in each set but inheritable.
const CAPS: [&str; 3] = ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"];

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Config {
    oci_version: &'static str,
    process: Process,
    root: Root,
    hostname: &'static str,
    mounts: Vec<Mount>,
    linux: Linux,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Process {
    terminal: bool,
    user: User,
    args: [&'static str; 1],
    env: [&'static str; 2],
    cwd: &'static str,
    capabilities: Capabilities,
    rlimits: [Rlimit; 1],
    no_new_privileges: bool,
}

#[derive(Serialize)]
struct User {
    uid: u32,
    gid: u32,
}

#[derive(Serialize)]
struct Capabilities {
    bounding: [&'static str; 3],
    effective: [&'static str; 3],
    permitted: [&'static str; 3],
    ambient: [&'static str; 3],
}

#[derive(Serialize)]
struct Rlimit {
    #[serde(rename = "type")]
    kind: &'static str,
    hard: u64,
    soft: u64,
}

#[derive(Serialize)]
struct Root {
    path: &'static str,
    readonly: bool,
}

#[derive(Serialize)]
struct Mount {
    destination: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
    source: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    options: Vec<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Linux {
    #[serde(skip_serializing_if = "Option::is_none")]
    uid_mappings: Option<[IdMapping; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gid_mappings: Option<[IdMapping; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<Resources>,
    namespaces: Vec<Namespace>,
    masked_paths: [&'static str; 10],
    readonly_paths: [&'static str; 5],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IdMapping {
    #[serde(rename = "containerID")]
    container_id: u32,
    #[serde(rename = "hostID")]
    host_id: u32,
    size: u32,
}

#[derive(Serialize)]
struct Resources {
    devices: [DeviceRule; 1],
}

#[derive(Serialize)]
struct DeviceRule {
    allow: bool,
    access: &'static str,
}

#[derive(Serialize)]
struct Namespace {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// The config.json text of `runc spec`, or with `rootless` (the invoking
/// user's effective uid and gid) that of `runc spec --rootless`: a user
/// namespace mapping container root to that user, no network namespace,
/// `/sys` bound from the host, devpts without `gid=5` (no such group is
/// mapped), no `linux.resources`.
pub fn runc_spec(rootless: Option<(u32, u32)>) -> String {
    let mapping = |host_id| {
        [IdMapping {
            container_id: 0,
            host_id,
            size: 1,
        }]
    };
    let mount = |destination, kind, source, options: &[&'static str]| Mount {
        destination,
        kind,
        source,
        options: options.to_vec(),
    };
    let devpts: &[&str] = match rootless {
        Some(_) => &[
            "nosuid",
            "noexec",
            "newinstance",
            "ptmxmode=0666",
            "mode=0620",
        ],
        None => &[
            "nosuid",
            "noexec",
            "newinstance",
            "ptmxmode=0666",
            "mode=0620",
            "gid=5",
        ],
    };
    let sys = match rootless {
        Some(_) => mount(
            "/sys",
            "none",
            "/sys",
            &["rbind", "nosuid", "noexec", "nodev", "ro"],
        ),
        None => mount(
            "/sys",
            "sysfs",
            "sysfs",
            &["nosuid", "noexec", "nodev", "ro"],
        ),
    };
    let mut namespaces: Vec<&str> = vec!["pid", "network", "ipc", "uts", "mount"];
    if rootless.is_some() {
        namespaces.retain(|n| *n != "network");
        namespaces.push("user");
    }
    let config = Config {
        oci_version: VERSION,
        process: Process {
            terminal: true,
            user: User { uid: 0, gid: 0 },
            args: ["sh"],
            env: [
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "TERM=xterm",
            ],
            cwd: "/",
            capabilities: Capabilities {
                bounding: CAPS,
                effective: CAPS,
                permitted: CAPS,
                ambient: CAPS,
            },
            rlimits: [Rlimit {
                kind: "RLIMIT_NOFILE",
                hard: 1024,
                soft: 1024,
            }],
            no_new_privileges: true,
        },
        root: Root {
            path: "rootfs",
            readonly: true,
        },
        hostname: "runc",
        mounts: vec![
            mount("/proc", "proc", "proc", &[]),
            mount(
                "/dev",
                "tmpfs",
                "tmpfs",
                &["nosuid", "strictatime", "mode=755", "size=65536k"],
            ),
            mount("/dev/pts", "devpts", "devpts", devpts),
            mount(
                "/dev/shm",
                "tmpfs",
                "shm",
                &["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"],
            ),
            mount(
                "/dev/mqueue",
                "mqueue",
                "mqueue",
                &["nosuid", "noexec", "nodev"],
            ),
            sys,
            mount(
                "/sys/fs/cgroup",
                "cgroup",
                "cgroup",
                &["nosuid", "noexec", "nodev", "relatime", "ro"],
            ),
        ],
        linux: Linux {
            uid_mappings: rootless.map(|(uid, _)| mapping(uid)),
            gid_mappings: rootless.map(|(_, gid)| mapping(gid)),
            resources: match rootless {
                Some(_) => None,
                None => Some(Resources {
                    devices: [DeviceRule {
                        allow: false,
                        access: "rwm",
                    }],
                }),
            },
            namespaces: namespaces
                .into_iter()
                .map(|kind| Namespace { kind })
                .collect(),
            masked_paths: MASKED_PATHS,
            readonly_paths: READONLY_PATHS,
        },
    };
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"\t");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    config.serialize(&mut ser).expect("plain structs serialize");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn namespaces(v: &Value) -> Vec<&str> {
        v["linux"]["namespaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["type"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn the_default_has_runcs_values() {
        let text = runc_spec(None);
        assert!(text.starts_with("{\n\t\"ociVersion\": \"1.0.2-dev\",\n\t\"process\": {"));
        assert!(!text.ends_with('\n'));
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["process"]["terminal"], true);
        assert_eq!(v["process"]["args"], serde_json::json!(["sh"]));
        assert_eq!(v["hostname"], "runc");
        assert!(v["process"]["capabilities"].get("inheritable").is_none());
        assert_eq!(namespaces(&v), ["pid", "network", "ipc", "uts", "mount"]);
        assert_eq!(
            v["linux"]["resources"]["devices"],
            serde_json::json!([{ "allow": false, "access": "rwm" }])
        );
        assert!(v["mounts"][0].get("options").is_none());
    }

    #[test]
    fn rootless_maps_the_user_and_drops_what_it_cannot_have() {
        let v: Value = serde_json::from_str(&runc_spec(Some((1000, 1001)))).unwrap();
        assert_eq!(
            v["linux"]["uidMappings"],
            serde_json::json!([{ "containerID": 0, "hostID": 1000, "size": 1 }])
        );
        assert_eq!(v["linux"]["gidMappings"][0]["hostID"], 1001);
        assert!(v["linux"].get("resources").is_none());
        assert_eq!(namespaces(&v), ["pid", "ipc", "uts", "mount", "user"]);
        assert_eq!(v["mounts"][5]["type"], "none");
        assert_eq!(v["mounts"][5]["options"][0], "rbind");
        assert!(!v["mounts"][2]["options"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o == "gid=5"));
    }
}
