//! Supervision: the workload's PID, the RSS ceiling, the wall-clock
//! timeout, cgroup limits, the outcome report, fd hygiene and `selftest`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

fn report(env: &Env, flags: &[&str], cmd: &[&str]) -> (Option<i32>, Value) {
    let path = env
        .tmp
        .path()
        .join(format!("report-{}.json", unique_id("r")));
    let mut args = vec!["sandbox", "--report", path.to_str().unwrap()];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend_from_slice(cmd);
    let out = env.run(&args);
    let text = fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("no report ({e}): {}", stderr_of(&out)));
    (out.status.code(), serde_json::from_str(&text).unwrap())
}

const MIB: u64 = 1 << 20;

#[test]
fn rss_limit_kills_and_reports() {
    let env = Env::new();
    // 8 MiB every 100 ms: one step between two 10 ms polls, with room for
    // a poll delayed by a loaded machine.
    let code = "import time\nx = []\nwhile True:\n    x.append(b'x' * (8 << 20)); time.sleep(0.1)";
    let (status, r) = report(&env, &["--rss-limit", "64M"], &["python3", "-c", code]);
    assert_eq!(status, Some(137), "{r}");
    assert_eq!(r["reason"], "rss-limit", "{r}");
    let peak = r["peak_rss_bytes"].as_u64().unwrap();
    assert!(peak > 64 * MIB, "peak {peak} not above the limit");
    assert!(
        peak < 64 * MIB + 2 * 8 * MIB,
        "peak {peak} beyond limit + one poll's growth"
    );
}

/// With a cgroup (`--memory`), the limit kills at once: no freeze first,
/// which a task inside one long `mmap(MAP_POPULATE)` would hold up until
/// the call returned (a 256 MiB limit once let 2 GiB through). The bound,
/// the limit + 128 MiB, is about ten 10 ms polls of populate speed here
/// (about 1.2 GiB/s; new runs peak near 280 MiB), so a delayed poll does
/// not make it flaky, while the freezing kill measured 460 MiB to 1.3 GiB.
#[test]
fn rss_limit_kills_a_long_populate_at_once_with_a_cgroup() {
    let env = Env::new();
    let code = "import mmap\nm = mmap.mmap(-1, 2 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)\nprint('populated')";
    let (status, r) = report(
        &env,
        &["--rss-limit", "256M", "--memory", "4G"],
        &["python3", "-c", code],
    );
    assert_eq!(status, Some(137), "{r}");
    assert_eq!(r["reason"], "rss-limit", "{r}");
    let peak = r["peak_rss_bytes"].as_u64().unwrap();
    assert!(peak > 256 * MIB, "peak {peak} not above the limit");
    assert!(
        peak < 384 * MIB,
        "peak {} MiB: the kill waited for the populate",
        peak / MIB
    );
}

#[test]
fn timeout_kills_within_the_documented_slack() {
    let env = Env::new();
    let (status, r) = report(
        &env,
        &["--timeout", "500ms"],
        &["python3", "-c", "import time; time.sleep(30)"],
    );
    assert_eq!(status, Some(137), "{r}");
    assert_eq!(r["reason"], "timeout");
    let wall = r["wall_ms"].as_u64().unwrap();
    // Slack: the start-up of the sandbox (counted in wall) plus one 100 ms tick.
    assert!((500..3000).contains(&wall), "wall {wall} ms");
}

#[test]
fn memory_limit_leads_to_oom() {
    let env = Env::new();
    let (status, r) = report(
        &env,
        &["--memory", "48M"],
        &["python3", "-c", "x = bytearray(300 << 20)"],
    );
    assert_eq!(status, Some(137), "{r}");
    assert_eq!(r["reason"], "oom", "{r}");
}

