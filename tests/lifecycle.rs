//! The runc command line, driven end to end: create, start, state, kill,
//! delete, run, exec, pause, resume, list, ps.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

#[test]
fn create_start_kill_delete() {
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "1000"]);
    let id = unique_id("life");
    let pid_file = env.tmp.path().join("pid");
    env.ok(&[
        "create",
        "--bundle",
        b.path(),
        "--pid-file",
        pid_file.to_str().unwrap(),
        &id,
    ]);

    let s = env.state(&id);
    assert_eq!(s["status"], "created", "{s}");
    let pid = s["pid"].as_i64().unwrap() as i32;
    assert!(pid > 0);
    let file_pid: i32 = fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(file_pid, pid, "pid file and state disagree");
    assert_eq!(s["id"], id.as_str());
    assert_eq!(
        Path::new(s["bundle"].as_str().unwrap()),
        fs::canonicalize(&b.dir).unwrap()
    );

    env.ok(&["start", &id]);
    let s = env.state(&id);
    assert_eq!(s["status"], "running", "{s}");
    // No wrapper: the reported PID is the workload itself.
    let exe = fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    assert!(
        exe.ends_with("bin/busybox"),
        "pid {pid} runs {exe:?}, not the workload"
    );

    env.ok(&["kill", &id, "KILL"]);
    env.wait_status(&id, "stopped");
    env.ok(&["delete", &id]);
    assert!(
        env.state_entries().is_empty(),
        "state left: {:?}",
        env.state_entries()
    );
    assert!(
        cgroups_named(&id).is_empty(),
        "cgroups left: {:?}",
        cgroups_named(&id)
    );
    assert!(!pid_alive(pid));
}

#[test]
fn run_forwards_exit_codes() {
    let env = Env::new();
    for (args, want) in [(vec!["true"], 0), (vec!["sh", "-c", "exit 7"], 7)] {
        let b = env.bundle(&unique_id("exit"), &args);
        let id = unique_id("run");
        let out = env.run(&["run", "--bundle", b.path(), &id]);
        assert_eq!(
            out.status.code(),
            Some(want),
            "{args:?}: {}",
            stderr_of(&out)
        );
        assert!(!env.root.join(&id).exists(), "run left state for {id}");
    }
}

#[test]
fn run_reports_death_by_signal_as_128_plus_n() {
    let env = Env::new();
    // PID 1 of a pid namespace cannot SIGKILL itself; kill it from outside.
    let b = env.bundle("b", &["sleep", "1000"]);
    let id = unique_id("sig");
    let mut child = env.spawn_run(b.path(), &id);
    env.ok(&["kill", &id, "KILL"]);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(137));
    assert!(!env.root.join(&id).exists());
}

#[test]
fn run_forwards_signals() {
    let env = Env::new();
    let b = env.bundle(
        "b",
        &[
            "sh",
            "-c",
            "trap 'exit 9' USR1; : > /ready; while true; do sleep 0.05; done",
        ],
    );
    let id = unique_id("fwd");
    let mut child = env.spawn_run(b.path(), &id);
    b.wait_ready();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGUSR1,
    )
    .unwrap();
    // A lost signal must fail the test, not hang it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = env.run(&["delete", "--force", &id]);
            let _ = child.kill();
            panic!("SIGUSR1 was not forwarded: run still going after 10 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(9));
}

#[test]
fn run_passes_stdio_through() {
    let env = Env::new();
    let b = env.bundle(
        "b",
        &["sh", "-c", "read line; echo got:$line; echo err >&2"],
    );
    let id = unique_id("stdio");
    let mut child = env
        .cmd()
        .args(["run", "--bundle", b.path(), &id])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "got:hello\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
}

#[test]
fn run_keep_and_detach() {
    let env = Env::new();
    let b = env.bundle("b", &["sh", "-c", "exit 3"]);
    let id = unique_id("keep");
    let out = env.run(&["run", "--keep", "--bundle", b.path(), &id]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(env.state(&id)["status"], "stopped");
    env.ok(&["delete", &id]);

    let b = env.bundle("d", &["sleep", "1000"]);
    let id = unique_id("detach");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    assert_eq!(env.state(&id)["status"], "running");
    env.ok(&["delete", "--force", &id]);
    assert!(env.state_entries().is_empty());
}

/// A foreground `run` of a bundle that asks for no resource and no cgroup
/// path creates no cgroup (the cgroup would hold no rule): ps and kill --all
/// find the processes through init's pid namespace; pause says there is no
/// cgroup. Asking for a resource gives the container its cgroup again.
#[test]
fn foreground_run_without_resources_needs_no_cgroup() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let nodev = env.nodev_dir();
    let nodev = nodev.path();
    // (resources, rootfs on nodev): a cgroup unless neither is there.
    for (resources, on_nodev) in [(false, true), (true, true), (false, false)] {
        let dir = match on_nodev {
            true => nodev.join(format!("b{resources}")),
            false => env.tmp.path().join(format!("b{resources}")),
        };
        let mut b = Bundle::busybox(&dir, &["sh", "-c", "sleep 1000 & exec sleep 1001"]);
        if resources {
            b.config["linux"]["resources"] = serde_json::json!({ "pids": { "limit": 64 } });
            b.save();
        }
        // From here on: whether a cgroup is expected.
        let resources = resources || !on_nodev;
        let id = unique_id("nocg");
        let mut run = env
            .cmd()
            .args(["run", "--bundle", b.path(), &id])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut pids = Vec::new();
        for _ in 0..500 {
            let ps = env.run(&["ps", "--format", "json", &id]);
            if ps.status.success() {
                pids = serde_json::from_slice::<Vec<i32>>(&ps.stdout).unwrap();
                if pids.len() == 2 {
                    break;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(pids.len(), 2, "resources={resources}: ps gave {pids:?}");
        let has_cgroup = || !cgroups_named(&id).is_empty();
        assert_eq!(has_cgroup(), resources, "resources={resources}");
        // An exec joins the container's cgroup, or none: it makes no cgroup.
        assert_eq!(env.ok(&["exec", &id, "echo", "in"]), "in\n");
        assert_eq!(has_cgroup(), resources, "resources={resources}: after exec");
        let init = env.state(&id)["pid"].as_i64().unwrap() as i32;
        let child = *pids.iter().find(|p| **p != init).unwrap();
        if !resources {
            assert_one_line_error(&env.run(&["pause", &id]), "has no cgroup");
        }
        // Init (pid 1 of its namespace) ignores SIGTERM; the child dies.
        env.ok(&["kill", "--all", &id, "TERM"]);
        assert!(
            wait_dead(child, std::time::Duration::from_secs(10)),
            "resources={resources}: kill --all missed {child}"
        );
        assert!(pid_alive(init), "resources={resources}");
        env.ok(&["kill", &id, "KILL"]);
        assert_eq!(
            run.wait().unwrap().code(),
            Some(137),
            "resources={resources}"
        );
        assert!(
            cgroups_named(&id).is_empty(),
            "resources={resources}: cgroup left"
        );
    }
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
}

/// A foreground run deletes its own container when the workload ends, not
/// whatever holds the id by then: after a `delete --force` from elsewhere
/// the id may name a new container. The run is stopped while that happens,
/// so the new one exists before the run reaps its init.
#[test]
fn foreground_run_leaves_a_new_container_of_its_id_alone() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let b = env.bundle("b", &["sleep", "1000"]);
    let id = unique_id("own");
    let mut run = env.spawn_run(b.path(), &id);
    let runner = Pid::from_raw(run.id() as i32);
    kill(runner, Signal::SIGSTOP).unwrap();
    env.ok(&["delete", "--force", &id]);
    env.ok(&["create", "--bundle", b.path(), &id]);
    kill(runner, Signal::SIGCONT).unwrap();
    assert_eq!(run.wait().unwrap().code(), Some(137));
    assert_eq!(
        env.state(&id)["status"],
        "created",
        "the run removed the container that took its id"
    );
    env.ok(&["delete", "--force", &id]);
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
}

#[test]
fn exec_into_running_container() {
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "1000"]);
    let id = unique_id("exec");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    let out = env.ok(&[
        "exec",
        &id,
        "sh",
        "-c",
        "echo inside; cat /proc/1/cmdline | head -c 5",
    ]);
    assert_eq!(out, "inside\nsleep");
    let code = env.run(&["exec", &id, "sh", "-c", "exit 5"]).status.code();
    assert_eq!(code, Some(5));

    // --detach with a pid file, as podman and containerd call it.
    let pid_file = env.tmp.path().join("exec.pid");
    env.ok(&[
        "exec",
        "--detach",
        "--pid-file",
        pid_file.to_str().unwrap(),
        &id,
        "sleep",
        "500",
    ]);
    let pid: i32 = fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(pid_alive(pid));
    let ps: Vec<i32> = serde_json::from_str(&env.ok(&["ps", "--format", "json", &id])).unwrap();
    assert!(ps.contains(&pid), "ps {ps:?} lacks exec pid {pid}");
    assert!(ps.contains(&(env.state(&id)["pid"].as_i64().unwrap() as i32)));

    // --process with a runtime-spec process JSON.
    let proc_file = env.tmp.path().join("process.json");
    fs::write(
        &proc_file,
        r#"{"terminal":false,"user":{"uid":0,"gid":0},"args":["sh","-c","echo $FOO"],"env":["PATH=/bin","FOO=bar"],"cwd":"/"}"#,
    )
    .unwrap();
    assert_eq!(
        env.ok(&["exec", "--process", proc_file.to_str().unwrap(), &id]),
        "bar\n"
    );
    assert_eq!(
        env.ok(&[
            "exec",
            "-e",
            "X=1",
            "--cwd",
            "/tmp",
            &id,
            "sh",
            "-c",
            "echo $X $(pwd)"
        ]),
        "1 /tmp\n"
    );

    env.ok(&["delete", "--force", &id]);
    assert!(!pid_alive(pid), "exec'd process survived delete --force");
}

