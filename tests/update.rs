//! `update`, `events`, and the refusal of `checkpoint` and `restore`, on
//! real containers: limits read back from the cgroup's own files, events
//! parsed as runc's JSON.

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

/// A running busybox container with `resources` (so a cgroup), started.
fn running(env: &Env, id: &str, args: &[&str], resources: Value) -> (Bundle, i64) {
    let mut b = env.bundle(&format!("b-{id}"), args);
    b.config["linux"]["resources"] = resources;
    b.save();
    env.ok(&["create", "--bundle", b.path(), id]);
    env.ok(&["start", id]);
    let pid = env.state(id)["pid"].as_i64().unwrap();
    (b, pid)
}

/// `running` of `sleep 1000` with a pids limit of 64, under a new id.
fn sleeping(env: &Env, prefix: &str) -> (String, Bundle, i64) {
    let id = unique_id(prefix);
    let res = serde_json::json!({ "pids": { "limit": 64 } });
    let (b, pid) = running(env, &id, &["sleep", "1000"], res);
    (id, b, pid)
}

/// The file of `pid`'s cgroup: `v1` in the hierarchy of `controller`, or
/// `v2` in the unified one when that controller is not on v1.
fn cgroup_file(pid: i64, controller: &str, v1: &str, v2: &str) -> PathBuf {
    let text = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (_, ctrls, path) = (f.next(), f.next().unwrap(), f.next().unwrap());
        let path = path.trim_start_matches('/');
        if ctrls.split(',').any(|c| c == controller) {
            return PathBuf::from("/sys/fs/cgroup")
                .join(ctrls)
                .join(path)
                .join(v1);
        }
    }
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .expect("no v2 line")
        .trim_start_matches('/');
    for base in ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"] {
        let p = PathBuf::from(base).join(path).join(v2);
        if p.exists() {
            return p;
        }
    }
    panic!("no {controller} file for pid {pid}: {text}");
}

fn read(p: PathBuf) -> String {
    fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .trim()
        .to_string()
}

fn memory_limit(pid: i64) -> String {
    read(cgroup_file(
        pid,
        "memory",
        "memory.limit_in_bytes",
        "memory.max",
    ))
}

fn pids_max(pid: i64) -> String {
    read(cgroup_file(pid, "pids", "pids.max", "pids.max"))
}

