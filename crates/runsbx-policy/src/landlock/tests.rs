//! Tests of the policy model: parsing from both sources, validation errors,
//! ABI needs, and the policies runsbx derives itself (`auto`, `sandbox`).
//!
//! `auto` is checked against expected policies in `fixtures/*.landlock.json`,
//! meant to be reviewed as diffs. Set `RUNSBX_UPDATE_FIXTURES=1` to rewrite them.
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::*;

const FS_ABI5: &[&str] = &[
    "execute",
    "write_file",
    "read_file",
    "read_dir",
    "remove_dir",
    "remove_file",
    "make_char",
    "make_dir",
    "make_reg",
    "make_sock",
    "make_fifo",
    "make_block",
    "make_sym",
    "refer",
    "truncate",
    "ioctl_dev",
];

/// A PR #1241-shaped policy using every section.
fn full_policy() -> Value {
    json!({
        "handledAccess": {
            "handledAccessFS": ["execute", "read_file", "read_dir", "write_file", "truncate"],
            "handledAccessNetwork": ["bind_tcp", "connect_tcp"]
        },
        "scoped": ["signal", "abstract_unix_socket"],
        "rules": {
            "pathBeneath": [
                {"allowedAccess": ["execute", "read_file", "read_dir"], "paths": ["/usr", "/lib"]},
                {"allowedAccess": ["read_file", "write_file", "truncate"], "paths": ["/work/"]}
            ],
            "networkPort": [{"allowedAccess": ["connect_tcp"], "ports": [443, 0, 65535]}]
        },
        "enableBestEffort": true
    })
}

fn config_with(landlock: Option<Value>, annotation: Option<Value>) -> Value {
    let mut config = json!({"ociVersion": "1.0.2", "process": {"args": ["true"], "cwd": "/"}});
    if let Some(l) = landlock {
        config["process"]["landlock"] = l;
    }
    if let Some(a) = annotation {
        config["annotations"] = json!({ ANNOTATION: a, "other": "x" });
    }
    config
}

fn err_of(landlock: Value) -> String {
    from_config(&config_with(Some(landlock), None))
        .unwrap_err()
        .to_string()
}

#[test]
fn parses_process_landlock() {
    let policy = from_config(&config_with(Some(full_policy()), None))
        .unwrap()
        .unwrap();
    assert_eq!(policy.handled_fs.len(), 5);
    assert_eq!(
        policy.handled_net,
        [NetRight::BindTcp, NetRight::ConnectTcp]
            .into_iter()
            .collect()
    );
    assert_eq!(
        policy.scoped,
        [ScopeRight::AbstractUnixSocket, ScopeRight::Signal]
            .into_iter()
            .collect()
    );
    assert_eq!(policy.path_beneath.len(), 2);
    assert_eq!(
        policy.path_beneath[0].paths,
        vec![PathBuf::from("/usr"), PathBuf::from("/lib")]
    );
    assert_eq!(policy.net_port[0].ports, vec![443, 0, 65535]);
    assert!(policy.best_effort);
}

#[test]
fn parses_annotation_as_the_same_policy() {
    let text = full_policy().to_string();
    let from_annotation = from_config(&config_with(None, Some(json!(text))))
        .unwrap()
        .unwrap();
    let from_process = from_config(&config_with(Some(full_policy()), None))
        .unwrap()
        .unwrap();
    assert_eq!(from_annotation, from_process);
}

#[test]
fn both_sources_must_agree() {
    // Same policy spelt differently (order, duplicates): accepted.
    let mut reordered = full_policy();
    reordered["scoped"] = json!(["abstract_unix_socket", "signal", "signal"]);
    let both = config_with(Some(full_policy()), Some(json!(reordered.to_string())));
    assert!(from_config(&both).unwrap().is_some());

    let mut narrower = full_policy();
    narrower["enableBestEffort"] = json!(false);
    let both = config_with(Some(full_policy()), Some(json!(narrower.to_string())));
    assert_eq!(from_config(&both).unwrap_err(), LandlockError::Conflict);
    assert_eq!(
        LandlockError::Conflict.to_string(),
        "landlock: process.landlock and annotation \"run.sbx.landlock\" are both set and differ; \
         set only one"
    );
}

