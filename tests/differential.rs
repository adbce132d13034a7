//! runsbx against Debian's runc on the same busybox bundles: exit codes of
//! `run`, the shape of `state` JSON through the lifecycle, the pid file, and
//! the shape of `list --format json`. Each runtime has its own state root
//! under the test's temp dir; runc containers are force-deleted at the end.

use std::collections::BTreeMap;
use std::fs;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

/// Keys runsbx adds to runc's `state`/`list` objects on purpose. runsbx may
/// have more keys than runc, never fewer or of another type. (None today.)
const EXTRA_KEYS_OK: &[&str] = &[];

// Deliberate differences from runc 1.1.5, checked below where they show:
// - `ociVersion` is the runtime-spec version each runtime implements: runc
//   says "1.0.2-dev", runsbx the version of its oci-spec types; both strings.
// - `list --format json` with no containers: runsbx prints `[]`, runc `null`
//   (Go's encoding of a nil slice). A consumer that iterates the array gets
//   nothing from both; `[]` is what the runtime-spec state list should be.
// - `events --stats`: runsbx prints no `cpuset` member (libcgroups does not
//   read the cpuset files); every other member has runc's name and type.

#[derive(Clone, Copy, Debug)]
enum Runtime {
    Runsbx,
    Runc,
}

impl Runtime {
    fn run(self, env: &Env, args: &[&str]) -> std::process::Output {
        match self {
            Runtime::Runsbx => env.run(args),
            Runtime::Runc => env.runc(args),
        }
    }

    fn ok(self, env: &Env, args: &[&str]) -> String {
        match self {
            Runtime::Runsbx => env.ok(args),
            Runtime::Runc => env.runc_ok(args),
        }
    }

    fn state(self, env: &Env, id: &str) -> Value {
        serde_json::from_str(&self.ok(env, &["state", id])).expect("state JSON")
    }

    fn wait_status(self, env: &Env, id: &str, want: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = self.run(env, &["state", id]);
            let s: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            if s["status"] == want {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "{self:?}: {id} never became {want}: {s}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `run` in the background, stdio to files.
    fn spawn_run(self, env: &Env, bundle: &str, id: &str) -> Child {
        let mut c = match self {
            Runtime::Runsbx => env.cmd(),
            Runtime::Runc => {
                let mut c = Command::new(RUNC);
                c.arg("--root").arg(env.runc_root()).stdin(Stdio::null());
                c
            }
        };
        let log = env.tmp.path().join(format!("{id}.out"));
        c.args(["run", "--bundle", bundle, id])
            .stdout(fs::File::create(&log).unwrap())
            .stderr(fs::File::create(log.with_extension("err")).unwrap())
            .spawn()
            .expect("spawn run")
    }
}

const BOTH: [Runtime; 2] = [Runtime::Runsbx, Runtime::Runc];

/// `run` of `b` under each runtime: succeeds and prints `want`; returns
/// each one's stderr.
fn run_both_print(env: &Env, b: &Bundle, prefix: &str, want: &str) -> Vec<String> {
    BOTH.iter()
        .map(|&rt| {
            let out = rt.run(env, &["run", "--bundle", b.path(), &unique_id(prefix)]);
            assert!(out.status.success(), "{rt:?}: {}", stderr_of(&out));
            assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{rt:?}");
            stderr_of(&out)
        })
        .collect()
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn shape(v: &Value) -> BTreeMap<String, &'static str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .iter()
        .map(|(k, v)| (k.clone(), type_name(v)))
        .collect()
}

/// Every key runc has, runsbx has with the same type; runsbx's extra keys
/// must be listed in [`EXTRA_KEYS_OK`].
fn assert_same_shape(what: &str, ours: &Value, runc: &Value) {
    let (o, r) = (shape(ours), shape(runc));
    for (k, t) in &r {
        assert_eq!(
            o.get(k),
            Some(t),
            "{what}: key {k:?}: runsbx {ours}\nrunc {runc}"
        );
    }
    for k in o.keys().filter(|k| !r.contains_key(*k)) {
        assert!(
            EXTRA_KEYS_OK.contains(&k.as_str()),
            "{what}: runsbx has {k:?}, runc does not: list it in EXTRA_KEYS_OK with a reason\nrunsbx {ours}\nrunc {runc}"
        );
    }
}

#[test]
fn run_exit_codes_match_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    for (args, want) in [(vec!["true"], 0), (vec!["sh", "-c", "exit 7"], 7)] {
        let b = env.bundle(&unique_id("exit"), &args);
        for rt in BOTH {
            let out = rt.run(
                &env,
                &["run", "--bundle", b.path(), &unique_id("diff-exit")],
            );
            assert_eq!(
                out.status.code(),
                Some(want),
                "{rt:?} {args:?}: {}",
                stderr_of(&out)
            );
        }
    }
}

#[test]
fn run_killed_by_sigkill_exits_137_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let b = env.bundle("b", &["sleep", "1000"]);
    for rt in BOTH {
        let id = unique_id("diff-kill");
        let mut child = rt.spawn_run(&env, b.path(), &id);
        rt.wait_status(&env, &id, "running");
        rt.ok(&env, &["kill", &id, "KILL"]);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(137), "{rt:?}: {status:?}");
    }
    assert!(
        env.state_entries().is_empty(),
        "runsbx state left: {:?}",
        env.state_entries()
    );
}