/// `runsbx ARGS` with `stdin` written to its standard input.
fn with_stdin(env: &Env, args: &[&str], stdin: &[u8]) -> std::process::Output {
    let mut child = env
        .cmd()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// `events --stats` of `id`, parsed.
fn stats(env: &Env, id: &str) -> Value {
    let out = env.ok(&["events", "--stats", id]);
    assert_eq!(out.lines().count(), 1, "{out}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn update_flags_change_the_cgroup_and_a_second_update_keeps_them() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let id = unique_id("upd");
    let res = serde_json::json!({ "memory": { "limit": 104857600 }, "pids": { "limit": 64 } });
    let (_b, pid) = running(&env, &id, &["sleep", "1000"], res);
    assert_eq!(memory_limit(pid), "104857600");
    env.ok(&[
        "update",
        "--memory",
        "200M",
        "--pids-limit",
        "10",
        "--cpu-period",
        "100000",
        "--cpu-quota",
        "50000",
        "--cpu-share",
        "512",
        &id,
    ]);
    assert_eq!(memory_limit(pid), (200u64 << 20).to_string());
    assert_eq!(pids_max(pid), "10");
    let quota = cgroup_file(pid, "cpu", "cpu.cfs_quota_us", "cpu.max");
    assert!(read(quota).starts_with("50000"));
    if let Ok(shares) = fs::read_to_string(cgroup_file(pid, "cpu", "cpu.shares", "cpu.weight")) {
        assert!(!shares.trim().is_empty());
    }
    // A second update changes memory only: the pids limit of the first stays,
    // in the cgroup and for the events that read it.
    env.ok(&["update", "--memory", "300MB", &id]);
    assert_eq!(memory_limit(pid), (300u64 << 20).to_string());
    assert_eq!(pids_max(pid), "10");
    let s = stats(&env, &id);
    assert_eq!(s["data"]["pids"]["limit"], 10, "{s}");
    assert_eq!(s["data"]["memory"]["usage"]["limit"], 300u64 << 20, "{s}");
    // -1 lifts a limit.
    env.ok(&["update", "--pids-limit", "-1", &id]);
    assert_eq!(pids_max(pid), "max");
    env.ok(&["delete", "--force", &id]);
}

/// containerd's shim: `update --resources -` with linux.resources on stdin
/// (go-runc writes the flag as `--resources=-`).
#[test]
fn update_resources_from_stdin() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let (id, _b, pid) = sleeping(&env, "updin");
    let json = br#"{"memory":{"limit":157286400},"pids":{"limit":33},
        "devices":[{"allow":false,"access":"rwm"}],"cpu":{"shares":1024}}"#;
    let out = with_stdin(&env, &["update", "--resources=-", &id], json);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(memory_limit(pid), "157286400");
    assert_eq!(pids_max(pid), "33");
    // The device rules were left alone: /dev/null still opens.
    env.ok(&["exec", &id, "sh", "-c", "echo x > /dev/null"]);
    // And from a file.
    let file = env.tmp.path().join("res.json");
    fs::write(&file, r#"{"pids":{"limit":34}}"#).unwrap();
    env.ok(&["update", "-r", file.to_str().unwrap(), &id]);
    assert_eq!(pids_max(pid), "34");
    assert_eq!(memory_limit(pid), "157286400");
    env.ok(&["delete", "--force", &id]);
}

#[test]
fn update_bad_input_is_one_line_and_changes_nothing() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let (id, _b, pid) = sleeping(&env, "updbad");
    let update = ["update", "--resources", "-", &id];
    assert_one_line_error(
        &with_stdin(&env, &update, b"{\"pids\":"),
        "--resources -: EOF",
    );
    assert_one_line_error(
        &with_stdin(&env, &update, br#"{"pids":{"limit":"many"}}"#),
        "pids.limit: invalid type",
    );
    assert_one_line_error(&env.run(&["update", "--memory", "lots", &id]), "--memory");
    assert_one_line_error(
        &env.run(&["update", "--l3-cache-schema", "L3:0=f", &id]),
        "Intel RDT is not supported",
    );
    // Below the usage: the kernel refuses, the old limit stays.
    env.ok(&["update", "--pids-limit", "20", &id]);
    let out = env.run(&["update", "--memory", "4K", "--pids-limit", "5", &id]);
    assert_one_line_error(&out, &format!("container \"{id}\": cgroup"));
    assert_eq!(pids_max(pid), "20", "a failed update was half applied");
    let runsbx_json = env.root.join(&id).join("runsbx.json");
    let record: Value = serde_json::from_slice(&fs::read(runsbx_json).unwrap()).unwrap();
    assert_eq!(record["resources"]["pids"]["limit"], 20, "{record}");
    assert_eq!(env.state_entries().len(), 1, "{:?}", env.state_entries());
    // Stopped: refused.
    env.ok(&["kill", &id, "KILL"]);
    env.wait_status(&id, "stopped");
    assert_one_line_error(
        &env.run(&["update", "--pids-limit", "3", &id]),
        "is stopped",
    );
    env.ok(&["delete", &id]);
}

/// A foreground run of a bundle without resources has no cgroup: update
/// and events say so instead of writing somewhere else.
#[test]
fn update_and_events_refuse_a_container_without_a_cgroup() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let nodev = env.nodev_dir();
    let b = Bundle::busybox(&nodev.path().join("b"), &["sleep", "1000"]);
    let id = unique_id("updfree");
    let mut run = env.spawn_run(b.path(), &id);
    let out = env.run(&["update", "--memory", "100M", &id]);
    assert_one_line_error(&out, "has no cgroup to apply resources to");
    let out = env.run(&["events", "--stats", &id]);
    assert_one_line_error(&out, "has no cgroup to read statistics from");
    env.ok(&["kill", &id, "KILL"]);
    run.wait().unwrap();
}

