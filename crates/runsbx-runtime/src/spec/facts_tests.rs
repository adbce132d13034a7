use std::path::Path;

use libcontainer::oci_spec::runtime::{LinuxNamespaceType as Ns, Mount, Spec};
use serde_json::json;

use super::*;

fn spec(linux: serde_json::Value, mounts: serde_json::Value) -> Spec {
    serde_json::from_value(json!({
        "ociVersion": "1.0.2",
        "root": {"path": "rootfs"},
        "linux": linux,
        "mounts": mounts,
    }))
    .unwrap()
}

fn ns(list: serde_json::Value) -> Spec {
    spec(json!({ "namespaces": list }), json!([]))
}

fn mount(m: serde_json::Value) -> Mount {
    serde_json::from_value(m).unwrap()
}

#[test]
fn a_namespace_without_path_is_new_and_an_absent_one_the_hosts() {
    let s = ns(json!([{"type": "pid"}, {"type": "network", "path": "/proc/1/ns/net"}]));
    assert_eq!(namespace(&s, Ns::Pid), NsFact::New);
    assert!(is_new_namespace(&s, Ns::Pid));
    assert_eq!(
        namespace(&s, Ns::Network),
        NsFact::Joined(Path::new("/proc/1/ns/net"))
    );
    assert!(!is_new_namespace(&s, Ns::Network));
    assert_eq!(namespace(&s, Ns::Ipc), NsFact::Host);
    assert_eq!(
        namespace(&spec(json!({}), json!([])), Ns::Pid),
        NsFact::Host
    );
}

/// As runc: an empty path is none, and libcontainer is shown the entry
/// without it (it would open "" and fail).
#[test]
fn an_empty_path_is_a_new_namespace() {
    let s = ns(json!([{"type": "pid", "path": ""}]));
    assert_eq!(namespace(&s, Ns::Pid), NsFact::New);
    assert!(is_new_namespace(&s, Ns::Pid));
    let raw = json!({"linux": {"namespaces": [{"type": "pid", "path": ""}, {"type": "net", "path": "/x"}]}});
    assert_eq!(
        as_runc_reads(&raw, Path::new("/b")).unwrap(),
        json!({"linux": {"namespaces": [{"type": "pid"}, {"type": "net", "path": "/x"}]}})
    );
    assert!(as_runc_reads(
        &json!({"linux": {"namespaces": [{"type": "pid"}]}}),
        Path::new("/b")
    )
    .is_none());
}

/// As runc 1.2 (with a warning): a relative destination is under `/`, for
/// libcontainer and for every check runsbx makes.
#[test]
fn a_relative_mount_destination_is_taken_from_the_root() {
    let b = Path::new("/b");
    let raw = json!({"mounts": [{"destination": "tmp/m"}, {"destination": "/abs"}]});
    assert_eq!(
        as_runc_reads(&raw, b).unwrap(),
        json!({"mounts": [{"destination": "/tmp/m"}, {"destination": "/abs"}]})
    );
    assert!(as_runc_reads(&json!({"mounts": [{"destination": "/abs"}]}), b).is_none());
    // A host path into the rootfs is the container's path (runc).
    let raw = json!({"root": {"path": "rootfs"}, "mounts": [
        {"destination": "/b/rootfs/final"}, {"destination": "/b/rootfs"},
        {"destination": "/b/rootfsx/y"}]});
    assert_eq!(
        as_runc_reads(&raw, b).unwrap()["mounts"],
        json!([{"destination": "/final"}, {"destination": "/"}, {"destination": "/b/rootfsx/y"}])
    );
}

/// explain.rs took the first entry, commands/mod.rs the last; libcontainer
/// keeps the last (its map is built in list order).
#[test]
fn of_two_entries_the_last_wins() {
    let s = ns(json!([{"type": "pid", "path": "/proc/1/ns/pid"}, {"type": "pid"}]));
    assert_eq!(namespace(&s, Ns::Pid), NsFact::New);
    let s = ns(json!([{"type": "pid"}, {"type": "pid", "path": "/proc/1/ns/pid"}]));
    assert_eq!(
        namespace(&s, Ns::Pid),
        NsFact::Joined(Path::new("/proc/1/ns/pid"))
    );
}

#[test]
fn own_namespace_is_the_hosts() {
    assert!(is_host_namespace(
        Path::new("/proc/self/ns/net"),
        Ns::Network
    ));
    assert!(!is_host_namespace(Path::new("/nonexistent"), Ns::Network));
}

#[test]
fn binds_by_type_or_option() {
    let rows = [
        (
            json!({"destination": "/a", "type": "bind", "source": "/a"}),
            true,
        ),
        (
            json!({"destination": "/a", "source": "/a", "options": ["rbind"]}),
            true,
        ),
        (
            json!({"destination": "/a", "type": "none", "source": "/a", "options": ["bind"]}),
            true,
        ),
        (
            json!({"destination": "/a", "type": "tmpfs", "source": "tmpfs"}),
            false,
        ),
    ];
    for (m, want) in rows {
        assert_eq!(is_bind(&mount(m.clone())), want, "{m}");
    }
}

