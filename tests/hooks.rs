//! The runtime-namespace hooks as the runtime-spec has them: prestart and
//! createRuntime run in its order, see the state `created` and fail the
//! create when they fail,
//! leaving nothing behind; poststart runs once init has exec'd the workload
//! and only warns; poststop runs on delete, told what runc tells it; a hook
//! past its `timeout` is killed. Hooks are host shell scripts that save
//! their stdin (the state) under the test's temp dir.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::{json, Value};

/// A hook running `script` in the host's sh.
fn hook(script: &str) -> Value {
    json!({ "path": "/bin/sh", "args": ["sh", "-c", script] })
}

/// A hook that saves its stdin to `to`, then runs `then`.
fn saving(to: &Path, then: &str) -> Value {
    hook(&format!("cat > {}; {then}", to.display()))
}

fn read_state(path: &Path) -> Value {
    let text = fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: the hook did not run: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}: {text:?}", path.display()))
}

fn out(env: &Env, name: &str) -> PathBuf {
    env.tmp.path().join(name)
}

/// A bundle whose `kind` hooks are one exiting with `code`, then one that
/// touches the file returned.
fn failing_first(env: &Env, kind: &str, code: u8) -> (Bundle, PathBuf) {
    let mut b = env.bundle(kind, &["sleep", "10"]);
    let second = out(env, &format!("{kind}-second"));
    b.config["hooks"][kind] = json!([
        hook(&format!("exit {code}")),
        hook(&format!("touch {}", second.display()))
    ]);
    b.save();
    (b, second)
}

/// `run` of `b` as `id` under `rt` ("runsbx" or "runc"), which must
/// succeed; its stdout.
fn run_under(env: &Env, rt: &str, b: &Bundle, id: &str) -> String {
    let args = ["run", "--bundle", b.path(), id];
    match rt {
        "runsbx" => env.ok(&args),
        _ => env.runc_ok(&args),
    }
}

/// `runsbx ARGS` succeeds, warning with `needle` on stderr.
fn assert_warns(env: &Env, args: &[&str], needle: &str) {
    let o = env.run(args);
    let err = stderr_of(&o);
    assert!(o.status.success(), "{args:?} failed: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: no warning {needle:?}: {err}"
    );
}

#[test]
fn prestart_and_create_runtime_are_told_created_with_inits_pid() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let mut b = env.bundle("b", &["sleep", "10"]);
    let (pre, cr) = (out(&env, "prestart"), out(&env, "createRuntime"));
    // What `state` says while the hook runs must agree with its stdin; a
    // `start` then must wait for the create to finish.
    let (seen, started) = (out(&env, "state-in-hook"), out(&env, "start-in-hook"));
    let runsbx = format!("{} --root {}", runsbx_bin().display(), env.root.display());
    b.config["hooks"] = json!({
        "prestart": [saving(&pre, &format!("{runsbx} state hooked > {}", seen.display()))],
        "createRuntime": [saving(&cr, &format!("{runsbx} start hooked 2> {}; true", started.display()))],
    });
    b.config["annotations"] = json!({ "org.example": "hook stdin" });
    b.save();
    env.ok(&["create", "--bundle", b.path(), "hooked"]);
    let state = env.state("hooked");
    for path in [&pre, &cr] {
        let s = read_state(path);
        assert_eq!(s["status"], "created", "{}: {s}", path.display());
        assert_eq!(s["pid"], state["pid"], "{s}");
        assert_eq!(s["id"], "hooked");
        assert_eq!(s["bundle"], b.path());
        assert_eq!(s["annotations"], json!({ "org.example": "hook stdin" }));
        assert!(s["ociVersion"].is_string(), "{s}");
    }
    // The hooks run while libcontainer creates the container, before its
    // createContainer hooks and init's pivot_root: `state` says `creating`
    // then, as runc's does.
    let during: Value = serde_json::from_str(&fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(
        during["status"], "creating",
        "runsbx state in the hook: {during}"
    );
    assert_eq!(
        during["bundle"],
        b.path(),
        "runsbx state in the hook: {during}"
    );
    let refused = fs::read_to_string(&started).unwrap();
    assert!(
        refused.contains("start hooked: another runsbx is creating or deleting it"),
        "runsbx start in the hook: {refused:?}"
    );
    assert_eq!(state["status"], "created", "started from the hook");
    env.ok(&["delete", "--force", "hooked"]);
}

