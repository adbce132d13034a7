//! Where runsbx runs (docs/where.md): `runsbx sandbox` with no mode flag
//! inside podman containers this test starts itself, with podman's default
//! security, offline: `podman run --rootfs DIR` of a directory holding
//! read-only binds of the host's /usr (the /bin, /lib, /lib64, /sbin
//! symlinks point into it) and an /etc of its own with one file the
//! sandbox must not read; runsbx and the probe bound in. As uid 0 (no
//! CAP_SYS_ADMIN) and as uid 65534 (the engine's seccomp profile refuses
//! sethostname and mount), namespaces are unavailable: the run takes the
//! landlock mode, says why in one line, reports the mode, and still
//! refuses the read; numpy, pandas, sqlite in the workdir and the REPL
//! client's requests work, selftest passes; pinned to namespaces it fails
//! with the one-line cause.
//!
//! Needs root, podman and runc (hack/setup-ci installs them) and the probe
//! (hack/build-probe); a missing one fails with its name, never a skip.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::*;

/// A podman configuration (hack/engines/setup-podman, as tests/engines.rs
/// uses it) and a rootfs directory made of the host's directories.
struct Outer {
    tmp: tempfile::TempDir,
    envs: Vec<(String, String)>,
}

/// The REPL client and its driver, where the client looks for the driver
/// (`../bundles/python-repl/repl.py` from its own directory).
const REPL_CLIENT: &str = "/opt/repl/hack/python-repl-client.py";
const REPL_DRIVER: &str = "/opt/repl/bundles/python-repl/repl.py";

/// The file outside the workdir the workload tries to read.
const SECRET: &str = "/etc/runsbx-where-secret";

impl Outer {
    fn new() -> Self {
        require_root();
        require_file("/usr/bin/podman", "podman");
        require_file("/usr/bin/conmon", "conmon");
        require_file(RUNC, "runc");
        let tmp = tempfile::Builder::new()
            .prefix("runsbx-where-")
            .tempdir()
            .unwrap();
        let envs = setup_podman(tmp.path());
        let o = Self { tmp, envs };
        o.make_rootfs();
        o
    }

    fn rootfs(&self) -> PathBuf {
        self.tmp.path().join("rootfs")
    }