#[test]
fn absent_is_none() {
    assert_eq!(from_config(&config_with(None, None)).unwrap(), None);
    assert_eq!(
        from_config(&config_with(Some(Value::Null), None)).unwrap(),
        None
    );
    assert_eq!(from_config(&json!({})).unwrap(), None);
}

#[test]
fn validation_errors_name_the_field() {
    let p = "landlock: process.landlock";
    let fs = |v: Value| {
        let mut policy = full_policy();
        policy["rules"]["pathBeneath"] = json!([
            {"allowedAccess": ["read_file"], "paths": ["/a"]},
            {"allowedAccess": ["read_file"], "paths": ["/b"]},
            v
        ]);
        policy
    };
    let port = |v: Value| {
        let mut policy = full_policy();
        policy["rules"]["networkPort"] = json!([{"allowedAccess": ["bind_tcp"], "ports": [80, v]}]);
        policy
    };
    let with = |key: &str, v: Value| {
        let mut policy = full_policy();
        policy[key] = v;
        policy
    };
    let rows: Vec<(Value, String)> = vec![
        (
            fs(json!({"allowedAccess": ["write_fil"], "paths": ["/c"]})),
            format!("{p}.rules.pathBeneath[2].allowedAccess: unknown right \"write_fil\""),
        ),
        (
            fs(json!({"allowedAccess": ["read_file"], "paths": ["/c", "usr/lib"]})),
            format!("{p}.rules.pathBeneath[2].paths[1]: \"usr/lib\" is not absolute"),
        ),
        (
            fs(json!({"allowedAccess": ["read_file"], "paths": ["/work/../etc"]})),
            format!("{p}.rules.pathBeneath[2].paths[0]: \"/work/../etc\" has a \".\" or \"..\" component"),
        ),
        (
            fs(json!({"allowedAccess": ["read_file"], "paths": [7]})),
            format!("{p}.rules.pathBeneath[2].paths[0]: expected a string, found a number"),
        ),
        (
            fs(json!({"allowedAccess": ["make_dir"], "paths": ["/c"]})),
            format!("{p}.rules.pathBeneath[2].allowedAccess: \"make_dir\" is not in handledAccess.handledAccessFS"),
        ),
        (
            fs(json!({"allowedAccess": [], "paths": ["/c"]})),
            format!("{p}.rules.pathBeneath[2].allowedAccess: empty"),
        ),
        (
            fs(json!({"allowedAccess": ["read_file"], "paths": []})),
            format!("{p}.rules.pathBeneath[2].paths: empty"),
        ),
        (
            fs(json!({"allowedAccess": ["read_file"]})),
            format!("{p}.rules.pathBeneath[2].paths: missing"),
        ),
        (
            fs(json!({"allowedAccess": ["read_file"], "paths": ["/c"], "path": "/d"})),
            format!("{p}.rules.pathBeneath[2]: unknown field \"path\" (known: allowedAccess, paths)"),
        ),
        (
            fs(json!({"allowedAccess": "read_file", "paths": ["/c"]})),
            format!("{p}.rules.pathBeneath[2].allowedAccess: expected an array, found a string"),
        ),
        (port(json!(70000)), format!("{p}.rules.networkPort[0].ports[1]: port 70000 out of range 0-65535")),
        (port(json!(65536)), format!("{p}.rules.networkPort[0].ports[1]: port 65536 out of range 0-65535")),
        (port(json!(-1)), format!("{p}.rules.networkPort[0].ports[1]: port -1 out of range 0-65535")),
        (port(json!(80.5)), format!("{p}.rules.networkPort[0].ports[1]: port 80.5 is not an integer in 0-65535")),
        (
            port(json!(u64::MAX)),
            format!("{p}.rules.networkPort[0].ports[1]: port 18446744073709551615 is not an integer in 0-65535"),
        ),
        (
            port(json!("80")),
            format!("{p}.rules.networkPort[0].ports[1]: expected an integer port, found a string"),
        ),
        (
            with("handledAccess", json!({"handledAccessFS": ["read_file"], "handledAccessNet": ["bind_tcp"]})),
            format!("{p}.handledAccess: unknown field \"handledAccessNet\" (known: handledAccessFS, handledAccessNetwork)"),
        ),
        (
            with("handledAccess", json!({"handledAccessFS": "all"})),
            format!("{p}.handledAccess.handledAccessFS: expected an array, found a string"),
        ),
        (
            with("handledAccess", json!({"handledAccessFS": ["read_file", 3]})),
            format!("{p}.handledAccess.handledAccessFS: expected an array of strings, found a number"),
        ),
        (
            with("handledAccess", json!({"handledAccessFS": ["execute", "read_file", "read_dir", "write_file", "truncate"], "handledAccessNetwork": ["bind_udpp"]})),
            format!("{p}.handledAccess.handledAccessNetwork: unknown right \"bind_udpp\""),
        ),
        (
            with("handledAccess", json!({"handledAccessFS": ["execute", "read_file", "read_dir", "write_file", "truncate"]})),
            format!("{p}.rules.networkPort[0].allowedAccess: \"connect_tcp\" is not in handledAccess.handledAccessNetwork"),
        ),
        (with("scoped", json!(["signals"])), format!("{p}.scoped: unknown scope \"signals\"")),
        (with("enableBestEffort", json!("yes")), format!("{p}.enableBestEffort: expected a boolean, found a string")),
        (
            with("disableBestEffort", json!(true)),
            format!("{p}: unknown field \"disableBestEffort\" (known: handledAccess, rules, scoped, enableBestEffort)"),
        ),
        (json!([]), format!("{p}: expected an object, found an array")),
        (
            json!({"rules": {}}),
            format!("{p}.handledAccess: the policy restricts nothing: handle at least one right or set a scope"),
        ),
    ];
    for (policy, want) in rows {
        assert_eq!(err_of(policy.clone()), want, "policy: {policy}");
    }
}

