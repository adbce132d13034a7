//! Shared helpers for the integration tests: they run the real `runsbx`
//! binary, as root, against the real kernel, each test with its own state
//! root so tests can run in parallel.
#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The runsbx under test: `$RUNSBX_BIN` when set (hack/test runs the
/// user half of tests/rootless.rs as another user, from copies it can read), else cargo's.
pub fn runsbx_bin() -> PathBuf {
    std::env::var_os("RUNSBX_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_runsbx")))
}

/// The suite needs root (namespaces, cgroups, mounts). Fails, never skips:
/// CI runs as root, and a silent skip would hide a missing layer.
pub fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (namespaces, cgroups, mounts): run the suite as root, e.g. `sudo hack/test`"
    );
}

pub fn require_file(path: &str, package: &str) {
    assert!(
        Path::new(path).exists(),
        "{path} is missing: install Debian's {package} (hack/setup-ci does)"
    );
}

/// The ordinary user root-run tests run runsbx as: `$RUNSBX_ROOTLESS_USER`,
/// else `runsbx-ci`, which hack/setup-ci creates.
pub fn ci_user() -> (u32, u32) {
    let name = std::env::var("RUNSBX_ROOTLESS_USER").unwrap_or_else(|_| "runsbx-ci".into());
    let user = nix::unistd::User::from_name(&name)
        .unwrap()
        .unwrap_or_else(|| panic!("user {name:?} is missing: hack/setup-ci creates it"));
    (user.uid.as_raw(), user.gid.as_raw())
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A unique container id for this test process.
pub fn unique_id(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

pub struct Env {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
}

impl Env {
    pub fn new() -> Self {
        require_root();
        Self::any_user()
    }

    /// An Env for the rootless suite, which runs as an ordinary user.
    pub fn any_user() -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("runsbx-test-")
            .tempdir()
            .expect("tempdir");
        let root = tmp.path().join("state");
        Self { tmp, root }
    }

    pub fn cmd(&self) -> Command {
        self.cmd_of(&runsbx_bin())
    }

    /// `cmd` of another runsbx binary (a copy somewhere else).
    pub fn cmd_of(&self, bin: &Path) -> Command {
        let mut c = Command::new(bin);
        c.arg("--root").arg(&self.root);
        c.stdin(Stdio::null());
        c
    }

    /// `runsbx ARGS` in the background, its output discarded.
    pub fn spawn_quiet(&self, args: &[&str]) -> std::process::Child {
        self.cmd()
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn runsbx")
    }

    /// `runsbx run` of `bundle` in the background (stdout discarded), once
    /// its container is running.
    pub fn spawn_run(&self, bundle: &str, id: &str) -> std::process::Child {
        let child = self
            .cmd()
            .args(["run", "--bundle", bundle, id])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        self.wait_status(id, "running");
        child
    }

    /// Runs runsbx with stdout and stderr going to files, not pipes: a
    /// detached container inherits them, and a pipe would stay open (and
    /// `output()` block) for as long as the container lives.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_cmd(self.cmd().args(args))
    }

    /// `run` of a command from `cmd` or `cmd_of`.
    pub fn run_cmd(&self, cmd: &mut Command) -> Output {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let out_path = self.tmp.path().join(format!("out.{n}"));
        let err_path = self.tmp.path().join(format!("err.{n}"));
        let status = cmd
            .stdout(fs::File::create(&out_path).unwrap())
            .stderr(fs::File::create(&err_path).unwrap())
            .status()
            .expect("spawn runsbx");
        Output {
            status,
            stdout: fs::read(&out_path).unwrap(),
            stderr: fs::read(&err_path).unwrap(),
        }
    }

    /// Runs and asserts success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "runsbx {args:?} failed ({:?}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn state(&self, id: &str) -> Value {
        serde_json::from_str(&self.ok(&["state", id])).expect("state JSON")
    }

    pub fn wait_status(&self, id: &str, want: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // Until a concurrent `run` has created it, the container may not
            // exist yet.
            let out = self.run(&["state", id]);
            let s: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            if s["status"] == want {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "{id} never became {want}: {s} {}",
                stderr_of(&out)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What is in the state root, but for the discovery cache, which
    /// outlives containers by design.
    pub fn state_entries(&self) -> Vec<String> {
        match fs::read_dir(&self.root) {
            Ok(rd) => rd
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != ".discovery")
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// A TMPDIR for runsbx under this env's temp dir, both traversable by
    /// the sandbox's nobody, so a test can see what a run leaves there.
    pub fn traversable_tmpdir(&self) -> PathBuf {
        let tmp = self.tmp.path().join("tmpdir");
        fs::create_dir_all(&tmp).unwrap();
        for dir in [self.tmp.path(), tmp.as_path()] {
            let mut p = fs::metadata(dir).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
            fs::set_permissions(dir, p).unwrap();
        }
        tmp
    }

    /// A directory the workload of a root-invoked sandbox (host nobody) can
    /// write, under a temp dir it can traverse. The same dir on every call.
    pub fn nobody_workdir(&self) -> PathBuf {
        let dir = self.tmp.path().join("nobody-work");
        fs::create_dir_all(&dir).unwrap();
        nix::unistd::chown(&dir, Some(65534.into()), Some(65534.into())).unwrap();
        let mut p = fs::metadata(self.tmp.path()).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
        fs::set_permissions(self.tmp.path(), p).unwrap();
        dir
    }

    /// A nodev tmpfs under this env's temp dir, unmounted when dropped: a
    /// rootfs there lets a foreground run of a bundle without resources go
    /// without a cgroup (without a device cgroup, no device node the rootfs
    /// could carry may be opened; cgroup::needs_no_cgroup).
    pub fn nodev_dir(&self) -> NodevDir {
        let dir = self.tmp.path().join("nodev");
        fs::create_dir(&dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "nodev,mode=0755", "tmpfs"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(mounted.success(), "mount a tmpfs on {}", dir.display());
        NodevDir(dir)
    }

    /// A busybox bundle under this env's temp dir.
    pub fn bundle(&self, name: &str, args: &[&str]) -> Bundle {
        Bundle::busybox(&self.tmp.path().join(name), args)
    }
}

/// A tmpfs mounted nodev ([`Env::nodev_dir`]).
pub struct NodevDir(PathBuf);

impl NodevDir {
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for NodevDir {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

pub struct Bundle {
    pub dir: PathBuf,
    pub config: Value,
}

const APPLETS: &[&str] = &[
    "sh", "true", "false", "sleep", "cat", "echo", "ls", "id", "kill", "env", "pwd", "readlink",
    "touch", "mkdir", "rm", "grep", "wc", "head", "stat", "ps", "hostname", "test", "[", "printf",
    "stty",
];

impl Bundle {
    /// A rootfs holding only a static busybox and its applet links.
    pub fn busybox(dir: &Path, args: &[&str]) -> Self {
        require_file("/usr/bin/busybox", "busybox-static");
        let rootfs = dir.join("rootfs");
        fs::create_dir_all(rootfs.join("bin")).unwrap();
        fs::copy("/usr/bin/busybox", rootfs.join("bin/busybox")).unwrap();
        for a in APPLETS {
            symlink("busybox", rootfs.join("bin").join(a)).unwrap();
        }
        for d in ["proc", "dev", "tmp", "sys", "etc"] {
            fs::create_dir_all(rootfs.join(d)).unwrap();
        }
        let config = base_config(args);
        let b = Self {
            dir: dir.to_path_buf(),
            config,
        };
        b.save();
        b
    }

    pub fn save(&self) {
        fs::write(
            self.dir.join("config.json"),
            serde_json::to_vec_pretty(&self.config).unwrap(),
        )
        .unwrap();
    }

    pub fn path(&self) -> &str {
        self.dir.to_str().unwrap()
    }

    /// Waits up to 10 s for the workload to create `/ready` in its rootfs. A
    /// shell is PID 1 of its pid namespace, so until its `trap` has run, the
    /// kernel drops a signal from outside: scripts that trap a signal touch
    /// `/ready` after the trap, and tests wait for it before signalling.
    pub fn wait_ready(&self) {
        let ready = self.dir.join("rootfs/ready");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ready.exists() {
            assert!(
                Instant::now() < deadline,
                "the workload never touched /ready"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Adds a new user namespace whose root is host nobody (one uid and one
    /// gid mapping), as a generated sandbox bundle has.
    pub fn with_userns_as_nobody(&mut self) {
        self.config["linux"]["namespaces"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({ "type": "user" }));
        for key in ["uidMappings", "gidMappings"] {
            self.config["linux"][key] =
                serde_json::json!([{ "containerID": 0, "hostID": 65534, "size": 1 }]);
        }
    }

    /// Adds a file to the rootfs (e.g. the probe).
    pub fn add_file(&self, src: &Path, dest: &str) {
        let to = self.dir.join("rootfs").join(dest.trim_start_matches('/'));
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(src, &to).unwrap();
    }
}

/// The config the tests start from: runc's defaults, minus capabilities.
pub fn base_config(args: &[&str]) -> Value {
    json!({
        "ociVersion": "1.0.2",
        "root": { "path": "rootfs", "readonly": false },
        "hostname": "test",
        "process": {
            "terminal": false,
            "user": { "uid": 0, "gid": 0 },
            "args": args,
            "env": ["PATH=/bin", "TERM=xterm"],
            "cwd": "/",
            "capabilities": { "bounding": [], "effective": [], "permitted": [], "inheritable": [], "ambient": [] },
            "noNewPrivileges": true
        },
        "mounts": [
            { "destination": "/proc", "type": "proc", "source": "proc" },
            { "destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"] },
            { "destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "size=16m"] }
        ],
        "linux": {
            "namespaces": [ { "type": "pid" }, { "type": "network" }, { "type": "ipc" }, { "type": "uts" }, { "type": "mount" } ],
            "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list"],
            "readonlyPaths": ["/proc/sys", "/proc/sysrq-trigger"]
        }
    })
}

/// Waits (up to 10 s) until runsbx `child` has forked (libcontainer's
/// intermediate process exists), sleeps `then`, and SIGKILLs and reaps it.
pub fn kill_after_its_fork(child: &mut std::process::Child, then: Duration) {
    let children = format!("/proc/{0}/task/{0}/children", child.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    while fs::read_to_string(&children).is_ok_and(|c| c.trim().is_empty())
        && Instant::now() < deadline
    {
        std::thread::yield_now();
    }
    std::thread::sleep(then);
    let _ = child.kill();
    child.wait().unwrap();
}

/// Waits up to `limit` for `pid` to be gone or a zombie; whether it is.
pub fn wait_dead(pid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while pid_alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

pub fn pid_alive(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            // State is the field after the parenthesised command name.
            let state = s.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// cgroup directories whose name mentions `id`, under every hierarchy.
pub fn cgroups_named(id: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(hier) = fs::read_dir("/sys/fs/cgroup") else {
        return found;
    };
    for h in hier.flatten() {
        let mut stack = vec![h.path()];
        while let Some(dir) = stack.pop() {
            let Ok(rd) = fs::read_dir(&dir) else { continue };
            for e in rd.flatten() {
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    if e.file_name().to_string_lossy().contains(id) {
                        found.push(e.path());
                    }
                    if stack.len() < 64 {
                        stack.push(e.path());
                    }
                }
            }
        }
    }
    found
}

/// numpy and pandas, and sqlite on a file in the workdir (POSIX locks):
/// prints `15 3` and `42`.
pub const PY_DATA: &str = "import numpy, pandas, sqlite3\n\
    print(numpy.arange(6).sum(), pandas.Series([1, 2]).sum())\n\
    c = sqlite3.connect('db.sqlite')\n\
    c.execute('create table t(x)')\n\
    c.execute('insert into t values (42)')\n\
    c.commit()\n\
    print(c.execute('select x from t').fetchone()[0])";

/// `runsbx sandbox FLAGS -- CMD` under `env`.
pub fn sandbox(env: &Env, flags: &[&str], cmd: &[&str]) -> Output {
    let mut args = vec!["sandbox"];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend_from_slice(cmd);
    env.run(&args)
}

/// A Python program that runs `attempts` (lines of `attempt(NAME, FUNC)`)
/// and prints `NAME ALLOWED` or `NAME <errno name>` for each.
pub fn py_attempts(attempts: &str) -> String {
    const PRELUDE: &str = r#"
import errno, os, socket, json, sys
def attempt(name, f):
    try:
        f()
        print(name, "ALLOWED")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
"#;
    format!("{PRELUDE}{attempts}")
}

/// `selftest` with the probe passes, saying so.
pub fn assert_selftest_passes(env: &Env, probe: &Path) {
    let out = env.run(&["selftest", "--probe", probe.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "selftest failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        stderr_of(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("selftest passed"));
}

pub fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// No state entry and no cgroup named after `id` is left.
pub fn assert_clean(env: &Env, id: &str) {
    let left = env.state_entries();
    assert!(left.is_empty(), "state left behind: {left:?}");
    let cg = cgroups_named(id);
    assert!(cg.is_empty(), "cgroups left: {cg:?}");
}

/// One clear line, non-zero exit.
pub fn assert_one_line_error(out: &Output, needle: &str) {
    let err = stderr_of(out);
    assert!(
        !out.status.success(),
        "expected failure, got success; stderr: {err}"
    );
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "expected one error line, got:\n{err}"
    );
    // `error` is the word tools look for (runc's stderr has `level=error`).
    assert!(
        err.starts_with("runsbx: error: "),
        "error line should start with `runsbx: error: `: {err}"
    );
    assert!(
        err.contains(needle),
        "error line should mention {needle:?}: {err}"
    );
}

// ---- Probe and runc helpers (seccomp and differential tests) ----

/// The static probe: `$RUNSBX_PROBE` (set by hack/test), else built once per
/// test process with `hack/build-probe`. Fails with the reason, never skips.
pub fn probe_bin() -> PathBuf {
    static PROBE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PROBE
        .get_or_init(|| {
            if let Some(p) = std::env::var_os("RUNSBX_PROBE") {
                let p = PathBuf::from(p);
                assert!(
                    p.is_file(),
                    "RUNSBX_PROBE={} is not a file: run hack/build-probe",
                    p.display()
                );
                return p;
            }
            let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            let out = Command::new(repo.join("hack/build-probe"))
                .current_dir(&repo)
                .stdin(Stdio::null())
                .output()
                .expect("spawn hack/build-probe");
            assert!(
                out.status.success(),
                "RUNSBX_PROBE is unset and hack/build-probe failed ({:?}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            let p = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
            assert!(
                p.is_file(),
                "hack/build-probe printed {}, not a file",
                p.display()
            );
            p
        })
        .clone()
}

pub const RUNC: &str = "/usr/sbin/runc";

/// The JSON lines a probe printed, in order; other lines are ignored.
pub fn probe_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("check").is_some())
        .collect()
}

impl Env {
    /// runc's state root for this env, next to runsbx's.
    pub fn runc_root(&self) -> PathBuf {
        self.tmp.path().join("runc-state")
    }

    /// Runs Debian's runc with this env's runc root; stdio to files as in
    /// [`Env::run`].
    pub fn runc(&self, args: &[&str]) -> Output {
        require_file(RUNC, "runc");
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let out_path = self.tmp.path().join(format!("runc-out.{n}"));
        let err_path = self.tmp.path().join(format!("runc-err.{n}"));
        let status = Command::new(RUNC)
            .arg("--root")
            .arg(self.runc_root())
            .args(args)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&out_path).unwrap())
            .stderr(fs::File::create(&err_path).unwrap())
            .status()
            .expect("spawn runc");
        Output {
            status,
            stdout: fs::read(&out_path).unwrap(),
            stderr: fs::read(&err_path).unwrap(),
        }
    }

    pub fn runc_ok(&self, args: &[&str]) -> String {
        let out = self.runc(args);
        assert!(
            out.status.success(),
            "runc {args:?} failed ({:?}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Force-deletes every runc container under this env's runc root; tests
    /// call it at the end, and [`Cleanup`] on unwind.
    pub fn runc_cleanup(&self) {
        let Ok(rd) = fs::read_dir(self.runc_root()) else {
            return;
        };
        for e in rd.flatten() {
            let id = e.file_name().to_string_lossy().into_owned();
            let _ = self.runc(&["delete", "--force", &id]);
        }
    }
}

/// Force-deletes the env's containers, runc's and runsbx's, when dropped,
/// also when a test panics (the state roots live in the temp dir, but the
/// cgroups and processes do not).
pub struct Cleanup<'a>(pub &'a Env);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        self.0.runc_cleanup();
        for id in self.0.state_entries() {
            if !id.starts_with('.') {
                let _ = self.0.run(&["delete", "--force", &id]);
            }
        }
    }
}

/// How a runsbx process that a container can see runs (CVE-2019-5736).
#[derive(Debug, PartialEq, Eq)]
pub enum Sealed {
    /// From its binary seen through a private read-only overlayfs.
    Overlay,
    /// From a sealed memfd copy.
    Memfd,
}

/// Asserts that process `pid` runs from a sealed view of runsbx, never the
/// binary on disk, and returns which one with a descriptor of its exe for
/// [`assert_unwritable`] once the process is gone.
pub fn assert_sealed_exe(pid: impl std::fmt::Display, who: &str) -> (Sealed, fs::File) {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let path = format!("/proc/{pid}/exe");
    let exe = fs::read_link(&path).unwrap();
    let held = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(&path)
        .unwrap();
    let kind = if exe.to_string_lossy().starts_with("/memfd:runsbx") {
        Sealed::Memfd
    } else {
        let fs_type = nix::sys::statfs::fstatfs(&held).unwrap().filesystem_type();
        let ro = nix::sys::statvfs::fstatvfs(&held)
            .unwrap()
            .flags()
            .contains(nix::sys::statvfs::FsFlags::ST_RDONLY);
        assert!(
            fs_type == nix::sys::statfs::OVERLAYFS_SUPER_MAGIC && ro,
            "{who} runs from {exe:?} (fs type {fs_type:?}, read-only: {ro})"
        );
        // runsbx's own view, which no namespace lists, not a read-only
        // overlayfs mounted somewhere.
        let fdinfo = fs::read_to_string(format!("/proc/self/fdinfo/{}", held.as_raw_fd())).unwrap();
        let mnt = fdinfo
            .lines()
            .find_map(|l| l.strip_prefix("mnt_id:"))
            .unwrap()
            .trim()
            .to_string();
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(
            !mountinfo
                .lines()
                .any(|l| l.split(' ').next() == Some(&*mnt)),
            "{who} runs from a mounted overlayfs ({exe:?}, mount {mnt})"
        );
        Sealed::Overlay
    };
    (kind, held)
}

/// What CVE-2019-5736 does once the runtime has exited: reopen its exe
/// through the descriptor it kept, and write. Refused: EROFS (overlayfs),
/// or EPERM at the write (sealed memfd). The write puts back the first
/// byte as it was, so a regression would not damage the binary.
pub fn assert_unwritable(held: &fs::File, who: &str) {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    let path = format!("/proc/self/fd/{}", held.as_raw_fd());
    let mut first = [0u8; 1];
    fs::File::open(&path)
        .unwrap()
        .read_exact_at(&mut first, 0)
        .unwrap();
    let err = match fs::OpenOptions::new().write(true).open(&path) {
        Ok(f) => f.write_at(&first, 0).expect_err("the write went through"),
        Err(e) => e,
    };
    assert!(
        matches!(err.raw_os_error(), Some(libc::EPERM) | Some(libc::EROFS)),
        "{who}: {err}"
    );
}

/// hack/engines/setup-podman run for `dir` with the runsbx under test: a
/// private podman configuration (and the busybox image); returns the
/// environment variables podman reads it through.
pub fn setup_podman(dir: &Path) -> Vec<(String, String)> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(repo.join("hack/engines/setup-podman"))
        .arg(dir)
        .arg(runsbx_bin())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "hack/engines/setup-podman failed: {}",
        stderr_of(&out)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
        .collect()
}

/// Fails, listing what is there, unless `tmp` (the TMPDIR runsbx ran
/// with) is empty: no bundle, no private workdir left.
pub fn assert_tmpdir_empty(tmp: &Path) {
    let left: Vec<_> = fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

/// The escape attempts each interface's test runs inside a session.
pub const SESSION_ESCAPES: &str = include_str!("session_escapes.py");

/// Fails unless `out` (what SESSION_ESCAPES printed) says every attempt
/// was refused, one line each.
pub fn assert_session_escapes_refused(out: &str) {
    let attempts = SESSION_ESCAPES
        .lines()
        .filter(|l| l.starts_with("attempt(\""))
        .count();
    assert_eq!(out.lines().count(), attempts, "{out}");
    for line in out.lines() {
        assert!(line.ends_with(" refused"), "{line}\n{out}");
    }
}

/// Runs `cmd` and fails, naming `what` with its output, unless it exits 0;
/// returns its stdout.
pub fn run_ok(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        stderr_of(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Fails unless a run left nothing: `tmp` (its TMPDIR) is empty and the
/// state root holds nothing but discovery's cache.
pub fn assert_no_leftovers(env: &Env, tmp: &Path) {
    assert_tmpdir_empty(tmp);
    let left: Vec<_> = env
        .state_entries()
        .into_iter()
        .filter(|e| e != ".discovery")
        .collect();
    assert!(left.is_empty(), "state left: {left:?}");
}

// ---- Escape targets on the host (tests/security.rs, tests/cve.rs) ----

/// A host directory that a symlink in a rootfs aims at
/// (`/../../../../tmp/<name>`), to check that nothing lands in it.
pub struct HostTarget {
    pub dir: tempfile::TempDir,
    pub name: String,
}

impl HostTarget {
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("runsbx-escape-target-")
            .tempdir_in("/tmp")
            .unwrap();
        let name = dir
            .path()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        Self { dir, name }
    }

    pub fn aim(&self, link: &Path) {
        symlink(format!("/../../../../tmp/{}", self.name), link).unwrap();
    }

    /// Neither a new entry nor a mount.
    pub fn untouched(&self) {
        if let Some(what) = self.tampered(&[]) {
            panic!("{what}");
        }
    }

    /// How the directory differs from holding exactly the files `seeded`
    /// (name, content) and no mount: `None` when it does not.
    pub fn tampered(&self, seeded: &[(&str, &str)]) -> Option<String> {
        let mut names: Vec<String> = fs::read_dir(self.dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut want: Vec<String> = seeded.iter().map(|(n, _)| n.to_string()).collect();
        want.sort();
        if names != want {
            return Some(format!(
                "host dir {} holds {names:?}",
                self.dir.path().display()
            ));
        }
        for (name, content) in seeded {
            let path = self.dir.path().join(name);
            let meta = fs::symlink_metadata(&path).unwrap();
            if !meta.is_file() || fs::read_to_string(&path).unwrap() != *content {
                return Some(format!("host file {} was changed", path.display()));
            }
        }
        let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
        mounts.contains(&self.name).then(|| {
            format!(
                "a mount appeared on the host in {}",
                self.dir.path().display()
            )
        })
    }

    /// Writes `content` to `name` in the directory.
    pub fn seed(&self, name: &str, content: &str) {
        fs::write(self.dir.path().join(name), content).unwrap();
    }
}