#[test]
fn state_through_the_lifecycle_has_runcs_shape() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let b = env.bundle("b", &["sleep", "1000"]);
    let mut states: Vec<BTreeMap<&str, Value>> = Vec::new();
    for rt in BOTH {
        let id = unique_id("diff-state");
        let pid_file = env.tmp.path().join(format!("{id}.pid"));
        rt.ok(
            &env,
            &[
                "create",
                "--bundle",
                b.path(),
                "--pid-file",
                pid_file.to_str().unwrap(),
                &id,
            ],
        );
        let mut seen = BTreeMap::new();
        let created = rt.state(&env, &id);
        let file_pid: i64 = fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(
            created["pid"].as_i64(),
            Some(file_pid),
            "{rt:?}: pid file and state disagree"
        );
        assert_eq!(created["id"], id.as_str());
        seen.insert("created", created);
        rt.ok(&env, &["start", &id]);
        seen.insert("running", rt.state(&env, &id));
        rt.ok(&env, &["kill", &id, "KILL"]);
        seen.insert("stopped", rt.wait_status(&env, &id, "stopped"));
        rt.ok(&env, &["delete", &id]);
        let gone = rt.run(&env, &["state", &id]);
        assert!(
            !gone.status.success(),
            "{rt:?}: state of a deleted container succeeded"
        );
        states.push(seen);
    }
    let (ours, runc) = (&states[0], &states[1]);
    for status in ["created", "running", "stopped"] {
        let (o, r) = (&ours[status], &runc[status]);
        eprintln!("{status}:\n  runsbx {o}\n  runc   {r}");
        assert_eq!(o["status"], r["status"]);
        assert!(
            o["ociVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("1.")),
            "{o}"
        );
        assert_same_shape(&format!("state ({status})"), o, r);
        // runc reports pid 0 once stopped; a live pid before.
        assert_eq!(
            o["pid"].as_i64() == Some(0),
            r["pid"].as_i64() == Some(0),
            "{status}: pid {o} vs {r}"
        );
        assert_eq!(o["bundle"], r["bundle"], "{status}");
    }
}