/// The runtime-spec's order: prestart, createRuntime, createContainer,
/// startContainer, poststart (youki's contest `hooks` checks it). Each hook
/// appends its name to one file in the rootfs, which startContainer sees
/// from inside the container.
#[test]
fn hooks_run_in_the_runtime_specs_order() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let mut b = env.bundle("b", &["sleep", "10"]);
    let order = b.dir.join("rootfs/order");
    let append = |name: &str, file: &Path| {
        json!([hook(&format!(
            "cat > /dev/null; echo {name} >> {}",
            file.display()
        ))])
    };
    b.config["hooks"] = json!({
        "prestart": append("prestart", &order),
        "createRuntime": append("createRuntime", &order),
        "createContainer": append("createContainer", &order),
        "startContainer": append("startContainer", Path::new("/order")),
        "poststart": append("poststart", &order),
    });
    b.save();
    env.ok(&["create", "--bundle", b.path(), "ordered"]);
    env.ok(&["start", "ordered"]);
    let got = fs::read_to_string(&order).unwrap();
    assert_eq!(
        got.lines().collect::<Vec<_>>(),
        [
            "prestart",
            "createRuntime",
            "createContainer",
            "startContainer",
            "poststart"
        ],
        "{got:?}"
    );
    env.ok(&["delete", "--force", "ordered"]);
}

#[test]
fn failing_prestart_fails_create_leaves_nothing_and_runs_poststop() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let id = unique_id("hookfail");
    let mut b = env.bundle("b", &["sleep", "10"]);
    let (pre, post) = (out(&env, "prestart"), out(&env, "poststop"));
    b.config["linux"]["cgroupsPath"] = json!(format!("/{id}"));
    b.config["hooks"] = json!({
        "prestart": [saving(&pre, "exit 7")],
        "poststop": [saving(&post, "true")],
    });
    b.save();
    let o = env.run(&["create", "--bundle", b.path(), &id]);
    assert!(!o.status.success(), "create succeeded");
    assert_one_line_error(
        &o,
        "error running prestart hook #0: /bin/sh: exited with status 7",
    );
    let pid = read_state(&pre)["pid"].as_i64().expect("pid") as i32;
    assert!(
        wait_dead(pid, Duration::from_secs(5)),
        "init {pid} lives on"
    );
    assert_eq!(env.state_entries(), Vec::<String>::new(), "state left");
    assert_eq!(cgroups_named(&id), Vec::<PathBuf>::new(), "cgroup left");
    assert_eq!(read_state(&post)["status"], "stopped");
}

#[test]
fn failing_poststart_warns_and_start_succeeds() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let (b, second) = failing_first(&env, "poststart", 3);
    env.ok(&["create", "--bundle", b.path(), "ps"]);
    assert_warns(
        &env,
        &["start", "ps"],
        "error running poststart hook #0: /bin/sh: exited with status 3",
    );
    assert!(second.exists(), "the hook after the failed one did not run");
    assert_eq!(env.state("ps")["status"], "running");
    env.ok(&["delete", "--force", "ps"]);
}