#[test]
fn events_stats_prints_runcs_shape() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let (id, _, _) = sleeping(&env, "evs");
    let s = stats(&env, &id);
    assert_eq!(s["type"], "stats");
    assert_eq!(s["id"], id.as_str());
    let d = &s["data"];
    assert!(d["memory"]["usage"]["usage"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(d["pids"]["current"], 1, "{s}");
    assert_eq!(d["pids"]["limit"], 64, "{s}");
    for key in ["cpu", "memory", "pids", "blkio", "hugetlb", "intel_rdt"] {
        assert!(d.get(key).is_some(), "no {key}: {s}");
    }
    assert!(d["cpu"]["usage"].get("kernel").is_some(), "{s}");
    env.ok(&["delete", "--force", &id]);
}

/// Without --stats: a stats line every interval until the container
/// exits, then events exits 0; each OOM kill is an `oom` line.
#[test]
fn events_stream_until_the_container_stops_with_oom() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let id = unique_id("evo");
    // 60 MB into a shell variable under a 20 MB limit: the kernel kills sh.
    let script = "sleep 1; a=$(head -c 60000000 /dev/urandom); sleep 100";
    let res = serde_json::json!({ "memory": { "limit": 20000000 } });
    running(&env, &id, &["sh", "-c", script], res);
    let started = Instant::now();
    let out = env.run(&["events", "--interval", "200ms", &id]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(started.elapsed() < Duration::from_secs(20));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert!(
        kinds.iter().filter(|k| **k == "stats").count() >= 2,
        "{kinds:?}"
    );
    // One `oom` per kill: the kernel may kill both sh and head.
    assert!(kinds.contains(&"oom"), "{kinds:?}");
    assert!(lines.iter().all(|l| l["id"] == id.as_str()));
    assert_eq!(env.state(&id)["status"], "stopped");
    env.ok(&["delete", &id]);
}

/// podman probes `checkpoint --help`, then sends this argv: the refusal is
/// one line and the container runs on untouched.
#[test]
fn checkpoint_and_restore_are_refused() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let (id, b, _) = sleeping(&env, "ckpt");
    env.ok(&["checkpoint", "--help"]);
    let img = env.tmp.path().join("checkpoint");
    let img = img.to_str().unwrap();
    let out = env.run(&[
        "checkpoint",
        "--image-path",
        img,
        "--work-path",
        b.path(),
        "--leave-running",
        "--tcp-established",
        "--file-locks",
        &id,
    ]);
    assert_one_line_error(&out, "checkpoint and restore are not supported");
    assert!(stderr_of(&out).contains("Landlock"));
    assert_eq!(env.state(&id)["status"], "running");
    assert!(!std::path::Path::new(img).exists());
    let out = env.run(&[
        "restore",
        "--bundle",
        b.path(),
        "--image-path",
        img,
        "--work-path",
        b.path(),
        "--pid-file",
        "/nonexistent/pid",
        "--detach",
        &id,
    ]);
    assert_one_line_error(&out, "restore refused");
    let features: Value = serde_json::from_str(&env.ok(&["features"])).unwrap();
    assert_eq!(
        features["annotations"]["run.sbx.checkpoint.supported"],
        "false"
    );
    env.ok(&["delete", "--force", &id]);
}

/// CFS and RT period/runtime pairs changed in both directions: each pair is
/// written in an order the kernel accepts (an RT runtime above the old
/// period was refused with EINVAL), as runc's update does.
#[test]
fn update_cpu_pairs_in_either_direction() {
    let env = Env::new();
    let (id, _b, pid) = sleeping(&env, "cpupair");
    let file = |name: &str| read(cgroup_file(pid, "cpu", name, name));
    for (period, runtime) in [
        ("500000", "400000"),
        ("900000", "800000"),
        ("300000", "200000"),
    ] {
        env.ok(&[
            "update",
            "--cpu-rt-period",
            period,
            "--cpu-rt-runtime",
            runtime,
            &id,
        ]);
        assert_eq!(
            (file("cpu.rt_period_us"), file("cpu.rt_runtime_us")),
            (period.into(), runtime.into())
        );
    }
    for (period, quota) in [("10000", "5000"), ("100000", "200000"), ("20000", "10000")] {
        env.ok(&["update", "--cpu-period", period, "--cpu-quota", quota, &id]);
        assert_eq!(
            (file("cpu.cfs_period_us"), file("cpu.cfs_quota_us")),
            (period.into(), quota.into())
        );
    }
    // runc 1.2's --cpu-burst, alone (libcgroups skips a burst without
    // another cpu value), kept by a later update of something else.
    env.ok(&["update", "--cpu-burst", "5000", &id]);
    assert_eq!(file("cpu.cfs_burst_us"), "5000");
    env.ok(&["update", "--pids-limit", "40", &id]);
    assert_eq!(file("cpu.cfs_burst_us"), "5000");
    env.ok(&["delete", "--force", &id]);
}