#[test]
fn list_json_has_runcs_shape() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let empty_ours = env.ok(&["list", "--format", "json"]);
    let empty_runc = env.runc_ok(&["list", "--format", "json"]);
    eprintln!("empty list: runsbx {empty_ours:?} runc {empty_runc:?}");
    // Deliberate difference: see the top of the file.
    assert_eq!(
        serde_json::from_str::<Value>(&empty_ours).unwrap(),
        serde_json::json!([])
    );
    assert_eq!(
        serde_json::from_str::<Value>(&empty_runc).unwrap(),
        Value::Null
    );

    let b = env.bundle("b", &["sleep", "1000"]);
    let mut lists = Vec::new();
    for rt in BOTH {
        let id = unique_id("diff-list");
        rt.ok(&env, &["create", "--bundle", b.path(), &id]);
        let l: Value = serde_json::from_str(&rt.ok(&env, &["list", "--format", "json"])).unwrap();
        let arr = l
            .as_array()
            .unwrap_or_else(|| panic!("{rt:?}: not an array: {l}"));
        assert_eq!(arr.len(), 1, "{rt:?}: {l}");
        assert_eq!(arr[0]["id"], id.as_str());
        assert_eq!(arr[0]["status"], "created");
        let q = rt.ok(&env, &["list", "-q"]);
        assert_eq!(q.trim(), id, "{rt:?}: list -q");
        lists.push(arr[0].clone());
        rt.ok(&env, &["delete", "--force", &id]);
    }
    eprintln!("list entry:\n  runsbx {}\n  runc   {}", lists[0], lists[1]);
    assert_same_shape("list --format json entry", &lists[0], &lists[1]);
}

/// The same `update` under both runtimes reads back the same limits in
/// `events --stats`, whose JSON has runc's members (but `cpuset`, see the
/// top of the file).
#[test]
fn update_then_events_stats_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("b", &["sleep", "1000"]);
    b.config["linux"]["resources"] =
        serde_json::json!({ "memory": { "limit": 104857600 }, "pids": { "limit": 64 } });
    b.save();
    let mut seen = Vec::new();
    for rt in BOTH {
        let id = unique_id("diff-upd");
        rt.ok(&env, &["create", "--bundle", b.path(), &id]);
        rt.ok(&env, &["start", &id]);
        rt.ok(
            &env,
            &["update", "--memory", "200M", "--pids-limit", "10", &id],
        );
        let line = rt.ok(&env, &["events", "--stats", &id]);
        assert_eq!(line.lines().count(), 1, "{rt:?}: {line}");
        let e: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(e["type"], "stats", "{rt:?}");
        assert_eq!(e["id"], id.as_str(), "{rt:?}");
        let d = &e["data"];
        assert_eq!(d["pids"]["limit"], 10, "{rt:?}: {d}");
        assert_eq!(d["memory"]["usage"]["limit"], 200u64 << 20, "{rt:?}: {d}");
        seen.push(d.clone());
        rt.ok(&env, &["delete", "--force", &id]);
    }
    let (ours, mut runc) = (seen[0].clone(), seen[1].clone());
    runc.as_object_mut().unwrap().remove("cpuset");
    assert_same_shape("events --stats data", &ours, &runc);
    for (what, path) in [
        ("memory.usage", &["memory", "usage"][..]),
        ("pids", &["pids"]),
        ("cpu", &["cpu"]),
    ] {
        let at = |v: &Value| path.iter().fold(v.clone(), |v, k| v[*k].clone());
        assert_same_shape(what, &at(&ours), &at(&runc));
    }
    let keys = |v: &Value| -> Vec<String> {
        v["memory"]["raw"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(
        keys(&ours),
        keys(&runc),
        "memory.raw: memory.stat's counters"
    );
}

/// A busybox bundle of runc's default shape with sysfs and the probe: the
/// process prints lo's flags, then tries TCP to a closed port on 127.0.0.1.
fn loopback_bundle(env: &Env, name: &str) -> Bundle {
    let mut b = env.bundle(
        name,
        &[
            "sh",
            "-c",
            "cat /sys/class/net/lo/flags; /probe tcp-connect:127.0.0.1:1",
        ],
    );
    b.config["mounts"].as_array_mut().unwrap().push(serde_json::json!(
        { "destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"] }
    ));
    b.save();
    b.add_file(&probe_bin(), "/probe");
    b
}