#[test]
fn poststart_runs_after_the_workload_is_execd() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let mut b = env.bundle("b", &["sleep", "10"]);
    let cmdline = out(&env, "cmdline");
    // The pid from the state on stdin; its command line once the hook runs.
    let script = format!(
        "pid=$(sed -n 's/.*\"pid\":\\([0-9]*\\).*/\\1/p'); tr '\\0' ' ' < /proc/$pid/cmdline > {}",
        cmdline.display()
    );
    // A startContainer hook (busybox's sh, in the container, after `start`
    // released init and before its exec) makes the exec come late: a
    // poststart hook run as soon as init is released sees runsbx's init.
    b.config["hooks"] = json!({
        "startContainer": [{ "path": "/bin/sh", "args": ["sh", "-c", "sleep 1"] }],
        "poststart": [hook(&script)],
    });
    b.save();
    for i in 0..2 {
        let id = format!("exec{i}");
        env.ok(&["create", "--bundle", b.path(), &id]);
        env.ok(&["start", &id]);
        let seen = fs::read_to_string(&cmdline).unwrap();
        assert_eq!(seen, "sleep 10 ", "run {i}: poststart saw {seen:?}");
        env.ok(&["delete", "--force", &id]);
        fs::remove_file(&cmdline).unwrap();
    }
}

#[test]
fn hooks_past_their_timeout_are_killed() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let mut slow = hook("exec sleep 30");
    slow["timeout"] = json!(1);
    // prestart: the create fails, within the timeout and change.
    let mut b = env.bundle("pre", &["sleep", "10"]);
    b.config["hooks"] = json!({ "prestart": [slow.clone()] });
    b.save();
    let t = Instant::now();
    let o = env.run(&["create", "--bundle", b.path(), "slowpre"]);
    assert!(!o.status.success(), "create succeeded");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    assert_one_line_error(
        &o,
        "error running prestart hook #0: /bin/sh: timed out after 1 s; killed",
    );
    assert_eq!(env.state_entries(), Vec::<String>::new(), "state left");
    // poststart: start succeeds with a warning.
    let mut b = env.bundle("post", &["sleep", "10"]);
    b.config["hooks"] = json!({ "poststart": [slow] });
    b.save();
    env.ok(&["create", "--bundle", b.path(), "slowpost"]);
    let t = Instant::now();
    assert_warns(
        &env,
        &["start", "slowpost"],
        "error running poststart hook #0: /bin/sh: timed out after 1 s; killed",
    );
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    env.ok(&["delete", "--force", "slowpost"]);
}

/// runc 1.1.5 and runsbx tell a poststop hook the same: status `stopped`,
/// no pid, the bundle and annotations; a failing one is a warning under
/// runsbx (runc fails the delete and skips the hooks after it: runc is wrong
/// there, the runtime-spec says warn and go on).
#[test]
fn poststop_runs_on_delete_told_what_runc_tells_it() {
    let env = Env::new();
    let _c = Cleanup(&env);
    // With annotations, with none (then runc has no such key) and with an
    // empty map (runc omits it too).
    for (n, annotations) in [json!({ "org.example": "poststop" }), Value::Null, json!({})]
        .into_iter()
        .enumerate()
    {
        let mut states = Vec::new();
        for rt in ["runsbx", "runc"] {
            let name = format!("{rt}-{n}");
            let mut b = env.bundle(&name, &["true"]);
            let saved = out(&env, &format!("poststop-{name}"));
            b.config["hooks"] = json!({ "poststop": [saving(&saved, "true")] });
            if !annotations.is_null() {
                b.config["annotations"] = annotations.clone();
            }
            b.save();
            run_under(&env, rt, &b, "pstop");
            states.push(read_state(&saved));
        }
        let (ours, runc) = (&states[0], &states[1]);
        eprintln!("poststop stdin:\n  runsbx {ours}\n  runc   {runc}");
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(ours), keys(runc));
        // The bundles differ: one per runtime.
        for k in ["status", "id", "annotations"] {
            assert_eq!(ours[k], runc[k], "{k}");
        }
        assert_eq!(ours["status"], "stopped");
    }

    // A failing poststop hook: the delete succeeds, says so, and the next
    // hook runs.
    let (b, second) = failing_first(&env, "poststop", 4);
    env.ok(&["create", "--bundle", b.path(), "pfail"]);
    assert_warns(
        &env,
        &["delete", "--force", "pfail"],
        "error running poststop hook #0: /bin/sh: exited with status 4",
    );
    assert!(second.exists());
    assert_eq!(env.state_entries(), Vec::<String>::new());
}

