//! Rootless runsbx (docs/rootless.md): `sandbox`, `run`, `create`/`start`/
//! `state`/`exec`/`kill`/`delete` and `selftest` as an ordinary user, and the
//! clear error plus the opt-in `--no-userns` mode where user namespaces are
//! forbidden.
//!
//! Two halves, each failing when run as the wrong user, never skipping:
//! - the `user_*` tests run as an ordinary user. They are `#[ignore]`d, so
//!   a plain (root) `cargo test` does not run them as root; the root test
//!   `root_runs_the_user_half_as_an_ordinary_user` runs this binary again
//!   with `--ignored` as the user hack/setup-ci creates. A user runs them
//!   with `cargo test -p runsbx --test all rootless:: -- --ignored`.
//! - the `root_*` tests set up what an ordinary user cannot (a throwaway
//!   user namespace with `user.max_user_namespaces=0`, a delegated cgroup)
//!   and run runsbx in it as that user.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;
use serde_json::json;

/// The user half runs as an ordinary user; as root it would test nothing
/// of what it names.
fn require_user() {
    assert!(
        !nix::unistd::geteuid().is_root(),
        "this test runs as an ordinary user: run it through root_runs_the_user_half_as_an_ordinary_user, or `cargo test -p runsbx --test all rootless:: -- --ignored` as a user"
    );
}

fn uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// A busybox bundle for the caller: a user namespace mapping container
/// root to the caller, as `spec --rootless` writes it.
fn user_bundle(env: &Env, name: &str, args: &[&str]) -> Bundle {
    let mut b = env.bundle(name, args);
    let gid = nix::unistd::getegid().as_raw();
    let linux = &mut b.config["linux"];
    linux["namespaces"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "user"}));
    linux["uidMappings"] = json!([{"containerID": 0, "hostID": uid(), "size": 1}]);
    linux["gidMappings"] = json!([{"containerID": 0, "hostID": gid, "size": 1}]);
    b.save();
    b
}

const ESCAPES: &str = r#"
attempt("tcp-public", lambda: socket.create_connection(("1.1.1.1", 80), timeout=2))
attempt("write-tmp", lambda: open("/tmp/runsbx-rootless-escape", "w"))
attempt("write-runtime", lambda: open(os.path.join(os.path.dirname(sys.executable), "x"), "w"))
attempt("fork", lambda: os.fork())
attempt("write-workdir", lambda: open(os.path.join(os.environ["HOME"], "made-inside"), "w").write("hi"))
print("uid", os.getuid())
"#;