#[test]
fn pids_limit_contains_a_thread_bomb() {
    let env = Env::new();
    // fork is refused by seccomp; threads are what the workload can multiply.
    let code = "import threading, time\nn = 0\ntry:\n    while n < 200:\n        threading.Thread(target=time.sleep, args=(5,), daemon=True).start(); n += 1\nexcept RuntimeError:\n    pass\nprint(n)";
    let out = env.run(&["sandbox", "--pids-limit", "16", "--", "python3", "-c", code]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let n: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(n < 16, "{n} threads started under a limit of 16");
}

#[test]
fn outcome_of_a_normal_exit() {
    let env = Env::new();
    let (status, r) = report(&env, &[], &["python3", "-c", "import sys; sys.exit(3)"]);
    assert_eq!(status, Some(3));
    assert_eq!(r["reason"], "exited");
    assert_eq!(r["exit_code"], 3);
    assert!(r["pid"].as_i64().unwrap() > 0);
    assert!(r["cpu_user_ms"].is_u64() && r["wall_ms"].is_u64());
}

#[test]
fn the_reported_pid_is_the_workload_and_its_rss_grows() {
    let env = Env::new();
    let status_path = env.tmp.path().join("status");
    let status_file = fs::File::create(&status_path).unwrap();
    let code = "import sys\nsys.stdin.readline()\nx = b'y' * (64 << 20)\nprint('grown', flush=True)\nsys.stdin.readline()";
    let mut child = env
        .cmd()
        .args(["sandbox", "--status-fd", "3", "--", "python3", "-c", code])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .fd3(status_file)
        .spawn()
        .unwrap();
    let pid = wait_for_start(&status_path);
    let exe = fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    assert!(exe.to_string_lossy().contains("python3"), "{exe:?}");
    let before = vm_rss(pid);
    use std::io::{BufRead, Write};
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "grown\n");
    let after = vm_rss(pid);
    assert!(after > before + 60 * MIB, "VmRSS {before} -> {after}");
    stdin.write_all(b"done\n").unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let lines = fs::read_to_string(&status_path).unwrap();
    let last: Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "exit");
    assert_eq!(last["pid"], pid);
}

/// A workload imitating runsbx's own failure (its error line, exit 125)
/// still reads as `exited` with a `start` event, while a real set-up
/// failure is `setup-failed` with no `start` (docs/supervising.md).
#[test]
fn a_fake_setup_failure_is_told_apart_from_a_real_one() {
    let env = Env::new();
    let run = |flags: &[&str]| {
        let status_path = env.tmp.path().join(unique_id("status"));
        let report_path = env.tmp.path().join(unique_id("report"));
        let mut args = vec![
            "sandbox",
            "--status-fd",
            "3",
            "--report",
            report_path.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        args.extend_from_slice(&[
            "--",
            "python3",
            "-c",
            "import sys; print('runsbx: sandbox: failed to prepare rootfs', file=sys.stderr); sys.exit(125)",
        ]);
        let out = env.run_cmd(
            env.cmd()
                .args(&args)
                .fd3(fs::File::create(&status_path).unwrap()),
        );
        let lines: Vec<Value> = fs::read_to_string(&status_path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let report: Value = serde_json::from_slice(&fs::read(&report_path).unwrap()).unwrap();
        (out, lines, report)
    };
    let (out, lines, report) = run(&[]);
    assert_eq!(out.status.code(), Some(125));
    assert!(stderr_of(&out).contains("runsbx: sandbox: failed to prepare rootfs"));
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["event"], "start");
    assert_eq!(lines[1]["event"], "exit");
    assert_eq!(lines[1]["reason"], "exited");
    assert_eq!(lines[1]["exit_code"], 125);
    assert_eq!(report["reason"], "exited");
    assert_eq!(report["exit_code"], 125);

    // A real one: the rlimit leaves init too few descriptors to set up.
    let (out, lines, report) = run(&["--rlimit", "NOFILE=2"]);
    assert_eq!(out.status.code(), Some(125));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["event"], "exit");
    assert_eq!(lines[0]["reason"], "setup-failed");
    assert!(lines[0].get("exit_code").is_none(), "{lines:?}");
    assert_eq!(report["reason"], "setup-failed");
}