    /// Mount points for /usr and runsbx, the merged-/usr symlinks, a
    /// world-writable /tmp (TMPDIR of the sandbox's private workdir), and
    /// an /etc holding the secret.
    fn make_rootfs(&self) {
        let r = self.rootfs();
        for d in ["usr", "etc", "proc", "dev", "sys", "tmp", "opt/runsbx"] {
            fs::create_dir_all(r.join(d)).unwrap();
        }
        for (link, to) in [
            ("bin", "usr/bin"),
            ("sbin", "usr/sbin"),
            ("lib", "usr/lib"),
            ("lib64", "usr/lib64"),
        ] {
            symlink(to, r.join(link)).unwrap();
        }
        fs::set_permissions(r.join("tmp"), fs::Permissions::from_mode(0o1777)).unwrap();
        let secret = r.join(SECRET.trim_start_matches('/'));
        fs::write(&secret, "host secret\n").unwrap();
        fs::set_permissions(&secret, fs::Permissions::from_mode(0o644)).unwrap();
        for p in [self.tmp.path(), r.as_path()] {
            fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    /// [`Outer::run_with`], asserting success; its stdout.
    fn ok_with(&self, user: &str, engine: &[&str], cmd: &[&str]) -> String {
        let out = self.run_with(user, engine, cmd);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{user}: {stdout}\n{}",
            stderr_of(&out)
        );
        stdout
    }

    /// `podman run` (runc, default security plus `engine`'s flags) as
    /// `user` of `cmd`, with the host's /usr, runsbx and the probe bound
    /// read-only.
    fn run_with(&self, user: &str, engine: &[&str], cmd: &[&str]) -> Output {
        let bind = |src: &Path, dst: &str| format!("{}:{dst}:ro", src.display());
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut c = Command::new("podman");
        c.envs(self.envs.iter().map(|(k, v)| (k, v)));
        c.args(["--runtime", "runc", "run", "--rm", "--user", user])
            // DESIGN.md: this VM refuses podman's default NOFILE.
            .args([
                "--ulimit",
                "nofile=1024:1024",
                "--ulimit",
                "nproc=4096:4096",
            ])
            .args(["-v", "/usr:/usr:ro"])
            // Debian's numpy finds its BLAS through /etc/alternatives.
            .args(["-v", "/etc/alternatives:/etc/alternatives:ro"])
            .args([
                "-v",
                &bind(&repo.join("hack/python-repl-client.py"), REPL_CLIENT),
            ])
            .args([
                "-v",
                &bind(&repo.join("bundles/python-repl/repl.py"), REPL_DRIVER),
            ])
            .args(["-v", &bind(&runsbx_bin(), "/opt/runsbx/runsbx")])
            .args(["-v", &bind(&probe_bin(), "/opt/runsbx/runsbx-probe")])
            .args(engine)
            // Last before the command (DESIGN.md).
            .arg("--rootfs")
            .arg(self.rootfs())
            .args(cmd)
            .stdin(Stdio::null());
        let out = c.output().expect("spawn podman");
        // podman itself failing is not runsbx's answer: say so.
        assert!(
            !stderr_of(&out).starts_with("Error:"),
            "podman failed: {}",
            stderr_of(&out)
        );
        out
    }

    /// The sandbox's leftovers in the container's /tmp: private workdirs.
    fn workdirs_left(&self) -> Vec<String> {
        fs::read_dir(self.rootfs().join("tmp"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("runsbx-work"))
            .collect()
    }
}

impl Drop for Outer {
    fn drop(&mut self) {
        let mut c = Command::new("podman");
        c.envs(self.envs.iter().map(|(k, v)| (k, v)));
        let _ = c
            .args(["--runtime", "runc", "rm", "-a", "-f", "-t", "0"])
            .output();
    }
}

/// The workload: 42, then the read outside the workdir, caught.
const PY: &str = "print(6*7)\ntry:\n    open('/etc/runsbx-where-secret').read()\n    print('READ')\nexcept OSError as e:\n    print('denied', e.errno)";

/// `runsbx sandbox --status-fd 3` of [`PY`] with no mode flag, in a
/// container of `user` started with `engine`: the mode in the start line,
/// the workload's lines, stderr. Asserts success and the exit line's mode.
fn sandboxed(o: &Outer, user: &str, engine: &[&str]) -> (String, Vec<String>, String) {
    let sandbox =
        format!("exec /opt/runsbx/runsbx sandbox --status-fd 3 -- python3 -c \"{PY}\" 3>&1");
    let out = o.run_with(user, engine, &["/bin/sh", "-c", &sandbox]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), stderr_of(&out));
    assert!(out.status.success(), "{user}: {stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{user}: {stdout}");
    let start: serde_json::Value = serde_json::from_str(lines[0]).expect("start line");
    let exit: serde_json::Value = serde_json::from_str(lines[3]).expect("exit line");
    assert_eq!(start["event"], "start", "{stdout}");
    assert_eq!(exit["isolation"], start["isolation"], "{stdout}");
    let mode = start["isolation"].as_str().unwrap_or_default().to_string();
    (mode, vec![lines[1].into(), lines[2].into()], stderr)
}

/// In each container that keeps namespaces from runsbx (started as `user`
/// with `engine`'s flags): the landlock mode, announced with `cause`; 42;
/// the read denied; the mode in the status line; numpy, pandas, sqlite and
/// the REPL client's requests; selftest passing in that mode; pinned
/// namespaces refused with `cause`.
fn landlock_in(user: &str, engine: &[&str], cause: &str) {
    let o = Outer::new();
    let (mode, lines, stderr) = sandboxed(&o, user, engine);
    assert_eq!(mode, "landlock");
    assert_eq!(lines, ["42", "denied 13"], "{user}");
    // One line on stderr: the step down, its cause and the fix.
    assert_eq!(stderr.lines().count(), 1, "{user}: {stderr}");
    assert!(
        stderr.starts_with("runsbx: namespaces are unavailable here (")
            && stderr.contains(cause)
            && stderr.contains("--isolation landlock"),
        "{user}: {stderr}"
    );
    assert_eq!(o.workdirs_left(), Vec::<String>::new());

    let stdout = o.ok_with(
        user,
        engine,
        &[
            "/opt/runsbx/runsbx",
            "sandbox",
            "--",
            "python3",
            "-c",
            PY_DATA,
        ],
    );
    assert_eq!(stdout, "15 3\n42\n", "{user}");

    // The REPL client's requests (hack/python-repl-client.py), each answer
    // checked by the client itself.
    let stdout = o.ok_with(
        user,
        engine,
        &["python3", REPL_CLIENT, "--runsbx", "/opt/runsbx/runsbx"],
    );
    assert!(stdout.contains(" 0 failure(s)"), "{user}: {stdout}");

    // A flag only the container honours: one line, the flag and the cause.
    let out = o.run_with(
        user,
        engine,
        &[
            "/opt/runsbx/runsbx",
            "sandbox",
            "--memory",
            "100M",
            "--",
            "true",
        ],
    );
    assert_one_line_error(&out, "sandbox: --memory needs the namespaces mode");
    assert!(stderr_of(&out).contains(cause), "{}", stderr_of(&out));

    let stdout = o.ok_with(user, engine, &["/opt/runsbx/runsbx", "selftest"]);
    assert!(stdout.starts_with("isolation: landlock\n"), "{stdout}");
    assert!(stdout.contains("selftest passed"), "{stdout}");

    let out = o.run_with(
        user,
        engine,
        &[
            "/opt/runsbx/runsbx",
            "sandbox",
            "--isolation",
            "namespaces",
            "--",
            "python3",
            "-c",
            "print(6*7)",
        ],
    );
    assert_one_line_error(
        &out,
        "sandbox: --isolation namespaces: namespaces are unavailable here: ",
    );
    assert!(stderr_of(&out).contains(cause), "{}", stderr_of(&out));
    assert_eq!(out.status.code(), Some(125));
    assert!(out.stdout.is_empty());
    assert_eq!(o.workdirs_left(), Vec::<String>::new());
}

#[test]
fn podman_default_security_as_root_runs_landlock_and_says_why() {
    landlock_in("0:0", &[], "runs as root without CAP_SYS_ADMIN");
}

#[test]
fn podman_default_security_as_nobody_runs_landlock_and_says_why() {
    landlock_in(
        "65534:65534",
        &[],
        "the container engine's seccomp profile refuses sethostname",
    );
}

/// An engine seccomp profile that refuses user namespaces, as Docker's
/// default refuses `unshare` and namespace flags to a process without
/// CAP_SYS_ADMIN (podman's lets a non-root uid make one): the probe's first
/// step is refused, the cause names it, the landlock mode runs.
#[test]
fn podman_seccomp_refusing_user_namespaces_runs_landlock_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("no-userns.json");
    let clone_newuser = libc::CLONE_NEWUSER as u64;
    let json = serde_json::json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [
            {"names": ["unshare"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
            {"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "args": [
                {"index": 0, "value": clone_newuser, "valueTwo": clone_newuser,
                 "op": "SCMP_CMP_MASKED_EQ"}]},
            // glibc falls back to clone, whose flags the filter can read.
            {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": libc::ENOSYS},
        ],
    });
    fs::write(&profile, json.to_string()).unwrap();
    let seccomp = format!("seccomp={}", profile.display());
    landlock_in(
        "65534:65534",
        &["--security-opt", &seccomp],
        "the container engine's seccomp profile refuses a user namespace",
    );
}

