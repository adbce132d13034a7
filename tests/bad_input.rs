//! Bad input: one clear error line, a non-zero exit, and nothing left
//! behind (no state dir, cgroup or process).

use std::fs;

use crate::common::*;

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
            "idmap",
            Box::new(|c| {
                c["mounts"].as_array_mut().unwrap().push(serde_json::json!(
                    {"destination": "/m", "source": "/tmp", "options": ["bind", "idmap"]}
                ))
            }),
            "idmap without uidMappings and gidMappings takes the container's user namespace",
        ),
        (
            "noexe",
            Box::new(|c| c["process"]["args"] = serde_json::json!(["/bin/nonexistent"])),
            "/bin/nonexistent",
        ),
        // The runtime-spec: a hook's path MUST be absolute (a relative one
        // would be looked up in runsbx's PATH), its timeout above zero.
        (
            "relhook",
            Box::new(|c| c["hooks"] = serde_json::json!({ "prestart": [{ "path": "true" }] })),
            "hooks.prestart[0].path \"true\": not an absolute path",
        ),
        (
            "zerohook",
            Box::new(|c| {
                c["hooks"] =
                    serde_json::json!({ "poststop": [{ "path": "/bin/true", "timeout": 0 }] })
            }),
            "hooks.poststop[0].timeout 0: must be greater than zero",
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
        vec!["update", "--memory", "1M", "nope"],
        vec!["events", "--stats", "nope"],
        vec!["events", "nope"],
    ] {
        let out = env.run(&args);
        assert_one_line_error(&out, "\"nope\" does not exist");
    }
    // runc's `delete --force` of a missing container succeeds (the shim
    // relies on it).
    env.ok(&["delete", "--force", "nope"]);
    // With --log, the file gets runc's JSON line, the message without the
    // `runsbx: error: ` of stderr: containerd's shim reads `msg` back.
    let log = env.tmp.path().join("log.json");
    let out = env.run(&[
        "--log",
        log.to_str().unwrap(),
        "--log-format",
        "json",
        "kill",
        "nope",
    ]);
    assert_one_line_error(&out, "kill: container \"nope\" does not exist");
    let text = fs::read_to_string(&log).unwrap();
    let line: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(line["level"], "error", "{text}");
    assert_eq!(
        line["msg"], "kill: container \"nope\" does not exist",
        "{text}"
    );
    assert!(line["time"].is_string(), "{text}");
}