/// runc 1.2's "update cgroup cpu.idle": `--resources` and `--cpu-idle` set
/// and clear SCHED_IDLE; a value the kernel does not take is refused in one
/// line and changes nothing; an update of something else keeps it.
#[test]
fn update_cpu_idle_like_runc() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let (id, _b, pid) = sleeping(&env, "cpuidle");
    let idle = || read(cgroup_file(pid, "cpu", "cpu.idle", "cpu.idle"));
    assert_eq!(idle(), "0");
    for v in ["1", "0", "1"] {
        let json = format!(r#"{{"cpu": {{"idle": {v}}}}}"#);
        let out = with_stdin(&env, &["update", "-r", "-", &id], json.as_bytes());
        assert!(out.status.success(), "{}", stderr_of(&out));
        assert_eq!(idle(), v, "--resources idle {v}");
    }
    for v in ["1", "0", "1"] {
        env.ok(&["update", "--cpu-idle", v, &id]);
        assert_eq!(idle(), v, "--cpu-idle {v}");
    }
    for v in ["-1", "2", "3"] {
        assert_one_line_error(
            &env.run(&["update", "--cpu-idle", v, &id]),
            &format!("--cpu-idle {v}: must be 0 or 1"),
        );
        assert_eq!(idle(), "1", "--cpu-idle {v}");
    }
    assert_one_line_error(
        &with_stdin(
            &env,
            &["update", "-r", "-", &id],
            br#"{"cpu": {"idle": 2}}"#,
        ),
        "--resources -: cpu.idle 2: must be 0 or 1",
    );
    env.ok(&["update", "--cpu-period", "10000", &id]);
    assert_eq!(idle(), "1", "another update cleared cpu.idle");
}

/// runc 1.2's "update cgroup cpu.idle" with the suite's cpu shares in the
/// container's resources: the kernel refuses a shares (v2: weight) write
/// with EINVAL while the group is idle, and runsbx's update rewrites the
/// recorded shares each time. Going back to 0, and setting 1 again while
/// already idle, failed; back at 0 the recorded shares are the group's
/// again (the kernel resets them when idle is cleared).
#[test]
fn update_cpu_idle_with_shares_goes_both_ways() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let id = unique_id("idleshares");
    let res = serde_json::json!({
        "cpu": { "shares": 100, "quota": 500000, "period": 1000000 },
        "pids": { "limit": 64 }
    });
    let (_b, pid) = running(&env, &id, &["sleep", "1000"], res);
    let idle = || read(cgroup_file(pid, "cpu", "cpu.idle", "cpu.idle"));
    let shares = || read(cgroup_file(pid, "cpu", "cpu.shares", "cpu.weight"));
    let created = shares();
    assert_eq!(idle(), "0");
    for v in ["1", "1", "0", "1", "0"] {
        let json = format!(r#"{{"cpu": {{"idle": {v}}}}}"#);
        let out = with_stdin(&env, &["update", "-r", "-", &id], json.as_bytes());
        assert!(out.status.success(), "-r idle {v}: {}", stderr_of(&out));
        assert_eq!(idle(), v, "--resources idle {v}");
    }
    for v in ["1", "1", "0"] {
        let out = env.run(&["update", "--cpu-idle", v, &id]);
        assert!(out.status.success(), "--cpu-idle {v}: {}", stderr_of(&out));
        assert_eq!(idle(), v, "--cpu-idle {v}");
    }
    assert_eq!(shares(), created, "the recorded shares after leaving idle");
    // A shares change while idle is kept for when the group leaves it.
    env.ok(&["update", "--cpu-idle", "1", &id]);
    env.ok(&["update", "--cpu-share", "200", &id]);
    assert_eq!(idle(), "1");
    env.ok(&["update", "--cpu-idle", "0", &id]);
    assert_ne!(shares(), created, "--cpu-share 200 given while idle");
    env.ok(&["delete", "--force", &id]);
}

/// runc 1.2's "update cpu burst": a burst of 0 is written (it was taken for
/// "unchanged" and the old burst stayed), from the flag and from
/// `--resources`, and kept by a later update of something else.
#[test]
fn update_cpu_burst_back_to_zero() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let id = unique_id("burst0");
    let res = serde_json::json!({
        "cpu": { "quota": 500000, "period": 1000000 },
        "pids": { "limit": 64 }
    });
    let (_b, pid) = running(&env, &id, &["sleep", "1000"], res);
    let burst = || read(cgroup_file(pid, "cpu", "cpu.cfs_burst_us", "cpu.max.burst"));
    let set = |b: &str| {
        env.ok(&["update", "--cpu-period", "900000", "--cpu-burst", b, &id]);
    };
    set("500000");
    assert_eq!(burst(), "500000");
    set("0");
    assert_eq!(burst(), "0", "--cpu-burst 0");
    env.ok(&["update", "--pids-limit", "40", &id]);
    assert_eq!(burst(), "0", "kept by another update");
    set("500000");
    let out = with_stdin(
        &env,
        &["update", "-r", "-", &id],
        br#"{"cpu": {"burst": 0}}"#,
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(burst(), "0", "--resources burst 0");
    env.ok(&["delete", "--force", &id]);
}
