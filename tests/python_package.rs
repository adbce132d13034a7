//! The Python package (packages/python): hack/build-wheel's wheel installed
//! with pip into a fresh venv gives `runsbx` on the venv's PATH and
//! `import runsbx`, whose docstring examples run as doctests.

use std::path::Path;
use std::process::Command;

use crate::common::*;

#[test]
fn the_wheel_installs_the_binary_and_the_api_whose_examples_run() {
    let env = Env::new();
    require_file(
        "/usr/lib/python3/dist-packages/matplotlib/__init__.py",
        "python3-matplotlib",
    );
    // The kernelspec's Python must import ipykernel: hack/setup-ci's venv.
    require_file(
        "/opt/runsbx-workloads/venv/bin/python",
        "the workload venv of hack/setup-ci",
    );
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = env.tmp.path().join("wheels");
    let wheel = run_ok(
        Command::new(repo.join("hack/build-wheel"))
            .arg("--runsbx")
            .arg(runsbx_bin())
            .arg("--out")
            .arg(&out),
        "hack/build-wheel",
    );
    let wheel = wheel.trim();
    let venv = env.tmp.path().join("venv");
    run_ok(
        Command::new("/usr/bin/python3")
            .args(["-m", "venv"])
            .arg(&venv),
        "python3 -m venv",
    );
    let bin = venv.join("bin");
    run_ok(
        Command::new(bin.join("pip")).args([
            "install",
            "--no-index",
            "--no-deps",
            "--quiet",
            wheel,
        ]),
        "pip install",
    );
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let python = |code: &str| {
        let mut c = Command::new(bin.join("python"));
        c.args(["-c", code])
            .env_clear()
            .env("PATH", &path)
            .env("LANG", "C.UTF-8");
        c
    };

    // The binary is on the venv's PATH, executable, and the API finds it.
    let version = run_ok(
        Command::new(bin.join("runsbx")).arg("--version"),
        "runsbx --version",
    );
    assert!(version.starts_with("runsbx "), "{version}");
    assert_eq!(
        run_ok(
            &mut python("import runsbx; print(runsbx.binary())"),
            "binary()"
        )
        .trim(),
        bin.join("runsbx").to_str().unwrap()
    );
    // Typed.
    run_ok(
        &mut python("import runsbx, importlib.resources as r; assert r.files('runsbx').joinpath('py.typed').is_file()"),
        "py.typed",
    );
    // The docstring's examples.
    run_ok(
        &mut python("import doctest, runsbx, sys; r = doctest.testmod(runsbx); print(r); sys.exit(1 if r.failed or not r.attempted else 0)"),
        "doctests",
    );
    // Figures, the escapes, a limit ending a session, a session a thread keeps
    // alive, output past the limits, a malformed answer, isolation, the session's
    // stderr, code past 128 KiB, a setup error, the kernelspec.
    let checks = r#"
import runsbx, json, os, tempfile
with runsbx.Session(python="/usr/bin/python3") as s:
    a = s.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])")
    assert a.ok and len(a.figures) == 1 and a.figures[0].startswith(b"\x89PNG"), a
import sys
with runsbx.Session(python="/usr/bin/python3") as s:
    escapes = s.run(sys.argv[1]).stdout
print(escapes, end="")
def ends(code, error, words, **options):
    """A session whose run(code) raises error, saying words, and is over."""
    with runsbx.Session(python="/usr/bin/python3", **options) as s:
        try:
            s.run(code)
        except error as e:
            assert words in str(e) and s.outcome is not None, (e, s.outcome)
            return e
    raise SystemExit(f"no {error.__name__}: {s.outcome}")
e = ends("b = b'x' * (400 << 20)", runsbx.SessionEnded, "rss-limit", rss_limit="200M")
assert e.outcome.reason == "rss-limit", e.outcome
# A thread the code left running keeps the interpreter alive past EOF: close()
# has runsbx kill it after its grace period instead of waiting for it.
import time
t = time.monotonic()
with runsbx.Session(python="/usr/bin/python3") as s:
    assert s.run("import threading, time\nthreading.Thread(target=lambda: time.sleep(1e9)).start()").ok
assert s.outcome.reason == "signaled" and time.monotonic() - t < 30, (s.outcome, time.monotonic() - t)
# Output without end: the session is ended at ANSWER_LIMIT, run() keeps OUTPUT_LIMIT.
ends("import os\nb = b'x' * (1 << 20)\nwhile True: os.write(3, b)", runsbx.OutputLimitExceeded, "output limit")
r = runsbx.run("import sys\nfor i in range(20): sys.stdout.write('x' * (1 << 20))", python="/usr/bin/python3")
assert r.truncated and len(r.stdout) == runsbx.OUTPUT_LIMIT and r.outcome.reason == "exited", (r.truncated, len(r.stdout), r.outcome)
# A malformed answer (the workload writes fd 3) ends the session with a clear error.
ends("import os\nos.write(3, b'{\"ok\": 1}\\n')", runsbx.SessionEnded, "malformed answer")
# isolation is --isolation: Landlock runs the code, and refuses what it cannot give.
assert runsbx.run("print(1)", python="/usr/bin/python3", isolation="landlock").outcome.isolation == "landlock"
try:
    runsbx.Session(python="/usr/bin/python3", isolation="landlock", memory="64M")
    raise SystemExit("no SandboxError")
except runsbx.SandboxError as e:
    assert "--memory needs the namespaces mode" in str(e), e
# The session's stderr is a pipe of its own, not the caller's.
with runsbx.Session(python="/usr/bin/python3") as s:
    assert s.run("import os\nos.write(2, b'to fd 2\\n')").ok
assert "to fd 2" in s.stderr, s.stderr
# The code is not on a command line: past 128 KiB, and not in /proc/PID/cmdline.
r = runsbx.run("x = 1\n" * 100000 + "print(open('/proc/self/cmdline', 'rb').read().split(b'\\0')[1:])", python="/usr/bin/python3")
assert r.stdout == "[b'-', b'']\n", r
try:
    runsbx.run("pass", python="/nonexistent")
    raise SystemExit("no SandboxError")
except runsbx.SandboxError as e:
    assert "/nonexistent" in str(e), e
d = tempfile.mkdtemp()
k = runsbx.install_kernelspec(os.path.join(d, "py-sbx"), python="/opt/runsbx-workloads/venv/bin/python")
assert json.load(open(k))["argv"][0].endswith("runsbx"), open(k).read()
print("checks passed")
"#;
    let out = run_ok(python(checks).arg(SESSION_ESCAPES), "API checks");
    let (escapes, end) = out.split_once("checks passed").expect("checks passed");
    assert_session_escapes_refused(escapes);
    assert_eq!(end.trim(), "", "{out}");
}