/// lo's flags (hex, as sysfs prints them) and the probe's errno, per runtime.
fn loopback_seen(env: &Env, b: &Bundle, rt: Runtime) -> (u32, String) {
    let out = rt.run(env, &["run", "--bundle", b.path(), &unique_id("diff-lo")]);
    assert_eq!(out.status.code(), Some(0), "{rt:?}: {}", stderr_of(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let flags = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("0x"))
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .unwrap_or_else(|| panic!("{rt:?}: no lo flags in {text:?}"));
    let probe = probe_lines(&out.stdout);
    let errno = probe
        .first()
        .and_then(|p| p["errno"].as_str())
        .unwrap_or_else(|| panic!("{rt:?}: no probe answer in {text:?}"))
        .to_string();
    (flags, errno)
}

const IFF_UP: u32 = 1;

/// Under both runtimes: lo is up and a closed port refuses (`up`), or lo
/// is down and 127.0.0.1 is unreachable.
fn assert_loopback(env: &Env, b: &Bundle, up: bool) {
    let (want_flag, want_errno) = match up {
        true => (IFF_UP, "ECONNREFUSED"),
        false => (0, "ENETUNREACH"),
    };
    for rt in BOTH {
        let (flags, errno) = loopback_seen(env, b, rt);
        assert_eq!(flags & IFF_UP, want_flag, "{rt:?}: lo flags {flags:#x}");
        assert_eq!(errno, want_errno, "{rt:?}");
    }
}

#[test]
fn fresh_netns_has_loopback_up_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    assert_loopback(&env, &loopback_bundle(&env, "lo-new"), true);
}

/// With a user namespace too, runsbx joins it before the network namespace
/// (the container's root, not the host's, owns that netns).
#[test]
fn fresh_netns_in_a_user_namespace_has_loopback_up_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = loopback_bundle(&env, "lo-userns");
    b.with_userns_as_nobody();
    b.save();
    assert_loopback(&env, &b, true);
}

#[test]
fn joined_netns_keeps_its_loopback_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    // A network namespace with lo down, held by a sleeping process.
    let mut holder = Command::new("unshare")
        .args(["--net", "sleep", "100"])
        .spawn()
        .expect("spawn unshare --net");
    let ns = format!("/proc/{}/ns/net", holder.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    while fs::read_link(&ns).ok() == fs::read_link("/proc/self/ns/net").ok() {
        assert!(Instant::now() < deadline, "unshare never entered its netns");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut b = loopback_bundle(&env, "lo-joined");
    for n in b.config["linux"]["namespaces"].as_array_mut().unwrap() {
        if n["type"] == "network" {
            n["path"] = Value::from(ns.clone());
        }
    }
    b.save();
    assert_loopback(&env, &b, false);
    let _ = holder.kill();
    let _ = holder.wait();
}

/// `oom_kill_disable` in the v1 memory cgroup of a created container's init
/// (runtime-tools' "memory oom is set correctly").
fn oom_kill_disable(env: &Env, rt: Runtime, b: &Bundle, id: &str) -> String {
    rt.ok(env, &["create", "--bundle", b.path(), id]);
    let pid = rt.state(env, id)["pid"].as_i64().unwrap();
    let cgroups = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let memory = cgroups
        .lines()
        .find_map(|l| l.split_once(":memory:").map(|(_, p)| p.to_string()))
        .unwrap_or_else(|| panic!("{rt:?}: no v1 memory cgroup (this host is hybrid): {cgroups}"));
    let control = format!("/sys/fs/cgroup/memory{memory}/memory.oom_control");
    let text = fs::read_to_string(&control).unwrap();
    rt.ok(env, &["delete", "--force", id]);
    text.lines()
        .find_map(|l| l.strip_prefix("oom_kill_disable "))
        .unwrap_or_else(|| panic!("{control}: {text}"))
        .to_string()
}

#[test]
fn disable_oom_killer_is_set_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    for (disable, want) in [(true, "1"), (false, "0")] {
        let mut b = env.bundle(&format!("oom-{disable}"), &["sleep", "10"]);
        b.config["linux"]["resources"] =
            serde_json::json!({ "memory": { "limit": 67108864, "disableOOMKiller": disable } });
        b.save();
        for rt in BOTH {
            let id = unique_id("oom");
            let seen = oom_kill_disable(&env, rt, &b, &id);
            assert_eq!(seen, want, "{rt:?}, disableOOMKiller {disable}");
        }
    }
}