/// The engine flags docs/where.md gives (and the causes name) get the
/// namespace mode back, as root and as a non-root uid: nothing announced,
/// the secret not even there (only the binds exist).
#[test]
fn podman_with_the_documented_flags_runs_namespaces() {
    let o = Outer::new();
    let unmask = ["--security-opt", "unmask=/proc/*"];
    for (user, flags) in [
        ("0:0", ["--cap-add", "SYS_ADMIN,SYS_PTRACE"]),
        ("65534:65534", ["--security-opt", "seccomp=unconfined"]),
    ] {
        let engine = [&flags[..], &unmask[..]].concat();
        let (mode, lines, stderr) = sandboxed(&o, user, &engine);
        assert_eq!(mode, "namespaces", "{user}: {stderr}");
        assert_eq!(lines, ["42", "denied 2"], "{user}");
        assert_eq!(stderr, "", "{user}");
    }
    assert_eq!(o.workdirs_left(), Vec::<String>::new());
}

/// hack/apparmor/runsbx, the profile docs/where.md tells Ubuntu operators to
/// install, parses with AppArmor 4's parser (Debian trixie's, which
/// hack/setup-ci unpacks with its own libc and runs through its own loader;
/// this kernel has no AppArmor to load it into). A copy with a broken rule
/// is refused, so a parser that accepted anything would not pass.
#[test]
fn apparmor_profile_parses() {
    let aa = Path::new("/opt/runsbx-apparmor");
    let parser = aa.join("usr/sbin/apparmor_parser");
    require_file(
        parser.to_str().unwrap(),
        "AppArmor 4's parser (hack/setup-ci)",
    );
    let profile = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hack/apparmor/runsbx");
    let text = fs::read_to_string(&profile).unwrap();
    assert!(
        text.contains("profile runsbx /usr/{local/,}bin/runsbx") && text.contains("  userns,\n"),
        "{text}"
    );
    let broken = tempfile::NamedTempFile::new().unwrap();
    fs::write(broken.path(), text.replace("userns,", "userns rwx,")).unwrap();
    let parse = |file: &Path| {
        let features = aa.join("usr/share/apparmor-features/features");
        Command::new(aa.join("usr/lib64/ld-linux-x86-64.so.2"))
            .arg("--library-path")
            .arg(aa.join("usr/lib/x86_64-linux-gnu"))
            .arg(&parser)
            .args(["-QK", "--config-file", "/dev/null", "-o", "/dev/null"])
            .arg("--base")
            .arg(aa.join("etc/apparmor.d"))
            .arg("-I")
            .arg(aa.join("etc/apparmor.d"))
            .arg("--policy-features")
            .arg(&features)
            .arg("--kernel-features")
            .arg(&features)
            .arg(file)
            .output()
            .expect("run apparmor_parser")
    };
    let out = parse(&profile);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let out = parse(broken.path());
    assert!(
        !out.status.success() && stderr_of(&out).contains("AppArmor parser error"),
        "{}",
        stderr_of(&out)
    );
}
