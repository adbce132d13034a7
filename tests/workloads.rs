//! Real workloads under `runsbx sandbox` with no extra flags: the scientific
//! Python stack from a pip venv (hack/setup-ci installs it from PyPI, pinned
//! by tests/workloads/requirements.txt) and from Debian's python3-* packages,
//! sqlite databases in the workdir, a broad standard-library sweep, and a
//! Node.js script. Each script prints `ok NAME` per check (and `denied NAME`
//! for what the sandbox refuses by design); the test wants every line.
//!
//! The scripts are passed inline (`-c`, `-e`), so nothing but the
//! interpreter is named on the command line: what they need must be found
//! by discovery.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::*;

fn script(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/workloads")
        .join(name);
    fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The venv hack/setup-ci makes (`RUNSBX_WORKLOAD_VENV` to use another).
fn venv_python() -> PathBuf {
    let venv = std::env::var_os("RUNSBX_WORKLOAD_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/runsbx-workloads/venv"));
    let py = venv.join("bin/python");
    assert!(
        py.exists(),
        "{} is missing: hack/setup-ci creates the workload venv (pip install -r tests/workloads/requirements.txt)",
        py.display()
    );
    py
}

fn debian_python() -> PathBuf {
    require_file("/usr/bin/python3", "python3");
    for (module, package) in [
        ("numpy", "python3-numpy"),
        ("pandas", "python3-pandas"),
        ("scipy", "python3-scipy"),
        ("matplotlib", "python3-matplotlib"),
        ("sklearn", "python3-sklearn"),
        ("PIL", "python3-pil"),
    ] {
        let found = std::process::Command::new("/usr/bin/python3")
            .args([
                "-c",
                &format!("import importlib.util as u; exit(u.find_spec('{module}') is None)"),
            ])
            .status()
            .unwrap();
        assert!(
            found.success(),
            "{module} is missing: install Debian's {package} (hack/setup-ci does)"
        );
    }
    PathBuf::from("/usr/bin/python3")
}

/// Runs `cmd` in a sandbox whose workdir the test can look at afterwards;
/// asserts success and that every name in `want` printed `ok NAME`.
fn run_checks(env: &Env, cmd: &[&str], want: &[&str]) -> PathBuf {
    let wd = env.nobody_workdir();
    let out = sandbox(env, &["--workdir", wd.to_str().unwrap()], cmd);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} exited {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        cmd[0],
        out.status,
        stderr_of(&out)
    );
    for name in want {
        assert!(
            stdout
                .lines()
                .any(|l| l == format!("ok {name}") || l == format!("denied {name}")),
            "{}: no `ok {name}` line\nstdout:\n{stdout}\nstderr:\n{}",
            cmd[0],
            stderr_of(&out)
        );
    }
    assert!(
        env.state_entries().is_empty(),
        "state left: {:?}",
        env.state_entries()
    );
    wd
}

const SCIENTIFIC: &[&str] = &[
    "numpy",
    "pandas",
    "scipy",
    "matplotlib",
    "sklearn",
    "pillow",
];

fn scientific_stack(py: &Path) {
    let env = Env::new();
    let wd = run_checks(
        &env,
        &[py.to_str().unwrap(), "-c", &script("scientific.py")],
        SCIENTIFIC,
    );
    // The plot and the images landed in the workdir, on the host.
    let png = fs::read(wd.join("plot.png")).expect("plot.png written to the workdir");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(wd.join("im.jpeg").is_file() && wd.join("df.csv").is_file());
}

#[test]
fn the_scientific_stack_from_a_pip_venv() {
    scientific_stack(&venv_python());
}

#[test]
fn the_scientific_stack_from_debian_packages() {
    scientific_stack(&debian_python());
}

const SQLITE: &[&str] = &["sqlite-journal", "sqlite-wal-two-connections", "dbm-shelve"];

#[test]
fn sqlite_databases_in_the_workdir() {
    let mut pythons = vec![venv_python(), debian_python()];
    // The python3 on PATH (here a pyenv build under a 0700 /root).
    pythons.push(PathBuf::from("python3"));
    for py in pythons {
        let env = Env::new();
        let wd = run_checks(
            &env,
            &[py.to_str().unwrap(), "-c", &script("sqlite_files.py")],
            SQLITE,
        );
        // The database is a real file the host can open after the run.
        let db = fs::read(wd.join("results.sqlite")).unwrap();
        assert!(db.starts_with(b"SQLite format 3\0"), "{}", py.display());
    }
}

const SWEEP: &[&str] = &[
    "threads",
    "files",
    "archives",
    "compression",
    "crypto",
    "text-and-data",
    "time-and-locale",
    "system-info",
    "asyncio",
    "ipc-inside",
    "locks",
    "ctypes",
    "logging",
    "misc",
    "subprocess",
    "socket",
    "fork",
];

#[test]
fn a_broad_standard_library_sweep() {
    for py in [venv_python(), debian_python(), PathBuf::from("python3")] {
        let env = Env::new();
        run_checks(
            &env,
            &[py.to_str().unwrap(), "-c", &script("stdlib_sweep.py")],
            SWEEP,
        );
    }
}

#[test]
fn a_node_script() {
    let env = Env::new();
    let node = std::process::Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|o| o.status.success()),
        "node is missing: install Debian's nodejs (hack/setup-ci does)"
    );
    run_checks(
        &env,
        &["node", "-e", &script("node_script.js")],
        &[
            "fs",
            "crypto",
            "zlib",
            "async-fs",
            "worker-thread",
            "child-process-refused",
            "socket-refused",
        ],
    );
}

#[test]
fn a_node_host_drives_the_repl_and_kills_it_past_its_rss_ceiling() {
    // bundles/python-repl/host.js, as a Node supervisor runs it: runsbx on
    // its PATH, the venv's Python inside (numpy and pandas).
    let _env = Env::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new("node")
        .arg(repo.join("bundles/python-repl/host.js"))
        .args(["--runsbx", runsbx_bin().to_str().unwrap()])
        .args(["--python", venv_python().to_str().unwrap()])
        .args(["--ceiling-mib", "300"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("node is missing: install Debian's nodejs (hack/setup-ci does)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("passed: 0 failure(s)"),
        "{stdout}\n{}",
        stderr_of(&out)
    );
}