#[test]
fn unknown_signal_and_flag() {
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    let id = unique_id("sig");
    env.ok(&["create", "--bundle", b.path(), &id]);
    for sig in ["SIGFOO", "99", "65"] {
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

/// Like [`Env::run`], for arguments that are not UTF-8.
fn run_os(env: &Env, args: &[&std::ffi::OsStr]) -> std::process::Output {
    let out_path = env.tmp.path().join("os.out");
    let err_path = env.tmp.path().join("os.err");
    let status = env
        .cmd()
        .args(args)
        .stdout(fs::File::create(&out_path).unwrap())
        .stderr(fs::File::create(&err_path).unwrap())
        .status()
        .expect("spawn runsbx");
    std::process::Output {
        status,
        stdout: fs::read(&out_path).unwrap(),
        stderr: fs::read(&err_path).unwrap(),
    }
}

#[test]
fn wrong_types_in_config() {
    let env = Env::new();
    use serde_json::json;
    let cases = [
        ("/process/args", json!("true"), "process.args"),
        ("/root/readonly", json!("yes"), "root.readonly"),
        ("/process/user/uid", json!(-1), "process.user.uid"),
        ("/process/env", json!({"PATH": "/bin"}), "process.env"),
        ("/linux/namespaces", json!("pid"), "linux.namespaces"),
        ("/mounts", json!({"destination": "/proc"}), "mounts"),
        (
            "/process/noNewPrivileges",
            json!(1),
            "process.noNewPrivileges",
        ),
    ];
    for (pointer, value, needle) in cases {
        let mut b = env.bundle(&unique_id("types"), &["true"]);
        *b.config.pointer_mut(pointer).unwrap() = value;
        b.save();
        let id = unique_id("types");
        let out = env.run(&["create", "--bundle", b.path(), &id]);
        assert_one_line_error(&out, needle);
        assert_clean(&env, &id);
    }
}

#[test]
fn huge_config_refused_by_size() {
    let env = Env::new();
    let mut b = env.bundle("b", &["true"]);
    // Valid JSON, so only the size can be the reason.
    b.config["annotations"] = serde_json::json!({ "pad": "x".repeat(17 << 20) });
    b.save();
    let id = unique_id("huge");
    let out = env.run(&["create", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, "larger than the 16777216 byte limit");
    assert_clean(&env, &id);
}

/// runc refuses a rootfs reached through a symlink ("invalid rootfs: not an
/// absolute path, or a symlink"); runsbx does too, relative or absolute.
#[test]
fn rootfs_that_is_a_symlink() {
    let env = Env::new();
    let mut b = env.bundle("b", &["true"]);
    std::os::unix::fs::symlink("rootfs", b.dir.join("rootlink")).unwrap();
    let abs = b.dir.join("rootlink").to_str().unwrap().to_string();
    for path in ["rootlink".to_string(), abs] {
        b.config["root"]["path"] = path.into();
        b.save();
        let id = unique_id("rootlink");
        let out = env.run(&["create", "--bundle", b.path(), &id]);
        assert_one_line_error(&out, "goes through a symlink");
        assert_clean(&env, &id);
    }
    // The real directory, spelt with `..`, is not a symlink: it runs.
    let real = format!("{}/../b/rootfs", b.path());
    b.config["root"]["path"] = real.into();
    b.save();
    let id = unique_id("rootdots");
    env.ok(&["run", "--bundle", b.path(), &id]);
    assert_clean(&env, &id);
}

#[test]
fn bind_mount_of_a_missing_source() {
    let env = Env::new();
    let mut b = env.bundle("b", &["true"]);
    for (typ, options) in [("bind", vec!["rbind", "ro"]), ("none", vec!["bind"])] {
        b.config["mounts"] = serde_json::json!([{
            "destination": "/mnt", "type": typ, "source": "/nonexistent/src", "options": options
        }]);
        b.save();
        let id = unique_id("nosrc");
        let out = env.run(&["create", "--bundle", b.path(), &id]);
        assert_one_line_error(&out, "mounts[0].source /nonexistent/src");
        assert_clean(&env, &id);
    }
}

#[test]
fn non_utf8_id() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let b = env.bundle("b", &["true"]);
    let id = OsStr::from_bytes(b"bad\xff\xfeid");
    let create = [
        OsStr::new("create"),
        OsStr::new("--bundle"),
        OsStr::new(b.path()),
        id,
    ];
    let out = run_os(&env, &create);
    assert_one_line_error(&out, "invalid UTF-8");
    for verb in ["state", "start", "delete", "kill"] {
        let out = run_os(&env, &[OsStr::new(verb), id]);
        assert_one_line_error(&out, "invalid UTF-8");
    }
    assert_clean(&env, "bad\u{fffd}");
}

/// Two `create`s of one id at the same moment: one wins, the other says
/// "already exists" and leaves the winner alone.
#[test]
fn duplicate_id_under_concurrent_create() {
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    for round in 0..8 {
        let id = unique_id("race");
        let outs: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2)
                .map(|_| s.spawn(|| env.run(&["create", "--bundle", b.path(), &id])))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let ok: Vec<_> = outs.iter().filter(|o| o.status.success()).collect();
        assert_eq!(
            ok.len(),
            1,
            "round {round}: exactly one create must succeed: {:?}",
            outs.iter().map(stderr_of).collect::<Vec<_>>()
        );
        let failed = outs.iter().find(|o| !o.status.success()).unwrap();
        assert_one_line_error(failed, "already exists");
        let state = env.state(&id);
        assert_eq!(
            state["status"], "created",
            "round {round}: the winner survives"
        );
        assert!(pid_alive(state["pid"].as_i64().unwrap() as i32));
        assert_eq!(env.state_entries(), vec![id.clone()]);
        env.ok(&["delete", &id]);
        assert_clean(&env, &id);
    }
}

/// A state.json emptied, cut short or replaced: `state` and plain `delete`
/// say so in one line, `list` carries on without it, `delete --force` kills
/// the container's processes and removes it.
#[test]
fn tampered_or_truncated_state() {
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    type Tamper = fn(&str) -> String;
    let cases: [(&str, Tamper); 4] = [
        ("empty", |_| String::new()),
        ("cut", |s| s[..s.len() / 2].to_string()),
        ("garbage", |_| "not json at all\n".to_string()),
        ("wrong type", |s| {
            s.replace("\"pid\":", "\"pid\":\"x\",\"_\":")
        }),
    ];
    for (name, tamper) in cases {
        let id = unique_id("tamper");
        env.ok(&["create", "--bundle", b.path(), &id]);
        let pid = env.state(&id)["pid"].as_i64().unwrap() as i32;
        let path = env.root.join(&id).join("state.json");
        let text = fs::read_to_string(&path).unwrap();
        fs::write(&path, tamper(&text)).unwrap();

        let out = env.run(&["state", &id]);
        assert_one_line_error(&out, "state file");
        let out = env.run(&["delete", &id]);
        assert_one_line_error(&out, "state file");
        let list = env.ok(&["list"]);
        assert!(!list.contains(&id), "{name}: list shows {id}: {list}");
        let list = env.ok(&["list", "--format", "json"]);
        assert!(!list.contains(&id), "{name}: list shows {id}: {list}");

        let out = env.run(&["delete", "--force", &id]);
        assert!(out.status.success(), "{name}: {}", stderr_of(&out));
        assert!(
            !pid_alive(pid),
            "{name}: init {pid} survived delete --force"
        );
        assert_clean(&env, &id);
    }
}

#[test]
fn unknown_container_with_flags() {
    let env = Env::new();
    for args in [
        vec!["kill", "--all", "nope", "9"],
        vec!["ps", "--format", "json", "nope"],
        vec!["exec", "--detach", "nope", "true"],
        vec!["exec", "--pid-file", "/tmp/x.pid", "nope", "true"],
        vec!["start", "nope"],
    ] {
        let out = env.run(&args);
        assert_one_line_error(&out, "\"nope\" does not exist");
    }
    // An invalid id is refused as such, also by `delete --force`.
    let out = env.run(&["delete", "--force", "../nope"]);
    assert_one_line_error(&out, "invalid container id");
    assert_clean(&env, "nope");
}

/// Two namespace entries of one type: libcontainer would keep the last,
/// and anything reading the first would believe another.
#[test]
fn duplicate_namespace_types_are_refused() {
    let env = Env::new();
    let mut b = env.bundle("b", &["true"]);
    b.config["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({ "type": "pid", "path": "/proc/1/ns/pid" }));
    b.save();
    let id = unique_id("dupns");
    let out = env.run(&["create", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, "a second");
    assert!(env.state_entries().is_empty());
}

/// A mount that fails inside init (libcontainer brings back only "failed to
/// prepare rootfs") is named with its index, type, source, destination, the
/// operation and the errno, for `create` and `run` alike.
#[test]
fn failed_mount_names_the_mount_the_path_and_the_errno() {
    let env = Env::new();
    let mut b = env.bundle("b", &["true"]);
    b.config["mounts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "destination": "/data", "type": "tmpfs", "source": "tmpfs", "options": ["size=bogus"]
        }));
    b.save();
    for cmd in ["create", "run"] {
        let id = unique_id("badmount");
        let out = env.run(&[cmd, "--bundle", b.path(), &id]);
        assert_one_line_error(
            &out,
            "failed to prepare rootfs: mounts[3] (tmpfs tmpfs on /data): mount: Invalid argument (EINVAL, os error 22)",
        );
        assert_clean(&env, &id);
    }
}

/// The same in a user namespace: a bind whose source the container's root
/// (an unprivileged host user) cannot reach, with an option runsbx leaves to
/// libcontainer (prebind.rs makes plain binds only), says EACCES and which
/// path, instead of a bare "failed to prepare rootfs".
#[test]
fn unreachable_rw_bind_in_a_user_namespace_says_eacces() {
    let env = Env::new();
    let private = env.tmp.path().join("private");
    fs::create_dir_all(private.join("data")).unwrap();
    fs::set_permissions(
        &private,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let mut b = env.bundle("b", &["true"]);
    let src = private.join("data");
    b.config["mounts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "destination": "/data", "type": "bind", "source": src, "options": ["rbind", "rw", "noatime"]
        }));
    b.with_userns_as_nobody();
    b.save();
    // The container's root must reach the rootfs itself.
    for dir in [env.tmp.path(), b.dir.as_path()] {
        fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let id = unique_id("eacces");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    assert_one_line_error(
        &out,
        &format!(
            "mounts[3] (bind {0} on /data): canonicalize \"{0}\": Permission denied (EACCES, os error 13)",
            src.display()
        ),
    );
    assert_clean(&env, &id);
}

/// A root `sandbox --workdir D` with D owned by an unprivileged user but
/// group root is refused for its group, not said to be "owned by root".
#[test]
fn workdir_in_group_root_is_refused_naming_the_group() {
    let env = Env::new();
    let dir = env.nobody_workdir();
    nix::unistd::chown(&dir, Some(65534.into()), Some(0.into())).unwrap();
    let out = sandbox(&env, &["--workdir", dir.to_str().unwrap()], &["/bin/true"]);
    assert_one_line_error(&out, "owned by uid 65534 but group root (gid 0)");
    assert!(
        !stderr_of(&out).contains("owned by root"),
        "{}",
        stderr_of(&out)
    );
    assert_clean(&env, "sandbox");
}

/// `--workdir $TMPDIR` (or an ancestor of it): the private bundle would be
/// made inside the workdir. Refused before anything is staged, naming the
/// cause, instead of libcontainer's bare "failed to prepare rootfs".
#[test]
fn workdir_holding_tmpdir_is_refused_naming_the_bundle() {
    let env = Env::new();
    let dir = env.nobody_workdir();
    let tmpdir = dir.join("tmp");
    fs::create_dir_all(&tmpdir).unwrap();
    for t in [&dir, &tmpdir] {
        let out = env.run_cmd(env.cmd().env("TMPDIR", t).args([
            "sandbox",
            "--workdir",
            dir.to_str().unwrap(),
            "--",
            "/bin/true",
        ]));
        assert_one_line_error(&out, "where runsbx makes the private bundle");
        assert_eq!(out.status.code(), Some(125));
        assert!(
            !stderr_of(&out).contains("failed to prepare rootfs"),
            "{}",
            stderr_of(&out)
        );
        let left: Vec<_> = fs::read_dir(t)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.iter().all(|p| p == &tmpdir), "left: {left:?}");
        assert_clean(&env, "sandbox");
    }
}

