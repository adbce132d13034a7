//! Faults: runsbx killed half-way, workloads that die at awkward moments, a
//! state root that cannot be written, a PID recycled by a stranger. After
//! each, `delete --force` and `list` must recover and nothing may be left:
//! no state dir, no cgroup, no process.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// One test at a time: hack/soak compares machine-wide counts (mounts,
/// cgroups, zombies) before and after, which the other tests here change.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every process in a cgroup named after `id`, in any hierarchy.
fn cgroup_pids(id: &str) -> Vec<i32> {
    let mut pids: Vec<i32> = cgroups_named(id)
        .iter()
        .filter_map(|d| fs::read_to_string(d.join("cgroup.procs")).ok())
        .flat_map(|t| {
            t.lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Live (not zombie) processes whose command line mentions `id`, but for
/// this test's own.
fn live_pids_mentioning(id: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(rd) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me && pid_alive(pid))
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == id.as_bytes()))
        })
        .collect()
}

/// Nothing of `id` left: no entry under the state root (the discovery cache
/// aside), no cgroup, no process.
fn assert_gone(env: &Env, id: &str, context: &str) {
    let left = env.state_entries();
    assert!(left.is_empty(), "{context}: state left behind: {left:?}");
    // A container without a cgroup (a foreground run needs none) has no
    // cgroup to look in: its init still carries runsbx's command line, with
    // the id, until it execs the workload. An init orphaned by a `run`
    // killed mid-create goes on with its setup until the executor sees its
    // parent gone and exits, which can be after `delete --force` returned:
    // give it a while, so that only a process that stays is a leak.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (in_cgroup, named, cgroups) =
            (cgroup_pids(id), live_pids_mentioning(id), cgroups_named(id));
        if in_cgroup.is_empty() && named.is_empty() && cgroups.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{context}: left after 10 s: processes {in_cgroup:?} {named:?}, cgroups {cgroups:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let list = env.ok(&["list", "--format", "json"]);
    assert!(!list.contains(id), "{context}: list still shows it: {list}");
}

/// Runs `runsbx ARGS` and SIGKILLs it after `delay`.
fn kill_after(env: &Env, args: &[&str], delay: Duration) {
    let mut child = env.spawn_quiet(args);
    std::thread::sleep(delay);
    let _ = child.kill();
    child.wait().unwrap();
}

/// SIGKILL at a spread of moments during `create` and `run`; whatever the
/// moment, `delete --force` then `list` leave nothing behind.
#[test]
fn sigkill_during_create_and_run() {
    let _serial = serial();
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    // The moments are fractions of how long a create takes here (a debug
    // binary under load: 100 to 400 ms), from before the bundle is read to
    // after init is forked and, for `run`, started.
    let probe = unique_id("timing");
    let t0 = Instant::now();
    env.ok(&["create", "--bundle", b.path(), &probe]);
    let full = t0.elapsed();
    env.ok(&["delete", "--force", &probe]);
    let steps = 16;
    for verb in ["create", "run"] {
        for n in 0..=steps {
            let delay = full.mul_f64(1.5 * n as f64 / steps as f64);
            let id = unique_id(&format!("kill{verb}"));
            let context = format!("{verb} killed after {delay:?} (create takes {full:?})");
            kill_after(&env, &[verb, "--bundle", b.path(), &id], delay);
            let out = env.run(&["delete", "--force", &id]);
            assert!(
                out.status.success(),
                "{context}: delete --force failed: {}",
                stderr_of(&out)
            );
            assert_gone(&env, &id, &context);
            if n % 4 == 0 {
                // The id is usable again.
                env.ok(&["create", "--bundle", b.path(), &id]);
                env.ok(&["delete", "--force", &id]);
                assert_gone(&env, &id, &format!("{context}, recreated"));
            }
        }
    }
}

/// SIGKILL to runsbx just after libcontainer forked its intermediate process
/// (the moment sigkill_during_create_and_run hits only now and then): the
/// orphans must not outlive `delete --force`. Before, the intermediate went
/// on to make the cgroups after delete had removed them, and init then
/// waited for ever on a channel to its dead parent, holding them.
#[test]
fn delete_force_stops_what_a_create_killed_after_its_fork_left() {
    let _serial = serial();
    let env = Env::new();
    let mut limited = env.bundle("limited", &["sleep", "100"]);
    limited.config["linux"]["resources"] = serde_json::json!({ "pids": { "limit": 64 } });
    limited.save();
    let plain = env.bundle("plain", &["sleep", "100"]);
    for (verb, b) in [("create", &limited), ("run", &limited), ("run", &plain)] {
        for n in 0..15 {
            let id = unique_id(&format!("fork{verb}"));
            let mut child = env.spawn_quiet(&[verb, "--bundle", b.path(), &id]);
            // Spread over the intermediate's short life.
            kill_after_its_fork(&mut child, Duration::from_micros(300 * (n % 5)));
            let context = format!("{verb} of {} killed after its fork", b.path());
            if n % 3 == 1 {
                // A retried create fails, and leaves the way to the
                // orphans (the dead create's lock file) in place.
                let out = env.run(&["create", "--bundle", b.path(), &id]);
                assert!(!out.status.success(), "{context}: a second create ran");
            }
            // A plain delete too: a killed create's state reads `creating`.
            let out = match n % 3 {
                2 => env.run(&["delete", &id]),
                _ => env.run(&["delete", "--force", &id]),
            };
            assert!(out.status.success(), "{context}: {}", stderr_of(&out));
            assert_gone(&env, &id, &context);
        }
    }
}

/// The report FIFO of a detached create killed before it committed (a
/// window of a few ms) is removed by the next create of that id, not only by
/// `delete --force`.
#[test]
fn create_removes_the_report_of_a_killed_create() {
    let _serial = serial();
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    let id = unique_id("stalerep");
    // What the killed create left: `.<id>.report`.
    // 0700 whatever the umask: runsbx refuses a root others may write.
    std::os::unix::fs::DirBuilderExt::mode(&mut fs::DirBuilder::new(), 0o700)
        .create(&env.root)
        .unwrap();
    let stale = env.root.join(format!(".{id}.report"));
    nix::unistd::mkfifo(&stale, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    env.ok(&["create", "--bundle", b.path(), &id]);
    let left = stale.exists();
    env.ok(&["delete", "--force", &id]);
    assert!(
        !left,
        "{} is still there after a create of {id}",
        stale.display()
    );
    assert_gone(&env, &id, "create after a killed create");
}

/// Ids may hold dots and digits: `delete --force a` while `create a.123`
/// runs must not take `.a.123.report`, the create's live report FIFO, for
/// something of `a`'s (issue 31: the old per-pid report name
/// `.<id>.<pid>.report` read it as a report of `a` by pid 123). The create,
/// held in a createRuntime hook, goes on, and the container starts.
#[test]
fn delete_force_of_an_id_leaves_a_longer_ids_create_alone() {
    let _serial = serial();
    let env = Env::new();
    let mut b = env.bundle("b", &["true"]);
    let base = unique_id("dot");
    let id = format!("{base}.123");
    let held = env.tmp.path().join("held");
    let go = env.tmp.path().join("go");
    let script = format!(
        "touch {held}; while [ ! -e {go} ]; do sleep 0.05; done",
        held = held.display(),
        go = go.display()
    );
    b.config["hooks"] = serde_json::json!({
        "createRuntime": [{ "path": "/bin/sh", "args": ["sh", "-c", script] }]
    });
    b.save();
    // stderr to a file: init, waiting for its start, keeps what create
    // was given open.
    let err = env.tmp.path().join("create.err");
    let mut create = env
        .cmd()
        .args(["create", "--bundle", b.path(), &id])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !held.exists() {
        assert!(
            Instant::now() < deadline,
            "the createRuntime hook did not run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let report = env.root.join(format!(".{id}.report"));
    let during = report.exists();
    env.ok(&["delete", "--force", &base]);
    let after_delete = report.exists();
    fs::write(&go, "").unwrap();
    let created = create.wait().unwrap().success();
    let started = created && env.run(&["start", &id]).status.success();
    let _ = env.run(&["delete", "--force", &id]);
    assert!(
        during,
        "{} was not there while the create ran",
        report.display()
    );
    assert!(
        after_delete,
        "delete --force {base} removed {}",
        report.display()
    );
    assert!(
        created,
        "create {id}: {}",
        fs::read_to_string(&err).unwrap_or_default()
    );
    assert!(started, "start {id} after the delete of {base}");
    assert_gone(&env, &id, "create held while a shorter id was deleted");
}

/// A workload that is gone by the time `start` returns: stopped, and
/// deleted without --force.
#[test]
fn workload_exits_during_start() {
    let _serial = serial();
    let env = Env::new();
    let b = env.bundle("b", &["true"]);
    let id = unique_id("quick");
    env.ok(&["create", "--bundle", b.path(), &id]);
    env.ok(&["start", &id]);
    let s = env.wait_status(&id, "stopped");
    assert_eq!(s["pid"], 0, "a stopped container has no pid: {s}");
    env.ok(&["delete", &id]);
    assert_gone(&env, &id, "true");
}

/// init killed while the container waits for `start`: `start` fails in one
/// line, the container reads as stopped, and a plain delete cleans up.
#[test]
fn init_dies_before_exec() {
    let _serial = serial();
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    let id = unique_id("initdead");
    env.ok(&["create", "--bundle", b.path(), &id]);
    let pid = env.state(&id)["pid"].as_i64().unwrap() as i32;
    kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while pid_alive(pid) {
        assert!(Instant::now() < deadline, "init {pid} survived SIGKILL");
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = env.run(&["start", &id]);
    assert_one_line_error(&out, "stopped");
    assert_eq!(env.state(&id)["status"], "stopped");
    env.ok(&["delete", &id]);
    assert_gone(&env, &id, "init killed before start");
}

/// A state root on a read-only mount: `create` fails in one line and
/// leaves no cgroup or process.
#[test]
fn read_only_state_root() {
    let _serial = serial();
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    let ro = env.tmp.path().join("ro");
    fs::create_dir(&ro).unwrap();
    let _mount = Mount::tmpfs(&ro, "ro,size=64k,mode=0700");
    let id = unique_id("rostate");
    let out = run_with_root(&env, &ro, &["create", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, "Read-only file system");
    assert!(fs::read_dir(&ro).unwrap().next().is_none());
    assert!(cgroups_named(&id).is_empty(), "{:?}", cgroups_named(&id));

    // A root below it, which cannot be made.
    let out = run_with_root(
        &env,
        &ro.join("state"),
        &["create", "--bundle", b.path(), &id],
    );
    assert_one_line_error(&out, "state root");
    assert!(cgroups_named(&id).is_empty(), "{:?}", cgroups_named(&id));
}

/// A state root with no room: `create` fails in one line and leaves
/// nothing, and the root works again once there is room.
#[test]
fn full_state_root() {
    let _serial = serial();
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    let root = env.tmp.path().join("full");
    fs::create_dir(&root).unwrap();
    let _mount = Mount::tmpfs(&root, "size=64k,nr_inodes=64,mode=0700");
    // Fill it: one file takes every block.
    let filler = root.join(".filler");
    let _ = fs::write(&filler, vec![0u8; 128 << 10]);
    let err = fs::write(root.join(".probe"), [0u8; 4096]).unwrap_err();
    assert_eq!(
        err.raw_os_error(),
        Some(libc::ENOSPC),
        "the root is not full: {err}"
    );
    let _ = fs::remove_file(root.join(".probe"));
    let id = unique_id("full");
    let run = |args: &[&str]| run_with_root(&env, &root, args);
    let out = run(&["create", "--bundle", b.path(), &id]);
    assert_one_line_error(&out, "No space left on device");
    let left: Vec<_> = fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != ".filler")
        .collect();
    assert!(left.is_empty(), "left in the full root: {left:?}");
    assert!(cgroup_pids(&id).is_empty(), "{:?}", cgroup_pids(&id));
    assert!(cgroups_named(&id).is_empty(), "{:?}", cgroups_named(&id));

    fs::remove_file(&filler).unwrap();
    let out = run(&["create", "--bundle", b.path(), &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["delete", "--force", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(cgroups_named(&id).is_empty(), "{:?}", cgroups_named(&id));
}

/// The container's PID now belongs to a stranger (a host `sleep`): `state`
/// says stopped, since the start time differs, and neither `kill` nor
/// `delete --force` touches the stranger.
#[test]
fn recycled_pid_is_not_the_container() {
    let _serial = serial();
    let env = Env::new();
    let b = env.bundle("b", &["sleep", "100"]);
    let id = unique_id("recycled");
    env.ok(&["create", "--bundle", b.path(), &id]);
    env.ok(&["start", &id]);
    let pid = env.state(&id)["pid"].as_i64().unwrap() as i32;
    kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while pid_alive(pid) {
        assert!(Instant::now() < deadline, "{pid} survived SIGKILL");
        std::thread::sleep(Duration::from_millis(10));
    }

    let mut stranger = Command::new("sleep").arg("100").spawn().unwrap();
    let spid = stranger.id() as i32;
    let path = env.root.join(&id).join("state.json");
    let mut state: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    state["pid"] = spid.into();
    state["status"] = "running".into();
    fs::write(&path, serde_json::to_vec(&state).unwrap()).unwrap();

    let s = env.state(&id);
    assert_eq!(s["status"], "stopped", "a recycled pid looks alive: {s}");
    assert_eq!(s["pid"], 0, "{s}");
    let out = env.run(&["kill", &id, "KILL"]);
    assert_one_line_error(&out, "stopped");
    let list = env.ok(&["list", "--format", "json"]);
    assert!(list.contains("\"stopped\""), "{list}");
    env.ok(&["delete", "--force", &id]);
    assert!(pid_alive(spid), "delete --force killed the stranger {spid}");
    assert_gone(&env, &id, "recycled pid");
    stranger.kill().unwrap();
    stranger.wait().unwrap();
}

/// hack/soak, short: 20 sandbox runs, two at a time, nothing leaked.
#[test]
fn soak_short() {
    let _serial = serial();
    require_root();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Output to a file: a leaked container would hold a pipe open forever.
    let log = tempfile::NamedTempFile::new().unwrap();
    let status = Command::new(repo.join("hack/soak"))
        .args(["--runs", "20", "--parallel", "2"])
        .env("RUNSBX", runsbx_bin())
        .stdin(Stdio::null())
        .stdout(log.reopen().unwrap())
        .stderr(log.reopen().unwrap())
        .status()
        .expect("spawn hack/soak");
    assert!(
        status.success(),
        "hack/soak failed ({status:?}):\n{}",
        fs::read_to_string(log.path()).unwrap()
    );
}

/// `runsbx --root ROOT ARGS`, output to files as in [`Env::run`]: a
/// container that survives would hold a pipe open forever.
fn run_with_root(env: &Env, root: &Path, args: &[&str]) -> std::process::Output {
    let out_path = env.tmp.path().join("root.out");
    let err_path = env.tmp.path().join("root.err");
    let status = Command::new(runsbx_bin())
        .arg("--root")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
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

/// A tmpfs mounted for the length of a test.
struct Mount(std::path::PathBuf);

impl Mount {
    fn tmpfs(at: &Path, options: &str) -> Self {
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(at)
            .status()
            .unwrap();
        assert!(st.success(), "mount tmpfs on {}", at.display());
        Self(at.to_path_buf())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A workload that builds a directory tree 6,000 characters deep in its
/// private workdir (too long for any path): the removal walks it by
/// directory fds, and nothing is left in TMPDIR.
#[test]
fn a_private_workdir_deeper_than_a_path_is_removed() {
    let env = Env::new();
    let tmp = env.traversable_tmpdir();
    let code = "import os\nfor _ in range(3000):\n    os.mkdir('d'); os.chdir('d')\n\
                open('f', 'w').write('x')\nprint('deep')";
    let out = env
        .cmd()
        .env("TMPDIR", &tmp)
        .args(["sandbox", "--", "python3", "-c", code])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "deep\n");
    assert!(!stderr_of(&out).contains("leaving"), "{}", stderr_of(&out));
    assert_tmpdir_empty(&tmp);
}