/// The workload shares runsbx's stdio file descriptions: flags it sets on
/// them (O_NONBLOCK on stdin, O_APPEND cleared on a log) are put back
/// when the run ends.
#[test]
fn stdio_flags_are_restored_after_the_run() {
    use std::os::fd::AsRawFd;
    let env = Env::new();
    let getfl = |fd: i32| nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL).unwrap();
    let (r, _w) = nix::unistd::pipe().unwrap();
    let log_path = env.tmp.path().join("log");
    let log = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&log_path)
        .unwrap();
    let stdin_before = getfl(r.as_raw_fd());
    let log_before = getfl(log.as_raw_fd());
    assert_eq!(log_before & libc::O_APPEND, libc::O_APPEND);
    let code = "import fcntl, os\n\
        fcntl.fcntl(0, fcntl.F_SETFL, fcntl.fcntl(0, fcntl.F_GETFL) | os.O_NONBLOCK)\n\
        fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) & ~os.O_APPEND)\n\
        print('changed', fcntl.fcntl(0, fcntl.F_GETFL) & os.O_NONBLOCK != 0, fcntl.fcntl(1, fcntl.F_GETFL) & os.O_APPEND == 0, flush=True)";
    let status = env
        .cmd()
        .args(["sandbox", "--", "python3", "-c", code])
        .stdin(Stdio::from(r.try_clone().unwrap()))
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .status()
        .unwrap();
    assert!(status.success());
    // The workload really changed them, through the shared descriptions.
    assert_eq!(
        fs::read_to_string(&log_path).unwrap(),
        "changed True True\n"
    );
    assert_eq!(getfl(r.as_raw_fd()), stdin_before, "stdin flags");
    assert_eq!(getfl(log.as_raw_fd()), log_before, "log flags");
}

