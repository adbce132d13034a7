//! `runsbx check BUNDLE`: the example bundles and a generated one explained,
//! weak bundles warned about, and every bundle `create` refuses refused by
//! `check` with the same message, with nothing created.

use std::fs;
use std::path::Path;

use crate::common::*;
use serde_json::{json, Value};

const NOBODY: u32 = 65534;

/// The warning codes of a text report, in order.
fn warnings(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("warning: "))
        .map(|l| l.split(':').next().unwrap().to_string())
        .collect()
}

fn check_text(env: &Env, args: &[&str]) -> String {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    let text = env.ok(&all);
    assert!(
        env.state_entries().is_empty(),
        "check created state: {:?}",
        env.state_entries()
    );
    text
}

fn assert_nothing_created(env: &Env) {
    assert!(
        env.state_entries().is_empty(),
        "state left: {:?}",
        env.state_entries()
    );
}

#[test]
fn hello_bundle() {
    let env = Env::new();
    let hello = repo().join("bundles/hello");
    let text = check_text(
        &env,
        &["--landlock-default", "off", hello.to_str().unwrap()],
    );
    for fact in [
        "rootfs: ",
        "(read-only; no Landlock)",
        "executable: /bin/sh (found)",
        "user: uid 0 gid 0 in the container, host root",
        "  network  new",
        "  user     shared with the host",
        "  effective   none",
        "no_new_privs: set",
        "/usr (bind from /usr, ro; no Landlock)",
        "seccomp: none",
        "RLIMIT_NOFILE soft 1024 hard 1024",
        "env: PATH, LANG",
    ] {
        assert!(text.contains(fact), "missing {fact:?} in:\n{text}");
    }
    assert_eq!(
        warnings(&text),
        [
            "no-user-namespace",
            "host-root",
            "no-seccomp",
            "no-landlock"
        ],
        "{text}"
    );

    // The operator's auto layer, and what it leaves at each mount.
    let text = check_text(
        &env,
        &["--landlock-default", "auto", hello.to_str().unwrap()],
    );
    assert!(
        text.contains("layer (operator default): needs ABI 5"),
        "{text}"
    );
    assert!(
        text.contains("(read-only; Landlock allows read, execute)"),
        "{text}"
    );
    assert!(
        text.contains("/usr (bind from /usr, ro; Landlock allows read, execute)"),
        "{text}"
    );
    assert!(
        !warnings(&text).contains(&"no-landlock".to_string()),
        "{text}"
    );
}

/// A work directory `nobody` (the sandbox's host uid) owns, under a temp
/// dir it can search.
fn workdir(env: &Env) -> String {
    let dir = env.tmp.path().join("work");
    fs::create_dir_all(&dir).unwrap();
    nix::unistd::chown(&dir, Some(NOBODY.into()), Some(NOBODY.into())).unwrap();
    let mut p = fs::metadata(env.tmp.path()).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
    fs::set_permissions(env.tmp.path(), p).unwrap();
    dir.to_str().unwrap().to_string()
}