#[test]
fn annotation_errors_name_the_annotation() {
    let field = "landlock: annotations[\"run.sbx.landlock\"]";
    let err = |a: Value| {
        from_config(&config_with(None, Some(a)))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(json!({"handledAccess": {}})),
        format!("{field}: expected a string, found an object")
    );
    assert!(err(json!("{not json")).starts_with(&format!("{field}: not JSON: ")));
    assert_eq!(
        err(json!(r#"{"scoped": ["signal"], "rules": {"networkPort": [{"allowedAccess": ["bind_tcp"], "ports": [1]}]}}"#)),
        format!("{field}.rules.networkPort[0].allowedAccess: \"bind_tcp\" is not in handledAccess.handledAccessNetwork")
    );
}

#[test]
fn a_scope_alone_is_a_policy() {
    let policy = LandlockPolicy::from_json(&json!({"scoped": ["signal"]}), "x").unwrap();
    assert!(policy.handled_fs.is_empty());
    assert_eq!(policy.required_abi(), 6);
}

#[test]
fn required_abi_is_the_highest_named() {
    let of = |fs: &[&str], net: &[&str], scoped: &[&str]| {
        let policy = json!({
            "handledAccess": {"handledAccessFS": fs, "handledAccessNetwork": net},
            "scoped": scoped,
        });
        LandlockPolicy::from_json(&policy, "t")
            .unwrap()
            .required_abi()
    };
    assert_eq!(of(&["read_file", "make_sym"], &[], &[]), 1);
    assert_eq!(of(&["read_file", "refer"], &[], &[]), 2);
    assert_eq!(of(&["truncate"], &[], &[]), 3);
    assert_eq!(of(&["read_file"], &["connect_tcp"], &[]), 4);
    assert_eq!(of(FS_ABI5, &[], &[]), 5);
    assert_eq!(of(&["read_file"], &[], &["abstract_unix_socket"]), 6);
    assert_eq!(of(&["resolve_unix"], &[], &[]), 9);
    assert_eq!(of(&[], &["bind_udp"], &[]), 10);

    let sandbox = LandlockPolicy::sandbox(&[PathBuf::from("/usr")], &[PathBuf::from("/work")]);
    assert_eq!(sandbox.required_abi(), 6);
    assert_eq!(
        sandbox.beyond_abi(5),
        vec![("abstract_unix_socket", 6), ("signal", 6)]
    );
    assert_eq!(sandbox.beyond_abi(4).len(), 2 + 1, "ioctl_dev needs 5");
    assert!(sandbox.beyond_abi(7).is_empty());
}

#[test]
fn to_json_round_trips() {
    let policies = [
        from_config(&config_with(Some(full_policy()), None))
            .unwrap()
            .unwrap(),
        LandlockPolicy::sandbox(
            &[PathBuf::from("/usr"), PathBuf::from("/lib")],
            &[PathBuf::from("/work")],
        ),
        auto(&fixture_spec("containerd")),
        LandlockPolicy::from_json(&json!({"scoped": ["signal"]}), "x").unwrap(),
    ];
    for policy in policies {
        let back = from_config(&config_with(Some(policy.to_json()), None))
            .unwrap()
            .unwrap();
        assert_eq!(back, policy);
        let via_annotation = from_config(&config_with(
            None,
            Some(json!(policy.to_json().to_string())),
        ))
        .unwrap()
        .unwrap();
        assert_eq!(via_annotation, policy);
        // serde goes through the same form, validation included.
        let text = serde_json::to_string(&policy).unwrap();
        assert_eq!(
            serde_json::from_str::<LandlockPolicy>(&text).unwrap(),
            policy
        );
    }
    let bad = serde_json::from_str::<LandlockPolicy>(r#"{"scoped": ["sig"]}"#).unwrap_err();
    assert!(
        bad.to_string()
            .contains("landlock: landlock.scoped: unknown scope \"sig\""),
        "{bad}"
    );
}

#[test]
fn sandbox_policy() {
    let policy = LandlockPolicy::sandbox(
        &[PathBuf::from("/usr"), PathBuf::from("/etc/ld.so.cache")],
        &[PathBuf::from("/work")],
    );
    policy.validate().unwrap();
    let want = json!({
        "handledAccess": {
            "handledAccessFS": FS_ABI5,
            "handledAccessNetwork": ["bind_tcp", "connect_tcp"]
        },
        "rules": {"pathBeneath": [
            {"allowedAccess": ["execute", "read_file", "read_dir"], "paths": ["/usr", "/etc/ld.so.cache"]},
            {"allowedAccess": ["write_file", "read_file", "read_dir", "remove_dir", "remove_file", "make_dir",
                               "make_reg", "make_sock", "make_fifo", "refer", "truncate"],
             "paths": ["/work"]},
            {"allowedAccess": ["write_file", "read_file", "ioctl_dev"], "paths": ["/dev/null"]},
            {"allowedAccess": ["read_file"], "paths": ["/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
                                                       "/proc/stat", "/proc/meminfo", "/proc/cpuinfo"]},
            {"allowedAccess": ["read_file", "read_dir"], "paths": ["/proc/self"]}
        ]},
        "scoped": ["abstract_unix_socket", "signal"],
        "enableBestEffort": false
    });
    assert_eq!(policy.to_json(), want);
    assert!(policy.widened().is_empty());
    assert!(
        policy.net_port.is_empty(),
        "every TCP bind and connect denied"
    );
}

#[test]
fn widened_reports_rules_under_wider_ones() {
    let policy = LandlockPolicy::sandbox(&[PathBuf::from("/work/venv")], &[PathBuf::from("/work")]);
    assert_eq!(
        policy.widened(),
        vec![(PathBuf::from("/work/venv"), PathBuf::from("/work"))]
    );
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/landlock/fixtures")
}

fn fixture_spec(name: &str) -> oci_spec::runtime::Spec {
    let text = std::fs::read_to_string(fixture_dir().join(format!("{name}.json"))).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}.json: {e}"))
}

/// `auto(spec)` must equal `fixtures/<name>.landlock.json`.
fn check_auto(name: &str) -> LandlockPolicy {
    let policy = auto(&fixture_spec(name));
    policy.validate().unwrap();
    let expected_path = fixture_dir().join(format!("{name}.landlock.json"));
    let got = serde_json::to_string_pretty(&policy.to_json()).unwrap() + "\n";
    if std::env::var_os("RUNSBX_UPDATE_FIXTURES").is_some() {
        std::fs::write(&expected_path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&expected_path).unwrap();
    assert_eq!(
        got,
        want,
        "auto({name}) differs from {}",
        expected_path.display()
    );
    policy
}

fn rights_of(policy: &LandlockPolicy, path: &str) -> Vec<&'static str> {
    let rules: Vec<_> = policy
        .path_beneath
        .iter()
        .filter(|r| r.paths.iter().any(|p| p == Path::new(path)))
        .collect();
    assert_eq!(rules.len(), 1, "{path} should be in exactly one rule");
    rules[0].allowed.iter().map(|r| r.name()).collect()
}

#[test]
fn auto_containerd() {
    let policy = check_auto("containerd");
    // Read-write root: everything under / may be written, as the mounts allow.
    assert_eq!(rights_of(&policy, "/"), FS_ABI5);
    assert_eq!(
        rights_of(&policy, "/proc"),
        ["write_file", "read_file", "read_dir"]
    );
    assert_eq!(rights_of(&policy, "/sys"), ["read_file", "read_dir"]);
    assert!(
        !rights_of(&policy, "/dev/shm").contains(&"execute"),
        "noexec"
    );
    assert!(rights_of(&policy, "/run").contains(&"execute"));
    assert_eq!(
        rights_of(&policy, "/dev/tty"),
        ["write_file", "read_file", "ioctl_dev"]
    );
    assert!(
        policy.scoped.is_empty(),
        "pid and network namespaces present"
    );
    assert!(policy.handled_net.is_empty());
    assert!(!policy.best_effort);
    assert_eq!(policy.required_abi(), 5);
}

#[test]
fn auto_podman_read_only() {
    let policy = check_auto("podman");
    assert_eq!(
        rights_of(&policy, "/"),
        ["execute", "read_file", "read_dir"]
    );
    assert_eq!(
        rights_of(&policy, "/data"),
        ["execute", "read_file", "read_dir"]
    );
    assert_eq!(
        rights_of(&policy, "/sys/fs/cgroup"),
        ["read_file", "read_dir"]
    );
    assert_eq!(
        rights_of(&policy, "/etc/hosts"),
        FS_ABI5,
        "bind without ro is rw"
    );
    assert!(rights_of(&policy, "/tmp").contains(&"make_reg"));
    assert_eq!(
        rights_of(&policy, "/dev/fuse"),
        ["write_file", "read_file", "ioctl_dev"]
    );
    assert!(
        policy.scoped.is_empty(),
        "a network namespace joined by path counts as present"
    );
}

#[test]
fn auto_generated_sandbox() {
    let policy = check_auto("sandbox");
    assert_eq!(
        rights_of(&policy, "/"),
        ["execute", "read_file", "read_dir"]
    );
    assert_eq!(
        rights_of(&policy, "/usr"),
        ["execute", "read_file", "read_dir"]
    );
    assert_eq!(
        rights_of(&policy, "/etc/ld.so.cache"),
        ["read_file", "read_dir"],
        "ro, noexec"
    );
    assert_eq!(rights_of(&policy, "/work"), FS_ABI5);
    assert_eq!(rights_of(&policy, "/dev/null"), ["write_file", "read_file"]);
    // Landlock unions down the tree: the ro root lends `execute` to the
    // noexec mount (the mount flag still refuses exec there).
    assert!(policy
        .widened()
        .contains(&(PathBuf::from("/etc/ld.so.cache"), PathBuf::from("/"))));
}

#[test]
fn auto_host_namespaces_and_odd_mounts() {
    let policy = check_auto("host-namespaces");
    assert_eq!(
        policy.scoped,
        [ScopeRight::AbstractUnixSocket, ScopeRight::Signal]
            .into_iter()
            .collect(),
        "host pid and network namespaces are scoped"
    );
    assert_eq!(
        rights_of(&policy, "/proc"),
        ["read_file", "read_dir"],
        "ro proc"
    );
    assert_eq!(
        rights_of(&policy, "/sys/fs/cgroup"),
        [
            "write_file",
            "read_file",
            "read_dir",
            "remove_dir",
            "make_dir",
            "truncate"
        ]
    );
    // The later of two mounts on one destination wins; the last of ro/rw wins.
    assert_eq!(
        rights_of(&policy, "/scratch"),
        ["execute", "read_file", "read_dir"]
    );
    // A destination with ".." gets no rule at all.
    assert!(policy
        .path_beneath
        .iter()
        .all(|r| r.paths.iter().all(|p| !p.starts_with("/etc"))));
}

#[test]
fn operator_default_parsing() {
    assert_eq!(
        "off".parse::<LandlockDefault>().unwrap(),
        LandlockDefault::Off
    );
    assert_eq!(
        "auto".parse::<LandlockDefault>().unwrap(),
        LandlockDefault::Auto { best_effort: false }
    );
    assert_eq!(
        "auto-best-effort".parse::<LandlockDefault>().unwrap(),
        LandlockDefault::Auto { best_effort: true }
    );
    let policy = r#"{"scoped": ["signal"]}"#.parse::<LandlockDefault>().unwrap();
    assert!(matches!(policy, LandlockDefault::Policy(p) if p.scoped.len() == 1));
    assert_eq!(
        "Auto".parse::<LandlockDefault>().unwrap_err().to_string(),
        "landlock: --landlock: unknown setting \"Auto\" (expected off, auto, auto-best-effort or a JSON policy)"
    );
    assert_eq!(
        r#"{"scoped": ["x"]}"#.parse::<LandlockDefault>().unwrap_err().to_string(),
        "landlock: --landlock.scoped: unknown scope \"x\""
    );
    assert_eq!(
        LandlockDefault::from_json(&json!(true), "landlock")
            .unwrap_err()
            .to_string(),
        "landlock: landlock: expected \"off\", \"auto\", \"auto-best-effort\" or a policy object"
    );
    assert_eq!(
        LandlockDefault::from_json(&json!("auto"), "landlock").unwrap(),
        LandlockDefault::Auto { best_effort: false }
    );
}

#[test]
fn operator_layer_comes_first_and_bundle_stacks() {
    let spec = fixture_spec("containerd");
    let bundle = LandlockPolicy::sandbox(&[PathBuf::from("/usr")], &[]);
    assert!(LandlockDefault::Off.layers(&spec, None).is_empty());
    assert_eq!(
        LandlockDefault::Off.layers(&spec, Some(bundle.clone())),
        vec![bundle.clone()]
    );
    let layers = LandlockDefault::Auto { best_effort: true }.layers(&spec, Some(bundle.clone()));
    assert_eq!(layers.len(), 2);
    assert_eq!(
        layers[0],
        LandlockPolicy {
            best_effort: true,
            ..auto(&spec)
        }
    );
    assert_eq!(layers[1], bundle);
}

#[test]
fn only_execute_narrows_execute_to_the_given_files() {
    let policy = LandlockPolicy::sandbox(
        &[PathBuf::from("/usr"), PathBuf::from("/lib")],
        &[PathBuf::from("/work")],
    )
    .only_execute(&[
        PathBuf::from("/usr/bin/python3.11"),
        PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
    ]);
    policy.validate().unwrap();
    for rule in &policy.path_beneath {
        let exec = rule.allowed.contains(&FsRight::Execute);
        for p in &rule.paths {
            let want = p.ends_with("python3.11") || p.ends_with("ld-linux-x86-64.so.2");
            assert_eq!(exec, want, "{p:?}: {:?}", rule.allowed);
        }
    }
    // /usr stays readable.
    assert!(policy.path_beneath.iter().any(
        |r| r.paths.contains(&PathBuf::from("/usr")) && r.allowed.contains(&FsRight::ReadFile)
    ));
}