/// The container's own writes to its cgroup (runc spec's `ro` cgroup mount,
/// on this hybrid host the v1 hierarchies) and to a `/dev` mounted `ro`:
/// refused, and the limit the bundle set stays. With and without a cgroup
/// namespace. (Not in a user namespace: libcontainer binds the hierarchies
/// from inside it, which these hosts refuse; docs/conformance.md.)
#[test]
fn a_container_cannot_raise_its_own_cgroup_limits_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let script = "echo 77 > /sys/fs/cgroup/pids/pids.max 2>/dev/null && echo raised; \
                  echo pids.max=$(cat /sys/fs/cgroup/pids/pids.max); \
                  touch /dev/x 2>/dev/null && echo dev-written; \
                  grep -E ' /sys/fs/cgroup/[^ ]+ ' /proc/self/mountinfo | grep -v ro,nosuid,nodev,noexec; \
                  echo done";
    for variant in ["plain", "cgroupns"] {
        let mut b = env.bundle(&format!("cg-{variant}"), &["sh", "-c", script]);
        let mounts = b.config["mounts"].as_array_mut().unwrap();
        mounts[1]["options"]
            .as_array_mut()
            .unwrap()
            .push("ro".into());
        mounts.push(serde_json::json!({
            "destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
            "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]
        }));
        b.config["linux"]["resources"] = serde_json::json!({ "pids": { "limit": 50 } });
        if variant == "cgroupns" {
            b.config["linux"]["namespaces"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({ "type": "cgroup" }));
        }
        b.save();
        for rt in BOTH {
            let id = unique_id("cgro");
            let out = rt.run(&env, &["run", "--bundle", b.path(), &id]);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                stdout,
                "pids.max=50\ndone\n",
                "{rt:?}, {variant}: the container wrote its cgroup or /dev, or a cgroup \
                 hierarchy is not ro,nosuid,nodev,noexec; stderr: {}",
                stderr_of(&out)
            );
        }
    }
}

/// A namespace entry with `"path": ""` is a new namespace, as under runc
/// (libcontainer alone would open "" and fail).
#[test]
fn an_empty_namespace_path_is_a_new_namespace_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("b", &["sh", "-c", "echo $$"]);
    for n in b.config["linux"]["namespaces"].as_array_mut().unwrap() {
        n["path"] = "".into();
    }
    b.save();
    run_both_print(&env, &b, "nsempty", "1\n");
}

/// A device rule's access with a letter other than r, w, m (runc's suite
/// writes "rwa"): runc ignores the letter, runsbx too (libcgroups wrote it
/// to devices.deny, which the kernel refused).
#[test]
fn device_access_letters_are_read_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle(
        "b",
        &["sh", "-c", "head -c 1 /dev/kmsg 2>/dev/null || echo denied"],
    );
    b.config["linux"]["resources"] = serde_json::json!({ "devices": [
        { "allow": false, "access": "rwm" },
        { "allow": false, "type": "c", "major": 1, "minor": 11, "access": "rwa" }
    ]});
    b.config["linux"]["devices"] =
        serde_json::json!([{ "path": "/dev/kmsg", "type": "c", "major": 1, "minor": 11 }]);
    b.save();
    run_both_print(&env, &b, "devacc", "denied\n");
}

/// `spec` and `spec --rootless` write runc's file, byte for byte (runc
/// writes the invoking user's ids, root's here, into the rootless one).
#[test]
fn spec_writes_runcs_bytes() {
    let env = Env::new();
    for flags in [&[][..], &["--rootless"][..]] {
        let name = flags.join("");
        let (ours, theirs) = (
            env.tmp.path().join(format!("runsbx{name}")),
            env.tmp.path().join(format!("runc{name}")),
        );
        fs::create_dir_all(&ours).unwrap();
        fs::create_dir_all(&theirs).unwrap();
        let mut args = vec!["spec", "--bundle", ours.to_str().unwrap()];
        args.extend_from_slice(flags);
        env.ok(&args);
        args[2] = theirs.to_str().unwrap();
        env.runc_ok(&args);
        let read = |d: &std::path::Path| fs::read(d.join("config.json")).unwrap();
        let parsed = |d: &std::path::Path| serde_json::from_slice::<Value>(&read(d)).unwrap();
        assert_eq!(parsed(&ours), parsed(&theirs), "spec {flags:?}");
        assert!(
            read(&ours) == read(&theirs),
            "spec {flags:?}: same JSON, other bytes:\n{}\n---\n{}",
            String::from_utf8_lossy(&read(&ours)),
            String::from_utf8_lossy(&read(&theirs))
        );
    }
}

