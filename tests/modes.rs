//! The sandbox's two isolations side by side (issue 30, docs/where.md): the
//! escape battery (`selftest`), the security probes and the workload run in
//! every cell of {namespaces, landlock} x {invoked by root, by an ordinary
//! user}, with the mode pinned. What may differ between the cells is written
//! once, in `expected`, each difference with its reason; docs/where.md's
//! table says the same. Each test runs all four cells and fails with every
//! cell's mismatches, not only the first.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::*;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Namespaces,
    Landlock,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    Root,
    User,
}

const CELLS: [(Mode, Who); 4] = [
    (Mode::Namespaces, Who::Root),
    (Mode::Namespaces, Who::User),
    (Mode::Landlock, Who::Root),
    (Mode::Landlock, Who::User),
];

impl Mode {
    fn flag(self) -> &'static str {
        match self {
            Mode::Namespaces => "namespaces",
            Mode::Landlock => "landlock",
        }
    }
}

/// One test's four cells: copies of runsbx and the probe in a directory
/// every user can read (the checkout may be closed to the user), and per
/// cell a state root and a TMPDIR owned by whoever invokes runsbx there.
struct Matrix {
    env: Env,
    bin: PathBuf,
    probe: PathBuf,
    user: (u32, u32),
}

impl Matrix {
    fn new() -> Self {
        let env = Env::new();
        let user = ci_user();
        fs::set_permissions(env.tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let dir = env.tmp.path().join("bin");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        let copy = |src: &Path, name: &str| {
            let dst = dir.join(name);
            fs::copy(src, &dst).unwrap();
            fs::set_permissions(&dst, fs::Permissions::from_mode(0o755)).unwrap();
            dst
        };
        let bin = copy(&runsbx_bin(), "runsbx");
        let probe = copy(&probe_bin(), "runsbx-probe");
        Self {
            env,
            bin,
            probe,
            user,
        }
    }

    /// The cell's own directory: `state` (the state root) and `tmp` (its
    /// TMPDIR, where runsbx makes the private workdir), owned by the invoker
    /// and traversable by the sandbox's nobody.
    fn dir(&self, (mode, who): (Mode, Who)) -> PathBuf {
        let dir = self.env.tmp.path().join(format!("{mode:?}-{who:?}"));
        if !dir.exists() {
            for d in [dir.clone(), dir.join("state"), dir.join("tmp")] {
                fs::create_dir(&d).unwrap();
                fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
                if who == Who::User {
                    nix::unistd::chown(&d, Some(self.user.0.into()), Some(self.user.1.into()))
                        .unwrap();
                }
            }
        }
        dir
    }

    /// `program`, run as `who`.
    fn as_invoker(&self, who: Who, program: &str) -> Command {
        match who {
            Who::Root => Command::new(program),
            Who::User => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={}", self.user.0))
                    .arg(format!("--regid={}", self.user.1))
                    .args(["--clear-groups", "--", program]);
                c
            }
        }
    }

    /// `runsbx --root STATE ARGS` in the cell, with a clean environment;
    /// stdout and stderr through files (Env::run_cmd).
    fn run(&self, cell: (Mode, Who), args: &[&str]) -> Output {
        let dir = self.dir(cell);
        let mut cmd = self.as_invoker(cell.1, "env");
        cmd.args(["-i", "PATH=/usr/bin:/bin", "LANG=C.UTF-8"])
            .arg(format!("HOME={}", dir.join("tmp").display()))
            .arg(format!("TMPDIR={}", dir.join("tmp").display()))
            .arg(&self.bin)
            .arg("--root")
            .arg(dir.join("state"))
            .args(args)
            .current_dir(dir.join("tmp"))
            .stdin(Stdio::null());
        self.env.run_cmd(&mut cmd)
    }