fn escapes(out: &Output) -> std::collections::BTreeMap<String, String> {
    stdout_of(out)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
#[ignore = "runs as an ordinary user: root_runs_the_user_half_as_an_ordinary_user runs it"]
fn user_sandbox_runs_python_and_every_layer_holds() {
    require_user();
    let env = Env::any_user();
    let wd = env.tmp.path().join("work");
    fs::create_dir(&wd).unwrap();
    let out = sandbox(
        &env,
        &["--workdir", wd.to_str().unwrap()],
        &["/usr/bin/python3", "-c", &py_attempts(ESCAPES)],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    let got = escapes(&out);
    for (name, want) in [
        ("tcp-public", "EPERM"),
        ("write-tmp", "EROFS"),
        ("write-runtime", "EROFS"),
        ("fork", "EPERM"),
        ("write-workdir", "ALLOWED"),
        // Container root, which is the caller on the host.
        ("uid", "0"),
    ] {
        assert_eq!(
            got.get(name).map(String::as_str),
            Some(want),
            "{name}: {got:?}"
        );
    }
    let made = wd.join("made-inside");
    assert_eq!(fs::read_to_string(&made).unwrap(), "hi");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(fs::metadata(&made).unwrap().uid(), uid());
    // Exit codes come through; nothing is left in the state root.
    let out = sandbox(
        &env,
        &[],
        &["/usr/bin/python3", "-c", "raise SystemExit(7)"],
    );
    assert_eq!(out.status.code(), Some(7), "{}", stderr_of(&out));
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
}

#[test]
#[ignore = "runs as an ordinary user: root_runs_the_user_half_as_an_ordinary_user runs it"]
fn user_sandbox_allow_net_reaches_an_allowed_local_server_only() {
    require_user();
    let env = Env::any_user();
    // A one-answer HTTP server on 127.0.0.1, this test's "internet".
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut c in l.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ = c.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nrootles");
        }
    });
    let allow = format!("localhost:{port}");
    let code = format!(
        r#"
import urllib.request
print("get", urllib.request.urlopen("http://localhost:{port}/").read().decode())
attempt("direct", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
"#
    );
    let out = sandbox(
        &env,
        &["--allow-net", &allow, "--allow-net-range", "127.0.0.0/8"],
        &["/usr/bin/python3", "-c", &py_attempts(&code)],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    let got = escapes(&out);
    for (name, want) in [("get", "rootles"), ("direct", "EACCES"), ("udp", "EPERM")] {
        assert_eq!(
            got.get(name).map(String::as_str),
            Some(want),
            "{name}: {got:?}"
        );
    }
}

#[test]
#[ignore = "runs as an ordinary user: root_runs_the_user_half_as_an_ordinary_user runs it"]
fn user_sandbox_scrubs_the_environment_and_closes_inherited_fds() {
    require_user();
    let env = Env::any_user();
    // fd 5 is inherited without close-on-exec; the workload must not see it.
    let out = Command::new("bash")
        .args(["-c", "exec 5</etc/hostname; exec \"$0\" \"$@\""])
        .arg(runsbx_bin())
        .arg("--root")
        .arg(&env.root)
        .args(["sandbox", "--", "/usr/bin/python3", "-c"])
        .arg(py_attempts(
            "attempt('fd5', lambda: os.fstat(5))\nprint('env', ','.join(sorted(os.environ)))",
        ))
        .env("SECRET_API_TOKEN", "hunter2")
        .env("LANG", "C.UTF-8")
        .env("LD_PRELOAD", "/nonexistent.so")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let got = escapes(&out);
    assert_eq!(got.get("fd5").map(String::as_str), Some("EBADF"), "{got:?}");
    assert_eq!(
        got.get("env").map(String::as_str),
        Some("HOME,LANG,PATH,TMPDIR")
    );
}

#[test]
#[ignore = "runs as an ordinary user: root_runs_the_user_half_as_an_ordinary_user runs it"]
fn user_sandbox_timeout_and_rss_limit_work_without_cgroups() {
    require_user();
    let env = Env::any_user();
    let out = sandbox(&env, &["--timeout", "300ms"], &["/bin/sleep", "10"]);
    assert_eq!(out.status.code(), Some(137), "{}", stderr_of(&out));
    let out = sandbox(
        &env,
        &["--rss-limit", "64M"],
        &[
            "/usr/bin/python3",
            "-c",
            "x = bytearray(512 << 20); import time; time.sleep(5)",
        ],
    );
    assert_eq!(out.status.code(), Some(137), "{}", stderr_of(&out));
    // A cgroup limit cannot hold rootless: refused, by name, before anything runs.
    let out = sandbox(&env, &["--memory", "100M"], &["/bin/true"]);
    assert_one_line_error(&out, "memory limits");
    assert!(
        stderr_of(&out).contains("without cgroups"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
#[ignore = "runs as an ordinary user: root_runs_the_user_half_as_an_ordinary_user runs it"]
fn user_selftest_passes() {
    require_user();
    let env = Env::any_user();
    assert_selftest_passes(&env, &probe_bin());
    // The weaker mode, too: every escape still blocked without namespaces.
    let probe = probe_bin();
    let out = env.run(&[
        "selftest",
        "--no-userns",
        "--probe",
        probe.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}\n{}",
        stdout_of(&out),
        stderr_of(&out)
    );
    assert!(stdout_of(&out).contains("(--no-userns: without namespaces)"));
}

#[test]
#[ignore = "runs as an ordinary user: root_runs_the_user_half_as_an_ordinary_user runs it"]
fn user_lifecycle_create_start_exec_kill_delete() {
    require_user();
    let env = Env::any_user();
    let b = user_bundle(&env, "b", &["sleep", "100"]);
    let id = unique_id("rl");
    env.ok(&["create", "--bundle", b.path(), &id]);
    assert_eq!(env.state(&id)["status"], "created");
    env.ok(&["start", &id]);
    let s = env.wait_status(&id, "running");
    let pid = s["pid"].as_i64().unwrap() as i32;
    // The reported PID is the workload's, and it is the caller on the host.
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let host_uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert_eq!(host_uid, uid().to_string());
    assert_eq!(
        fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap(),
        "sleep\x00100\x00"
    );
    // exec joins the container as its root.
    let out = env.ok(&["exec", &id, "sh", "-c", "id -u; cat /proc/self/uid_map"]);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("0"));
    let map: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(map, ["0", &uid().to_string(), "1"]);
    // An id the container does not map: one clear line.
    assert_one_line_error(
        &env.run(&["exec", "--user", "5", &id, "true"]),
        "does not map uid 5",
    );
    // No cgroup (no delegated one here): update and events say so.
    assert_one_line_error(
        &env.run(&["update", "--pids-limit", "5", &id]),
        "has no cgroup to apply resources to",
    );
    assert_one_line_error(
        &env.run(&["events", "--stats", &id]),
        "has no cgroup to read statistics from",
    );
    env.ok(&["kill", &id, "KILL"]);
    env.wait_status(&id, "stopped");
    env.ok(&["delete", &id]);
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
}

#[test]
#[ignore = "runs as an ordinary user: root_runs_the_user_half_as_an_ordinary_user runs it"]
fn user_run_and_delete_force() {
    require_user();
    let env = Env::any_user();
    let b = user_bundle(&env, "b", &["sh", "-c", "exit 3"]);
    let out = env.run(&["run", "--bundle", b.path(), &unique_id("rl")]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let b = user_bundle(&env, "b2", &["sleep", "100"]);
    let id = unique_id("rl");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    let pid = env.wait_status(&id, "running")["pid"].as_i64().unwrap() as i32;
    env.ok(&["kill", "--all", &id, "KILL"]);
    env.ok(&["delete", "--force", &id]);
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while pid_alive(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "workload {pid} survived delete --force"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `delete --force` after a create killed just after libcontainer forked
/// succeeds and leaves no state. Before, a state saved before the cgroup
/// view existed failed it ("failed to read /sys/fs/cgroup/runsbx-rootless/
/// ID"). delete kills the processes such a create leaves as a rule, not
/// always (docs/rootless.md): the test kills any left itself.
#[test]
#[ignore = "runs as an ordinary user: root_runs_the_user_half_as_an_ordinary_user runs it"]
fn user_delete_force_after_a_create_killed_after_its_fork() {
    require_user();
    let env = Env::any_user();
    let b = user_bundle(&env, "b", &["sleep", "100"]);
    for n in 0..30 {
        let id = unique_id("rlfork");
        let mut child = env.spawn_quiet(&["create", "--bundle", b.path(), &id]);
        kill_after_its_fork(&mut child, std::time::Duration::from_millis(2 * (n % 10)));
        let out = env.run(&["delete", "--force", &id]);
        let left = env.state_entries();
        let _ = Command::new("pkill")
            .args(["-KILL", "-f", &format!(" {id}$")])
            .status();
        assert!(
            out.status.success(),
            "delete --force {id}: {}",
            stderr_of(&out)
        );
        assert!(left.is_empty(), "state left: {left:?}");
    }
}

/// A poststop hook of a container deleted with --force while running is
/// told the status `stopped`, with or without a delegated cgroup.
#[test]
#[ignore = "runs as an ordinary user: root_runs_the_user_half_as_an_ordinary_user runs it"]
fn user_poststop_hook_is_told_stopped() {
    require_user();
    let env = Env::any_user();
    let mut b = user_bundle(&env, "b", &["sleep", "100"]);
    let out = env.tmp.path().join("poststop.json");
    b.config["hooks"] = json!({ "poststop": [{
        "path": "/bin/sh",
        "args": ["sh", "-c", "cat > \"$1\"", "sh", out.to_str().unwrap()],
    }] });
    b.save();
    let id = unique_id("rlhook");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    env.wait_status(&id, "running");
    env.ok(&["delete", "--force", &id]);
    let text = fs::read_to_string(&out).expect("the poststop hook ran");
    let state: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(state["status"], "stopped", "{state}");
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
}

#[test]
#[ignore = "runs as an ordinary user: root_runs_the_user_half_as_an_ordinary_user runs it"]
fn user_spec_rootless_runs_as_it_is_and_limits_are_refused() {
    require_user();
    let env = Env::any_user();
    let b = env.bundle("b", &["true"]);
    fs::remove_file(b.dir.join("config.json")).unwrap();
    env.ok(&["spec", "--rootless", "--bundle", b.path()]);
    // Only the command changes: `sh` on a terminal is no test.
    let mut config: serde_json::Value =
        serde_json::from_slice(&fs::read(b.dir.join("config.json")).unwrap()).unwrap();
    config["process"]["args"] = json!(["sh", "-c", "echo from-spec"]);
    config["process"]["terminal"] = json!(false);
    // runc's rootless spec mounts /sys/fs/cgroup without a cgroup namespace;
    // on a cgroup v1 host a rootless runsbx has no cgroup hierarchy to bind
    // there (runsbx.1.md, `spec --rootless`).
    if !Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        config["mounts"]
            .as_array_mut()
            .unwrap()
            .retain(|m| m["destination"] != "/sys/fs/cgroup");
    }
    fs::write(b.dir.join("config.json"), config.to_string()).unwrap();
    let out = env.run(&["run", "--bundle", b.path(), &unique_id("rl")]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "from-spec\n");
    config["linux"]["resources"] = json!({"pids": {"limit": 10}});
    fs::write(b.dir.join("config.json"), config.to_string()).unwrap();
    let out = env.run(&["run", "--bundle", b.path(), &unique_id("rl")]);
    assert_one_line_error(&out, "a pids limit");
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
}

/// `gen` arguments for a bundle running python3 `code` in `wd`.
fn gen_python<'a>(wd: &'a Path, bundle: &'a Path, code: &'a str) -> [&'a str; 9] {
    [
        "gen",
        "--workdir",
        wd.to_str().unwrap(),
        "-o",
        bundle.to_str().unwrap(),
        "--",
        "/usr/bin/python3",
        "-c",
        code,
    ]
}

#[test]
#[ignore = "runs as an ordinary user: root_runs_the_user_half_as_an_ordinary_user runs it"]
fn user_gen_writes_a_bundle_that_runs() {
    require_user();
    let env = Env::any_user();
    let wd = env.tmp.path().join("work");
    fs::create_dir(&wd).unwrap();
    let bundle = env.tmp.path().join("gen");
    env.ok(&gen_python(&wd, &bundle, "print(6 * 7)"));
    let config: serde_json::Value =
        serde_json::from_slice(&fs::read(bundle.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["linux"]["uidMappings"][0]["hostID"], uid());
    let out = env.run(&[
        "run",
        "--bundle",
        bundle.to_str().unwrap(),
        &unique_id("rl"),
    ]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "42\n");
}

#[test]
#[ignore = "runs as an ordinary user: root_runs_the_user_half_as_an_ordinary_user runs it"]
fn user_default_state_root_is_under_xdg_runtime_dir() {
    require_user();
    let env = Env::any_user();
    let xdg = env.tmp.path().join("xdg");
    fs::create_dir(&xdg).unwrap();
    let out = Command::new(runsbx_bin())
        .args(["sandbox", "--id", "xdg-probe", "--", "/bin/true"])
        .env("XDG_RUNTIME_DIR", &xdg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    // The root stays (with the discovery cache); the container is gone.
    let root = xdg.join("runsbx");
    assert!(root.is_dir());
    assert!(!root.join("xdg-probe").exists());
}

// ---- The root half ----

/// The user half, run by root as the ordinary user hack/setup-ci creates:
/// this binary again with `--ignored`, from copies in a fresh 0755
/// directory (the checkout may be closed to the user, e.g. under /root).
#[test]
fn root_runs_the_user_half_as_an_ordinary_user() {
    require_root();
    use std::os::unix::fs::PermissionsExt;
    let (uid, gid) = ci_user();
    let dir = tempfile::Builder::new()
        .prefix("runsbx-rootless-")
        .tempdir()
        .unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let copy = |src: &Path, name: &str| {
        let dst = dir.path().join(name);
        fs::copy(src, &dst).unwrap();
        fs::set_permissions(&dst, fs::Permissions::from_mode(0o755)).unwrap();
        dst
    };
    let tests = copy(&std::env::current_exe().unwrap(), "rootless");
    let runsbx = copy(&runsbx_bin(), "runsbx");
    let probe = copy(&probe_bin(), "runsbx-probe");
    let out = Command::new("setpriv")
        .arg(format!("--reuid={uid}"))
        .arg(format!("--regid={gid}"))
        .args([
            "--clear-groups",
            "--",
            "env",
            "-i",
            "PATH=/usr/bin:/bin",
            "LANG=C.UTF-8",
        ])
        .arg(format!("RUNSBX_BIN={}", runsbx.display()))
        .arg(format!("RUNSBX_PROBE={}", probe.display()))
        .arg(&tests)
        .args(["rootless::", "--ignored", "--test-threads=2"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let report = format!("{}\n{}", stdout_of(&out), stderr_of(&out));
    assert!(out.status.success(), "the user half failed:\n{report}");
    assert!(
        report.contains("test result: ok.") && !report.contains(" 0 passed"),
        "the user half ran no test:\n{report}"
    );
}

// ---- The root half: a host that forbids user namespaces ----

/// The `--root` of a test user's runsbx: beside its workdir, never inside
/// it (runsbx refuses a workdir that holds its state root), owned by it.
fn user_state_root(user: (u32, u32), workdir: &Path) -> std::path::PathBuf {
    let dir = workdir.with_file_name("user-state");
    if !dir.exists() {
        fs::create_dir(&dir).unwrap();
        nix::unistd::chown(&dir, Some(user.0.into()), Some(user.1.into())).unwrap();
        fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    }
    dir
}

/// Runs `args` as `user` inside a throwaway user namespace in which
/// `user.max_user_namespaces` is 0 (root maps itself and the user, sets the
/// sysctl there, then drops to the user): the kernel refuses any further
/// user namespace, exactly as on a host with the sysctl at 0.
fn blocked(user: (u32, u32), args: &[&str], workdir: &Path) -> Output {
    const SCRIPT: &str = r#"
set -eu
exec 5</etc/hostname   # inherited without close-on-exec: must not reach the workload
uid=$1 gid=$2; shift 2
d=$(mktemp -d); mkfifo "$d/go"
unshare --user -- bash -c 'read -r _ < "$0"; exec bash -c "echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --reuid=$1 --regid=$2 --clear-groups -- \"\${@:3}\"" inner "$@"' "$d/go" "$uid" "$gid" "$@" &
pid=$!
while [ "$(readlink /proc/$pid/ns/user)" = "$(readlink /proc/self/ns/user)" ]; do sleep 0.01; done
/bin/echo -e "0 0 1\n$uid $uid 1" > /proc/$pid/uid_map
/bin/echo -e "0 0 1\n$gid $gid 1" > /proc/$pid/gid_map
echo > "$d/go"
rc=0; wait $pid || rc=$?
rm -rf "$d"
exit $rc
"#;
    let bin = runsbx_bin();
    let mut cmd = Command::new("bash");
    cmd.args(["-c", SCRIPT, "blocked"])
        .arg(user.0.to_string())
        .arg(user.1.to_string())
        .args([
            "env",
            "-i",
            "PATH=/usr/bin:/bin",
            "SECRET_API_TOKEN=hunter2",
        ])
        .arg(format!("HOME={}", workdir.display()))
        .arg(format!("TMPDIR={}", workdir.display()))
        .arg(bin)
        .arg("--root")
        .arg(user_state_root(user, workdir))
        .args(args)
        .current_dir(workdir);
    cmd.output().unwrap()
}

#[test]
fn root_forbidden_user_namespaces_give_the_clear_error_and_no_userns_still_confines() {
    require_root();
    let user = ci_user();
    let env = Env::new();
    let wd = env.tmp.path().join("work");
    fs::create_dir(&wd).unwrap();
    let mut p = fs::metadata(env.tmp.path()).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
    fs::set_permissions(env.tmp.path(), p).unwrap();
    nix::unistd::chown(&wd, Some(user.0.into()), Some(user.1.into())).unwrap();

    // Pinned to namespaces: refused, naming the sysctl and the fix.
    let out = blocked(
        user,
        &["sandbox", "--isolation", "namespaces", "--", "/bin/true"],
        &wd,
    );
    assert_one_line_error(&out, "user.max_user_namespaces is 0");
    let err = stderr_of(&out);
    assert!(err.contains("sysctl -w user.max_user_namespaces="), "{err}");
    assert!(err.contains("--isolation namespaces"), "{err}");
    assert_eq!(out.status.code(), Some(125));
    // No mode flag: the landlock mode, announced in one line with the cause.
    let out = blocked(user, &["sandbox", "--", "/bin/true"], &wd);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("user.max_user_namespaces is 0") && err.contains("--isolation landlock"),
        "{err}"
    );
    // The same refusal for the OCI commands.
    assert!(stderr_of(&blocked(
        user,
        &["run", "--bundle", "/nonexistent", "x"],
        &wd
    ))
    .contains("user.max_user_namespaces is 0"));

    let wd_s = wd.to_str().unwrap();
    let out = blocked(
        user,
        &[
            "sandbox",
            "--no-userns",
            "--workdir",
            wd_s,
            "--",
            "/usr/bin/python3",
            "-c",
            &py_attempts(&format!(
                "{ESCAPES}\nattempt('fd5', lambda: os.fstat(5))\nprint('env', ','.join(sorted(os.environ)))"
            )),
        ],
        &wd,
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    let got = escapes(&out);
    for (name, want) in [
        ("tcp-public", "EPERM"), // seccomp: no socket()
        ("write-tmp", "EACCES"), // Landlock: only the workdir is writable
        ("write-runtime", "EACCES"),
        ("fork", "EPERM"),
        ("write-workdir", "ALLOWED"),
        ("fd5", "EBADF"),
        // LC_CTYPE is Python's own (PEP 538 locale coercion, now that the C.UTF-8
        // locale under /usr is there), not the caller's.
        ("env", "HOME,LC_CTYPE,PATH,TMPDIR"),
        // No user namespace: the workload is the caller itself.
        ("uid", &user.0.to_string()),
    ] {
        assert_eq!(
            got.get(name).map(String::as_str),
            Some(want),
            "{name}: {got:?}"
        );
    }
    assert!(!Path::new("/tmp/runsbx-rootless-escape").exists());
    // Pinned (`--no-userns` is `--isolation landlock`): no announcement.
    assert_eq!(stderr_of(&out), "");
    // And the probe agrees, where no user namespace can be had.
    let probe = probe_bin();
    let out = blocked(
        user,
        &[
            "selftest",
            "--no-userns",
            "--probe",
            probe.to_str().unwrap(),
        ],
        &wd,
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        stdout_of(&out),
        stderr_of(&out)
    );
}

// ---- The root half: a delegated cgroup v2 subtree ----

/// A cgroup in the v2 hierarchy delegated to `user` as systemd's
/// `Delegate=yes` would: the directory and the files a delegatee writes
/// belong to it. Removed (children first) on drop.
struct Delegated {
    dir: std::path::PathBuf,
    /// Its path in the hierarchy, as /proc/<pid>/cgroup shows it.
    path: String,
}

impl Delegated {
    fn make(user: (u32, u32)) -> Option<Self> {
        let mount = runsbx_runtime::delegation::v2_mount()?;
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let name = format!("runsbx-test-deleg-{}-{n}", std::process::id());
        let dir = mount.join(&name);
        fs::create_dir(&dir).unwrap();
        let d = Self {
            dir,
            path: format!("/{name}"),
        };
        for f in [
            "",
            "cgroup.procs",
            "cgroup.subtree_control",
            "cgroup.threads",
        ] {
            // No symlink following: a chown must not land elsewhere.
            nix::unistd::fchownat(
                None,
                &d.dir.join(f),
                Some(user.0.into()),
                Some(user.1.into()),
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .unwrap();
        }
        Some(d)
    }

    fn children(&self) -> Vec<String> {
        fs::read_dir(&self.dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }
}

impl Drop for Delegated {
    fn drop(&mut self) {
        for c in self.children() {
            let _ = fs::write(self.dir.join(&c).join("cgroup.kill"), "1");
            for _ in 0..100 {
                if fs::remove_dir(self.dir.join(&c)).is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        // Whatever the wrapper shells left (they exited) is gone by now.
        for _ in 0..100 {
            if fs::remove_dir(&self.dir).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// runsbx `args` as `user`, started from `cgroup` when given: a root shell
/// moves itself there (an ordinary user may not move itself out of the
/// root cgroup, whose cgroup.procs is root's), then drops to the user.
fn as_user_in(
    cgroup: Option<&Delegated>,
    user: (u32, u32),
    args: &[&str],
    workdir: &Path,
) -> Command {
    let mv = match cgroup {
        Some(d) => format!("echo $$ > {}/cgroup.procs && ", d.dir.display()),
        None => String::new(),
    };
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "{mv}g=$1; shift; exec setpriv --reuid=$0 --regid=$g --clear-groups -- \"$@\""
        ))
        .arg(user.0.to_string())
        .arg(user.1.to_string())
        .args(["env", "-i", "PATH=/usr/bin:/bin"])
        .arg(format!("HOME={}", workdir.display()))
        .arg(format!("TMPDIR={}", workdir.display()))
        .arg(runsbx_bin())
        .arg("--root")
        .arg(user_state_root(user, workdir))
        .args(args)
        .current_dir(workdir);
    cmd
}

/// Waits (up to 10 s) for a process in `dir`'s cgroup.procs and returns
/// the 0:: line of its /proc/<pid>/cgroup, read from the host. The first
/// process may be libcontainer's short-lived intermediate, gone by the time
/// its /proc entry is read: then the next one, or the next poll, counts.
fn v2_cgroup_of_a_process_in(dir: &Path) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        if let Some(line) = procs.lines().find_map(|pid| {
            let t = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
            t.lines()
                .find_map(|l| l.strip_prefix("0::"))
                .map(str::to_string)
        }) {
            return line;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "nothing appeared in {}",
            dir.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn root_delegated_cgroup_v2_subtree_holds_the_container_and_is_cleaned_up() {
    require_root();
    let user = ci_user();
    let Some(deleg) = Delegated::make(user) else {
        panic!(
            "rootless: this test needs a cgroup v2 hierarchy (/sys/fs/cgroup or \
             /sys/fs/cgroup/unified) and none is mounted on this host"
        );
    };
    let env = Env::new();
    let mut p = fs::metadata(env.tmp.path()).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
    fs::set_permissions(env.tmp.path(), p).unwrap();
    let wd = env.tmp.path().join("work");
    fs::create_dir(&wd).unwrap();
    nix::unistd::chown(&wd, Some(user.0.into()), Some(user.1.into())).unwrap();

    // sandbox: the workload runs in <delegated>/runsbx-<id>, which is gone
    // after the run.
    let id = unique_id("dg");
    let child = deleg.dir.join(format!("runsbx-{id}"));
    let sleeper = [
        "/usr/bin/python3",
        "-c",
        "import time; time.sleep(1.5); print('done')",
    ];
    let mut args = vec!["sandbox", "--id", &id, "--"];
    args.extend_from_slice(&sleeper);
    let running = as_user_in(Some(&deleg), user, &args, &wd)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert_eq!(
        v2_cgroup_of_a_process_in(&child),
        format!("{}/runsbx-{id}", deleg.path)
    );
    let out = running.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "done\n");
    assert!(deleg.children().is_empty(), "{:?}", deleg.children());

    // run -d in the delegated cgroup; ps, kill --all and delete from a
    // fresh runsbx in another cgroup (the root one) see the same cgroup.
    let bundles = env.tmp.path().join("bundles");
    fs::create_dir(&bundles).unwrap();
    nix::unistd::chown(&bundles, Some(user.0.into()), Some(user.1.into())).unwrap();
    let bundle = bundles.join("gen");
    let out = as_user_in(
        Some(&deleg),
        user,
        &gen_python(&wd, &bundle, "import time; time.sleep(60)"),
        &wd,
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let id = unique_id("dg");
    let child = deleg.dir.join(format!("runsbx-{id}"));
    let b = bundle.to_str().unwrap();
    // Not piped: the detached workload would hold the pipes open.
    let err = env.tmp.path().join("run-d.err");
    let run_d = |cgroup: &Delegated, id: &str| {
        let status = as_user_in(Some(cgroup), user, &["run", "-d", "--bundle", b, id], &wd)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(fs::File::create(&err).unwrap())
            .status()
            .unwrap();
        assert!(status.success(), "{}", fs::read_to_string(&err).unwrap());
    };
    run_d(&deleg, &id);
    assert_eq!(
        v2_cgroup_of_a_process_in(&child),
        format!("{}/runsbx-{id}", deleg.path)
    );
    // `run -d` returned after the exec: init is the one process left.
    let pid = fs::read_to_string(child.join("cgroup.procs")).unwrap();
    let pid = pid.lines().next().unwrap().to_string();
    // exec from the delegated cgroup: the new process joins the
    // container's cgroup (from elsewhere it could not: see rootless.rs).
    let config: serde_json::Value =
        serde_json::from_slice(&fs::read(bundle.join("config.json")).unwrap()).unwrap();
    let python = config["process"]["args"][0].as_str().unwrap();
    let exec = as_user_in(
        Some(&deleg),
        user,
        &["exec", &id, python, "-c", "import time; time.sleep(2)"],
        &wd,
    )
    .spawn()
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while fs::read_to_string(child.join("cgroup.procs"))
        .unwrap()
        .lines()
        .count()
        < 2
    {
        assert!(
            std::time::Instant::now() < deadline,
            "exec'd process not in the cgroup"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(exec.wait_with_output().unwrap().status.success());
    let outside = |args: &[&str]| as_user_in(None, user, args, &wd).output().unwrap();
    let out = outside(&["ps", "--format", "json", &id]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out).trim(), format!("[{pid}]"));
    let out = outside(&["kill", "--all", &id, "KILL"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let out = outside(&["delete", "--force", &id]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!child.exists(), "{} left behind", child.display());
    assert!(!pid_alive(pid.parse().unwrap()));

    // The delegated cgroup removed under a stopped container (the
    // caller's session ended): delete still clears the state.
    let gone = Delegated::make(user).unwrap_or_else(|| unreachable!());
    let id = unique_id("dg");
    run_d(&gone, &id);
    let out = outside(&["kill", "--all", &id, "KILL"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    drop(gone);
    let out = outside(&["delete", "--force", &id]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!user_state_root(user, &wd).join(&id).exists());

    // A memory limit: this host's delegated cgroup offers no memory
    // controller; one clear line names it, and nothing is left.
    let out = as_user_in(
        Some(&deleg),
        user,
        &["sandbox", "--memory", "100M", "--", "/bin/true"],
        &wd,
    )
    .output()
    .unwrap();
    assert_one_line_error(&out, "does not offer the memory controller");
    assert!(
        stderr_of(&out).contains(&format!("the delegated cgroup {}", deleg.path)),
        "{}",
        stderr_of(&out)
    );
    assert!(deleg.children().is_empty(), "{:?}", deleg.children());
}
