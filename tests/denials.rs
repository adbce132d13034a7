//! `--report-denials`: programs that try a forbidden read, a connect and a
//! fork, and the one line per denial runsbx prints after the run, naming
//! what was attempted, by which process, and which layer refused it.
//!
//! Landlock's records need the kernel's audit subsystem enabled; CI enables
//! it in hack/setup-ci (hack/audit-enable). A host where it is off fails
//! these tests with runsbx's own note saying so.

use std::fs;

use serde_json::{json, Value};

use crate::common::*;

/// runsbx's lines about denials (its stderr, minus anything else).
fn denial_lines(stderr: &str) -> Vec<String> {
    let lines: Vec<String> = stderr
        .lines()
        .filter(|l| l.starts_with("runsbx: "))
        .map(|l| l.trim_start_matches("runsbx: ").to_string())
        .collect();
    for l in &lines {
        assert!(
            !l.contains("not reported") && !l.contains("cannot be reported"),
            "this host cannot report every denial: {l} (hack/setup-ci enables audit with \
             hack/audit-enable)"
        );
    }
    lines
        .into_iter()
        .filter(|l| l.starts_with("denied by "))
        .collect()
}

fn has(lines: &[String], parts: &[&str]) -> bool {
    lines.iter().any(|l| parts.iter().all(|p| l.contains(p)))
}

#[test]
fn run_reports_a_read_a_connect_and_a_fork() {
    let env = Env::new();
    let mut b = env.bundle("deny", &["/probe"]);
    b.add_file(&probe_bin(), "/probe");
    let root = b.dir.join("rootfs");
    fs::write(root.join("etc/shadow"), "root:*:1::::::\n").unwrap();
    b.config["process"]["args"] = json!([
        "/probe",
        "read:/etc/shadow",
        "tcp-connect:10.0.0.1:80",
        "fork"
    ]);
    // Landlock: only the probe (and /proc) may be read, and no TCP connect.
    b.config["process"]["landlock"] = json!({
        "handledAccess": {
            "handledAccessFS": ["execute", "read_file", "read_dir"],
            "handledAccessNetwork": ["connect_tcp"]
        },
        "rules": { "pathBeneath": [
            {"allowedAccess": ["execute", "read_file"], "paths": ["/probe"]},
            // Static glibc reads /proc/self/maps before main.
            {"allowedAccess": ["read_file"], "paths": ["/proc"]}
        ]}
    });
    // seccomp: everything but process creation.
    b.config["linux"]["seccomp"] = json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [{"names": ["clone", "fork", "vfork"], "action": "SCMP_ACT_ERRNO"}]
    });
    b.save();

    let report = env.tmp.path().join("report.json");
    let id = unique_id("deny");
    let out = env.run(&[
        "run",
        "--report-denials",
        "--report",
        report.to_str().unwrap(),
        "--bundle",
        b.path(),
        &id,
    ]);
    let err = stderr_of(&out);
    assert!(out.status.success(), "run failed: {err}");
    let probe: Vec<Value> = probe_lines(&out.stdout);
    assert_eq!(probe.len(), 3, "{probe:?}");
    assert!(probe.iter().all(|p| p["ok"] == false), "{probe:?}");

    let lines = denial_lines(&err);
    assert!(
        has(
            &lines,
            &["landlock", "openat", "\"/etc/shadow\"", "fs.read_file"]
        ),
        "{lines:#?}"
    );
    assert!(
        has(
            &lines,
            &["landlock", "connect", "10.0.0.1", "80", "net.connect_tcp"]
        ),
        "{lines:#?}"
    );
    assert!(has(&lines, &["seccomp", "clone", "EPERM"]), "{lines:#?}");
    assert!(
        lines.iter().all(|l| l.contains("probe (pid ")),
        "each line names the process: {lines:#?}"
    );
    assert_eq!(lines.len(), 3, "{lines:#?}");

    let v: Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
    let denials = v["denials"]["denials"]
        .as_array()
        .expect("denials in --report");
    assert_eq!(denials.len(), 3, "{v:#}");
    assert!(denials
        .iter()
        .any(|d| d["layer"] == "landlock" && d["object"] == "\"/etc/shadow\""));
}

#[test]
fn sandbox_reports_what_the_default_policy_refused() {
    let env = Env::new();
    let code = "import os, socket\n\
                for f in (lambda: open('/proc/kallsyms'), socket.socket, os.fork):\n\
                \x20   try: f()\n\
                \x20   except OSError as e: print(e.errno)\n";
    let out = env
        .cmd()
        .args(["sandbox", "--report-denials", "--", "python3", "-c", code])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(out.status.success(), "sandbox failed: {err}");
    // EACCES from Landlock, EPERM twice from seccomp.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "13\n1\n1\n");
    let lines = denial_lines(&err);
    assert!(
        has(
            &lines,
            &["landlock", "openat", "\"/proc/kallsyms\"", "fs.read_file"]
        ),
        "{lines:#?}"
    );
    assert!(has(&lines, &["seccomp", "socket", "EPERM"]), "{lines:#?}");
    assert!(has(&lines, &["seccomp", "clone", "EPERM"]), "{lines:#?}");
    // /proc is the sandbox's own: no --ro hint for it.
    assert!(!err.contains("--ro /proc"), "{err}");
}

#[test]
fn sandbox_says_which_flag_adds_a_path_it_could_not_read() {
    let env = Env::new();
    // /tmp exists in the sandbox only as the directory above the private
    // workdir, and Landlock grants nothing on it.
    let out = env
        .cmd()
        .args(["sandbox", "--report-denials", "--", "python3", "-c"])
        .arg("import os\ntry: os.listdir('/tmp')\nexcept OSError as e: print(e.errno)")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "13\n");
    assert!(
        err.contains("runsbx: /tmp is not readable in the sandbox: --ro /tmp adds it"),
        "{err}"
    );
}

#[test]
fn a_clean_run_says_nothing_was_denied() {
    let env = Env::new();
    let b = env.bundle("clean", &["/bin/true"]);
    let id = unique_id("clean");
    let out = env.run(&["run", "--report-denials", "--bundle", b.path(), &id]);
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    assert!(denial_lines(&err).is_empty(), "{err}");
    assert!(err.contains("runsbx: no denials recorded"), "{err}");
}

#[test]
fn report_denials_needs_a_foreground_run() {
    let env = Env::new();
    let b = env.bundle("detached", &["/bin/true"]);
    let out = env.run(&["run", "-d", "--report-denials", "--bundle", b.path(), "x"]);
    assert_one_line_error(&out, "--report-denials");
    assert!(env.state_entries().is_empty());
}
