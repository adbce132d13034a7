//! Records as this machine's kernel (6.18) emitted them, with audit enabled.
use super::parse::parse;
use super::*;

const INIT: i32 = 7360;

fn ours(pid: i32, init: i32) -> bool {
    pid == init || pid == 7361
}

fn raw(kind: u16, text: &str) -> RawRecord {
    RawRecord {
        kind,
        text: text.to_string(),
    }
}

fn landlock_event(serial: u32, pid: i32, path_field: &str) -> Vec<RawRecord> {
    vec![
        raw(1423, &format!("audit(1795952447.973:{serial}): domain=1d6b75885 blockers=fs.read_file {path_field} dev=\"vda\" ino=817")),
        raw(1424, &format!("audit(1795952447.973:{serial}): domain=1d6b75885 status=allocated mode=enforcing pid={pid} uid=0 exe=\"/usr/bin/python3.11\" comm=\"python3\"")),
        raw(1300, &format!("audit(1795952447.973:{serial}): arch=c000003e syscall=257 success=no exit=-13 a0=ffffff9c a1=7f3e6bba47d0 a2=80000 a3=0 items=0 ppid=7319 pid={pid} auid=4294967295 uid=0 gid=0 comm=\"python3\" exe=\"/usr/bin/python3.11\" key=(null)")),
        raw(1327, &format!("audit(1795952447.973:{serial}): proctitle=2F7573722F62696E2F707974686F6E33")),
        raw(1320, &format!("audit(1795952447.973:{serial}): ")),
    ]
}

fn seccomp_record(pid: i32, nr: u32, code: &str) -> RawRecord {
    raw(1326, &format!("audit(1795952441.953:398): auid=4294967295 uid=0 gid=0 ses=4294967295 pid={pid} comm=\"python3\" exe=\"/usr/bin/python3.11\" sig=0 arch=c000003e syscall={nr} compat=0 ip=0x7f36a0528dc7 code={code}"))
}

const SOCKET: u32 = 41;
const CLONE3: u32 = 435;

fn sandbox_filter() -> SeccompProgram {
    runsbx_policy::seccomp::compile(&runsbx_policy::profile::sandbox_seccomp()).unwrap()
}

fn report(records: &[RawRecord]) -> Vec<String> {
    let mut t = Tracker::new(INIT, ours, Some(sandbox_filter()));
    for r in records {
        t.add(r);
    }
    t.flush();
    t.denials.iter().map(|d| d.to_string()).collect()
}

#[test]
fn parses_quoted_hex_and_plain_values() {
    let r = parse(&raw(
        1423,
        "audit(1.5:42): domain=1a blockers=fs.read_file,fs.read_dir path=2F746D702F6120622E dev=\"vda\" ino=1",
    ))
    .unwrap();
    assert_eq!(r.serial, 42);
    assert_eq!(r.get("blockers"), Some("fs.read_file,fs.read_dir"));
    assert_eq!(r.get("path"), Some("/tmp/a b."));
    assert_eq!(r.get("dev"), Some("vda"));
    assert_eq!(r.get("ino"), Some("1"));
    // Only untrusted-string fields are hex-decoded.
    let r = parse(&raw(1423, "audit(1.5:42): domain=abcd path=\"/x\"")).unwrap();
    assert_eq!(r.get("domain"), Some("abcd"));
    assert!(parse(&raw(1423, "garbage")).is_none());
}

#[test]
fn landlock_event_is_one_line_naming_path_syscall_and_right() {
    let lines = report(&landlock_event(400, INIT, "path=\"/etc/shadow\""));
    assert_eq!(
        lines,
        [r#"denied by landlock: python3 (pid 7360) openat "/etc/shadow": needs fs.read_file"#]
    );
}

#[test]
fn seccomp_errno_is_reported_enosys_and_allow_are_not() {
    // The kernel's record names the action only; the errno is the filter's.
    let lines = report(&[
        seccomp_record(INIT, SOCKET, "0x50000"),
        seccomp_record(INIT, CLONE3, "0x50000"),
        seccomp_record(INIT, SOCKET, "0x7fff0000"),
        seccomp_record(INIT, SOCKET, "0x80000000"),
    ]);
    assert_eq!(
        lines,
        [
            "denied by seccomp: python3 (pid 7360) socket: EPERM",
            "denied by seccomp: python3 (pid 7360) socket: killed (SIGSYS)",
        ]
    );
}

#[test]
fn other_processes_are_ignored_and_repeats_are_counted() {
    let mut records = vec![seccomp_record(99, SOCKET, "0x50000")];
    records.extend(landlock_event(500, 99, "path=\"/etc/shadow\""));
    records.push(seccomp_record(INIT, SOCKET, "0x50000"));
    records.push(seccomp_record(7361, SOCKET, "0x50000"));
    records.push(seccomp_record(INIT, SOCKET, "0x50000"));
    assert_eq!(
        report(&records),
        [
            "denied by seccomp: python3 (pid 7360) socket: EPERM (2 times)",
            "denied by seccomp: python3 (pid 7361) socket: EPERM",
        ]
    );
}

#[test]
fn a_domain_of_ours_claims_records_without_a_syscall_record() {
    let mut records = landlock_event(600, INIT, "path=\"/etc/shadow\"");
    // A later event in the same domain, from a process that is gone.
    records.push(raw(
        1423,
        "audit(1795952448.000:601): domain=1d6b75885 blockers=net.connect_tcp daddr=10.0.0.1 dest=80",
    ));
    let lines = report(&records);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.contains(
        &"denied by landlock: a container process daddr=10.0.0.1 dest=80: needs net.connect_tcp"
            .to_string()
    ));
}

#[test]
fn report_lines_say_when_nothing_was_seen() {
    assert_eq!(DenialReport::default().lines(), ["no denials recorded"]);
    let r = DenialReport {
        denials: vec![],
        notes: vec!["Landlock denials are not reported: x".into()],
    };
    assert_eq!(r.lines(), ["Landlock denials are not reported: x"]);
}

#[test]
fn a_process_name_of_control_bytes_is_printed_escaped() {
    // comm=1B5B324B0D6E6F is "\x1b[2K\rno", hex-encoded by the kernel.
    let r = raw(1326, "audit(1.0:9): pid=7360 comm=1B5B324B0D6E6F exe=\"/x\" sig=0 arch=c000003e syscall=41 compat=0 ip=0x1 code=0x50000");
    let lines = report(&[r]);
    assert_eq!(
        lines,
        [r"denied by seccomp: \u{1b}[2K\rno (pid 7360) socket: EPERM"]
    );
}