/// A read-only bind runsbx makes itself (its source is out of reach of the
/// container's root, prebind.rs) and cannot: one line naming the mount, the
/// step and the errno, and nothing left (no state, no mount on the host).
#[test]
fn failed_prebind_names_the_mount_the_step_and_the_errno() {
    let env = Env::new();
    let private = env.tmp.path().join("private");
    fs::create_dir_all(private.join("dir")).unwrap();
    fs::set_permissions(
        &private,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let mut b = env.bundle("b", &["true"]);
    // /bin/busybox is a file: no directory can be made below it.
    b.config["mounts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "destination": "/bin/busybox/x", "type": "bind", "source": private.join("dir"),
            "options": ["rbind", "ro"]
        }));
    b.with_userns_as_nobody();
    b.save();
    fs::set_permissions(
        env.tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    for cmd in ["create", "run"] {
        let id = unique_id("prebind");
        let out = env.run(&[cmd, "--bundle", b.path(), &id]);
        assert_one_line_error(
            &out,
            &format!(
                "mounts[3] (bind {} on /bin/busybox/x): mount point in the rootfs: Not a directory (ENOTDIR)",
                private.join("dir").display()
            ),
        );
        assert_clean(&env, &id);
    }
    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(b.path()), "a mount is left on the host");
}