#[test]
fn pause_and_resume() {
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "1000"]);
    let id = unique_id("pause");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    env.ok(&["pause", &id]);
    assert_eq!(env.state(&id)["status"], "paused");
    env.ok(&["resume", &id]);
    assert_eq!(env.state(&id)["status"], "running");
    env.ok(&["delete", "--force", &id]);
}

#[test]
fn list_formats() {
    let env = Env::new();
    assert_eq!(env.ok(&["list", "-q"]), "");
    let b = env.bundle("b", &["sleep", "1000"]);
    let id = unique_id("list");
    env.ok(&["create", "--bundle", b.path(), &id]);
    assert_eq!(env.ok(&["list", "-q"]), format!("{id}\n"));
    let table = env.ok(&["list"]);
    let mut lines = table.lines();
    assert!(lines.next().unwrap().starts_with("ID"), "{table}");
    let row = lines.next().unwrap();
    assert!(row.starts_with(&id) && row.contains("created"), "{table}");
    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["list", "--format", "json"])).unwrap();
    assert_eq!(json[0]["id"], id.as_str());
    assert_eq!(json[0]["status"], "created");
    env.ok(&["delete", &id]);
    assert_eq!(env.ok(&["list", "--format", "json"]).trim(), "[]");
}

/// Poststop hooks run at delete, once the container's processes and cgroup
/// are gone, and are told the status `stopped`: after a plain delete, after
/// `delete --force` of a running container, and at the end of a foreground
/// run. A hook that fails is a warning; the next hook and the delete go on.
#[test]
fn poststop_hooks_run_at_delete() {
    let env = Env::new();
    let mut b = env.bundle("b", &["sleep", "1000"]);
    let hook = |b: &mut Bundle, id: &str| -> std::path::PathBuf {
        let out = env.tmp.path().join(format!("poststop-{id}.json"));
        // The second hook keeps the state it is given, and lists any
        // cgroup of the container still there.
        let record = "cat > \"$1\"; ls -d /sys/fs/cgroup/*/*\"$2\"* /sys/fs/cgroup/*/*/*\"$2\"* \
                      > \"$1.cgroups\" 2>/dev/null; true";
        b.config["hooks"] = serde_json::json!({ "poststop": [
            { "path": "/bin/sh", "args": ["sh", "-c", "exit 3"] },
            { "path": "/bin/sh", "args": ["sh", "-c", record, "sh", out.to_str().unwrap(), id] },
        ] });
        b.save();
        out
    };
    let told = |out: &Path, id: &str, stderr: &str, case: &str| {
        let text = fs::read_to_string(out)
            .unwrap_or_else(|e| panic!("{case}: the second poststop hook did not run ({e})"));
        let state: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(state["id"], id, "{case}: {state}");
        assert_eq!(state["status"], "stopped", "{case}: {state}");
        let seen = fs::read_to_string(out.with_extension("json.cgroups")).unwrap();
        assert!(
            seen.is_empty(),
            "{case}: cgroups still there when the hook ran: {seen}"
        );
        assert!(
            stderr.contains("error running poststop hook #0: "),
            "{case}: no warning for the failing hook: {stderr}"
        );
        let cgroups = cgroups_named(id);
        assert!(cgroups.is_empty(), "{case}: cgroups left: {cgroups:?}");
        assert!(env.state_entries().is_empty(), "{case}: state left");
    };
    let ok = |args: &[&str], case: &str| -> String {
        let out = env.run(args);
        assert!(out.status.success(), "{case}: {}", stderr_of(&out));
        stderr_of(&out)
    };

    let id = unique_id("post");
    let out = hook(&mut b, &id);
    env.ok(&["create", "--bundle", b.path(), &id]);
    env.ok(&["start", &id]);
    env.ok(&["kill", &id, "KILL"]);
    env.wait_status(&id, "stopped");
    let stderr = ok(&["delete", &id], "delete");
    told(&out, &id, &stderr, "delete");

    let id = unique_id("postf");
    let out = hook(&mut b, &id);
    env.ok(&["create", "--bundle", b.path(), &id]);
    env.ok(&["start", &id]);
    let stderr = ok(&["delete", "--force", &id], "delete --force");
    told(&out, &id, &stderr, "delete --force");

    let id = unique_id("postr");
    let out = hook(&mut b, &id);
    b.config["process"]["args"] = serde_json::json!(["true"]);
    b.save();
    let stderr = ok(&["run", "--bundle", b.path(), &id], "run");
    told(&out, &id, &stderr, "foreground run");
}

#[test]
fn delete_force_leaves_nothing() {
    let env = Env::new();
    let b = env.bundle("b", &["sh", "-c", "sleep 1000 & sleep 1000"]);
    let id = unique_id("force");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    let pid = env.state(&id)["pid"].as_i64().unwrap() as i32;
    let pids: Vec<i32> = serde_json::from_str(&env.ok(&["ps", "-f", "json", &id])).unwrap();
    assert!(
        !cgroups_named(&id).is_empty(),
        "the container should have a cgroup"
    );
    let out = env.run(&["delete", &id]);
    assert!(
        !out.status.success(),
        "delete of a running container needs --force"
    );
    env.ok(&["delete", "--force", &id]);
    assert!(env.state_entries().is_empty());
    assert!(
        cgroups_named(&id).is_empty(),
        "cgroups left: {:?}",
        cgroups_named(&id)
    );
    std::thread::sleep(std::time::Duration::from_millis(50));
    for p in pids.iter().chain([&pid]) {
        assert!(!pid_alive(*p), "process {p} survived");
    }
    // The shim deletes twice; the second --force is a no-op.
    env.ok(&["delete", "--force", &id]);
}

/// `kill --all` of a stopped container whose cgroup is gone (systemd
/// removes an empty scope; an admin may rmdir it) has nothing to signal and
/// exits 0, as runc; `delete` still clears the state.
#[test]
fn kill_all_of_a_stopped_container_without_its_cgroup() {
    let env = Env::new();
    let mut b = env.bundle("b", &["true"]);
    b.config["linux"]["resources"] = serde_json::json!({ "pids": { "limit": 64 } });
    b.save();
    let id = unique_id("gone");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    env.wait_status(&id, "stopped");
    let dirs = cgroups_named(&id);
    assert!(!dirs.is_empty(), "no cgroup was made");
    for d in dirs {
        fs::remove_dir(&d).unwrap_or_else(|e| panic!("rmdir {}: {e}", d.display()));
    }
    env.ok(&["kill", "--all", &id, "KILL"]);
    env.ok(&["delete", &id]);
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
    assert!(cgroups_named(&id).is_empty(), "{:?}", cgroups_named(&id));
}

