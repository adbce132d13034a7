//! CPython's own regression tests as a workload (issue 37): the modules
//! tests/cpython/suite.py lists, each run once per `runsbx sandbox` and once
//! unsandboxed in the same job, test by test. Fails when a test passes
//! unsandboxed and not in the sandbox, unless tests/cpython/by_design.txt
//! lists it with a reason the sandboxed run shows evidence of (fork/exec, a
//! socket, a symlink, ...), and when an entry of that list no longer matches
//! a lost test. Debian's libpython3.11-testsuite (hack/setup-ci) provides the
//! tests. About 15 minutes on two cores.

use std::path::Path;
use std::process::Command;

use crate::common::*;

#[test]
fn cpython_regression_tests_pass_in_the_sandbox_as_outside() {
    let env = Env::new();
    require_file("/usr/bin/python3.11", "python3.11");
    require_file(
        "/usr/lib/python3.11/test/test_json",
        "libpython3.11-testsuite",
    );
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/cpython/suite.py");
    let out_dir = env.tmp.path().join("report");
    let out = env.run_cmd(
        Command::new("/usr/bin/python3.11")
            .arg(&suite)
            .arg("--runsbx")
            .arg(runsbx_bin())
            .arg("--root")
            .arg(&env.root)
            .arg("--tmp")
            .arg(env.traversable_tmpdir())
            .arg("--out")
            .arg(&out_dir),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "suite.py exited {:?}: a test passes unsandboxed and not in the sandbox, or the \
         by-design list is wrong (each line below; the logs and report.json are in {}):\n\
         {stdout}\nstderr:\n{}",
        out.status,
        out_dir.display(),
        stderr_of(&out)
    );
    // The run measured something: a suite that ran nothing must not pass.
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("report.json")).unwrap()).unwrap();
    let host_pass = report["figures"]["host_pass"].as_u64().unwrap();
    assert!(
        host_pass > 10_000,
        "only {host_pass} tests passed unsandboxed:\n{stdout}"
    );
    assert!(
        env.state_entries().is_empty(),
        "state left: {:?}",
        env.state_entries()
    );
    eprintln!("{stdout}");
}
