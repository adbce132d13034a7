//! The built probe on the host: exit codes and line shape. What the lines mean under a sandbox is tested in the
//! workspace's integration tests.

use std::process::Command;

fn probe(args: &[&str]) -> (i32, Vec<String>) {
    let out = Command::new(env!("CARGO_BIN_EXE_runsbx-probe"))
        .args(args)
        .output()
        .expect("run probe");
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    (
        out.status.code().unwrap_or(-1),
        stdout.lines().map(str::to_string).collect(),
    )
}

#[test]
fn one_line_per_check_in_order() {
    let (code, lines) = probe(&["pid", "read:/nonexistent/runsbx-probe", "cwd"]);
    assert_eq!(code, 0);
    assert_eq!(lines.len(), 3);
    assert!(
        lines[0].starts_with(r#"{"check":"pid","ok":true,"errno":null,"ret":"#),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with(
        r#"{"check":"read:/nonexistent/runsbx-probe","ok":false,"errno":"ENOENT","ret":-1,"#
    ));
    assert!(lines[2].starts_with(r#"{"check":"cwd","ok":true,"#));
}

#[test]
fn harmless_call_reaches_the_kernel_unfiltered() {
    let (_, lines) = probe(&["clone3", "ioctl-tiocsti", "setns"]);
    assert!(lines[0].contains(r#""errno":"EFAULT""#), "{}", lines[0]);
    assert!(lines[1].contains(r#""errno":"EBADF""#), "{}", lines[1]);
    assert!(lines[2].contains(r#""errno":"EBADF""#), "{}", lines[2]);
}

#[test]
fn misuse_exits_2_and_runs_nothing() {
    for args in [&["pid", "no-such-check"][..], &["read"], &[]] {
        let (code, lines) = probe(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(lines.is_empty(), "{args:?}: {lines:?}");
    }
}

#[test]
fn exit_prints_then_exits() {
    let (code, lines) = probe(&["exit:3", "pid"]);
    assert_eq!(code, 3);
    assert_eq!(
        lines,
        vec![r#"{"check":"exit:3","ok":true,"errno":null,"ret":3,"detail":"exiting 3"}"#]
    );
}

#[test]
fn exec_replaces_the_probe() {
    let me = env!("CARGO_BIN_EXE_runsbx-probe");
    let (code, lines) = probe(&["exec:/nonexistent", "pid"]);
    assert_eq!(code, 0);
    assert!(lines[0].contains(r#""errno":"ENOENT""#), "{lines:?}");
    let word = format!("exec:{me}");
    let (code, lines) = probe(&["pid", &word, "exit:4"]);
    assert_eq!(code, 4);
    assert_eq!(lines.len(), 2);
    assert!(lines[1].starts_with(r#"{"check":"exit:4""#));
}