/// Without a pid namespace of its own, init's death ends none of the
/// container's other processes: `kill ID KILL` signals all of its cgroup
/// (runc 1.2), so nothing of the container runs on after an engine's stop;
/// also once init is gone and the container says `stopped` (runc's `kill
/// KILL [host pidns + init gone]`).
#[test]
fn kill_kill_without_a_pid_namespace_stops_every_process() {
    let env = Env::new();
    let mut b = env.bundle(
        "b",
        &["sh", "-c", "sleep 1000 & echo $! > /child; exec sleep 1001"],
    );
    b.config["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .retain(|n| n["type"] != "pid");
    b.save();
    for init_gone in [false, true] {
        let id = unique_id("kpid");
        let child = b.dir.join("rootfs/child");
        let _ = fs::remove_file(&child);
        env.ok(&["run", "-d", "--bundle", b.path(), &id]);
        let deadline = Instant::now() + Duration::from_secs(10);
        let pid: i32 = loop {
            match fs::read_to_string(&child)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                Some(p) => break p,
                None => assert!(Instant::now() < deadline, "the workload never wrote /child"),
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        if init_gone {
            let init = env.state(&id)["pid"].as_i64().unwrap() as i32;
            let init = nix::unistd::Pid::from_raw(init);
            nix::sys::signal::kill(init, nix::sys::signal::SIGKILL).unwrap();
            env.wait_status(&id, "stopped");
            assert!(pid_alive(pid), "init's death ended its child");
        }
        env.ok(&["kill", &id, "KILL"]);
        env.wait_status(&id, "stopped");
        let gone = wait_dead(pid, Duration::from_secs(5));
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGKILL);
        env.ok(&["delete", &id]);
        assert!(
            gone,
            "the workload's child (host pid {pid}) outlived kill KILL (init gone first: {init_gone})"
        );
    }
}

/// A created container's init, PID 1 of its pid namespace and waiting for
/// `start`, ends on `kill ID TERM` as runc's does (the kernel drops a
/// signal PID 1 has no handler for); the workload, once started, gets the
/// default dispositions back (its own trap runs).
#[test]
fn a_created_container_ends_on_kill_term() {
    let env = Env::new();
    let b = env.bundle(
        "b",
        &[
            "sh",
            "-c",
            "trap 'echo trapped; exit 3' TERM; : > /ready; while :; do sleep 0.05; done",
        ],
    );
    let id = unique_id("cterm");
    env.ok(&["create", "--bundle", b.path(), &id]);
    env.ok(&["kill", &id, "TERM"]);
    env.wait_status(&id, "stopped");
    env.ok(&["delete", &id]);
    assert_clean(&env, &id);
    // Started, TERM reaches the workload's own trap.
    let id = unique_id("cterm-run");
    let child = env
        .cmd()
        .args(["run", "--bundle", b.path(), &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    b.wait_ready();
    env.ok(&["kill", &id, "TERM"]);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "trapped\n");
}

/// `exec` into a created container, as runc allows: the process runs in
/// the namespaces init has made, the container stays `created` (its state
/// untouched) and starts afterwards; the state dir holds nothing more.
#[test]
fn exec_into_a_created_container() {
    let env = Env::new();
    let b = env.bundle("b", &["sh", "-c", "echo started > /started; sleep 1000"]);
    let id = unique_id("cexec");
    env.ok(&["create", "--bundle", b.path(), &id]);
    let before: Vec<String> = fs::read_dir(env.root.join(&id))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let out = env.ok(&["exec", &id, "sh", "-c", "hostname; echo $$"]);
    let lines: Vec<&str> = out.lines().collect();
    // The container's hostname; a pid of its namespace that is not init's.
    assert_eq!(lines[0], "test", "{out}");
    assert!(lines[1].parse::<u32>().is_ok_and(|p| p > 1), "{out}");
    assert_eq!(env.state(&id)["status"], "created");
    let mut after: Vec<String> = fs::read_dir(env.root.join(&id))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut before = before;
    before.sort();
    after.sort();
    assert_eq!(before, after);
    assert!(!b.dir.join("rootfs/started").exists());
    env.ok(&["start", &id]);
    env.wait_status(&id, "running");
    env.ok(&["delete", "--force", &id]);
}

/// The workload starts with SIGPIPE at its default, as under runc, though
/// runsbx itself (a Rust program) ignores it: an ignored signal stays
/// ignored across exec, and a pipeline's writer would see EPIPE instead of
/// ending. A signal its caller ignores (`nohup`: SIGHUP) stays ignored.
#[test]
fn the_workload_starts_with_sigpipe_at_its_default() {
    let env = Env::new();
    let b = env.bundle("b", &["grep", "SigIgn", "/proc/self/status"]);
    let ignored = |out: &str| {
        let hex = out
            .split_whitespace()
            .nth(1)
            .unwrap_or_else(|| panic!("{out}"));
        u64::from_str_radix(hex, 16).unwrap()
    };
    let out = env.ok(&["run", "--bundle", b.path(), &unique_id("sigpipe")]);
    assert_eq!(ignored(&out) & (1 << (libc::SIGPIPE - 1)), 0, "{out}");
    let mut cmd = Command::new("nohup");
    cmd.arg(runsbx_bin())
        .args([
            "--root",
            env.root.to_str().unwrap(),
            "run",
            "--bundle",
            b.path(),
        ])
        .arg(unique_id("sighup"));
    let out = env.run_cmd(&mut cmd);
    let text = stdout_of(&out);
    assert_ne!(ignored(&text) & (1 << (libc::SIGHUP - 1)), 0, "{text}");
}

#[test]
fn kill_signals_and_state() {
    let env = Env::new();
    // A shell that traps TERM proves the signal arrives and that `kill`
    // does not mark a container stopped while it still runs.
    let b = env.bundle(
        "b",
        &[
            "sh",
            "-c",
            "trap 'exit 42' TERM; : > /ready; while true; do sleep 0.05; done",
        ],
    );
    let id = unique_id("kill");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    b.wait_ready();
    env.ok(&["kill", &id, "WINCH"]);
    assert_eq!(env.state(&id)["status"], "running");
    // Signal 0, as runc: succeeds while init can be signalled, sends nothing.
    env.ok(&["kill", &id, "0"]);
    assert_eq!(env.state(&id)["status"], "running");
    env.ok(&["kill", &id]); // SIGTERM by default
    env.wait_status(&id, "stopped");
    assert_one_line_error(&env.run(&["kill", &id, "0"]), "stopped");
    // With --all, as runc: nothing left to signal is no error.
    env.ok(&["kill", "--all", &id, "0"]);
    env.ok(&["delete", &id]);
}

#[test]
fn version_and_features() {
    let env = Env::new();
    let v = env.ok(&["--version"]);
    assert!(v.starts_with("runsbx version "), "{v}");
    assert!(v.contains("\nspec: 1."), "{v}");
    let f: serde_json::Value = serde_json::from_str(&env.ok(&["features"])).unwrap();
    assert_eq!(f["ociVersionMin"], "1.0.0");
    assert!(f["linux"]["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n == "user"));
}

/// `spec` writes runc's defaults (tests/differential.rs compares the bytes
/// with runc's): what a bats test or a sed script expects of it is there,
/// and the bundle runs as it is once the command no longer needs a terminal.
#[test]
fn spec_writes_runcs_default_and_it_runs() {
    let namespaces = |v: &serde_json::Value| -> Vec<String> {
        v["linux"]["namespaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["type"].as_str().unwrap().to_string())
            .collect()
    };
    let env = Env::new();
    let b = env.bundle("spec", &["true"]);
    fs::remove_file(b.dir.join("config.json")).unwrap();
    env.ok(&["spec", "--bundle", b.path()]);
    let text = fs::read_to_string(b.dir.join("config.json")).unwrap();
    assert!(
        text.starts_with("{\n\t\"ociVersion\": \"1.0.2-dev\","),
        "{text}"
    );
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["process"]["terminal"], true);
    assert_eq!(v["process"]["args"], serde_json::json!(["sh"]));
    assert_eq!(v["hostname"], "runc");
    assert_eq!(
        v["root"],
        serde_json::json!({ "path": "rootfs", "readonly": true })
    );
    assert_eq!(namespaces(&v), ["pid", "network", "ipc", "uts", "mount"]);
    let out = env.run(&["spec", "--bundle", b.path()]);
    assert_one_line_error(&out, "exists");

    v["process"]["terminal"] = false.into();
    v["process"]["args"] = serde_json::json!([
        "sh",
        "-c",
        "hostname; grep -c ' /sys/fs/cgroup' /proc/mounts"
    ]);
    fs::write(b.dir.join("config.json"), v.to_string()).unwrap();
    let out = env.ok(&["run", "--bundle", b.path(), &unique_id("spec")]);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("runc"), "{out}");
    assert_ne!(lines.next(), Some("0"), "no cgroup mount: {out}");

    let rl = env.tmp.path().join("rootless");
    fs::create_dir_all(&rl).unwrap();
    env.ok(&["spec", "--rootless", "--bundle", rl.to_str().unwrap()]);
    let v: serde_json::Value =
        serde_json::from_slice(&fs::read(rl.join("config.json")).unwrap()).unwrap();
    assert_eq!(namespaces(&v), ["pid", "ipc", "uts", "mount", "user"]);
    assert_eq!(
        v["linux"]["uidMappings"],
        serde_json::json!([{ "containerID": 0, "hostID": 0, "size": 1 }])
    );
    assert!(v["linux"].get("resources").is_none(), "{v}");
    assert_eq!(v["hostname"], "runc");
}

#[test]
fn hello_bundle_runs_as_is() {
    let env = Env::new();
    let hello = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles/hello");
    let id = unique_id("hello");
    let out = env.ok(&["run", "--bundle", hello.to_str().unwrap(), &id]);
    assert!(
        out.starts_with("Hello from runsbx: PID 1 on hello"),
        "{out}"
    );
}

/// CVE-2019-5736: a container that can see runsbx's init (here, one sharing
/// the host's pid namespace) must find a sealed view behind /proc/<pid>/exe
/// (the binary through a read-only overlayfs, or a sealed memfd copy when
/// overlayfs is refused), never the runsbx binary on disk, and nothing it
/// can write once init is gone.
#[test]
fn init_runs_from_a_sealed_copy_when_its_pid_namespace_is_shared() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("b", &["sleep", "100"]);
    b.config["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .retain(|n| n["type"] != "pid");
    b.save();
    // A copy of runsbx where overlayfs cannot take its directory (':'
    // separates layers): the memfd fallback.
    let odd = env.tmp.path().join("a:b");
    fs::create_dir(&odd).unwrap();
    fs::copy(runsbx_bin(), odd.join("runsbx")).unwrap();
    for (bin, want) in [
        (runsbx_bin(), Sealed::Overlay),
        (odd.join("runsbx"), Sealed::Memfd),
    ] {
        let id = unique_id("seal");
        let out = env.run_cmd(env.cmd_of(&bin).args(["create", "--bundle", b.path(), &id]));
        assert!(out.status.success(), "{}", stderr_of(&out));
        let pid = env.state(&id)["pid"].as_i64().unwrap();
        let (kind, held) = assert_sealed_exe(pid, "init");
        assert_eq!(kind, want, "{}", bin.display());
        env.ok(&["delete", "--force", &id]);
        assert_unwritable(&held, "init");
    }

    // A created container in its own pid namespace too: until `start`,
    // another container may join that namespace and find init there.
    let b = env.bundle("own-ns", &["sleep", "100"]);
    let id = unique_id("seal2");
    env.ok(&["create", "--bundle", b.path(), &id]);
    let pid = env.state(&id)["pid"].as_i64().unwrap();
    let (_, held) = assert_sealed_exe(pid, "init");
    env.ok(&["delete", "--force", &id]);
    assert_unwritable(&held, "init");
}

/// A runsbx installed on a read-only overlayfs that has a writable upper
/// layer (a container started with `--read-only`) still re-executes from
/// its own private view: that mount could be made writable again, and a
/// held /proc/<pid>/exe would then write the binary.
#[test]
fn a_read_only_overlay_install_is_not_taken_for_sealed() {
    use std::os::unix::fs::MetadataExt;
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let b = env.bundle("b", &["sleep", "100"]);
    let t = env.tmp.path();
    for d in ["lower", "upper", "work", "merged"] {
        fs::create_dir(t.join(d)).unwrap();
    }
    fs::copy(runsbx_bin(), t.join("lower/runsbx")).unwrap();
    let id = unique_id("roov");
    let script = format!(
        "mount -t overlay overlay -o ro,lowerdir={t}/lower,upperdir={t}/upper,workdir={t}/work \
         {t}/merged && stat -c %d {t}/merged/runsbx > {t}/dev && \
         exec {t}/merged/runsbx --root {root} create --bundle {bundle} {id}",
        t = t.display(),
        root = env.root.display(),
        bundle = b.path(),
    );
    let out = env.run_cmd(Command::new("unshare").args(["-m", "sh", "-c", &script]));
    assert!(out.status.success(), "{}", stderr_of(&out));
    let pid = env.state(&id)["pid"].as_i64().unwrap();
    let (kind, held) = assert_sealed_exe(pid, "init");
    assert_eq!(kind, Sealed::Overlay);
    let installed: u64 = fs::read_to_string(t.join("dev"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(
        held.metadata().unwrap().dev(),
        installed,
        "init runs from the read-only overlayfs it was installed on"
    );
    env.ok(&["delete", "--force", &id]);
    assert_unwritable(&held, "init");
}

/// `--console-socket`, as `podman run -t` and `ctr run -t` use it: runsbx
/// sends the pty master over the socket, and the workload's stdio is the
/// pty's slave.
#[test]
fn console_socket_receives_the_pty_master() {
    use std::io::Read;

    let env = Env::new();
    let mut b = env.bundle(
        "b",
        &["sh", "-c", "test -t 0 && test -t 1 && echo on-a-tty"],
    );
    with_terminal(&mut b);
    b.save();
    let sock = env.tmp.path().join("console.sock");
    let receiver = receive_fd(&sock);
    let id = unique_id("tty");
    env.ok(&[
        "create",
        "--console-socket",
        sock.to_str().unwrap(),
        "--bundle",
        b.path(),
        &id,
    ]);
    let master = receiver.join().unwrap();
    env.ok(&["start", &id]);
    let mut out = Vec::new();
    let mut f = fs::File::from(master);
    let mut buf = [0u8; 1024];
    // Read until the workload closes the pty (EIO on Linux).
    while let Ok(n) = f.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        if out.windows(8).any(|w| w == b"on-a-tty") {
            break;
        }
    }
    assert!(
        String::from_utf8_lossy(&out).contains("on-a-tty"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    env.wait_status(&id, "stopped");
    env.ok(&["delete", &id]);
}

/// `process.consoleSize` is the pty's size before the workload runs, for
/// the container's process and for one `exec -t` starts (libcontainer 0.7
/// applies it to neither; runc's suite: `exec [tty consolesize]`).
#[test]
fn the_pty_has_the_console_size_of_the_spec() {
    let env = Env::new();
    let mut b = env.bundle("b", &["sh", "-c", "stty size > /size; sleep 100"]);
    with_terminal(&mut b);
    b.config["process"]["consoleSize"] = serde_json::json!({"height": 10, "width": 110});
    b.save();
    let wait_for = |name: &str| {
        let file = b.dir.join("rootfs").join(name);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match fs::read_to_string(&file) {
                Ok(text) if !text.is_empty() => return text,
                _ => assert!(Instant::now() < deadline, "{name} never written"),
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let sock = env.tmp.path().join("console.sock");
    let receiver = receive_fd(&sock);
    let id = unique_id("size");
    let socket = sock.to_str().unwrap();
    env.ok(&[
        "create",
        "--console-socket",
        socket,
        "--bundle",
        b.path(),
        &id,
    ]);
    let _master = receiver.join().unwrap();
    env.ok(&["start", &id]);
    assert_eq!(wait_for("size"), "10 110\n");

    let process = env.tmp.path().join("process.json");
    let spec = serde_json::json!({
        "consoleSize": {"height": 12, "width": 77},
        "args": ["sh", "-c", "stty size > /exec-size"], "cwd": "/",
        "user": {"uid": 0, "gid": 0}, "env": ["PATH=/bin"],
    });
    fs::write(&process, spec.to_string()).unwrap();
    fs::remove_file(&sock).unwrap();
    let receiver = receive_fd(&sock);
    let p = process.to_str().unwrap();
    env.ok(&["exec", "-t", "-d", "--console-socket", socket, "-p", p, &id]);
    let _exec_master = receiver.join().unwrap();
    // `-t` gave the file, which says nothing of it, a terminal (as runc).
    assert_eq!(wait_for("exec-size"), "12 77\n");
    let mut spec = spec;
    spec["terminal"] = false.into();
    fs::write(&process, spec.to_string()).unwrap();
    let out = env.run(&["exec", "-t", "-d", "--console-socket", socket, "-p", p, &id]);
    assert_one_line_error(&out, "--tty: the process file's \"terminal\" is false");
    env.ok(&["delete", "--force", &id]);
}

/// `exec` applies the container's own seccomp and Landlock layers, read
/// from the state dir; without that record it refuses instead of running
/// an unfiltered process.
#[test]
fn exec_refuses_without_the_containers_policy() {
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    let id = unique_id("nopolicy");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    fs::remove_file(env.root.join(&id).join("runsbx.json")).unwrap();
    let out = env.run(&["exec", &id, "true"]);
    assert_one_line_error(&out, "not running without it");
    env.ok(&["delete", "--force", &id]);
}

/// Any bundle, not only a generated one: with a user namespace whose root is
/// an unprivileged host user, binds (read-only: a directory, recursive or
/// not, and a file; one read-write) from under a 0700 directory that user
/// cannot search are made by runsbx as root before libcontainer forks; the
/// container sees the read-only ones read-only (EROFS, although the files
/// belong to its root), the host sees no mount, and the mount points that
/// were missing are created. `run` and a detached `create` + `start` alike.
#[test]
fn binds_out_of_reach_of_the_containers_root() {
    let env = Env::new();
    let private = env.tmp.path().join("private");
    fs::create_dir_all(private.join("dir/sub")).unwrap();
    fs::write(private.join("dir/sub/f"), "in-dir\n").unwrap();
    fs::write(private.join("file"), "a-file\n").unwrap();
    for p in ["dir", "dir/sub", "dir/sub/f", "file"] {
        nix::unistd::chown(&private.join(p), Some(65534.into()), Some(65534.into())).unwrap();
    }
    let script = "cat /data/dir/sub/f /etc/the-file /rec/sub/f; \
                  touch /data/dir/new 2>&1; touch /etc/the-file 2>&1; \
                  touch /rw/made && echo rw-ok; exit 0";
    let mut b = env.bundle("b", &["sh", "-c", script]);
    let ro = |src: std::path::PathBuf, dest: &str, bind: &str| {
        serde_json::json!({"destination": dest, "type": "bind", "source": src,
                           "options": [bind, "ro", "nosuid", "nodev"]})
    };
    let mounts = b.config["mounts"].as_array_mut().unwrap();
    mounts.push(ro(private.join("dir"), "/data/dir", "bind"));
    mounts.push(ro(private.join("file"), "/etc/the-file", "bind"));
    mounts.push(ro(private.join("dir"), "/rec", "rbind"));
    // Read-write too, as runc makes it (it opens the source before it
    // enters the user namespace).
    mounts.push(
        serde_json::json!({"destination": "/rw", "source": private.join("dir"),
                                   "options": ["bind"]}),
    );
    b.with_userns_as_nobody();
    b.save();
    for dir in [env.tmp.path(), b.dir.as_path()] {
        fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    fs::set_permissions(
        &private,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let want = "in-dir\na-file\nin-dir\n\
                touch: /data/dir/new: Read-only file system\n\
                touch: /etc/the-file: Read-only file system\nrw-ok\n";

    let id = unique_id("prebind");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    // runsbx created the missing mount points, owned by the container's root.
    let made = fs::metadata(b.dir.join("rootfs/etc/the-file")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&made), 65534);

    let id = unique_id("prebind-cs");
    let log = env.tmp.path().join("cs.out");
    let status = env
        .cmd()
        .args(["create", "--bundle", b.path(), &id])
        .stdout(fs::File::create(&log).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    env.ok(&["start", &id]);
    env.wait_status(&id, "stopped");
    env.ok(&["delete", &id]);
    assert_eq!(fs::read_to_string(&log).unwrap(), want);

    // Locked in the container's user namespace: even with CAP_SYS_ADMIN
    // there, its root cannot make the bind writable, unmount it (EINVAL) or
    // drop nosuid.
    let bb = "/bin/busybox";
    b.config["process"]["args"] = serde_json::json!([
        "sh",
        "-c",
        format!(
            "{bb} mount -o remount,bind,rw /data/dir 2>&1; {bb} umount /data/dir 2>&1; \
         {bb} mount -o remount,bind,ro,suid,nodev /data/dir 2>&1; exit 0"
        )
    ]);
    for set in ["bounding", "effective", "permitted"] {
        b.config["process"]["capabilities"][set] = serde_json::json!(["CAP_SYS_ADMIN"]);
    }
    b.save();
    let id = unique_id("prebind-lock");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "mount: permission denied (are you root?)\n\
         umount: can't unmount /data/dir: Invalid argument\n\
         mount: permission denied (are you root?)\n"
    );

    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(b.path()), "a bind is left on the host");
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
}

/// Idmapped binds (a mount's own uidMappings/gidMappings, or `idmap` taking
/// the container's user namespace; runc 1.2's, made by runsbx since
/// libcontainer 0.7 makes none): the container sees the owners the mapping
/// gives, writes through it (or gets ERANGE as an unmapped id), the mount's
/// propagation is the one asked, and one the runtime cannot make in order
/// is refused in one line, leaving nothing.
#[test]
fn idmapped_binds_show_the_owners_their_mapping_gives() {
    let env = Env::new();
    let src = env.tmp.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("one"), "").unwrap();
    fs::write(src.join("root"), "").unwrap();
    nix::unistd::chown(&src.join("one"), Some(1.into()), Some(1.into())).unwrap();
    let maps = serde_json::json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
    let script = "stat -c =%u=%g= /m/one /m/root; touch /m/new 2>&1; \
                  grep -o 'idmapped.*shared' /proc/self/mountinfo | head -1; exit 0";
    let mut b = env.bundle("b", &["sh", "-c", script]);
    b.config["mounts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!(
        {"destination": "/m", "source": src, "options": ["bind", "shared"],
         "uidMappings": maps, "gidMappings": maps}));
    b.save();
    // No user namespace: host root sees the mapped ids, and its own (0) has
    // no id on the mount.
    let out = env.run(&["run", "--bundle", b.path(), &unique_id("idmap")]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out),
        "=100001=100001=\n=100000=100000=\n\
         touch: /m/new: Value too large for defined data type\nidmapped shared\n"
    );

    // `idmap` without mappings, in a user namespace mapping 0 to 100000:
    // the mount shows host 0 as the container's root, which writes as host 0.
    for key in ["uidMappings", "gidMappings"] {
        b.config["linux"][key] = maps.clone();
    }
    b.config["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"type": "user"}));
    let m = b.config["mounts"]
        .as_array_mut()
        .unwrap()
        .last_mut()
        .unwrap();
    m.as_object_mut().unwrap().remove("uidMappings");
    m.as_object_mut().unwrap().remove("gidMappings");
    m["options"] = serde_json::json!(["rbind", "idmap"]);
    b.save();
    for dir in [env.tmp.path(), b.dir.as_path()] {
        fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let out = env.run(&["run", "--bundle", b.path(), &unique_id("idmap-ns")]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "=1=1=\n=0=0=\n");
    let made = fs::metadata(src.join("new")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&made), 0);

    // Under a tmpfs listed before it: libcontainer's tmpfs would hide it.
    let mounts = b.config["mounts"].as_array_mut().unwrap();
    let last = mounts.len() - 1;
    mounts[last]["destination"] = "/tmp/m".into();
    mounts.insert(
        last,
        serde_json::json!({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs"}),
    );
    b.save();
    let id = unique_id("idmap-bad");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, "an idmapped bind under mounts[");
    assert_clean(&env, &id);
}

/// runc's `exec --ignore-paused`: exec into a paused container is refused
/// without it; with it the process starts frozen and runs once resumed.
#[test]
fn exec_ignore_paused() {
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "1000"]);
    let id = unique_id("execpaused");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    env.ok(&["pause", &id]);
    let refused = env.run(&["exec", &id, "true"]);
    assert_one_line_error(&refused, "cannot exec in a paused container");
    assert_one_line_error(&refused, "--ignore-paused");
    assert_eq!(refused.status.code(), Some(255), "runc's status for it");
    let out_file = env.tmp.path().join("out");
    let mut child = env
        .cmd()
        .args(["exec", "--ignore-paused", &id, "sh", "-c", "echo thawed"])
        .stdout(fs::File::create(&out_file).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(env.state(&id)["status"], "paused");
    env.ok(&["resume", &id]);
    assert!(child.wait().unwrap().success());
    assert_eq!(fs::read_to_string(&out_file).unwrap(), "thawed\n");
    env.ok(&["delete", "--force", &id]);
}

/// Mounts are made in the config's order, and a bind may take its source
/// from what an earlier one made in the rootfs, an idmapped one too (runsbx
/// makes it, and the plain binds before it, before libcontainer: found in
/// the rootfs when made); a destination given as a host path into the
/// rootfs is the container's path (all as runc: its suite's `mount order`).
#[test]
fn a_bind_sources_what_an_earlier_mount_made() {
    let env = Env::new();
    let src = env.tmp.path().join("src");
    fs::create_dir_all(src.join("sub")).unwrap();
    fs::write(src.join("sub/file"), "through-mnt\n").unwrap();
    let mut b = env.bundle(
        "b",
        &["sh", "-c", "cat /final/file; stat -c %u /final/file"],
    );
    let rootfs = b.dir.join("rootfs");
    fs::create_dir_all(rootfs.join("mnt")).unwrap();
    let maps = serde_json::json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
    for idmap in [false, true] {
        let mut second = serde_json::json!({"destination": rootfs.join("final"),
            "source": rootfs.join("mnt/sub"), "options": ["rbind"]});
        if idmap {
            second["uidMappings"] = maps.clone();
            second["gidMappings"] = maps.clone();
        }
        let mounts = b.config["mounts"].as_array_mut().unwrap();
        mounts
            .retain(|m| m["destination"] != "/mnt" && m["options"] != serde_json::json!(["rbind"]));
        mounts
            .push(serde_json::json!({"destination": "/mnt", "source": src, "options": ["rbind"]}));
        mounts.push(second);
        b.save();
        let out = env.run(&["run", "--bundle", b.path(), &unique_id("order")]);
        assert!(out.status.success(), "idmap {idmap}: {}", stderr_of(&out));
        let owner = if idmap { "100000" } else { "0" };
        assert_eq!(stdout_of(&out), format!("through-mnt\n{owner}\n"));
        assert!(!rootfs.join("mnt/sub").exists() && rootfs.join("final").is_dir());
    }
}

/// runc's `tmpcopyup` (podman's `--read-only` and `--tmpfs`): the tmpfs
/// starts with the image's files at its destination, owners, modes and
/// symlinks (as links) kept, writable where the image is not; one under an
/// earlier mount is refused in one line.
#[test]
fn a_tmpcopyup_tmpfs_starts_with_the_images_files() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let script = "cat /data/f; stat -c '%u %a' /data/f; readlink /data/link; \
                  touch /data/new && echo writable";
    let mut b = env.bundle("b", &["sh", "-c", script]);
    let data = b.dir.join("rootfs/data");
    fs::create_dir_all(&data).unwrap();
    fs::write(data.join("f"), "from-image\n").unwrap();
    nix::unistd::chown(&data.join("f"), Some(7.into()), Some(7.into())).unwrap();
    fs::set_permissions(data.join("f"), fs::Permissions::from_mode(0o4755)).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", data.join("link")).unwrap();
    b.config["root"]["readonly"] = true.into();
    b.config["mounts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!(
        {"destination": "/data", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "nodev", "tmpcopyup", "size=1m"]}));
    b.save();
    let out = env.run(&["run", "--bundle", b.path(), &unique_id("copyup")]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out),
        "from-image\n7 4755\n/etc/passwd\nwritable\n"
    );
    assert!(!data.join("new").exists(), "the write reached the image");

    b.config["mounts"].as_array_mut().unwrap().insert(
        0,
        serde_json::json!({"destination": "/data", "type": "tmpfs", "source": "tmpfs"}),
    );
    b.config["mounts"]
        .as_array_mut()
        .unwrap()
        .last_mut()
        .unwrap()["destination"] = "/data/sub".into();
    b.save();
    let id = unique_id("copyup-bad");
    let out = env.run(&["run", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, "a tmpcopyup tmpfs under mounts[0] (/data)");
    assert_clean(&env, &id);
}

/// A bind's flags as runc 1.2 makes them (its suite's mounts_sshfs): with
/// only `bind` it keeps its source's; with any flag option it has exactly
/// the flags its options set, the source's others cleared; in a user
/// namespace the flags it inherited from a more privileged one stay
/// (locked), and only those the kernel lets it clear go.
#[test]
fn a_binds_flags_are_the_ones_its_options_name() {
    let env = Env::new();
    let src = env.nodev_dir();
    let remount = Command::new("mount")
        .args(["--bind", "-o", "remount,ro,nodev,noexec,nosymfollow"])
        .arg(src.path())
        .status()
        .unwrap();
    assert!(remount.success(), "remount {}", src.path().display());
    let mut b = env.bundle("b", &["sh", "-c", "grep ' /mnt ' /proc/self/mounts"]);
    let flags_with = |b: &mut Bundle, options: &[&str]| {
        let mounts = b.config["mounts"].as_array_mut().unwrap();
        mounts.retain(|m| m["destination"] != "/mnt");
        mounts.push(serde_json::json!({"destination": "/mnt", "type": "bind",
            "source": src.path(), "options": options}));
        b.save();
        let out = env.ok(&["run", "--bundle", b.path(), &unique_id("flags")]);
        let flags: Vec<String> = out
            .split_whitespace()
            .nth(3)
            .unwrap_or_else(|| panic!("no /mnt in {out}"))
            .split(',')
            .map(str::to_string)
            .collect();
        flags
    };
    let has = |flags: &[String], f: &str| flags.iter().any(|x| x == f);
    let kept = flags_with(&mut b, &["bind"]);
    for f in ["ro", "nodev", "noexec", "nosymfollow"] {
        assert!(has(&kept, f), "{f}: {kept:?}");
    }
    let cleared = flags_with(&mut b, &["bind", "nosuid"]);
    assert!(
        has(&cleared, "rw") && has(&cleared, "nosuid"),
        "{cleared:?}"
    );
    for f in ["nodev", "noexec", "nosymfollow"] {
        assert!(!has(&cleared, f), "{f}: {cleared:?}");
    }
    b.with_userns_as_nobody();
    let locked = flags_with(&mut b, &["bind", "nosuid"]);
    for f in ["ro", "nosuid", "nodev", "noexec"] {
        assert!(has(&locked, f), "{f}: {locked:?}");
    }
    assert!(!has(&locked, "nosymfollow"), "{locked:?}");
}

/// runc's `exec --cgroup`: the process runs in an existing sub-cgroup of
/// the container's, of every controller or (cgroup v1) of the ones named;
/// `..`, a missing sub-cgroup and an unknown controller are refused. Without
/// it, an exec'd process is in every cgroup init is in (on a hybrid host
/// also the unified and systemd hierarchies, which libcontainer skips).
#[test]
fn exec_into_a_sub_cgroup() {
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "1000"]);
    let id = unique_id("execcg");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    let pid = env.state(&id)["pid"].as_i64().unwrap();
    let init = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    assert!(init.lines().all(|l| l.contains(&id)), "{init}");
    assert_eq!(env.ok(&["exec", &id, "cat", "/proc/self/cgroup"]), init);
    assert_one_line_error(
        &env.run(&["exec", "--cgroup", "../escape", &id, "true"]),
        "../escape is not a sub cgroup path",
    );
    assert_one_line_error(
        &env.run(&["exec", "--cgroup", "whaaat:/", &id, "true"]),
        "unknown controller \"whaaat\"",
    );
    assert_one_line_error(
        &env.run(&["exec", "--cgroup", "pids:nonexistent", &id, "true"]),
        "/nonexistent/cgroup.procs: no such file or directory",
    );
    assert_one_line_error(
        &env.run(&["exec", "--cgroup", "sub", &id, "true"]),
        "/sub/cgroup.procs: no such file or directory",
    );
    let dirs = cgroups_named(&id);
    assert!(!dirs.is_empty(), "no cgroup for {id}");
    for d in &dirs {
        fs::create_dir(d.join("sub")).unwrap();
    }
    let out = env.ok(&["exec", "--cgroup", "/sub", &id, "cat", "/proc/self/cgroup"]);
    let pids_line = out
        .lines()
        .find(|l| {
            l.split(':')
                .nth(1)
                .is_some_and(|c| c == "pids" || c.is_empty())
        })
        .unwrap_or_else(|| panic!("no pids or v2 line in {out}"));
    assert!(pids_line.ends_with("/sub"), "{out}");
    let out = env.ok(&[
        "exec",
        "--cgroup",
        "pids,memory:sub",
        &id,
        "cat",
        "/proc/self/cgroup",
    ]);
    assert!(out.lines().any(|l| l.ends_with("/sub")), "{out}");
    // cgroup v1: one controller in its sub-cgroup, the rest in the
    // container's (v2 has one cgroup for all).
    if Path::new("/sys/fs/cgroup/pids").is_dir() {
        let out = env.ok(&[
            "exec",
            "--cgroup",
            "pids:sub",
            &id,
            "cat",
            "/proc/self/cgroup",
        ]);
        for line in out.lines() {
            match line.split(':').nth(1) {
                Some("pids") => assert!(line.ends_with(&format!("{id}/sub")), "{out}"),
                _ => assert!(line.ends_with(&id), "{out}"),
            }
        }
    }
    env.ok(&["delete", "--force", &id]);
    assert_eq!(cgroups_named(&id), Vec::<std::path::PathBuf>::new());
}

/// `b` with a resource (so a cgroup) and no `cgroupsPath`.
fn with_pids_limit(mut b: Bundle) -> Bundle {
    b.config["linux"]["resources"] = serde_json::json!({ "pids": { "limit": 64 } });
    b.save();
    b
}

/// With resources and no `cgroupsPath`, the cgroup is named after the id
/// as runc names it (libcontainer's own default is `:youki:<id>`), and
/// exec, ps, pause, kill --all and delete find it under that name.
#[test]
fn cgroup_without_cgroups_path_is_named_after_the_id() {
    let env = Env::new();
    let b = with_pids_limit(env.bundle("b", &["sleep", "1000"]));
    let id = unique_id("cgname");
    env.ok(&["create", "--bundle", b.path(), &id]);
    let pid = env.state(&id)["pid"].as_i64().unwrap();
    let own = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let pids_line = |text: &str| {
        text.lines()
            .find(|l| {
                l.split(':')
                    .nth(1)
                    .is_some_and(|c| c == "pids" || c.is_empty())
            })
            .map(|l| l.splitn(3, ':').nth(2).unwrap().to_string())
            .unwrap_or_else(|| panic!("no pids or v2 line in {text}"))
    };
    let path = pids_line(&own);
    assert!(path.ends_with(&format!("/{id}")), "init's cgroup {path:?}");
    assert!(!own.contains(":youki:"), "{own}");
    env.ok(&["start", &id]);
    let exec = env.ok(&["exec", &id, "cat", "/proc/self/cgroup"]);
    assert_eq!(pids_line(&exec), path, "exec'd process in another cgroup");
    env.ok(&["exec", "-d", &id, "sleep", "900"]);
    let ps: Vec<i32> = serde_json::from_str(&env.ok(&["ps", "--format", "json", &id])).unwrap();
    assert_eq!(ps.len(), 2, "ps {ps:?}");
    env.ok(&["pause", &id]);
    env.ok(&["resume", &id]);
    env.ok(&["kill", "--all", &id, "KILL"]);
    env.wait_status(&id, "stopped");
    env.ok(&["delete", &id]);
    assert_eq!(cgroups_named(&id), Vec::<std::path::PathBuf>::new());
}

/// The default cgroup of a container without `cgroupsPath` is not joined
/// while it holds another's processes (a runc container of the same id).
#[test]
fn a_cgroup_holding_processes_is_refused() {
    let env = Env::new();
    let mut b = with_pids_limit(env.bundle("b", &["sleep", "1000"]));
    // The default cgroup (the id), then a cgroupsPath naming a busy one.
    for named in [false, true] {
        let id = unique_id("cgtaken");
        let name = unique_id("busy");
        if named {
            b.config["linux"]["cgroupsPath"] = format!("/{name}").into();
            b.save();
        }
        let leaf = if named { &name } else { &id };
        let dir = match Path::new("/sys/fs/cgroup/pids").is_dir() {
            true => Path::new("/sys/fs/cgroup/pids").join(leaf),
            false => Path::new("/sys/fs/cgroup").join(leaf),
        };
        fs::create_dir(&dir).unwrap();
        let mut other = Command::new("sleep").arg("100").spawn().unwrap();
        fs::write(dir.join("cgroup.procs"), other.id().to_string()).unwrap();
        let out = env.run(&["create", "--bundle", b.path(), &id]);
        // The other process must survive the refusal.
        let alive = other.try_wait().unwrap().is_none();
        let _ = other.kill();
        let _ = other.wait();
        let _ = fs::remove_dir(&dir);
        assert_one_line_error(&out, "container's cgroup is not empty");
        assert!(alive, "the cgroup's other process was killed");
        assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
    }
}

/// `process.oomScoreAdj` reaches init; a runsbx that may not lower the score
/// (no CAP_SYS_RESOURCE, as when containerd runs in a container and its CRI
/// asks -998 for a pod sandbox) refuses the container in one line naming the
/// field and the errno, not libcontainer's bare "io error", and leaves nothing.
#[test]
fn oom_score_adj_applies_or_is_refused_by_name() {
    let env = Env::new();
    require_file("/usr/bin/setpriv", "util-linux");
    let mut b = env.bundle("b", &["sleep", "1000"]);
    b.config["process"]["oomScoreAdj"] = serde_json::json!(500);
    b.save();
    let id = unique_id("oom");
    env.ok(&["create", "--bundle", b.path(), &id]);
    let pid = env.state(&id)["pid"].as_i64().unwrap();
    let adj = fs::read_to_string(format!("/proc/{pid}/oom_score_adj")).unwrap();
    assert_eq!(adj.trim(), "500");
    env.ok(&["delete", "--force", &id]);

    b.config["process"]["oomScoreAdj"] = serde_json::json!(-998);
    b.save();
    // Root without CAP_SYS_RESOURCE in its bounding set has none after exec.
    let mut cmd = Command::new("/usr/bin/setpriv");
    cmd.args(["--bounding-set", "-sys_resource", "--"])
        .arg(runsbx_bin())
        .arg("--root")
        .arg(&env.root)
        .args(["create", "--bundle", b.path(), &id]);
    let out = env.run_cmd(&mut cmd);
    assert_one_line_error(
        &out,
        "create: config.json: process.oomScoreAdj -998: /proc/self/oom_score_adj \
         (lowering it needs CAP_SYS_RESOURCE): Permission denied (os error 13)",
    );
    assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
    assert!(cgroups_named(&id).is_empty(), "{:?}", cgroups_named(&id));
}

/// A container made in a frozen cgroup, or in a new child of one, would stop
/// as it joins it and `create` would wait for ever: refused with one line,
/// nothing left behind (the frozen cgroup itself is the test's).
#[test]
fn create_in_a_frozen_cgroup_is_refused() {
    let env = Env::new();
    let freezer = Path::new("/sys/fs/cgroup/freezer");
    assert!(
        freezer.is_dir(),
        "this test needs the cgroup v1 freezer of these hybrid hosts at {}",
        freezer.display()
    );
    let name = unique_id("frozen");
    let frozen = freezer.join(&name);
    fs::create_dir(&frozen).unwrap();
    struct Thaw<'a>(&'a Path);
    impl Drop for Thaw<'_> {
        fn drop(&mut self) {
            let _ = fs::write(self.0.join("freezer.state"), "THAWED");
            let _ = fs::remove_dir(self.0.join("c"));
            let _ = fs::remove_dir(self.0);
        }
    }
    let _thaw = Thaw(&frozen);
    fs::write(frozen.join("freezer.state"), "FROZEN").unwrap();
    let mut b = env.bundle("b", &["true"]);
    for path in [format!("/{name}"), format!("/{name}/c")] {
        b.config["linux"]["cgroupsPath"] = path.clone().into();
        b.save();
        for verb in [&["create"][..], &["run", "-d"]] {
            let id = unique_id("frz");
            let base = env.cmd();
            let mut cmd = Command::new("timeout");
            cmd.arg("20").arg(base.get_program()).args(base.get_args());
            cmd.args(verb).args(["--bundle", b.path(), &id]);
            let out = env.run_cmd(&mut cmd);
            assert_ne!(out.status.code(), Some(124), "{verb:?} into {path} hung");
            assert_one_line_error(&out, "is frozen");
            assert!(env.state_entries().is_empty(), "{:?}", env.state_entries());
        }
    }
    assert!(
        !frozen.join("c").exists(),
        "a cgroup was made below the frozen one"
    );
}