/// A createContainer hook runs in the rootfs (runc's working directory for
/// it; libcontainer's was the caller's) and is told what runc tells it:
/// `creating`, init's pid as the container sees it.
#[test]
fn create_container_runs_in_the_rootfs_told_what_runc_tells_it() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let mut seen = Vec::new();
    for rt in ["runsbx", "runc"] {
        let mut b = env.bundle(rt, &["cat", "/hookcwd"]);
        b.config["hooks"] =
            json!({ "createContainer": [hook("pwd > ./hookcwd; cat > ./hookstate")] });
        b.save();
        let stdout = run_under(&env, rt, &b, "ccwd");
        let rootfs = fs::canonicalize(b.dir.join("rootfs")).unwrap();
        assert_eq!(
            stdout.trim_end(),
            rootfs.to_str().unwrap(),
            "{rt}: the hook's cwd"
        );
        let state = read_state(&b.dir.join("rootfs/hookstate"));
        seen.push((state["status"].clone(), state["pid"].clone()));
    }
    assert_eq!(seen[0], (json!("creating"), json!(1)), "runsbx");
    assert_eq!(seen[0], seen[1], "runsbx, then runc");
}

/// A failing hook of each kind that can fail `run` (runc's `run [hook
/// fails]`): `run` fails with runc's words and the workload never runs; a
/// startContainer failure too (libcontainer's init exited 255 in silence).
#[test]
fn a_failing_hook_fails_run_in_runcs_words() {
    let env = Env::new();
    let _c = Cleanup(&env);
    for kind in [
        "prestart",
        "createRuntime",
        "createContainer",
        "startContainer",
    ] {
        let mut b = env.bundle(kind, &["echo", "Hello World"]);
        b.config["hooks"][kind] = json!([{ "path": "/bin/true" }, { "path": "/bin/false" }]);
        b.save();
        let id = unique_id("hookrun");
        let o = env.run(&["run", "--bundle", b.path(), &id]);
        assert_eq!(o.status.code(), Some(1), "{kind}: {}", stderr_of(&o));
        assert_eq!(stdout_of(&o), "", "{kind}: the workload ran");
        assert_one_line_error(
            &o,
            &format!("error running {kind} hook #1: /bin/false: exited with status 1"),
        );
        assert_clean(&env, &id);
    }
}

/// runc's "runc run [seccomp] (startContainer hook)": the hook runs under
/// the container's filter, is told what runc tells it, and one the filter
/// kills fails `run`, named as runc names it.
#[test]
fn start_container_hooks_run_under_the_filter_told_what_runc_tells_them() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let mut states = Vec::new();
    for rt in ["runsbx", "runc"] {
        let mut b = env.bundle(rt, &["cat", "/tmp/state"]);
        b.config["hooks"] = json!({ "startContainer": [hook("cat > /tmp/state")] });
        b.config["annotations"] = json!({ "org.example": "start" });
        b.save();
        let text = run_under(&env, rt, &b, "startstate");
        let state: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rt}: {e}: {text:?}"));
        assert_eq!(state["bundle"], b.path(), "{rt}");
        states.push(state);
    }
    for k in ["status", "pid", "id", "annotations"] {
        assert_eq!(
            states[0][k], states[1][k],
            "{k}: runsbx {} runc {}",
            states[0], states[1]
        );
    }
    assert_eq!(states[0]["status"], "created");

    let mut b = env.bundle("seccomp", &["true"]);
    b.config["linux"]["seccomp"] = json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [{ "names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_KILL" }]
    });
    b.config["hooks"] = json!({ "startContainer": [hook("mkdir /tmp/foo")] });
    b.save();
    let id = unique_id("hookseccomp");
    let o = env.run(&["run", "--bundle", b.path(), &id]);
    assert!(!o.status.success(), "run succeeded");
    assert_one_line_error(
        &o,
        "error running startContainer hook #0: /bin/sh: killed by SIGSYS (bad system call)",
    );
    assert_clean(&env, &id);
}