#[test]
fn generated_bundle_has_no_weak_spots() {
    let env = Env::new();
    let work = workdir(&env);
    let out = env.tmp.path().join("gen");
    env.ok(&[
        "gen",
        "--workdir",
        &work,
        "-o",
        out.to_str().unwrap(),
        "--",
        "/bin/true",
    ]);
    let text = check_text(&env, &["--landlock-default", "off", out.to_str().unwrap()]);
    for fact in [
        "host uid 65534",
        "uid map: container 0..1 -> host 65534..65535",
        "  user     new",
        "  network  new",
        "  pid      new",
        "layer (bundle): needs ABI 6",
        "seccomp: default SCMP_ACT_ERRNO",
        "(read-only; Landlock allows none)",
        "warnings: none",
    ] {
        assert!(text.contains(fact), "missing {fact:?} in:\n{text}");
    }
    assert!(
        text.contains(&format!(
            "{work} (bind from {work}, rw; Landlock allows read, write_file"
        )),
        "{text}"
    );
    assert!(warnings(&text).is_empty(), "{text}");

    // gen --explain prints the same explanation right away.
    let again = env.tmp.path().join("gen2");
    let explained = env.ok(&[
        "--landlock-default",
        "off",
        "gen",
        "--workdir",
        &work,
        "-o",
        again.to_str().unwrap(),
        "--explain",
        "--",
        "/bin/true",
    ]);
    let text2 = check_text(
        &env,
        &["--landlock-default", "off", again.to_str().unwrap()],
    );
    // ... followed by why each read-only path is bound.
    let (same, why) = explained
        .split_once("why each read-only path is bound:\n")
        .unwrap_or_else(|| panic!("no reasons in:\n{explained}"));
    assert_eq!(same, text2);
    assert!(why.contains("/usr  system directory; holds"), "{why}");
    assert!(
        why.contains("/etc/ld.so.cache  the loader's library cache"),
        "{why}"
    );
    let json = env.ok(&[
        "gen",
        "--workdir",
        &work,
        "-o",
        env.tmp.path().join("gen3").to_str().unwrap(),
        "--explain=json",
        "--",
        "/bin/true",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("gen --explain=json is JSON");
    assert!(v["warnings"].as_array().is_some(), "{v:#}");
    assert!(v["discovery"]["binds"]["/usr"].is_string(), "{v:#}");
}

/// A busybox bundle with every layer: a user namespace mapping root to
/// nobody, a deny-by-default seccomp profile, and (with
/// `--landlock-default auto`) the operator's Landlock layer.
fn tight_bundle(env: &Env, name: &str) -> Bundle {
    let mut b = env.bundle(name, &["true"]);
    let c = &mut b.config;
    c["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "type": "user" }));
    c["linux"]["uidMappings"] = json!([{ "containerID": 0, "hostID": NOBODY, "size": 1 }]);
    c["linux"]["gidMappings"] = json!([{ "containerID": 0, "hostID": NOBODY, "size": 1 }]);
    c["linux"]["seccomp"] = json!({
        "defaultAction": "SCMP_ACT_ERRNO",
        "syscalls": [ { "names": ["read", "write", "execve", "exit_group"], "action": "SCMP_ACT_ALLOW" } ]
    });
    b.save();
    b
}

fn check_warnings(env: &Env, b: &Bundle) -> Vec<String> {
    let text = check_text(env, &["--landlock-default", "auto", b.path()]);
    warnings(&text)
}

#[test]
fn weak_bundles_are_warned_about() {
    let env = Env::new();
    let b = tight_bundle(&env, "tight");
    assert!(check_warnings(&env, &b).is_empty(), "the tight bundle");

    type Edit = Box<dyn Fn(&mut Value, &Path)>;
    let cases: Vec<(&str, Edit, &[&str])> = vec![
        (
            "hostnet",
            Box::new(|c, _| {
                c["linux"]["namespaces"]
                    .as_array_mut()
                    .unwrap()
                    .retain(|n| n["type"] != "network")
            }),
            &["host-network"],
        ),
        (
            "hostpid",
            Box::new(|c, _| {
                c["linux"]["namespaces"]
                    .as_array_mut()
                    .unwrap()
                    .retain(|n| n["type"] != "pid")
            }),
            &["host-pid"],
        ),
        (
            "sysadmin",
            Box::new(|c, _| {
                for set in ["bounding", "effective", "permitted"] {
                    c["process"]["capabilities"][set] = json!(["CAP_SYS_ADMIN"]);
                }
            }),
            &["capability"],
        ),
        (
            "noseccomp",
            Box::new(|c, _| {
                c["linux"].as_object_mut().unwrap().remove("seccomp");
            }),
            &["no-seccomp"],
        ),
        (
            "hostroot",
            Box::new(|c, _| {
                c["linux"]["uidMappings"] = json!([{ "containerID": 0, "hostID": 0, "size": 1 }]);
            }),
            &["host-root"],
        ),
        (
            "rwusr",
            Box::new(|c, dir| {
                let src = dir.join("hostusr");
                fs::create_dir_all(&src).unwrap();
                c["mounts"].as_array_mut().unwrap().push(json!({
                    "destination": "/usr", "type": "bind", "source": src, "options": ["rbind", "rw"]
                }));
            }),
            &["writable-runtime-path"],
        ),
    ];
    for (name, edit, want) in cases {
        let mut b = tight_bundle(&env, name);
        edit(&mut b.config, &b.dir);
        b.save();
        assert_eq!(check_warnings(&env, &b), *want, "{name}");
    }

    // Without any Landlock layer.
    let text = check_text(&env, &["--landlock-default", "off", b.path()]);
    assert_eq!(warnings(&text), ["no-landlock"], "{text}");
    // The capability line names the sets.
    let mut b = tight_bundle(&env, "capline");
    b.config["process"]["capabilities"]["bounding"] = json!(["CAP_SYS_ADMIN"]);
    b.save();
    let text = check_text(&env, &["--landlock-default", "auto", b.path()]);
    assert!(
        text.contains("warning: capability: keeps CAP_SYS_ADMIN (bounding)"),
        "{text}"
    );
    assert!(text.contains("  bounding    CAP_SYS_ADMIN"), "{text}");
}

#[test]
fn json_output() {
    let env = Env::new();
    let mut b = tight_bundle(&env, "json");
    b.config["process"]["env"] = json!(["PATH=/bin", "TOKEN=s3cr3t"]);
    b.config["linux"]["resources"] =
        json!({ "memory": { "limit": 67108864 }, "pids": { "limit": 64 } });
    b.save();
    let text = check_text(
        &env,
        &["--format", "json", "--landlock-default", "auto", b.path()],
    );
    assert!(
        !text.contains("s3cr3t"),
        "an environment value leaked: {text}"
    );
    let v: Value = serde_json::from_str(&text).expect("check --format json is JSON");
    for key in [
        "bundle",
        "rootfs",
        "process",
        "namespaces",
        "user",
        "capabilities",
        "no_new_privs",
        "root",
        "mounts",
        "landlock",
        "seccomp",
        "rlimits",
        "cgroup",
        "env",
        "warnings",
    ] {
        assert!(v.get(key).is_some(), "no {key:?} in {v}");
    }
    assert_eq!(v["env"], json!(["PATH", "TOKEN"]));
    assert_eq!(v["user"]["host_uid"], NOBODY);
    assert_eq!(v["user"]["host_root"], false);
    assert_eq!(
        v["no_new_privs"],
        json!({ "spec": true, "effective": true })
    );
    assert_eq!(v["cgroup"]["memory_limit"], 67108864);
    assert_eq!(v["cgroup"]["pids_limit"], 64);
    assert_eq!(v["seccomp"]["default_action"], "SCMP_ACT_ERRNO");
    assert_eq!(v["seccomp"]["allowed_syscalls"], 4);
    assert_eq!(v["landlock"]["layers"][0]["source"], "operator default");
    assert_eq!(v["process"]["executable"]["status"], "found");
    let net = v["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["type"] == "network")
        .unwrap();
    assert_eq!(net["mode"], "new");
    let tmp = v["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["destination"] == "/tmp")
        .unwrap();
    assert_eq!(tmp["readonly"], false);
    assert!(
        tmp["landlock"]
            .as_array()
            .unwrap()
            .contains(&json!("write_file")),
        "{tmp}"
    );
    assert_eq!(v["warnings"], json!([]));
}

/// Runs `create` and `check` on the bundle; both fail with the same message
/// after their prefix, and neither leaves anything behind.
fn assert_same_refusal(env: &Env, b: &Bundle, needle: &str) {
    let id = unique_id("chk");
    let created = env.run(&["create", "--bundle", b.path(), &id]);
    assert_one_line_error(&created, needle);
    assert_nothing_created(env);
    assert!(cgroups_named(&id).is_empty());
    let checked = env.run(&["check", b.path()]);
    assert_one_line_error(&checked, needle);
    assert_nothing_created(env);
    let c = stderr_of(&created);
    let k = stderr_of(&checked);
    let c = c
        .strip_prefix("runsbx: error: create: ")
        .unwrap_or_else(|| panic!("create: {c}"));
    let k = k
        .strip_prefix("runsbx: error: check: ")
        .unwrap_or_else(|| panic!("check: {k}"));
    assert_eq!(c, k, "create and check differ");
}

#[test]
fn check_refuses_what_create_refuses() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);

    // Malformed and truncated config.json.
    for (i, text) in [
        "{",
        "{\"ociVersion\": \"1.0.2\", \"process\": ",
        "[]",
        "{\"ociVersion\": 5}",
        "not json",
    ]
    .iter()
    .enumerate()
    {
        let b = env.bundle(&format!("malformed{i}"), &["true"]);
        fs::write(b.dir.join("config.json"), text).unwrap();
        assert_same_refusal(&env, &b, "config.json");
    }

    // A missing bundle.
    let b = Bundle {
        dir: "/nonexistent/bundle".into(),
        config: json!({}),
    };
    assert_same_refusal(&env, &b, "/nonexistent/bundle");

    type Edit = Box<dyn Fn(&mut Value, &Path)>;
    let landlock = |right: &str, path: &str| {
        json!({
            "handledAccess": { "handledAccessFS": ["read_file", "read_dir", "execute"] },
            "rules": { "pathBeneath": [ { "allowedAccess": [right], "paths": [path] } ] }
        })
    };
    let cases: Vec<(&str, Edit, String)> = vec![
        (
            "version",
            Box::new(|c, _| c["ociVersion"] = "2.0.0".into()),
            "ociVersion".into(),
        ),
        (
            "noroot",
            Box::new(|c, _| {
                c.as_object_mut().unwrap().remove("root");
            }),
            "root".into(),
        ),
        (
            "noproc",
            Box::new(|c, _| {
                c.as_object_mut().unwrap().remove("process");
            }),
            "process".into(),
        ),
        (
            "noargs",
            Box::new(|c, _| c["process"]["args"] = json!([])),
            "process.args".into(),
        ),
        (
            "rootfs",
            Box::new(|c, _| c["root"]["path"] = "missing-rootfs".into()),
            "missing-rootfs".into(),
        ),
        (
            "rootfile",
            Box::new(|c, dir| {
                fs::write(dir.join("file"), "x").unwrap();
                c["root"]["path"] = "file".into();
            }),
            "not a directory".into(),
        ),
        (
            "idmap",
            Box::new(|c, _| {
                c["mounts"].as_array_mut().unwrap().push(json!(
                    {"destination": "/m", "source": "/tmp", "options": ["bind", "idmap"]}
                ))
            }),
            "idmap without uidMappings and gidMappings".into(),
        ),
        (
            "index6",
            Box::new(|c, _| {
                c["linux"]["seccomp"] = json!({ "defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                    { "names": ["ioctl"], "action": "SCMP_ACT_ERRNO",
                      "args": [ { "index": 6, "value": 1, "op": "SCMP_CMP_EQ" } ] } ] })
            }),
            "index".into(),
        ),
        (
            "notify",
            Box::new(|c, _| {
                c["linux"]["seccomp"] = json!({ "defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                    { "names": ["mkdir"], "action": "SCMP_ACT_NOTIFY" } ] })
            }),
            "SCMP_ACT_NOTIFY".into(),
        ),
        (
            "nodefault",
            Box::new(|c, _| {
                c["linux"]["seccomp"] =
                    json!({ "syscalls": [ { "names": ["mkdir"], "action": "SCMP_ACT_ERRNO" } ] })
            }),
            "defaultAction".into(),
        ),
        (
            "llright",
            Box::new(move |c, _| c["process"]["landlock"] = landlock("write_fil", "/")),
            "unknown right \"write_fil\"".into(),
        ),
        (
            "llrel",
            Box::new(move |c, _| c["process"]["landlock"] = landlock("read_file", "bin")),
            "process.landlock.rules.pathBeneath[0].paths[0]".into(),
        ),
        (
            "llannot",
            Box::new(move |c, _| {
                c["annotations"] =
                    json!({ "run.sbx.landlock": landlock("read_file", "bin").to_string() })
            }),
            "run.sbx.landlock".into(),
        ),
        // Found by init under create, from the host by check, same words.
        (
            "noexe",
            Box::new(|c, _| c["process"]["args"] = json!(["/bin/nonexistent"])),
            "exec /bin/nonexistent: No such file or directory".into(),
        ),
        (
            "nopath",
            Box::new(|c, _| c["process"]["args"] = json!(["nonexistent"])),
            "executable file not found in $PATH".into(),
        ),
    ];
    for (name, edit, needle) in cases {
        let mut b = env.bundle(name, &["true"]);
        edit(&mut b.config, &b.dir);
        b.save();
        assert_same_refusal(&env, &b, &needle);
    }
}

#[test]
fn check_refuses_a_landlock_right_the_kernel_lacks() {
    let env = Env::new();
    let mut b = env.bundle("abi", &["true"]);
    // bind_udp needs ABI 10; the landlock suite asserts the kernel is below.
    b.config["process"]["landlock"] = json!({
        "handledAccess": { "handledAccessNetwork": ["bind_udp"] }
    });
    b.save();
    assert_same_refusal(&env, &b, "cannot restrict bind_udp (needs ABI 10)");

    // Best effort: accepted, and the downgrade is a warning.
    b.config["process"]["landlock"]["enableBestEffort"] = json!(true);
    b.save();
    let text = check_text(&env, &["--landlock-default", "off", b.path()]);
    assert!(
        warnings(&text).contains(&"landlock-downgrade".to_string()),
        "{text}"
    );
    assert!(text.contains("bind_udp (needs ABI 10)"), "{text}");
}

#[test]
fn usage() {
    let env = Env::new();
    let out = env.run(&["check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let out = env.run(&["check", "--format", "yaml", "."]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(stdout_of(&out).is_empty());
}