/// `exec -p` as runc takes it: from a pipe (read once), without `user`
/// (uid and gid 0); and a --pid-file whose directory is missing refused
/// before anything runs.
#[test]
fn exec_process_file_from_a_pipe_without_user() {
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    let id = unique_id("exp");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    let process = r#"{"args": ["id", "-u"], "cwd": "/", "env": ["PATH=/bin"]}"#;
    let mut child = env
        .cmd()
        .args(["exec", "-p", "/dev/stdin", &id])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(process.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0\n");
    let missing = env.tmp.path().join("no/such/dir/pid");
    let out = env.run(&["exec", "--pid-file", missing.to_str().unwrap(), &id, "true"]);
    assert_one_line_error(&out, "does not exist");
    // runc's status for an exec that could not run its process.
    assert_eq!(out.status.code(), Some(255));
    env.ok(&["delete", "--force", &id]);
}

/// Without --process, an exec'd process is the container's `process` with
/// the command and flags applied, as runc builds it: the spec's umask and
/// rlimits reach it (libcontainer alone gave it the caller's).
#[test]
fn exec_gets_the_containers_umask_and_rlimits() {
    let env = Env::new();
    let mut b = env.bundle("b", &["sleep", "100"]);
    b.config["process"]["user"]["umask"] = 63.into();
    b.config["process"]["rlimits"] =
        serde_json::json!([{ "type": "RLIMIT_NOFILE", "hard": 777, "soft": 777 }]);
    b.save();
    let id = unique_id("exumask");
    env.ok(&["run", "-d", "--bundle", b.path(), &id]);
    let out = env.ok(&["exec", &id, "sh", "-c", "umask; ulimit -n"]);
    env.ok(&["delete", "--force", &id]);
    assert_eq!(out, "0077\n777\n");
}

/// A container's processes get every CPU their cpuset allows, whatever the
/// caller's affinity, as runc 1.2 (run and exec); a sandbox keeps the
/// caller's, so a supervisor can pin it with taskset.
#[test]
fn cpu_affinity_resets_for_containers_and_stays_for_sandboxes() {
    let allowed = |text: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("no Cpus_allowed_list in {text:?}"))
    };
    let own = allowed(&fs::read_to_string("/proc/self/status").unwrap());
    assert!(
        own != "0",
        "this test needs more than one CPU (allowed: {own})"
    );
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    let pinned = |args: &[&str]| {
        let base = env.cmd();
        let mut cmd = Command::new("taskset");
        cmd.args(["-c", "0"])
            .arg(base.get_program())
            .args(base.get_args())
            .args(args);
        let out = env.run_cmd(&mut cmd);
        assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let id = unique_id("affin");
    pinned(&["run", "-d", "--bundle", b.path(), &id]);
    let pid = env.state(&id)["pid"].as_i64().unwrap();
    assert_eq!(
        allowed(&fs::read_to_string(format!("/proc/{pid}/status")).unwrap()),
        own,
        "init"
    );
    let exec = pinned(&[
        "exec",
        &id,
        "grep",
        "Cpus_allowed_list",
        "/proc/self/status",
    ]);
    assert_eq!(allowed(&exec), own, "exec");
    env.ok(&["delete", "--force", &id]);
    let sandbox = pinned(&[
        "sandbox",
        "--",
        "/bin/grep",
        "Cpus_allowed_list",
        "/proc/self/status",
    ]);
    assert_eq!(allowed(&sandbox), "0", "sandbox");
}

