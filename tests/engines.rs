//! runsbx under real engines: podman (with conmon) and containerd's
//! `io.containerd.runc.v2` shim driven by `ctr --runc-binary`, each set up
//! privately under the test's temp dir by the scripts in hack/engines/.
//! Scenarios run under runsbx and under Debian's runc through the same
//! engine, and must end the same way (exit status, output). Each test checks
//! that nothing is left behind: no process naming its temp dir, no mount
//! under it, no cgroup named after a container, no entry in the runtime root.
//!
//! Needs root and Debian's podman, conmon, containerd, umoci, busybox-static,
//! runc (hack/setup-ci installs them); a missing one fails with its name.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

fn require_tool(path: &str, package: &str) {
    require_root();
    require_file(path, package);
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// Runs `cmd` with stdout/stderr in files (a detached container's monitor
/// may inherit them; a pipe would block `output()`), stdin from `input`.
fn run_cmd(cmd: Command, dir: &Path, input: Option<&str>) -> Output {
    run_with_stdin(cmd, dir, input, false)
}

/// A command under `with_pty`: script's stdin stays open until it exits.
/// At EOF on its stdin script would end the session early, racing the
/// container (seen as an exit code other than the workload's and a stray
/// `^@` on the pty).
fn run_pty(cmd: Command, dir: &Path) -> Output {
    run_with_stdin(cmd, dir, None, true)
}

fn run_with_stdin(mut cmd: Command, dir: &Path, input: Option<&str>, hold: bool) -> Output {
    let n = unique_id("o");
    let (o, e) = (dir.join(format!("{n}.out")), dir.join(format!("{n}.err")));
    cmd.stdout(fs::File::create(&o).unwrap())
        .stderr(fs::File::create(&e).unwrap());
    cmd.stdin(if input.is_some() || hold {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd.spawn().expect("spawn");
    if let Some(i) = input {
        child.stdin.take().unwrap().write_all(i.as_bytes()).unwrap();
    }
    let held = child.stdin.take();
    let status = child.wait().unwrap();
    drop(held);
    Output {
        status,
        stdout: fs::read(&o).unwrap(),
        stderr: fs::read(&e).unwrap(),
    }
}

/// A shell command line run under a pty (`script -qe`), for `-t`.
fn with_pty(cmdline: &str) -> Command {
    require_tool("/usr/bin/script", "bsdutils");
    let mut c = Command::new("/usr/bin/script");
    c.args(["-qec", cmdline, "/dev/null"]);
    c
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A `#!/bin/sh` wrapper that execs runsbx with the operator config
/// `{"landlock":"auto"}` (RUNSBX_CONFIG), and `--root` when given: what an
/// operator would install instead of /etc/runsbx/config.json.
fn landlock_wrapper(dir: &Path, root: Option<&Path>) -> PathBuf {
    let wdir = dir.join("landlock-bin");
    fs::create_dir_all(&wdir).unwrap();
    let config = dir.join("runsbx-config.json");
    fs::write(&config, r#"{"landlock":"auto"}"#).unwrap();
    let root_arg = root
        .map(|r| format!("--root {} ", sh_quote(r.to_str().unwrap())))
        .unwrap_or_default();
    let path = wdir.join("runsbx"); // podman's JSON support goes by this name
    fs::write(
        &path,
        format!(
            "#!/bin/sh\nRUNSBX_CONFIG={} exec {} {root_arg}\"$@\"\n",
            sh_quote(config.to_str().unwrap()),
            sh_quote(runsbx_bin().to_str().unwrap())
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Processes whose command line mentions `needle`, but for `except`.
fn processes_mentioning(needle: &str, except: &[i32]) -> Vec<String> {
    let mut found = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if except.contains(&pid) || !pid_alive(pid) {
            continue;
        }
        if let Ok(cmd) = fs::read(format!("/proc/{pid}/cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                found.push(format!("{pid}: {cmd}"));
            }
        }
    }
    found
}

fn mounts_under(dir: &Path) -> Vec<String> {
    let prefix = format!("{}/", dir.display());
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|m| m.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

fn entries(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ---------------------------------------------------------------- podman ---

struct Podman {
    tmp: tempfile::TempDir,
    envs: Vec<(String, String)>,
}

impl Podman {
    fn new() -> Self {
        require_tool("/usr/bin/podman", "podman");
        require_tool("/usr/bin/conmon", "conmon");
        require_tool("/usr/bin/umoci", "umoci");
        require_tool(RUNC, "runc");
        let tmp = tempfile::Builder::new()
            .prefix("runsbx-podman-")
            .tempdir()
            .unwrap();
        let envs = setup_podman(tmp.path());
        Self { tmp, envs }
    }

    fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// runsbx's state root for podman's containers (the wrapper's --root).
    fn runsbx_root(&self) -> PathBuf {
        self.dir().join("runsbx-root")
    }

    fn cmd(&self, runtime: &str) -> Command {
        let mut c = Command::new("podman");
        c.envs(self.envs.iter().map(|(k, v)| (k, v)));
        c.args(["--runtime", runtime]);
        c
    }

    fn runtime(&self, rt: Rt) -> String {
        match rt {
            Rt::Runsbx => "runsbx".into(),
            Rt::Runc => "runc".into(),
        }
    }

    fn run(&self, rt: Rt, args: &[&str]) -> Output {
        self.run_in(rt, args, None)
    }

    fn run_in(&self, rt: Rt, args: &[&str], input: Option<&str>) -> Output {
        let mut c = self.cmd(&self.runtime(rt));
        c.args(args);
        run_cmd(c, self.dir(), input)
    }

    fn ok(&self, rt: Rt, args: &[&str]) -> String {
        let out = self.run(rt, args);
        let (o, e) = text(&out);
        assert!(
            out.status.success(),
            "podman {args:?} under {rt:?}: {:?}\n{o}\n{e}",
            out.status
        );
        o
    }

    fn pty(&self, rt: Rt, args: &str) -> Output {
        let mut c = with_pty(&format!("podman --runtime {} {args}", self.runtime(rt)));
        c.envs(self.envs.iter().map(|(k, v)| (k, v)));
        run_pty(c, self.dir())
    }

    /// Nothing left of podman's containers: no process, mount, cgroup or
    /// runsbx state, no container in podman's list.
    fn assert_clean(&self, long_ids: &[String]) {
        let listed = self.ok(Rt::Runsbx, &["ps", "-aq"]);
        assert!(listed.trim().is_empty(), "podman still lists {listed}");
        let root = self.runsbx_root();
        eventually("runsbx state of podman's containers to go", || {
            entries(&root).is_empty()
        });
        // conmon starts `podman container cleanup` when a container exits;
        // it may still be finishing.
        let dir = self.dir().to_str().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let procs = processes_mentioning(dir, &[]);
            if procs.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "processes left: {procs:#?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        let mounts = mounts_under(self.dir());
        assert!(mounts.is_empty(), "mounts left: {mounts:#?}");
        for id in long_ids {
            let cg = cgroups_named(id);
            assert!(cg.is_empty(), "cgroups left for {id}: {cg:#?}");
        }
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = self.run(Rt::Runsbx, &["rm", "-a", "-f", "-t", "0"]);
        let _ = self.run(Rt::Runc, &["rm", "-a", "-f", "-t", "0"]);
        for m in mounts_under(self.dir()).iter().rev() {
            let _ = nix::mount::umount2(m.as_str(), nix::mount::MntFlags::MNT_DETACH);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Rt {
    Runsbx,
    Runc,
}

const BOTH: [Rt; 2] = [Rt::Runsbx, Rt::Runc];

/// `(exit code, stdout)` of the same podman argv under both runtimes.
fn podman_same(p: &Podman, args: &[&str], input: Option<&str>) -> (i32, String) {
    let results: Vec<(i32, String, String)> = BOTH
        .iter()
        .map(|&rt| {
            let out = p.run_in(rt, args, input);
            let (o, e) = text(&out);
            (code(&out), o, e)
        })
        .collect();
    assert_eq!(
        (results[0].0, &results[0].1),
        (results[1].0, &results[1].1),
        "podman {args:?}: runsbx (left) and runc (right) differ; stderr: {:?} / {:?}",
        results[0].2,
        results[1].2
    );
    (results[0].0, results[0].1.clone())
}

const IMAGE: &str = "localhost/busybox:latest";

#[test]
fn podman_run_rm_image_rootfs_exit_code_stdin_tty() {
    let p = Podman::new();
    let (c, o) = podman_same(
        &p,
        &[
            "run",
            "--rm",
            "--pull=never",
            IMAGE,
            "sh",
            "-c",
            "echo hello; exit 3",
        ],
        None,
    );
    assert_eq!((c, o.as_str()), (3, "hello\n"));

    let rootfs = p.dir().join("image/rootfs");
    let (c, o) = podman_same(
        &p,
        &[
            "run",
            "--rm",
            "--rootfs",
            rootfs.to_str().unwrap(),
            "sh",
            "-c",
            "echo rootfs; exit 4",
        ],
        None,
    );
    assert_eq!((c, o.as_str()), (4, "rootfs\n"));

    let (c, o) = podman_same(
        &p,
        &[
            "run",
            "--rm",
            "-i",
            IMAGE,
            "sh",
            "-c",
            "cat; test -t 0 || echo no-tty; exit 5",
        ],
        Some("piped\n"),
    );
    assert_eq!((c, o.as_str()), (5, "piped\nno-tty\n"));

    // podman --read-only and --tmpfs add runc's tmpcopyup: the tmpfs starts
    // with the image's files there.
    let script = "touch /tmp/x /run/y && echo rw-tmp; touch /z 2>/dev/null || echo ro-root; \
                  ls /bin/busybox; grep ' /bin ' /proc/mounts | cut -d' ' -f3";
    let (c, o) = podman_same(
        &p,
        &[
            "run",
            "--rm",
            "--read-only",
            "--tmpfs",
            "/bin",
            IMAGE,
            "/bin/sh",
            "-c",
            script,
        ],
        None,
    );
    assert_eq!(
        (c, o.as_str()),
        (0, "rw-tmp\nro-root\n/bin/busybox\ntmpfs\n")
    );

    for rt in BOTH {
        let out = p.pty(
            rt,
            &format!("run --rm -t {IMAGE} sh -c 'test -t 0 && echo TTY; exit 6'"),
        );
        let (o, e) = text(&out);
        assert_eq!(code(&out), 6, "{rt:?}: {o} {e}");
        assert!(
            o.contains("TTY"),
            "{rt:?}: no tty in the container: {o:?} {e}"
        );
    }
    p.assert_clean(&[]);
}

#[test]
fn podman_detached_exec_pause_stop_rm() {
    let p = Podman::new();
    let mut ids = Vec::new();
    for rt in BOTH {
        let name = unique_id("pd");
        let id = p.ok(rt, &["run", "-d", "--name", &name, IMAGE, "sleep", "1000"]);
        ids.push(id.trim().to_string());
        let out = p.run_in(
            rt,
            &["exec", &name, "sh", "-c", "echo in-exec; exit 7"],
            None,
        );
        assert_eq!(
            (code(&out), text(&out).0.as_str()),
            (7, "in-exec\n"),
            "{rt:?}"
        );
        let out = p.run_in(rt, &["exec", "-i", &name, "cat"], Some("exec-stdin\n"));
        assert_eq!(text(&out).0, "exec-stdin\n", "{rt:?}: {}", text(&out).1);
        let out = p.pty(rt, &format!("exec -t {name} sh -c 'test -t 0 && echo TTY'"));
        assert!(text(&out).0.contains("TTY"), "{rt:?}: {:?}", text(&out));

        let status = |p: &Podman| {
            p.ok(rt, &["inspect", "--format", "{{.State.Status}}", &name])
                .trim()
                .to_string()
        };
        p.ok(rt, &["pause", &name]);
        assert_eq!(status(&p), "paused", "{rt:?}");
        p.ok(rt, &["unpause", &name]);
        assert_eq!(status(&p), "running", "{rt:?}");

        // sleep is PID 1 and ignores SIGTERM: podman falls back to SIGKILL.
        let t = Instant::now();
        let out = p.run(rt, &["stop", "-t", "1", &name]);
        assert!(out.status.success(), "{rt:?}: {}", stderr_of(&out));
        assert!(
            t.elapsed() >= Duration::from_millis(900),
            "{rt:?}: no SIGTERM grace"
        );
        assert!(stderr_of(&out).contains("resorting to SIGKILL"), "{rt:?}");
        let exit = p.ok(rt, &["inspect", "--format", "{{.State.ExitCode}}", &name]);
        assert_eq!(exit.trim(), "137", "{rt:?}");
        p.ok(rt, &["rm", &name]);

        // A SIGTERM handler: stop ends it with SIGTERM alone.
        let name = unique_id("pdt");
        let id = p.ok(
            rt,
            &[
                "run",
                "-d",
                "--name",
                &name,
                IMAGE,
                "sh",
                "-c",
                "trap 'exit 9' TERM; echo ready; while :; do sleep 0.1; done",
            ],
        );
        ids.push(id.trim().to_string());
        // PID 1 of its namespace: a SIGTERM before the trap would be dropped.
        eventually("the trap to be set", || {
            p.ok(rt, &["logs", &name]).contains("ready")
        });
        p.ok(rt, &["stop", "-t", "5", &name]);
        let exit = p.ok(rt, &["inspect", "--format", "{{.State.ExitCode}}", &name]);
        assert_eq!(exit.trim(), "9", "{rt:?}");
        p.ok(rt, &["rm", &name]);

        // rm -f of a running container.
        let name = unique_id("pdf");
        let id = p.ok(rt, &["run", "-d", "--name", &name, IMAGE, "sleep", "1000"]);
        ids.push(id.trim().to_string());
        p.ok(rt, &["rm", "-f", "-t", "0", &name]);
    }
    p.assert_clean(&ids);
}

/// `podman update` (a linux.resources file given to `update --resources`)
/// changes the limits of a running container the same under both
/// runtimes, read back from the container's own cgroup files (v1, as on
/// the CI hosts).
#[test]
fn podman_update_changes_the_limits_like_runc() {
    let p = Podman::new();
    let mut ids = Vec::new();
    for rt in BOTH {
        let name = unique_id("pu");
        let args = [
            "run", "-d", "--memory", "100m", "--name", &name, IMAGE, "sleep", "1000",
        ];
        ids.push(p.ok(rt, &args).trim().to_string());
        let args = [
            "update",
            "--memory",
            "200m",
            "--cpu-quota",
            "50000",
            "--cpu-period",
            "100000",
        ];
        let out = p.run(rt, &[&args[..], &[name.as_str()]].concat());
        assert!(out.status.success(), "{rt:?}: {}", stderr_of(&out));
        let pid = p.ok(rt, &["inspect", "--format", "{{.State.Pid}}", &name]);
        let file = |ctrl: &str, name: &str| {
            let cgroups = fs::read_to_string(format!("/proc/{}/cgroup", pid.trim())).unwrap();
            let path = cgroups
                .lines()
                .find_map(|l| {
                    let mut f = l.splitn(3, ':').skip(1);
                    let ctrls = f.next()?;
                    let path = f.next()?;
                    ctrls.split(',').any(|c| c == ctrl).then(|| {
                        format!(
                            "/sys/fs/cgroup/{ctrls}/{}/{name}",
                            path.trim_start_matches('/')
                        )
                    })
                })
                .unwrap_or_else(|| panic!("{rt:?}: no {ctrl} cgroup in {cgroups}"));
            fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
        };
        assert_eq!(
            file("memory", "memory.limit_in_bytes").trim(),
            "209715200",
            "{rt:?}"
        );
        assert_eq!(file("cpu", "cpu.cfs_quota_us").trim(), "50000", "{rt:?}");
        p.ok(rt, &["rm", "-f", "-t", "0", &name]);
    }
    p.assert_clean(&ids);
}

#[test]
fn podman_default_seccomp_profile_is_enforced() {
    let p = Podman::new();
    let probe = probe_bin();
    let vol = format!("{}:/probe:ro", probe.display());
    let lines = |args: &[&str]| {
        let mut a = vec!["run", "--rm", "-v", &vol];
        a.extend_from_slice(args);
        a.extend_from_slice(&[IMAGE, "/probe", "perf-event-open", "ids"]);
        let out = p.run(Rt::Runsbx, &a);
        let v = probe_lines(&out.stdout);
        assert_eq!(v.len(), 2, "{:?}", text(&out));
        v
    };
    // The profile denies perf_event_open with EPERM; with a bad pointer the
    // kernel itself would answer EFAULT.
    let v = lines(&[]);
    assert_eq!(v[0]["errno"], "EPERM", "{v:?}");
    assert_eq!(v[1]["data"]["Seccomp"], "2", "{v:?}");
    let v = lines(&["--security-opt", "seccomp=unconfined"]);
    assert_eq!(v[0]["errno"], "EFAULT", "{v:?}");
    p.assert_clean(&[]);
}

#[test]
fn podman_create_errors_carry_runsbx_message() {
    let p = Podman::new();
    // Refused before anything runs: the annotation's policy is malformed.
    let out = p.run(
        Rt::Runsbx,
        // podman splits --annotation on commas as CSV: quote the field.
        &[
            "run",
            "--rm",
            "--annotation",
            r#""run.sbx.landlock={""handledAccess"":{""handledAccessFS"":[""write_fil""]}}""#,
            IMAGE,
            "true",
        ],
    );
    let e = stderr_of(&out);
    assert_ne!(code(&out), 0);
    assert!(
        e.contains(
            r#"Error: OCI runtime error: runsbx: create: landlock: annotations["run.sbx.landlock"]"#
        ) && e.contains(r#"unknown right "write_fil""#),
        "{e}"
    );

    // Failing inside init: a mount point under a regular file. runc names
    // the mount; runsbx (libcontainer) only says where it failed.
    let src = p.dir().join("src");
    fs::create_dir(&src).unwrap();
    let m = format!("type=bind,src={},dst=/etc/passwd/x", src.display());
    for rt in BOTH {
        let out = p.run(rt, &["run", "--rm", "--mount", &m, IMAGE, "true"]);
        let e = stderr_of(&out);
        assert_eq!(code(&out), 126, "{rt:?}: {e}");
        let want = match rt {
            Rt::Runsbx => "Error: OCI runtime error: runsbx: create: failed to prepare rootfs",
            Rt::Runc => "Error: OCI runtime error: runc: runc create failed",
        };
        assert!(e.contains(want), "{rt:?}: {e}");
    }
    p.assert_clean(&[]);
}

/// The operator's Landlock default `auto` under podman: with a read-only
/// root, even a container given CAP_SYS_ADMIN cannot write outside its
/// read-write mounts. The mount flag alone does not stop it (it remounts /
/// read-write, as it does under plain runsbx and runc); Landlock does
/// (a Landlock-restricted process may not mount).
#[test]
fn podman_landlock_default_confines_writes() {
    let p = Podman::new();
    let wrapper = landlock_wrapper(p.dir(), Some(&p.runsbx_root()));
    let script = "mount -o remount,rw / 2>/dev/null; echo remount=$?; \
                  touch /escape 2>/dev/null; echo root=$?; touch /dev/shm/ok; echo shm=$?; \
                  grep NoNewPrivs /proc/self/status";
    let args = |rt: &str| {
        let mut c = p.cmd(rt);
        c.args([
            "run",
            "--rm",
            "--read-only",
            "--read-only-tmpfs=false",
            "--cap-add",
            "SYS_ADMIN",
        ]);
        c.args([IMAGE, "sh", "-c", script]);
        run_cmd(c, p.dir(), None)
    };
    let out = args(wrapper.to_str().unwrap());
    let (o, e) = text(&out);
    assert!(out.status.success(), "{o} {e}");
    assert_eq!(o, "remount=1\nroot=1\nshm=0\nNoNewPrivs:\t1\n", "{e}");
    for rt in ["runsbx", "runc"] {
        let out = args(rt);
        let o = text(&out).0;
        assert!(o.starts_with("remount=0\nroot=0\nshm=0\n"), "{rt}: {o}");
    }
    p.assert_clean(&[]);
}

// ------------------------------------------------------------ containerd ---

struct Containerd {
    tmp: tempfile::TempDir,
    sock: String,
    pid: i32,
}

impl Containerd {
    fn new() -> Self {
        require_tool("/usr/bin/containerd", "containerd");
        require_tool("/usr/bin/containerd-shim-runc-v2", "containerd");
        require_tool("/usr/bin/umoci", "umoci");
        require_tool(RUNC, "runc");
        let tmp = tempfile::Builder::new()
            .prefix("runsbx-containerd-")
            .tempdir()
            .unwrap();
        let out = Command::new(repo().join("hack/engines/setup-containerd"))
            .arg(tmp.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let pid = fs::read_to_string(tmp.path().join("containerd.pid"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let c = Self {
            sock: String::from_utf8_lossy(&out.stdout).trim().to_string(),
            tmp,
            pid,
        };
        assert!(
            out.status.success(),
            "hack/engines/setup-containerd failed: {}",
            stderr_of(&out)
        );
        c
    }

    fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// The runtime root the shim passes (`ctr run --runc-root`), per runtime.
    fn runtime_root(&self, rt: Rt) -> PathBuf {
        self.dir().join(match rt {
            Rt::Runsbx => "runsbx-root",
            Rt::Runc => "runc-root",
        })
    }

    fn binary(rt: Rt) -> String {
        match rt {
            Rt::Runsbx => runsbx_bin().to_str().unwrap().to_string(),
            Rt::Runc => RUNC.to_string(),
        }
    }

    fn ctr(&self) -> Command {
        let mut c = Command::new("ctr");
        c.args(["--address", &self.sock]);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut c = self.ctr();
        c.args(args);
        run_cmd(c, self.dir(), None)
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let (o, e) = text(&out);
        assert!(
            out.status.success(),
            "ctr {args:?}: {:?}\n{o}\n{e}",
            out.status
        );
        o
    }

    /// `ctr run` with the runtime binary and root for `rt`.
    fn run_args(&self, rt: Rt, binary: Option<&str>) -> Vec<String> {
        let root = self.runtime_root(rt);
        vec![
            "run".into(),
            "--runc-binary".into(),
            binary
                .map(str::to_string)
                .unwrap_or_else(|| Self::binary(rt)),
            "--runc-root".into(),
            root.to_str().unwrap().into(),
        ]
    }

    fn task_status(&self, id: &str) -> String {
        let ls = self.ok(&["task", "ls"]);
        ls.lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .and_then(|l| l.split_whitespace().nth(2))
            .unwrap_or("")
            .to_string()
    }

    fn assert_clean(&self, ids: &[String]) {
        let c = self.ok(&["container", "ls", "-q"]);
        assert!(c.trim().is_empty(), "containerd still lists {c}");
        for rt in BOTH {
            let root = self.runtime_root(rt).join("default");
            eventually("the runtime state dirs to go", || entries(&root).is_empty());
        }
        eventually("the shims to exit", || {
            processes_mentioning(self.dir().to_str().unwrap(), &[self.pid]).is_empty()
        });
        let mounts: Vec<String> = mounts_under(self.dir())
            .into_iter()
            .filter(|m| ids.iter().any(|id| m.contains(id.as_str())))
            .collect();
        assert!(mounts.is_empty(), "mounts left: {mounts:#?}");
        for id in ids {
            let cg = cgroups_named(id);
            assert!(cg.is_empty(), "cgroups left for {id}: {cg:#?}");
        }
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let tasks = String::from_utf8_lossy(&self.run(&["task", "ls", "-q"]).stdout).into_owned();
        for id in tasks.lines() {
            let _ = self.run(&["task", "kill", "-s", "KILL", id]);
            let _ = self.run(&["task", "rm", "-f", id]);
        }
        if let Ok(ls) = String::from_utf8(self.run(&["container", "ls", "-q"]).stdout) {
            for id in ls.lines() {
                let _ = self.run(&["container", "rm", id]);
            }
        }
        let _ = Command::new(repo().join("hack/engines/stop-containerd"))
            .arg(self.dir())
            .stdin(Stdio::null())
            .status();
    }
}

const CTR_IMAGE: &str = "docker.io/library/busybox:latest";

#[test]
fn containerd_run_rm_image_rootfs_exit_code_tty() {
    let c = Containerd::new();
    let rootfs = c.dir().join("image/rootfs");
    let mut ids = Vec::new();
    for rt in BOTH {
        let id = unique_id("ci");
        ids.push(id.clone());
        let mut a = c.run_args(rt, None);
        a.extend(["--rm", CTR_IMAGE, &id, "sh", "-c", "echo hello; exit 3"].map(String::from));
        let out = c.run(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(
            (code(&out), text(&out).0.as_str()),
            (3, "hello\n"),
            "{rt:?}: {}",
            stderr_of(&out)
        );

        let id = unique_id("cr");
        ids.push(id.clone());
        let mut a = c.run_args(rt, None);
        a.extend(
            // ctr's --rootfs spec has no PATH: runc then finds no `sh` (runsbx
            // falls back to a default PATH), so name it absolutely.
            [
                "--rm",
                "--rootfs",
                rootfs.to_str().unwrap(),
                &id,
                "/bin/sh",
                "-c",
                "echo rootfs; exit 4",
            ]
            .map(String::from),
        );
        let out = c.run(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(
            (code(&out), text(&out).0.as_str()),
            (4, "rootfs\n"),
            "{rt:?}: {}",
            stderr_of(&out)
        );

        let id = unique_id("ct");
        ids.push(id.clone());
        let a = c.run_args(rt, None).join(" ");
        let mut cmd = with_pty(&format!(
            "ctr --address {} {a} --rm -t {CTR_IMAGE} {id} sh -c 'test -t 0 && echo TTY; exit 5'",
            c.sock
        ));
        cmd.current_dir(c.dir());
        let out = run_pty(cmd, c.dir());
        assert_eq!(code(&out), 5, "{rt:?}: {:?}", text(&out));
        assert!(text(&out).0.contains("TTY"), "{rt:?}: {:?}", text(&out));
    }
    c.assert_clean(&ids);
}

#[test]
fn containerd_task_exec_ps_pause_kill_rm() {
    let c = Containerd::new();
    let mut ids = Vec::new();
    for rt in BOTH {
        let id = unique_id("cd");
        ids.push(id.clone());
        let mut a = c.run_args(rt, None);
        a.extend(
            [
                "-d",
                CTR_IMAGE,
                &id,
                "sh",
                "-c",
                "trap 'exit 9' TERM; while :; do sleep 0.1; done",
            ]
            .map(String::from),
        );
        c.ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(c.task_status(&id), "RUNNING", "{rt:?}");

        let out = c.run(&[
            "task",
            "exec",
            "--exec-id",
            "e1",
            &id,
            "sh",
            "-c",
            "echo in-exec; exit 7",
        ]);
        assert_eq!(
            (code(&out), text(&out).0.as_str()),
            (7, "in-exec\n"),
            "{rt:?}: {}",
            stderr_of(&out)
        );

        let ps = c.ok(&["task", "ps", &id]);
        let pid = c
            .ok(&["task", "ls"])
            .lines()
            .find(|l| l.starts_with(&id))
            .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
            .unwrap();
        assert!(
            ps.lines()
                .any(|l| l.split_whitespace().next() == Some(pid.as_str())),
            "{rt:?}: {ps}"
        );

        c.ok(&["task", "pause", &id]);
        assert_eq!(c.task_status(&id), "PAUSED", "{rt:?}");
        c.ok(&["task", "resume", &id]);
        assert_eq!(c.task_status(&id), "RUNNING", "{rt:?}");

        c.ok(&["task", "kill", &id]); // SIGTERM: the trap exits 9
        eventually("the task to stop", || c.task_status(&id) == "STOPPED");
        let out = c.run(&["task", "rm", &id]);
        assert!(out.status.success(), "{rt:?}: {}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains("exit code 9"),
            "{rt:?}: {}",
            stderr_of(&out)
        );
        c.ok(&["container", "rm", &id]);

        // SIGKILL of a process that ignores SIGTERM.
        let id = unique_id("ck");
        ids.push(id.clone());
        let mut a = c.run_args(rt, None);
        a.extend(["-d", CTR_IMAGE, &id, "sleep", "1000"].map(String::from));
        c.ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
        c.ok(&["task", "kill", "-s", "SIGKILL", &id]);
        eventually("the task to stop", || c.task_status(&id) == "STOPPED");
        let out = c.run(&["task", "rm", &id]);
        assert!(
            stderr_of(&out).contains("exit code 137"),
            "{rt:?}: {}",
            stderr_of(&out)
        );
        c.ok(&["container", "rm", &id]);
    }
    c.assert_clean(&ids);
}

#[test]
fn containerd_create_error_carries_runsbx_message() {
    let c = Containerd::new();
    let mut ids = Vec::new();
    for rt in BOTH {
        let id = unique_id("ce");
        ids.push(id.clone());
        let mut a = c.run_args(rt, None);
        a.extend(
            [
                "--rm",
                "--mount",
                "type=bind,src=/nonexistent-runsbx,dst=/x,options=rbind",
                CTR_IMAGE,
                &id,
                "true",
            ]
            .map(String::from),
        );
        let out = c.run(&a.iter().map(String::as_str).collect::<Vec<_>>());
        let e = stderr_of(&out);
        assert_ne!(code(&out), 0, "{rt:?}");
        let want = match rt {
            Rt::Runsbx => "OCI runtime create failed: create: config.json: mounts[",
            Rt::Runc => "OCI runtime create failed: runc create failed",
        };
        assert!(
            e.contains(want) && e.contains("/nonexistent-runsbx"),
            "{rt:?}: {e}"
        );
        let _ = c.run(&["container", "rm", &id]);
    }
    c.assert_clean(&ids);
}

/// The Landlock default under containerd, and containerd's own default
/// seccomp profile (`ctr run --seccomp`) enforced.
#[test]
fn containerd_landlock_default_and_seccomp() {
    let c = Containerd::new();
    let wrapper = landlock_wrapper(c.dir(), None);
    let rw = c.dir().join("rw");
    fs::create_dir(&rw).unwrap();
    let script = "mount -o remount,rw / 2>/dev/null; echo remount=$?; \
                  touch /escape 2>/dev/null; echo root=$?; touch /rw/ok; echo rw=$?";
    let mnt = format!("type=bind,src={},dst=/rw,options=rbind:rw", rw.display());
    let mut ids = Vec::new();
    for (rt, bin, want) in [
        (
            Rt::Runsbx,
            Some(wrapper.to_str().unwrap()),
            "remount=1\nroot=1\nrw=0\n",
        ),
        (Rt::Runsbx, None, "remount=0\nroot=0\nrw=0\n"),
        (Rt::Runc, None, "remount=0\nroot=0\nrw=0\n"),
    ] {
        let id = unique_id("cl");
        ids.push(id.clone());
        let mut a = c.run_args(rt, bin);
        a.extend(
            [
                "--rm",
                "--read-only",
                "--cap-add",
                "CAP_SYS_ADMIN",
                "--mount",
                &mnt,
                CTR_IMAGE,
                &id,
                "sh",
                "-c",
                script,
            ]
            .map(String::from),
        );
        let out = c.run(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(text(&out).0, want, "{rt:?} {bin:?}: {}", stderr_of(&out));
        assert!(rw.join("ok").exists());
        fs::remove_file(rw.join("ok")).unwrap();
    }

    let probe = probe_bin();
    let pm = format!(
        "type=bind,src={},dst=/probe,options=rbind:ro",
        probe.display()
    );
    for (seccomp, want) in [(true, "EPERM"), (false, "EFAULT")] {
        let id = unique_id("cs");
        ids.push(id.clone());
        let mut a = c.run_args(Rt::Runsbx, None);
        a.push("--rm".into());
        if seccomp {
            a.push("--seccomp".into());
        }
        a.extend(["--mount", &pm, CTR_IMAGE, &id, "/probe", "perf-event-open"].map(String::from));
        let out = c.run(&a.iter().map(String::as_str).collect::<Vec<_>>());
        let v = probe_lines(&out.stdout);
        assert_eq!(v.len(), 1, "{:?}", text(&out));
        assert_eq!(v[0]["errno"], want, "seccomp {seccomp}: {v:?}");
    }
    c.assert_clean(&ids);
}
