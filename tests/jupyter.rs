//! Jupyter kernels under `runsbx sandbox --jupyter`: a kernelspec written by
//! `runsbx kernelspec`, installed in a private Jupyter path and driven by
//! unmodified clients (nbclient for a notebook, jupyter_client's
//! KernelManager for interrupt, restart and shutdown). The clients and the
//! kernel come from the workload venv hack/setup-ci makes
//! (tests/workloads/requirements.txt pins ipykernel, jupyter_client,
//! nbclient).

use std::fs;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

fn venv() -> PathBuf {
    let venv = std::env::var_os("RUNSBX_WORKLOAD_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/runsbx-workloads/venv"));
    let ok = Command::new(venv.join("bin/python"))
        .args(["-c", "import ipykernel, jupyter_client, nbclient, nbformat"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{}/bin/python cannot import ipykernel, jupyter_client, nbclient and nbformat: hack/setup-ci \
         installs them (pip install -r tests/workloads/requirements.txt)",
        venv.display()
    );
    venv
}

/// A Jupyter path of this test's own, holding kernels/NAME from
/// `runsbx kernelspec`.
fn install_kernelspec(env: &Env, name: &str, extra: &[&str]) -> PathBuf {
    let venv = venv();
    let jpath = env.tmp.path().join("jupyter");
    let dir = jpath.join("kernels").join(name);
    let python = venv.join("bin/python");
    let mut args = vec![
        "kernelspec",
        "--name",
        name,
        "--python",
        python.to_str().unwrap(),
        dir.to_str().unwrap(),
    ];
    // The kernels keep their state in this test's root.
    args.extend(["--", "--root", env.root.to_str().unwrap()]);
    args.extend_from_slice(extra);
    env.ok(&args);
    jpath
}

fn jupyter_env(cmd: &mut Command, env: &Env, jpath: &Path) {
    let t = env.tmp.path();
    cmd.env("JUPYTER_PATH", jpath)
        .env("JUPYTER_RUNTIME_DIR", t.join("runtime"))
        .env("JUPYTER_CONFIG_DIR", t.join("config"))
        .env("JUPYTER_DATA_DIR", t.join("data"))
        .env("JUPYTER_PLATFORM_DIRS", "1");
}

#[test]
fn a_notebook_runs_in_a_sandboxed_kernel() {
    let env = Env::new();
    let jpath = install_kernelspec(&env, "runsbx-test", &[]);
    let venv = venv();

    // Jupyter itself sees the kernelspec.
    let mut list = Command::new(venv.join("bin/jupyter-kernelspec"));
    list.args(["list", "--json"]);
    jupyter_env(&mut list, &env, &jpath);
    let out = list.output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("runsbx-test"),
        "jupyter kernelspec list: {}",
        String::from_utf8_lossy(&out.stdout)
    );

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/jupyter/notebook.py");
    let mut run = Command::new(venv.join("bin/python"));
    run.arg(&script)
        .arg("runsbx-test")
        .current_dir(env.tmp.path());
    jupyter_env(&mut run, &env, &jpath);
    let out = env.run_cmd(&mut run);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "notebook.py failed ({:?})\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        stderr_of(&out)
    );
    for line in [
        "ok state",
        "ok exception",
        "ok image/png",
        "ok pandas html",
        "denied network",
        "denied outside",
        "denied root listing",
        "denied subprocess",
        "ok interrupt",
        "ok state after interrupt",
        "ok KernelManager interrupt",
        "ok restart",
        "ok shutdown",
    ] {
        assert!(
            stdout.lines().any(|l| l == line),
            "no `{line}` in:\n{stdout}"
        );
    }
    // Every kernel ended with its container: nothing left in the state root.
    assert_eq!(env.state_entries(), Vec::<String>::new());
}

#[test]
fn the_pid_file_names_the_kernel_process() {
    let env = Env::new();
    let pid_file = env.tmp.path().join("kernel.pid");
    let jpath = install_kernelspec(
        &env,
        "runsbx-pid",
        &["--pid-file", pid_file.to_str().unwrap()],
    );
    // The client sees runsbx's PID; the pid file has the kernel's own, the
    // Python process whose RSS a supervisor polls.
    let driver = format!(
        r#"
from jupyter_client.manager import KernelManager
km = KernelManager(kernel_name="runsbx-pid")
km.start_kernel()
kc = km.client(); kc.start_channels(); kc.wait_for_ready(timeout=120)
pid = int(open({pid_file:?}).read())
cmdline = open(f"/proc/{{pid}}/cmdline").read().split("\0")
assert "ipykernel_launcher" in cmdline, cmdline
assert pid != km.provisioner.pid
vmrss = [l for l in open(f"/proc/{{pid}}/status") if l.startswith("VmRSS:")]
assert vmrss, "no VmRSS"
print("ok kernel pid", pid)
kc.stop_channels(); km.shutdown_kernel(now=False)
"#,
        pid_file = pid_file.display().to_string()
    );
    let mut run = Command::new(venv().join("bin/python"));
    run.args(["-c", &driver]).current_dir(env.tmp.path());
    jupyter_env(&mut run, &env, &jpath);
    let out = env.run_cmd(&mut run);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ok kernel pid"),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        stderr_of(&out)
    );
}

fn connection_file(dir: &Path) -> PathBuf {
    let path = dir.join("conn.json");
    fs::write(
        &path,
        r#"{"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5,
            "ip": "/nonexistent/runsbx-test", "transport": "ipc", "key": "k",
            "signature_scheme": "hmac-sha256"}"#,
    )
    .unwrap();
    path
}

#[test]
fn a_socket_the_kernel_could_reach_is_refused() {
    let env = Env::new();
    let venv = venv();
    let dir = env.tmp.path().join("data");
    fs::create_dir_all(dir.join("deep")).unwrap();
    let _host_service = UnixListener::bind(dir.join("deep/agent.sock")).unwrap();
    let conn = connection_file(env.tmp.path());
    let python = venv.join("bin/python");
    let out = sandbox(
        &env,
        &[
            "--jupyter",
            conn.to_str().unwrap(),
            "--ro",
            dir.to_str().unwrap(),
        ],
        &[python.to_str().unwrap(), "-m", "ipykernel_launcher"],
    );
    assert_one_line_error(
        &out,
        "deep/agent.sock is a unix socket the sandbox could connect to",
    );
    assert_eq!(env.state_entries(), Vec::<String>::new());
}

#[test]
fn a_bad_connection_file_is_one_clear_error() {
    let env = Env::new();
    let conn = env.tmp.path().join("conn.json");
    fs::write(
        &conn,
        r#"{"key": "k", "transport": "tcp", "ip": "127.0.0.1"}"#,
    )
    .unwrap();
    let out = sandbox(
        &env,
        &["--jupyter", conn.to_str().unwrap()],
        &["/usr/bin/python3", "-m", "ipykernel_launcher"],
    );
    assert_one_line_error(&out, "\"shell_port\" is not a port number");
    assert_eq!(env.state_entries(), Vec::<String>::new());
}

#[test]
fn the_escape_probe_holds_under_the_kernel_profile() {
    let env = Env::new();
    let probe = probe_bin();
    let out = env.run(&[
        "selftest",
        "--profile",
        "jupyter",
        "--probe",
        probe.to_str().unwrap(),
    ]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("selftest passed"),
        "selftest --profile jupyter failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        stderr_of(&out)
    );
}