/// A listener on `sock` (made now) that takes one connection and returns
/// the first descriptor sent over it (SCM_RIGHTS).
/// `process.terminal` and a devpts of the container's own for its pty.
fn with_terminal(b: &mut Bundle) {
    b.config["process"]["terminal"] = true.into();
    b.config["mounts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "destination": "/dev/pts", "type": "devpts", "source": "devpts",
            "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]
        }));
}

fn receive_fd(sock: &Path) -> std::thread::JoinHandle<std::os::fd::OwnedFd> {
    use std::os::fd::{FromRawFd, OwnedFd, RawFd};
    let listener = std::os::unix::net::UnixListener::bind(sock).unwrap();
    std::thread::spawn(move || -> OwnedFd {
        let (conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 256];
        let mut iov = [std::io::IoSliceMut::new(&mut buf)];
        let mut cmsg = nix::cmsg_space!([RawFd; 1]);
        let msg = nix::sys::socket::recvmsg::<()>(
            std::os::fd::AsRawFd::as_raw_fd(&conn),
            &mut iov,
            Some(&mut cmsg),
            nix::sys::socket::MsgFlags::empty(),
        )
        .unwrap();
        for c in msg.cmsgs().unwrap() {
            if let nix::sys::socket::ControlMessageOwned::ScmRights(fds) = c {
                // SAFETY: the kernel just installed this descriptor for us.
                return unsafe { OwnedFd::from_raw_fd(fds[0]) };
            }
        }
        panic!("no descriptor received");
    })
}