/// commands/sandbox.rs took any `ro`; explain.rs and libcontainer's
/// parse_mount let the last of `ro`/`rw` win.
#[test]
fn the_last_of_ro_and_rw_wins() {
    let rows: [(&[&str], bool); 6] = [
        (&[], false),
        (&["ro"], true),
        (&["rw"], false),
        (&["ro", "rw"], false),
        (&["rw", "ro"], true),
        (&["rbind", "ro", "nosuid"], true),
    ];
    for (opts, want) in rows {
        let m =
            mount(json!({"destination": "/a", "type": "bind", "source": "/a", "options": opts}));
        assert_eq!(is_readonly(&m), want, "{opts:?}");
        assert_eq!(options_readonly(opts.iter().copied()), want, "{opts:?}");
    }
}

#[test]
fn readonly_binds_are_binds_that_end_ro() {
    let s = spec(
        json!({}),
        json!([
            {"destination": "/a", "type": "bind", "source": "/a", "options": ["ro"]},
            {"destination": "/b", "type": "bind", "source": "/b", "options": ["ro", "rw"]},
            {"destination": "/c", "type": "tmpfs", "source": "tmpfs", "options": ["ro"]},
        ]),
    );
    let got: Vec<_> = readonly_binds(&s)
        .map(|m| m.destination().clone())
        .collect();
    assert_eq!(got, vec![Path::new("/a").to_path_buf()]);
}

#[test]
fn mappings_and_mapped_ids() {
    let s = spec(
        json!({
            "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}],
            "gidMappings": [{"containerID": 0, "hostID": 100, "size": 10}],
        }),
        json!([]),
    );
    assert_eq!(uid_mappings(&s).len(), 1);
    assert!(maps_id(uid_mappings(&s), 0));
    assert!(!maps_id(uid_mappings(&s), 1));
    assert!(maps_id(gid_mappings(&s), 9));
    assert!(!maps_id(gid_mappings(&s), 10));
    let none = spec(json!({}), json!([]));
    assert!(uid_mappings(&none).is_empty());
    assert!(!maps_id(uid_mappings(&none), 0));
}

#[test]
fn limits_name_their_controllers() {
    let s = spec(
        json!({"resources": {
            "memory": {"limit": 1048576},
            "pids": {"limit": 10},
            "cpu": {"cpus": "0"},
            "unified": {"memory.high": "1", "cgroup.freeze": "0"},
        }}),
        json!([]),
    );
    let got = requested_limits(&s);
    let want: Vec<Limit> = vec![
        ("memory limits", vec!["memory".into()]),
        ("a pids limit", vec!["pids".into()]),
        ("cpuset limits", vec!["cpuset".into()]),
        ("unified cgroup settings", vec!["memory".into()]),
    ];
    assert_eq!(got, want);
    assert!(requested_limits(&spec(json!({"resources": {"devices": []}}), json!([]))).is_empty());
    assert!(resources(&spec(json!({}), json!([]))).is_none());
}

/// runc reads a device rule's access letters r, w, m and ignores others.
#[test]
fn device_access_keeps_only_r_w_m() {
    let raw = json!({"linux": {"resources": {"devices": [
        {"allow": false, "access": "rwm"},
        {"allow": false, "type": "c", "major": 1, "minor": 11, "access": "rwa"}
    ]}}});
    let seen = as_runc_reads(&raw, Path::new("/b")).unwrap();
    assert_eq!(seen["linux"]["resources"]["devices"][0]["access"], "rwm");
    assert_eq!(seen["linux"]["resources"]["devices"][1]["access"], "rw");
    assert!(as_runc_reads(&seen, Path::new("/b")).is_none());
}

/// runc 1.2 ignores capability names it does not know (with a warning);
/// oci-spec would refuse the whole file.
#[test]
fn unknown_capabilities_are_left_out() {
    let raw = json!({"process": {"capabilities": {
        "bounding": ["CAP_KILL", "CAP_BOGUS"], "effective": ["CAP_BOGUS"], "permitted": ["CAP_KILL"]
    }}});
    assert_eq!(unknown_capabilities(&raw), ["CAP_BOGUS", "CAP_BOGUS"]);
    let seen = as_runc_reads(&raw, Path::new("/b")).unwrap();
    assert_eq!(
        seen["process"]["capabilities"]["bounding"],
        json!(["CAP_KILL"])
    );
    assert_eq!(seen["process"]["capabilities"]["effective"], json!([]));
    assert!(as_runc_reads(&seen, Path::new("/b")).is_none());
}

/// runc's device rules: deny all, the spec's, then the defaults.
#[test]
fn device_rules_start_from_deny_and_end_with_runcs_defaults() {
    let raw = json!({"linux": {"resources": {"devices": [{"allow": true, "type": "c", "major": 4, "minor": 1, "access": "r"}]}}});
    let rules = with_runc_device_rules(&raw)["linux"]["resources"]["devices"].clone();
    let rules = rules.as_array().unwrap();
    assert_eq!(rules[0], json!({"allow": false, "access": "rwm"}));
    assert_eq!(rules[1]["major"], 4);
    assert_eq!(rules.len(), 13);
    assert_eq!(rules[2], json!({"allow": true, "type": "c", "access": "m"}));
    assert_eq!(
        rules[12],
        json!({"allow": true, "type": "c", "major": 10, "minor": 200, "access": "rwm"})
    );
    // None at all: deny, then the defaults.
    let bare = with_runc_device_rules(&json!({}));
    assert_eq!(
        bare["linux"]["resources"]["devices"]
            .as_array()
            .unwrap()
            .len(),
        12
    );
}