/// libcontainer refuses proc and sysfs on a symlink (CVE-2019-19921) with
/// "failed to prepare rootfs" alone; the error names the mount and the
/// symlink. The rootfs shape is contest's prohibit_symlink: the directory
/// replaced by a symlink to its own host path.
#[test]
fn proc_or_sys_on_a_symlink_names_the_mount_and_the_symlink() {
    let env = Env::new();
    for (dir, want) in [
        (
            "proc",
            "mounts[0] (proc proc on /proc): /proc is a symlink to ",
        ),
        (
            "sys",
            "mounts[3] (sysfs sysfs on /sys): /sys is a symlink to ",
        ),
    ] {
        let mut b = env.bundle(dir, &["true"]);
        b.config["mounts"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({
                "destination": "/sys", "type": "sysfs", "source": "sysfs",
                "options": ["nosuid", "noexec", "nodev", "ro"]
            }));
        b.save();
        let link = b.dir.join("rootfs").join(dir);
        fs::remove_dir(&link).unwrap();
        std::os::unix::fs::symlink(&link, &link).unwrap();
        let id = unique_id("symproc");
        let out = env.run(&["create", "--bundle", b.path(), &id]);
        assert_one_line_error(&out, want);
        let typ = if dir == "proc" { "proc" } else { "sysfs" };
        assert_one_line_error(
            &out,
            &format!("in the rootfs: filesystem {typ} must be mounted on ordinary directory"),
        );
        assert_clean(&env, &id);
    }
}