/// The pid a pidfd refers to, from its fdinfo.
fn pidfd_pid(fd: &std::os::fd::OwnedFd) -> i64 {
    use std::os::fd::AsRawFd;
    let info = fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("Pid:"))
        .unwrap_or_else(|| panic!("not a pidfd: {info}"))
        .trim()
        .parse()
        .unwrap()
}

/// runc 1.2's `--pidfd-socket` (its pidfd-socket.bats): `create`, `run -d`
/// and `exec` send a pidfd of the process they made; a socket that cannot
/// be reached fails them in one line before anything is made or run (the
/// create left its container behind, the exec ran its process).
#[test]
fn pidfd_socket_gets_the_process_and_a_bad_one_leaves_nothing() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let b = env.bundle("b", &["sleep", "100"]);
    let sock = |name: &str| env.tmp.path().join(name);
    for (n, verb) in [["create"].as_slice(), &["run", "--detach"]]
        .iter()
        .enumerate()
    {
        let id = unique_id("pidfd");
        let path = sock(&format!("init{n}.sock"));
        let receiver = receive_fd(&path);
        let mut args = verb.to_vec();
        args.extend([
            "--pidfd-socket",
            path.to_str().unwrap(),
            "--bundle",
            b.path(),
            &id,
        ]);
        env.ok(&args);
        let pidfd = receiver.join().unwrap();
        assert_eq!(
            pidfd_pid(&pidfd),
            env.state(&id)["pid"].as_i64().unwrap(),
            "{verb:?}"
        );
        if n == 1 {
            let path = sock("exec.sock");
            let pid_file = sock("exec.pid");
            let receiver = receive_fd(&path);
            env.ok(&[
                "exec",
                "--detach",
                "--pidfd-socket",
                path.to_str().unwrap(),
                "--pid-file",
                pid_file.to_str().unwrap(),
                &id,
                "sleep",
                "50",
            ]);
            let pid: i64 = fs::read_to_string(&pid_file)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert_eq!(pidfd_pid(&receiver.join().unwrap()), pid, "exec");
            let missing = sock("missing.sock");
            assert_one_line_error(
                &env.run(&[
                    "exec",
                    "--detach",
                    "--pidfd-socket",
                    missing.to_str().unwrap(),
                    &id,
                    "sleep",
                    "60",
                ]),
                &format!(
                    "exec: --pidfd-socket {}: No such file or directory",
                    missing.display()
                ),
            );
            let ps = env.ok(&["ps", "--format", "json", &id]);
            let pids: Vec<i64> = serde_json::from_str(&ps).unwrap();
            assert_eq!(pids.len(), 2, "the exec with a bad socket ran: {ps}");
        }
        env.ok(&["delete", "--force", &id]);
    }
    let id = unique_id("pidfd");
    let missing = sock("missing.sock");
    let out = env.run(&[
        "create",
        "--pidfd-socket",
        missing.to_str().unwrap(),
        "--bundle",
        b.path(),
        &id,
    ]);
    assert_one_line_error(&out, "--pidfd-socket");
    assert_clean(&env, &id);
}