/// Under each runtime (runsbx, then runc): `run --detach` of `b`, then each
/// `exec FLAGS ID COMMAND` of `execs`, their stdout in order.
fn exec_both(env: &Env, b: &Bundle, execs: &[(&[&str], &[&str])]) -> Vec<Vec<String>> {
    BOTH.iter()
        .map(|&rt| {
            let id = unique_id("exec");
            rt.ok(env, &["run", "--detach", "--bundle", b.path(), &id]);
            let outs = execs
                .iter()
                .map(|(flags, command)| {
                    let mut all = vec!["exec"];
                    all.extend_from_slice(flags);
                    all.push(&id);
                    all.extend_from_slice(command);
                    rt.ok(env, &all)
                })
                .collect();
            rt.ok(env, &["delete", "--force", &id]);
            outs
        })
        .collect()
}

/// `exec` runs as the container's `process.user` unless `--user` says
/// otherwise (a uid alone keeps the spec's gid; `--additional-gids` adds to
/// the spec's), as runc does; libcontainer alone ran it as uid 0.
#[test]
fn exec_runs_as_the_containers_user_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("user", &["sleep", "100"]);
    b.config["process"]["user"] =
        serde_json::json!({ "uid": 1000, "gid": 1000, "additionalGids": [5] });
    b.save();
    let seen = exec_both(
        &env,
        &b,
        &[
            (&[], &["id"]),
            (&["--user", "0"], &["id"]),
            (&["--user", "2:3", "--additional-gids", "7"], &["id"]),
        ],
    );
    assert_eq!(seen[0][0], "uid=1000 gid=1000 groups=5\n");
    assert_eq!(seen[0], seen[1], "runsbx, then runc");
}

/// A capability name the runtime does not know is ignored with a warning
/// (runc 1.1 and 1.2), not a refusal of the whole bundle; nothing is granted.
#[test]
fn unknown_capabilities_are_ignored_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("b", &["sh", "-c", "grep CapBnd /proc/self/status"]);
    for set in ["bounding", "effective", "permitted"] {
        b.config["process"]["capabilities"][set] =
            serde_json::json!(["CAP_KILL", "CAP_BOGUS", "CAP_ABSENT"]);
    }
    b.save();
    // runc's line, which tools compare: each name once, sorted, unquoted.
    let want = "ignoring unknown or unavailable capabilities: [CAP_ABSENT CAP_BOGUS]";
    for stderr in run_both_print(&env, &b, "capx", "CapBnd:\t0000000000000020\n") {
        assert!(stderr.contains(want), "no warning: {stderr}");
    }
}

/// A tmpfs without `mode=` on a directory of the rootfs takes that
/// directory's mode, as under runc (the kernel's default is 1777).
#[test]
fn a_tmpfs_without_mode_keeps_its_directorys_mode_like_runc() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("b", &["stat", "-c", "%a", "/data"]);
    let data = b.dir.join("rootfs/data");
    fs::create_dir(&data).unwrap();
    fs::set_permissions(&data, fs::Permissions::from_mode(0o750)).unwrap();
    b.config["mounts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({ "destination": "/data", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"] }));
    b.save();
    run_both_print(&env, &b, "tmpfsmode", "750\n");
}