    /// `runsbx sandbox --isolation MODE -- CMD`: fails unless it exited 0,
    /// said nothing on stderr (a pinned mode is not announced) and left
    /// nothing in its TMPDIR or state root but discovery's cache. Returns
    /// stdout.
    fn sandbox(&self, cell: (Mode, Who), cmd: &[&str]) -> Result<String, String> {
        let mut args = vec!["sandbox", "--isolation", cell.0.flag(), "--timeout", "60s"];
        args.push("--");
        args.extend_from_slice(cmd);
        let out = self.run(cell, &args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() || !out.stderr.is_empty() {
            return Err(format!(
                "{:?}\nstdout: {stdout}\nstderr: {}",
                out.status,
                stderr_of(&out)
            ));
        }
        let dir = self.dir(cell);
        for left in ["tmp", "state"] {
            let entries: Vec<_> = fs::read_dir(dir.join(left))
                .unwrap()
                .flatten()
                .map(|e| e.file_name())
                // Discovery's cache is meant to stay.
                .filter(|n| n != ".discovery")
                .collect();
            if !entries.is_empty() {
                return Err(format!("left in {left}: {entries:?}"));
            }
        }
        Ok(stdout)
    }
}

/// Panics with each failing cell's message.
fn assert_cells(what: &str, failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{what}: {} of 4 cells fail\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The escape battery (`selftest`, every check of the static probe) passes
/// in every cell.
#[test]
fn the_escape_battery_holds_in_every_cell() {
    let m = Matrix::new();
    let mut failures = Vec::new();
    for cell in CELLS {
        let probe = m.probe.to_str().unwrap();
        let out = m.run(
            cell,
            &["selftest", "--isolation", cell.0.flag(), "--probe", probe],
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !stdout.contains("selftest passed") {
            failures.push(format!(
                "{cell:?}: {:?}\n{stdout}\n{}",
                out.status,
                stderr_of(&out)
            ));
        }
    }
    assert_cells("selftest", failures);
}

/// The attacks the probes try from inside; `{secret}` is a file on the host
/// any user may read (only the sandbox stops a read), `{pid}` a host process
/// of the invoker's. The exec comes last: if it were allowed, the probe
/// lines after it would be missing.
const PROBES: &str = r#"
import mmap, signal, sys
secret, host_pid = sys.argv[1], int(sys.argv[2])
attempt("network", lambda: socket.create_connection(("1.1.1.1", 80), timeout=2))
attempt("read-host-file", lambda: open(secret).read())
attempt("write-outside-workdir", lambda: open("/tmp/runsbx-modes-escape", "w"))
attempt("write-runtime", lambda: open(os.path.join(os.path.dirname(sys.executable), "x"), "w"))
attempt("fork", lambda: os._exit(0) if os.fork() == 0 else None)
attempt("signal-host-process", lambda: os.kill(host_pid, signal.SIGTERM))
attempt("stop-self", lambda: signal.raise_signal(signal.SIGSTOP))
attempt("write-workdir", lambda: open("made-inside", "w").write("hi"))
attempt("stat-host-path", lambda: os.stat(secret))
attempt("stat-host-pid", lambda: os.stat(f"/proc/{host_pid}"))
attempt("list-root", lambda: os.listdir("/"))
def map_exec():
    with open("code.bin", "wb") as f:
        f.write(b"\xc3" * 4096)
    with open("code.bin", "rb") as f:
        mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)
attempt("map-workdir-file-executable", map_exec)
bnd = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapBnd")][0]
print("bounding-set", "empty" if int(bnd, 16) == 0 else "held")
print("uid", os.getuid())
attempt("exec-shell", lambda: os.execv("/bin/sh", ["sh", "-c", "echo exec-shell ALLOWED"]))
"#;

/// What a probe must give in a cell: "ALLOWED", "refused" (any errno) or
/// an exact value. Every line that differs between cells says why.
fn expected(probe: &str, (mode, who): (Mode, Who), user_uid: u32) -> String {
    let ns = mode == Mode::Namespaces;
    let by_mode = |in_ns: &str, in_landlock: &str| if ns { in_ns } else { in_landlock }.to_string();
    match probe {
        "write-workdir" => "ALLOWED".into(),
        // Stopping itself does not hold the workload: pid 1 of its own pid
        // namespace ignores the SIGSTOP; in the landlock mode runsbx sends
        // SIGCONT when it sees the stop.
        "stop-self" => "ALLOWED".into(),
        // No mount namespace in the landlock mode: the host's paths and
        // /proc/PID of host processes answer stat(2), which Landlock does
        // not mediate (their contents stay closed: read-host-file).
        "stat-host-path" | "stat-host-pid" => by_mode("refused", "ALLOWED"),
        // No mount namespace, so no noexec mount of the workdir: a file
        // written there can be mapped executable (execve stays refused).
        "map-workdir-file-executable" => by_mode("refused", "ALLOWED"),
        // An ordinary user without a user namespace cannot drop the bounding
        // set (inert under no_new_privs: nothing can raise a capability).
        "bounding-set" => match (mode, who) {
            (Mode::Landlock, Who::User) => "held".into(),
            _ => "empty".into(),
        },
        // Root of its user namespace; without one, root's sandbox runs as
        // nobody and a user's as the user.
        "uid" => match (mode, who) {
            (Mode::Namespaces, _) => "0".into(),
            (Mode::Landlock, Who::Root) => "65534".into(),
            (Mode::Landlock, Who::User) => user_uid.to_string(),
        },
        _ => "refused".into(),
    }
}

fn classify(got: &str) -> &str {
    match got {
        "ALLOWED" | "empty" | "held" => got,
        _ if got.chars().all(|c| c.is_ascii_digit()) => got,
        _ => "refused",
    }
}

/// The probes give in each cell what `expected` says, the host process
/// lives on and nothing escaped to the host's /tmp.
#[test]
fn the_probes_differ_between_cells_only_as_written() {
    let m = Matrix::new();
    let secret = m.env.tmp.path().join("host-secret");
    fs::write(&secret, "host secret").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o644)).unwrap();
    let script = py_attempts(PROBES);
    let mut failures = Vec::new();
    for cell in CELLS {
        // A host process the invoker could signal itself.
        let mut host = m.as_invoker(cell.1, "sleep");
        let mut host = host.arg("300").spawn().unwrap();
        let pid = host.id().to_string();
        let out = m.sandbox(
            cell,
            &[
                "/usr/bin/python3",
                "-c",
                &script,
                secret.to_str().unwrap(),
                &pid,
            ],
        );
        let alive = pid_alive(host.id() as i32);
        let _ = host.kill();
        let _ = host.wait();
        let stdout = match out {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{cell:?}: {e}"));
                continue;
            }
        };
        let got: BTreeMap<&str, &str> = stdout.lines().filter_map(|l| l.split_once(' ')).collect();
        let mut wrong = Vec::new();
        let probes = PROBES
            .lines()
            .filter_map(|l| l.strip_prefix("attempt(\""))
            .chain(["bounding-set\"", "uid\""])
            .map(|l| l.split('"').next().unwrap());
        for probe in probes {
            let want = expected(probe, cell, m.user.0);
            match got.get(probe) {
                Some(g) if classify(g) == want => {}
                g => wrong.push(format!("  {probe}: want {want}, got {g:?}")),
            }
        }
        if !alive {
            wrong.push("  the host process was killed".into());
        }
        if !wrong.is_empty() {
            failures.push(format!("{cell:?}:\n{}\n{stdout}", wrong.join("\n")));
        }
    }
    assert!(
        !Path::new("/tmp/runsbx-modes-escape").exists(),
        "a sandbox wrote the host's /tmp"
    );
    assert_cells("probes", failures);
}

/// numpy, pandas and sqlite on a file in the workdir, in every cell.
#[test]
fn the_workload_runs_in_every_cell() {
    let m = Matrix::new();
    let mut failures = Vec::new();
    for cell in CELLS {
        match m.sandbox(cell, &["/usr/bin/python3", "-c", PY_DATA]) {
            Ok(out) if out == "15 3\n42\n" => {}
            Ok(out) => failures.push(format!("{cell:?}: printed {out:?}")),
            Err(e) => failures.push(format!("{cell:?}: {e}")),
        }
    }
    assert_cells("workload", failures);
}