fn wait_for_start(path: &Path) -> i32 {
    for _ in 0..500 {
        // Only a whole line counts: the test may read while runsbx writes.
        if let Some(first) = fs::read_to_string(path)
            .ok()
            .and_then(|t| t.split_inclusive('\n').next().map(String::from))
            .filter(|l| l.ends_with('\n'))
        {
            let v: Value = serde_json::from_str(&first).unwrap();
            assert_eq!(v["event"], "start");
            return v["pid"].as_i64().unwrap() as i32;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no start event on the status fd");
}

fn vm_rss(pid: i32) -> u64 {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    kib * 1024
}

trait Fd3 {
    fn fd3(&mut self, f: fs::File) -> &mut Self;
}

impl Fd3 for Command {
    /// Hands `f` to the child as descriptor 3.
    fn fd3(&mut self, f: fs::File) -> &mut Self {
        use std::os::fd::{AsRawFd, IntoRawFd};
        use std::os::unix::process::CommandExt;
        let raw = f.into_raw_fd();
        // SAFETY: dup2 is async-signal-safe; raw stays open in the parent
        // until the child has been spawned.
        unsafe {
            self.pre_exec(move || {
                // dup2 onto itself would keep close-on-exec: clear it instead.
                let rc = if raw == 3 {
                    libc::fcntl(3, libc::F_SETFD, 0)
                } else {
                    libc::dup2(raw, 3)
                };
                if rc < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        };
        let _ = std::io::stdin().as_raw_fd();
        self
    }
}

#[test]
fn an_open_host_fd_is_not_visible_inside() {
    let env = Env::new();
    let b = env.bundle("b", &["ls", "/proc/self/fd"]);
    let id = unique_id("fd");
    // fd 5 open on a secret file in runsbx's caller, as a careless
    // supervisor might leave it.
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "exec 5</etc/hostname; exec {} --root {} run --bundle {} {id}",
            runsbx_bin().display(),
            env.root.display(),
            b.path()
        ))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let fds: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(String::from)
        .collect();
    // 0-2, plus the one ls opens to list the directory.
    assert!(
        fds.len() <= 4 && !fds.contains(&"5".to_string()),
        "fds inside: {fds:?}"
    );
}

/// runc 1.2's "runc create [detect fd leak as comprehensively as
/// possible]": the init of a created container holds stdio and channels
/// (sockets, pipes), nothing the caller or the create opened: not the
/// caller's descriptors left without close-on-exec (runc's init never gets
/// them), not the create lock (`.ID.create`, the create's own). The report
/// FIFO stays until exec (init writes a failed start's error to it; its
/// close at exec tells `start` the workload runs), close-on-exec. After
/// `start`, the workload has 0, 1 and 2 only.
#[test]
fn a_created_init_holds_no_file_of_the_caller_or_the_create() {
    let env = Env::new();
    let _c = Cleanup(&env);
    let b = env.bundle("b", &["ls", "/proc/self/fd"]);
    let id = unique_id("initfd");
    // fds 4 and 5 open in runsbx's caller without close-on-exec, as bats
    // leaves its own. The workload's stdout is the create's: a file (a
    // pipe would stay open in the created init), read after the start.
    let listing = env.tmp.path().join("listing");
    let out = env.run_cmd(
        Command::new("bash")
            .arg("-c")
            .arg(format!(
                "exec 4</etc/hostname 5</dev/null >{}; exec {} --root {} create --bundle {} {id}",
                listing.display(),
                runsbx_bin().display(),
                env.root.display(),
                b.path()
            ))
            .stdin(Stdio::null()),
    );
    assert!(out.status.success(), "create: {}", stderr_of(&out));
    let pid = env.state(&id)["pid"].as_i64().unwrap();
    let mut held = Vec::new();
    for entry in fs::read_dir(format!("/proc/{pid}/fd")).unwrap().flatten() {
        let fd: i32 = entry.file_name().to_str().unwrap().parse().unwrap();
        if fd <= 2 {
            continue;
        }
        let Ok(target) = fs::read_link(entry.path()) else {
            continue;
        };
        let target = target.to_string_lossy().into_owned();
        let info = fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap_or_default();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| i64::from_str_radix(f.trim(), 8).ok())
            .unwrap_or(0);
        held.push((fd, target, flags & libc::O_CLOEXEC as i64 != 0));
    }
    // runc's list: ptys, anonymous inodes, sockets, pipes, an O_PATH
    // handle on / or /proc; the start barrier FIFO in the state dir (runc's
    // exec.fifo; runsbx's carries init's error too).
    let allowed = |t: &str| {
        ["socket:[", "pipe:[", "anon_inode:"]
            .iter()
            .any(|p| t.starts_with(p))
            || t == "/"
            || t == "/proc"
            || t.ends_with(&format!("/{id}/exec.fifo"))
    };
    let wrong: Vec<_> = held.iter().filter(|(_, t, _)| !allowed(t)).collect();
    assert!(
        wrong.is_empty(),
        "init of a created container holds {wrong:?}"
    );
    let inherited: Vec<_> = held.iter().filter(|(_, _, cloexec)| !cloexec).collect();
    assert!(
        inherited.is_empty(),
        "not close-on-exec, the workload would get them: {inherited:?}"
    );
    env.ok(&["start", &id]);
    env.wait_status(&id, "stopped");
    let text = fs::read_to_string(&listing).unwrap();
    let fds: Vec<&str> = text.split_whitespace().collect();
    // 0-2, and 3: the directory ls reads.
    assert_eq!(fds, ["0", "1", "2", "3"], "the workload's descriptors");
}

fn probe() -> PathBuf {
    if let Some(p) = std::env::var_os("RUNSBX_PROBE") {
        return PathBuf::from(p);
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(repo.join("hack/build-probe"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "hack/build-probe failed: {}",
        stderr_of(&out)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn selftest_passes_and_fails_on_a_weakened_bundle() {
    let env = Env::new();
    let probe = probe();
    assert_selftest_passes(&env, &probe);

    // The same policy, but sharing the host's network namespace.
    let bundle = gen_edited(&env, "weak", &|c| {
        c["linux"]["namespaces"]
            .as_array_mut()
            .unwrap()
            .retain(|n| n["type"] != "network");
    });
    let out = selftest_bundle(&env, &probe, &bundle);
    assert_one_line_error(&out, "net namespace is the host's");
    assert!(env.state_entries().is_empty());
}

/// `runsbx gen` of a static busybox into a fresh bundle, then `edit` on its
/// config.json.
fn gen_edited(env: &Env, name: &str, edit: &dyn Fn(&mut Value)) -> PathBuf {
    let work = env.nobody_workdir();
    let bundle = env.tmp.path().join(name);
    env.ok(&[
        "gen",
        "--workdir",
        work.to_str().unwrap(),
        "-o",
        bundle.to_str().unwrap(),
        "--",
        "/usr/bin/busybox",
        "true",
    ]);
    let cfg_path = bundle.join("config.json");
    let mut cfg: Value = serde_json::from_slice(&fs::read(&cfg_path).unwrap()).unwrap();
    edit(&mut cfg);
    fs::write(&cfg_path, serde_json::to_vec(&cfg).unwrap()).unwrap();
    bundle
}

fn selftest_bundle(env: &Env, probe: &Path, bundle: &Path) -> std::process::Output {
    env.run(&[
        "selftest",
        "--probe",
        probe.to_str().unwrap(),
        "--bundle",
        bundle.to_str().unwrap(),
    ])
}

/// The posture check (run by `selftest` and `sandbox`) catches a workload
/// that keeps a capability or lacks no_new_privs.
#[test]
fn posture_catches_a_kept_capability_and_missing_no_new_privs() {
    let env = Env::new();
    let probe = probe();
    let caps = gen_edited(&env, "caps", &|c| {
        for set in ["bounding", "effective", "permitted"] {
            c["process"]["capabilities"][set] = serde_json::json!(["CAP_KILL"]);
        }
    });
    assert_one_line_error(
        &selftest_bundle(&env, &probe, &caps),
        "CapEff is 0000000000000020",
    );
    // Without seccomp and Landlock (which both set it), and with
    // noNewPrivileges false, nothing sets no_new_privs.
    let nnp = gen_edited(&env, "nnp", &|c| {
        c["process"]["noNewPrivileges"] = false.into();
        c["process"].as_object_mut().unwrap().remove("landlock");
        c["linux"].as_object_mut().unwrap().remove("seccomp");
    });
    assert_one_line_error(&selftest_bundle(&env, &probe, &nnp), "NoNewPrivs is \"0\"");
    assert!(env.state_entries().is_empty());
}

#[test]
fn sandbox_self_test_runs_the_probe_first() {
    let env = Env::new();
    let out = env
        .cmd()
        .env("RUNSBX_PROBE", probe())
        .args([
            "sandbox",
            "--self-test",
            "--",
            "python3",
            "-c",
            "print('ran')",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
    // Without a probe it refuses rather than skipping the test.
    let out = env
        .cmd()
        .env("RUNSBX_PROBE", "/nonexistent/probe")
        .env("PATH", "/usr/bin:/bin")
        .args(["sandbox", "--self-test", "--", "/usr/bin/busybox", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("--self-test"),
        "{}",
        stderr_of(&out)
    );
}

/// `selftest --bundle` creates the probe's mount point in the bundle's own
/// rootfs, as root; a symlink planted there must not steer that onto the
/// host.
#[test]
fn selftest_bundle_refuses_a_symlink_on_the_probe_path() {
    let env = Env::new();
    let probe = probe();
    let b = env.bundle("b", &["true"]);
    let first = probe.components().nth(1).unwrap().as_os_str().to_owned();
    let outside = env.tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let link = b.dir.join("rootfs").join(&first);
    let _ = fs::remove_dir_all(&link);
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let out = selftest_bundle(&env, &probe, &b.dir);
    assert_one_line_error(&out, "is a symlink");
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "something was created through the link"
    );
}
