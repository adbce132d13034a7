//! Bad input: one clear error line, a non-zero exit, and nothing left
//! behind (no state dir, cgroup or process).

mod common;

use std::fs;

use common::*;

fn assert_clean(env: &Env, id: &str) {
    let left: Vec<String> = env.state_entries();
    assert!(left.is_empty(), "state left behind: {left:?}");
    assert!(
        cgroups_named(id).is_empty(),
        "cgroups left: {:?}",
        cgroups_named(id)
    );
}

#[test]
fn missing_bundle() {
    let env = Env::new();
    let id = unique_id("nob");
    let out = env.run(&["create", "--bundle", "/nonexistent/bundle", &id]);
    assert_one_line_error(&out, "/nonexistent/bundle");
    assert_clean(&env, &id);
}

#[test]
fn malformed_and_truncated_config() {
    let env = Env::new();
    let b = env.bundle("b", &["true"]);
    for (text, needle) in [
        ("{", "config.json"),
        ("{\"ociVersion\": \"1.0.2\", \"process\": ", "config.json"),
        ("[]", "config.json"),
        ("{\"ociVersion\": 5}", "config.json"),
        ("not json", "config.json"),
    ] {
        fs::write(b.dir.join("config.json"), text).unwrap();
        let id = unique_id("bad");
        let out = env.run(&["create", "--bundle", b.path(), &id]);
        assert_one_line_error(&out, needle);
        assert_clean(&env, &id);
    }
}

#[test]
fn spec_fields_refused_before_anything_exists() {
    let env = Env::new();
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "version",
            Box::new(|c| c["ociVersion"] = "2.0.0".into()),
            "ociVersion",
        ),
        (
            "noroot",
            Box::new(|c| {
                c.as_object_mut().unwrap().remove("root");
            }),
            "root",
        ),
        (
            "noproc",
            Box::new(|c| {
                c.as_object_mut().unwrap().remove("process");
            }),
            "process",
        ),
        (
            "noargs",
            Box::new(|c| c["process"]["args"] = serde_json::json!([])),
            "process.args",
        ),
        (
            "rootfs",
            Box::new(|c| c["root"]["path"] = "missing-rootfs".into()),
            "missing-rootfs",
        ),
        (
            "reldest",
            Box::new(|c| c["mounts"][0]["destination"] = "proc".into()),
            "mounts[0].destination",
        ),
        (
            "noexe",
            Box::new(|c| c["process"]["args"] = serde_json::json!(["/bin/nonexistent"])),
            "/bin/nonexistent",
        ),
    ];
    for (name, edit, needle) in cases {
        let mut b = env.bundle(name, &["true"]);
        edit(&mut b.config);
        b.save();
        let id = unique_id(name);
        let out = env.run(&["create", "--bundle", b.path(), &id]);
        assert_one_line_error(&out, needle);
        assert_clean(&env, &id);
    }
}

#[test]
fn rootfs_that_is_a_file() {
    let env = Env::new();
    let mut b = env.bundle("b", &["true"]);
    fs::write(b.dir.join("file"), "x").unwrap();
    b.config["root"]["path"] = "file".into();
    b.save();
    let id = unique_id("rootfile");
    let out = env.run(&["create", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, "not a directory");
    assert_clean(&env, &id);
}

#[test]
fn duplicate_id() {
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    let id = unique_id("dup");
    env.ok(&["create", "--bundle", b.path(), &id]);
    let out = env.run(&["create", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, "already exists");
    assert_eq!(
        env.state(&id)["status"],
        "created",
        "the first container must survive"
    );
    env.ok(&["delete", &id]);
    assert_clean(&env, &id);
}

#[test]
fn invalid_ids() {
    let env = Env::new();
    let b = env.bundle("b", &["true"]);
    let long = "x".repeat(1024);
    for id in ["../x", "", "a/b", "..", long.as_str(), "sp ace"] {
        let out = env.run(&["create", "--bundle", b.path(), id]);
        assert_one_line_error(&out, "invalid container id");
        assert_clean(&env, "xxxxxxxx-none");
        assert!(!env.tmp.path().join("x").exists());
    }
}

#[test]
fn unknown_container_on_every_command() {
    let env = Env::new();
    for args in [
        vec!["start", "nope"],
        vec!["state", "nope"],
        vec!["kill", "nope"],
        vec!["kill", "nope", "9"],
        vec!["delete", "nope"],
        vec!["pause", "nope"],
        vec!["resume", "nope"],
        vec!["ps", "nope"],
        vec!["exec", "nope", "true"],
    ] {
        let out = env.run(&args);
        assert_one_line_error(&out, "\"nope\" does not exist");
    }
    // runc's `delete --force` of a missing container succeeds (the shim
    // relies on it).
    env.ok(&["delete", "--force", "nope"]);
}

#[test]
fn unknown_signal_and_flag() {
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    let id = unique_id("sig");
    env.ok(&["create", "--bundle", b.path(), &id]);
    for sig in ["SIGFOO", "99", "0"] {
        let out = env.run(&["kill", &id, sig]);
        assert_one_line_error(&out, "unknown signal");
    }
    assert_eq!(env.state(&id)["status"], "created");
    let out = env.run(&["create", "--no-such-flag", "--bundle", b.path(), "x"]);
    assert_one_line_error(&out, "--no-such-flag");
    assert_eq!(out.status.code(), Some(2));
    env.ok(&["delete", &id]);
    assert_clean(&env, &id);
}

#[test]
fn pid_file_in_missing_directory() {
    let env = Env::new();
    let b = env.bundle("b", &["true"]);
    let id = unique_id("pidf");
    let out = env.run(&[
        "create",
        "--bundle",
        b.path(),
        "--pid-file",
        "/nonexistent/dir/pid",
        &id,
    ]);
    assert_one_line_error(&out, "create");
    assert_clean(&env, &id);
}