/// An inheritable capability outside the bounding set makes capset fail
/// with EPERM in init; libcontainer returns "failed syscall" and logs the
/// errno only inside a debug-printed value. The line gives it by name
/// (contest's process_capabilities_bounding expects EPERM).
#[test]
fn capset_failure_in_init_says_eperm() {
    let env = Env::new();
    let mut b = env.bundle("b", &["true"]);
    b.config["process"]["capabilities"] = serde_json::json!({
        "effective": ["CAP_SYS_ADMIN"], "inheritable": ["CAP_SYS_ADMIN"],
        "permitted": ["CAP_SYS_ADMIN"], "ambient": []
    });
    b.save();
    let id = unique_id("capset");
    let out = env.run(&["create", "--bundle", b.path(), &id]);
    assert_one_line_error(
        &out,
        "drop capabilities: capset failure: Operation not permitted (EPERM, os error 1)",
    );
    assert_clean(&env, &id);
}

/// A profile on a host without AppArmor: libcontainer's own refusal reads
/// "io error: No such file or directory" (runtime-tools'
/// linux_process_apparmor_profile); the line names the field and the host.
#[test]
fn apparmor_profile_on_a_host_without_apparmor_names_the_field() {
    let env = Env::new();
    let enabled = "/sys/module/apparmor/parameters/enabled";
    if fs::read_to_string(enabled).is_ok_and(|v| v.starts_with('Y')) {
        eprintln!("skipped: AppArmor is on here; this checks hosts without it");
        return;
    }
    let mut b = env.bundle("b", &["true"]);
    b.config["process"]["apparmorProfile"] = "runsbx-test".into();
    b.save();
    let id = unique_id("aa");
    let out = env.run(&["create", "--bundle", b.path(), &id]);
    assert_one_line_error(
        &out,
        "create: config.json: process.apparmorProfile \"runsbx-test\": AppArmor is",
    );
    assert_one_line_error(&out, enabled);
    assert_clean(&env, &id);
}

/// `linux.resources.unified` on this cgroup v1 (hybrid) host: refused in one
/// line, as runc ("invalid configuration"), nothing left; libcgroups' v1
/// manager would leave it out silently.
#[test]
fn unified_resources_on_cgroup_v1_are_refused() {
    assert!(
        std::path::Path::new("/sys/fs/cgroup/pids/cgroup.procs").exists(),
        "this test needs the pids controller on cgroup v1, as on these hybrid hosts"
    );
    let env = Env::new();
    let mut b = env.bundle("b", &["true"]);
    b.config["linux"]["resources"] = serde_json::json!({ "unified": { "memory.min": "131072" } });
    b.save();
    let id = unique_id("unified");
    assert_one_line_error(
        &env.run(&["run", "--bundle", b.path(), &id]),
        "invalid configuration: cannot use unified on cgroup v1",
    );
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
    assert!(cgroups_named(&id).is_empty(), "{:?}", cgroups_named(&id));
}

/// runc 1.2's "scheduler vs cpus": SCHED_DEADLINE in a cpuset of fewer than
/// every CPU is refused by the kernel (EPERM, sched_setattr(2)); the line
/// says why in runc's words (libcontainer's read "call exec sched_setattr
/// error: 1: error setting scheduler err=1") and nothing is left.
#[test]
fn a_deadline_scheduler_in_a_cpuset_is_refused_in_runcs_words() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: needs two CPUs (a cpuset of one must leave one out)");
        return;
    }
    let env = Env::new();
    let mut b = env.bundle("b", &["true"]);
    b.config["process"]["scheduler"] = serde_json::json!({
        "policy": "SCHED_DEADLINE", "nice": 19, "runtime": 42000,
        "deadline": 1000000, "period": 1000000
    });
    b.config["linux"]["resources"] = serde_json::json!({ "cpu": { "cpus": "0" } });
    b.save();
    let id = unique_id("sched");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    assert_one_line_error(
        &out,
        "process.scheduler SCHED_DEADLINE: process scheduler can't be used together with \
         AllowedCPUs (linux.resources.cpu.cpus \"0\")",
    );
    assert_clean(&env, &id);
}
