//! `runsbx sandbox`: the main job, end to end, with Python and a static
//! binary, and the escapes it must stop.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::*;

const NOBODY: u32 = 65534;

/// A workdir the sandbox (host nobody, when root invokes) may write.
fn workdir(env: &Env) -> String {
    env.nobody_workdir().to_str().unwrap().to_string()
}

fn assert_nothing_left(env: &Env) {
    assert!(
        env.state_entries().is_empty(),
        "state left: {:?}",
        env.state_entries()
    );
    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains("runsbx-bundle-"), "a bundle mount is left");
}

#[test]
fn python_computes_with_the_standard_library() {
    let env = Env::new();
    let out = sandbox(
        &env,
        &[],
        &[
            "python3",
            "-c",
            "import json, re, math, collections, decimal\n\
             print(json.dumps({'f': math.factorial(5)}), re.sub('a', 'b', 'aa'),\n\
             collections.Counter('xxy')['x'], decimal.Decimal('0.1') * 3)",
        ],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "{\"f\": 120} bb 2 0.3\n");
    assert_nothing_left(&env);
}

#[test]
fn a_static_binary_runs_and_exit_codes_are_forwarded() {
    let env = Env::new();
    require_file("/usr/bin/busybox", "busybox-static");
    let out = sandbox(&env, &[], &["/usr/bin/busybox", "echo", "static"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "static\n");
    let out = sandbox(&env, &[], &["python3", "-c", "import sys; sys.exit(7)"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr_of(&out));
    assert_nothing_left(&env);
}

#[test]
fn the_python_repl_client_round_trips() {
    let _env = Env::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(repo.join("hack/python-repl-client.py"))
        .arg("--runsbx")
        .arg(runsbx_bin())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        stderr_of(&out)
    );
}

/// Each escape attempt, with the errno that shows which layer stopped it.
const ESCAPES: &str = r#"
attempt("tcp-loopback", lambda: socket.create_connection(("127.0.0.1", 22), timeout=2))
attempt("tcp-public", lambda: socket.create_connection(("1.1.1.1", 80), timeout=2))
attempt("read-shadow", lambda: open("/etc/shadow").read())
attempt("list-root", lambda: os.listdir("/root"))
attempt("list-home", lambda: os.listdir("/home"))
attempt("list-slash", lambda: os.listdir("/"))
attempt("write-runtime", lambda: open(os.path.join(os.path.dirname(sys.executable), "x"), "w"))
attempt("write-tmp", lambda: open("/tmp/x", "w"))
attempt("fork", lambda: os.fork())
attempt("spawn", lambda: os.posix_spawn("/bin/true", ["true"], {}))
attempt("proc", lambda: os.listdir("/proc"))
attempt("proc-self", lambda: open("/proc/self/status").read())
attempt("proc-self-write", lambda: open("/proc/self/oom_score_adj", "w").write("-1000"))
attempt("proc-self-root", lambda: os.listdir("/proc/self/root/"))
attempt("proc-cpuinfo", lambda: open("/proc/cpuinfo").read())
attempt("proc-kallsyms", lambda: open("/proc/kallsyms").read())
attempt("read-usr", lambda: open("/usr/lib/os-release").read())
attempt("write-usr", lambda: open("/usr/lib/runsbx-x", "w"))
attempt("exec-usr-bin", lambda: os.execv("/usr/bin/true", ["true"]))
attempt("list-etc", lambda: os.listdir("/etc"))
attempt("write-workdir", lambda: open(os.path.join(os.environ["HOME"], "made-inside"), "w").write("hi"))
"#;

fn which_python_under_root() -> bool {
    let out = Command::new("python3")
        .args(["-I", "-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).starts_with("/root/")
}

#[test]
fn escapes_fail_and_the_workdir_is_writable() {
    let env = Env::new();
    let wd = workdir(&env);
    let out = sandbox(
        &env,
        &["--workdir", &wd],
        &["python3", "-c", &py_attempts(ESCAPES)],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    let got: std::collections::BTreeMap<&str, &str> =
        text.lines().filter_map(|l| l.split_once(' ')).collect();
    let want = [
        ("tcp-loopback", "EPERM"), // seccomp: no socket()
        ("tcp-public", "EPERM"),
        ("read-shadow", "ENOENT"), // not bound into the rootfs
        // /root exists when the interpreter lives below it (pyenv), as a
        // bare mount-point parent that Landlock does not let it list.
        (
            "list-root",
            if which_python_under_root() {
                "EACCES"
            } else {
                "ENOENT"
            },
        ),
        ("list-home", "ENOENT"),
        ("list-slash", "EACCES"),   // Landlock: / is not a granted path
        ("write-runtime", "EROFS"), // read-only bind
        ("write-tmp", "EROFS"),
        ("fork", "EPERM"), // seccomp: clone without CLONE_THREAD
        ("spawn", "EPERM"),
        ("proc", "EACCES"),       // Landlock: /proc is not granted
        ("proc-self", "ALLOWED"), // its own entry, read-only
        ("proc-self-write", "EACCES"),
        ("proc-self-root", "EACCES"), // a magic link is checked at its target, /
        ("proc-cpuinfo", "ALLOWED"),
        ("proc-kallsyms", "EACCES"), // the rest of /proc is not granted
        ("read-usr", "ALLOWED"),     // system directories are bound whole, read-only
        ("write-usr", "EROFS"),
        ("exec-usr-bin", "EACCES"), // Landlock: execute only on the interpreter and its loader
        ("list-etc", "EACCES"),     // only the files bound there, not the directory
        ("write-workdir", "ALLOWED"),
    ];
    for (name, errno) in want {
        assert_eq!(got.get(name), Some(&errno), "{name}: full output:\n{text}");
    }
    let made = Path::new(&wd).join("made-inside");
    assert_eq!(fs::read_to_string(&made).unwrap(), "hi");
    // Written by the workload's root, which is host nobody, never host root.
    assert_eq!(fs::metadata(&made).unwrap().uid(), NOBODY);
}

#[test]
fn the_environment_is_scrubbed() {
    let env = Env::new();
    let out = env
        .cmd()
        .args(["sandbox", "--env", "EXPLICIT=1", "--", "python3", "-c"])
        .arg("import os; print(' '.join(sorted(os.environ)))")
        .env("SECRET_API_TOKEN", "hunter2")
        .env("LANG", "C.UTF-8")
        .env("LD_PRELOAD", "/evil.so")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let names = stdout_of(&out);
    assert_eq!(names.trim(), "EXPLICIT HOME LANG PATH TMPDIR");
}

#[test]
fn the_workload_is_not_host_root_and_is_sealed() {
    let env = Env::new();
    let pid_file = env.tmp.path().join("pid");
    // A SIGKILLed runsbx leaves its bundle and workdir: in the test's dir.
    let tmp = env.traversable_tmpdir();
    let mut child = env
        .cmd()
        .env("TMPDIR", &tmp)
        .args(["sandbox", "--pid-file", pid_file.to_str().unwrap(), "--"])
        .args(["python3", "-c", "import time; time.sleep(30)"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let pid: i32 = loop {
        if let Ok(text) = fs::read_to_string(&pid_file) {
            if let Ok(pid) = text.trim().parse() {
                break pid;
            }
        }
        assert!(std::time::Instant::now() < deadline, "no pid file");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // Wait until the workload itself has exec'd (not the runtime's init).
    let status = loop {
        // exe first: a status read before the exec would show init before
        // seccomp and the capability drop.
        let exe = fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
        let s = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        if exe.to_string_lossy().contains("python3") {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "never sealed:\n{s}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let field = |name: &str| -> String {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(field("Uid:"), "65534 65534 65534 65534");
    assert_eq!(field("Gid:"), "65534 65534 65534 65534");
    assert_eq!(field("NoNewPrivs:"), "1");
    assert_eq!(field("Seccomp:"), "2");
    for cap in ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"] {
        assert_eq!(field(cap), "0000000000000000", "{cap}");
    }
    let exe = fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    assert!(exe.to_string_lossy().contains("python3"), "{exe:?}");
    for ns in ["net", "pid", "mnt", "user", "ipc", "uts"] {
        let mine = fs::read_link(format!("/proc/self/ns/{ns}")).unwrap();
        let theirs = fs::read_link(format!("/proc/{pid}/ns/{ns}")).unwrap();
        assert_ne!(mine, theirs, "{ns} namespace is shared with the host");
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = child.wait();
    let _ = env.run(&["delete", "--force", &format!("sandbox-{}", child.id())]);
}

#[test]
fn bad_input_is_refused_with_one_line() {
    let env = Env::new();
    let unreadable = env.tmp.path().join("nope");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--", "no-such-command-xyz"], "no-such-command-xyz"),
        (
            vec!["--workdir", "/", "--", "python3", "-c", "1"],
            "--workdir /",
        ),
        (
            vec!["--workdir", "/usr", "--", "python3", "-c", "1"],
            "/usr",
        ),
        (
            vec!["--workdir", "rel/dir", "--", "python3", "-c", "1"],
            "rel/dir",
        ),
        (
            vec![
                "--ro",
                unreadable.to_str().unwrap(),
                "--",
                "python3",
                "-c",
                "1",
            ],
            unreadable.to_str().unwrap(),
        ),
    ];
    for (args, needle) in cases {
        let mut full = vec!["sandbox"];
        full.extend(args.iter().copied());
        let out = env.run(&full);
        assert_one_line_error(&out, needle);
        assert_eq!(out.status.code(), Some(125), "{full:?}");
        assert_nothing_left(&env);
    }
}

/// The generated bundle and the private workdir are removed after a run,
/// including the read-only binds runsbx made for them as root.
#[test]
fn nothing_is_left_in_tmpdir() {
    let env = Env::new();
    let tmp = env.traversable_tmpdir();
    let out = env
        .cmd()
        .env("TMPDIR", &tmp)
        .args(["sandbox", "--", "python3", "-c", "print('x')"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_tmpdir_empty(&tmp);
    assert_nothing_left(&env);
}

/// `--isolation landlock` as root (what uid 0 in a container without
/// CAP_SYS_ADMIN gets, docs/where.md): the workload runs as nobody with
/// every capability set empty, the bounding set included; stopping itself
/// does not hold it (runsbx continues it, as the namespace mode's pid 1
/// ignores the stop); pinned, nothing is announced; nothing is left.
#[test]
fn landlock_mode_as_root_runs_as_nobody_and_cannot_stop_itself() {
    let env = Env::new();
    let tmp = env.traversable_tmpdir();
    let code = "import os, signal\n\
                signal.raise_signal(signal.SIGSTOP)\n\
                signal.raise_signal(signal.SIGTSTP)\n\
                print(os.getuid(), os.getgid(), os.getgroups())\n\
                print(sorted({l.split()[1] for l in open('/proc/self/status') if l.startswith('Cap')}))\n\
                print(6*7)";
    let report = env.tmp.path().join("report.json");
    let out = env.run_cmd(
        env.cmd()
            .env("TMPDIR", &tmp)
            .args(["sandbox", "--isolation", "landlock", "--timeout", "20s"])
            .arg("--report")
            .arg(&report)
            .args(["--", "/usr/bin/python3", "-c", code]),
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "65534 65534 []\n['0000000000000000']\n42\n"
    );
    assert_eq!(stderr_of(&out), "");
    let report: serde_json::Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
    assert_eq!(report["isolation"], "landlock", "{report}");
    assert_tmpdir_empty(&tmp);
}

/// A foreground workload does not outlive a runsbx killed with SIGKILL.
#[test]
fn the_workload_dies_with_runsbx() {
    let env = Env::new();
    let pid_file = env.tmp.path().join("pid");
    // A SIGKILLed runsbx leaves its bundle and workdir: in the test's dir.
    let tmp = env.traversable_tmpdir();
    let mut child = env
        .cmd()
        .env("TMPDIR", &tmp)
        .args(["sandbox", "--pid-file", pid_file.to_str().unwrap(), "--"])
        .args(["python3", "-c", "import time; time.sleep(60)"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut pid = None;
    for _ in 0..500 {
        if let Some(p) = fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            pid = Some(p);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = pid.expect("no pid file");
    // The pid file is written as soon as init is forked; PDEATHSIG is set a
    // little later, in init. Kill runsbx once the workload runs.
    for _ in 0..500 {
        let exe = fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
        if exe.to_string_lossy().contains("python3") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap();
    let _ = child.wait();
    assert!(
        wait_dead(pid, std::time::Duration::from_secs(10)),
        "workload {pid} outlived runsbx: {}",
        fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default()
    );
    let _ = env.run(&["delete", "--force", &format!("sandbox-{}", child.id())]);
}

/// SIGTERM to `runsbx sandbox` stops the sandbox, although the workload, as
/// PID 1 of its pid namespace, would ignore a forwarded SIGTERM.
#[test]
fn sigterm_to_runsbx_stops_the_sandbox() {
    let env = Env::new();
    let report = env.tmp.path().join("report.json");
    let pid_file = env.tmp.path().join("pid");
    let mut child = env
        .cmd()
        .args([
            "sandbox",
            "--report",
            report.to_str().unwrap(),
            "--pid-file",
            pid_file.to_str().unwrap(),
        ])
        .args(["--", "python3", "-c", "import time; time.sleep(60)"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_python(&pid_file);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(137));
    let r: serde_json::Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["reason"], "signaled");
    assert_nothing_left(&env);
}

/// Waits until the pid file names a live python3; returns its pid.
fn wait_for_python(pid_file: &std::path::Path) -> i32 {
    for _ in 0..1000 {
        let pid = fs::read_to_string(pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok());
        if let Some(p) = pid.filter(|p| {
            fs::read_link(format!("/proc/{p}/exe"))
                .is_ok_and(|e| e.to_string_lossy().contains("python3"))
        }) {
            return p;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("the sandboxed python3 never started");
}

/// A sandbox that asks for no limit runs without a cgroup (root's fast
/// path); one with --pids-limit gets its cgroup. Either way SIGKILL to the
/// workload, `--timeout` and the clean-up work.
#[test]
fn a_sandbox_without_limits_has_no_cgroup() {
    let env = Env::new();
    for (flags, cgroup) in [(&[][..], false), (&["--pids-limit", "16"][..], true)] {
        let id = unique_id("nocg");
        let pid_file = env.tmp.path().join(format!("{id}.pid"));
        let mut child = env
            .cmd()
            .args(["sandbox", "--id", &id, "--timeout", "20s", "--pid-file"])
            .arg(&pid_file)
            .args(flags)
            .args(["--", "python3", "-c", "import time; time.sleep(60)"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let pid = wait_for_python(&pid_file);
        let found = cgroups_named(&id);
        assert_eq!(!found.is_empty(), cgroup, "{flags:?}: cgroups {found:?}");
        // Without a cgroup, ps finds the processes through init's pid
        // namespace; only pause needs a cgroup (the freezer).
        let ps = env.run(&["ps", "--format", "json", &id]);
        assert!(ps.status.success(), "{flags:?}: {}", stderr_of(&ps));
        let pids: Vec<i32> = serde_json::from_slice(&ps.stdout).unwrap();
        assert!(pids.contains(&pid), "{flags:?}: ps {pids:?} lacks {pid}");
        if !cgroup {
            assert_one_line_error(&env.run(&["pause", &id]), "has no cgroup");
        }
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(137), "{flags:?}");
        assert!(cgroups_named(&id).is_empty(), "{flags:?}: cgroup left");
    }
    assert_nothing_left(&env);
}

/// The first directory above `path` that only its owner may search, if any.
fn private_ancestor(path: &Path) -> Option<std::path::PathBuf> {
    path.ancestors()
        .skip(1)
        .find(|d| fs::metadata(d).is_ok_and(|m| m.mode() & 0o011 == 0))
        .map(Path::to_path_buf)
}

/// `gen` then `run`, and `gen` then `create`/`start`, of `python` with a
/// program that prints where its interpreter lives and whether that mount is
/// read-only, nosuid and nodev; both must print it and exit 0 with nothing
/// left behind (state, mounts on the host).
fn gen_and_run(env: &Env, python: &str) -> String {
    let wd = workdir(env);
    let prog = env.tmp.path().join("where.py");
    fs::write(
        &prog,
        "import os, sys\nf = os.statvfs(sys.executable).f_flag\n\
         print(sys.executable, 'ro' if f & 1 else 'rw', 'nosuid' if f & 2 else '', 'nodev' if f & 4 else '')\n",
    )
    .unwrap();
    let bundle = env.tmp.path().join(format!("gen-{}", unique_id("b")));
    let mut gen = env.cmd();
    gen.args(["gen", "--workdir", &wd, "--ro"])
        .arg(&prog)
        .arg("-o")
        .arg(&bundle)
        .args(["--", python])
        .arg(&prog);
    let out = env.run_cmd(&mut gen);
    assert!(out.status.success(), "gen: {}", stderr_of(&out));
    let b = bundle.to_str().unwrap();
    let id = unique_id("genrun");
    let out = env.run(&["run", "--bundle", b, &id]);
    assert!(out.status.success(), "run: {}", stderr_of(&out));
    let printed = stdout_of(&out);
    let id = unique_id("gencs");
    env.ok(&["create", "--bundle", b, &id]);
    // The create's runsbx is gone; the container holds its binds alone.
    env.ok(&["start", &id]);
    env.wait_status(&id, "stopped");
    env.ok(&["delete", &id]);
    assert_nothing_left(env);
    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(b),
        "a mount in the generated bundle is left on the host"
    );
    printed
}

/// The issue's case: python3 on PATH lives under a 0700 home (a pyenv build
/// under /root here). gen writes plain binds of it; the container's root
/// (host nobody) cannot reach them, so runsbx makes them itself as root.
#[test]
fn gen_then_run_with_the_interpreter_under_a_private_home() {
    let env = Env::new();
    let out = Command::new("python3")
        .args(["-I", "-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let exe = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let printed = gen_and_run(&env, "python3");
    let dir = Path::new(&exe).parent().unwrap().display().to_string();
    assert!(
        printed.starts_with(&format!("{dir}/")) && printed.ends_with(" ro nosuid nodev\n"),
        "{printed}"
    );
    if which_python_under_root() {
        assert!(
            private_ancestor(Path::new(&exe)).is_some(),
            "{exe}: expected a 0700 directory above it on this machine"
        );
    }
}

/// The same with a virtualenv in a 0700 home of our own (independent of
/// the machine's Python): its interpreter is a symlink into /usr, its
/// prefix and site-packages are under the private directory.
#[test]
fn gen_then_run_with_a_venv_under_a_private_home() {
    let env = Env::new();
    require_file("/usr/bin/python3", "python3");
    let home = env.tmp.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let venv = home.join("venv");
    let made = Command::new("/usr/bin/python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success(), "python3 -m venv");
    for (dir, mode) in [(env.tmp.path(), 0o755), (home.as_path(), 0o700)] {
        fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    }
    let python = venv.join("bin/python3");
    let printed = gen_and_run(&env, python.to_str().unwrap());
    assert_eq!(printed, format!("{} ro nosuid nodev\n", python.display()));
}