/// The device cgroup of a container whose bundle lists no device rule:
/// every device denied but runc's defaults, as under runc (runsbx left the
/// parent's `a *:* rwm`: every host device open to the container's root).
#[test]
fn device_cgroup_denies_by_default_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("b", &["sleep", "100"]);
    b.config["linux"]["resources"] = serde_json::json!({ "pids": { "limit": 64 } });
    b.save();
    let mut lists = Vec::new();
    for rt in BOTH {
        let id = unique_id("devdef");
        rt.ok(&env, &["create", "--bundle", b.path(), &id]);
        let pid = rt.state(&env, &id)["pid"].as_i64().unwrap();
        let cgroups = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
        let path = cgroups
            .lines()
            .find_map(|l| l.split_once(":devices:").map(|(_, p)| p.to_string()))
            .unwrap_or_else(|| {
                panic!("{rt:?}: no v1 devices cgroup (this host is hybrid): {cgroups}")
            });
        let list =
            fs::read_to_string(format!("/sys/fs/cgroup/devices{path}/devices.list")).unwrap();
        rt.ok(&env, &["delete", "--force", &id]);
        let mut rules: Vec<String> = list.lines().map(str::to_string).collect();
        rules.sort();
        lists.push(rules);
    }
    assert!(
        !lists[0].iter().any(|r| r == "a *:* rwm"),
        "runsbx: {:?}",
        lists[0]
    );
    // runsbx's may hold /dev/console's 5:1 too (libcontainer allows it).
    let ours: Vec<&String> = lists[0].iter().filter(|r| *r != "c 5:1 rwm").collect();
    let runc: Vec<&String> = lists[1].iter().collect();
    assert_eq!(ours, runc, "runsbx, then runc");
}

/// runc's "exec --cap [ambient is set from spec]": an inheritable capability
/// outside the permitted set and an ambient one, in `run -d` and in what
/// `exec` (and `exec --cap`) gets. libcontainer sets the sets one capset at
/// a time and failed the create with EPERM; runsbx applies them as runc.
#[test]
fn capabilities_from_the_spec_reach_exec_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("caps", &["sleep", "100"]);
    b.config["process"]["capabilities"] = serde_json::json!({
        "inheritable": ["CAP_CHOWN", "CAP_SYSLOG"],
        "permitted": ["CAP_KILL", "CAP_CHOWN"],
        "effective": ["CAP_KILL"],
        "bounding": ["CAP_KILL", "CAP_CHOWN", "CAP_SYSLOG"],
        "ambient": ["CAP_CHOWN"]
    });
    b.save();
    let status: &[&str] = &["grep", "^Cap", "/proc/self/status"];
    let seen = exec_both(
        &env,
        &b,
        &[(&[], status), (&["--cap", "CAP_SYSLOG"], status)],
    );
    // The values runc's suite expects.
    assert_eq!(
        seen[1][0],
        "CapInh:\t0000000400000001\nCapPrm:\t0000000000000021\nCapEff:\t0000000000000021\n\
         CapBnd:\t0000000400000021\nCapAmb:\t0000000000000001\n"
    );
    assert!(
        seen[1][1].contains("CapAmb:\t0000000400000001"),
        "{}",
        seen[1][1]
    );
    assert_eq!(seen[0], seen[1], "runsbx, then runc");
}

/// An ambient capability not in the inheritable set cannot be raised: runc
/// skips it and runs the rest, silently (Debian's 1.1; 1.2 warns).
#[test]
fn an_ambient_capability_that_cannot_be_raised_is_skipped_like_runc() {
    let env = Env::new();
    let _cleanup = Cleanup(&env);
    let mut b = env.bundle("amb", &["grep", "^Cap", "/proc/self/status"]);
    let both = ["CAP_KILL", "CAP_CHOWN"];
    b.config["process"]["capabilities"] = serde_json::json!({
        "bounding": both, "effective": both, "permitted": both,
        "inheritable": ["CAP_KILL"], "ambient": both
    });
    b.save();
    let want = "CapInh:\t0000000000000020\nCapPrm:\t0000000000000021\nCapEff:\t0000000000000021\n\
                CapBnd:\t0000000000000021\nCapAmb:\t0000000000000020\n";
    let stderr = run_both_print(&env, &b, "amb", want);
    assert!(!stderr[0].contains("ambient"), "runsbx: {}", stderr[0]);
}