/// runc 1.2's timens.bats: `linux.timeOffsets` in a new time namespace
/// reach `run` and an `exec`'d process (runc's issue 4635); offsets without
/// a time namespace are refused in one line, leaving nothing.
#[test]
fn time_namespace_offsets_reach_run_and_exec() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let offsets = serde_json::json!({
        "monotonic": { "secs": 7881, "nanosecs": 2718281 },
        "boottime": { "secs": 1337, "nanosecs": 3141519 }
    });
    let want = "monotonic        7881   2718281\nboottime         1337   3141519\n";
    let mut b = env.bundle("b", &["cat", "/proc/self/timens_offsets"]);
    b.config["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({ "type": "time" }));
    b.config["linux"]["timeOffsets"] = offsets.clone();
    b.save();
    assert_eq!(
        env.ok(&["run", "--bundle", b.path(), &unique_id("timens")]),
        want
    );
    b.config["process"]["args"] = serde_json::json!(["sleep", "100"]);
    b.save();
    let id = unique_id("timens");
    env.ok(&["run", "--detach", "--bundle", b.path(), &id]);
    assert_eq!(
        env.ok(&["exec", &id, "cat", "/proc/self/timens_offsets"]),
        want
    );
    env.ok(&["delete", "--force", &id]);

    let mut b = env.bundle("nons", &["true"]);
    b.config["linux"]["timeOffsets"] = offsets;
    b.save();
    let id = unique_id("timens");
    assert_one_line_error(
        &env.run(&["run", "--bundle", b.path(), &id]),
        "time namespace offsets specified, but time namespace isn't enabled",
    );
    assert_clean(&env, &id);
}
