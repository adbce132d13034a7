//! What a supervisor of untrusted code needs beyond isolation: limits that
//! runsbx enforces itself from the host (an RSS ceiling, a wall-clock
//! timeout; no cgroups needed), a machine-readable outcome, and a posture
//! check that verifies from /proc that the layers really are in force.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::monitor::{Exit, Finished};

/// How often the workload's RSS is read when `--rss-limit` is set. A
/// workload can outgrow the limit by what it allocates in one interval
/// before it is killed.
pub const RSS_POLL: Duration = Duration::from_millis(10);

#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    pub timeout: Option<Duration>,
    /// Bytes of resident memory of the workload process.
    pub rss_limit: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    Exited,
    Signaled,
    RssLimit,
    Timeout,
    Oom,
    SetupFailed,
}

/// The outcome of a foreground run, as written to `--report` and the
/// status fd.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub reason: Reason,
    /// The exit status runsbx itself exits with.
    pub status: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// Highest RSS seen: the larger of the polled VmRSS and the kernel's
    /// ru_maxrss for the process (which also counts runsbx's init image
    /// before exec, a few MiB).
    pub peak_rss_bytes: u64,
    pub wall_ms: u64,
    pub cpu_user_ms: u64,
    pub cpu_system_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `--report-denials`: what seccomp and Landlock refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denials: Option<crate::denials::DenialReport>,
    /// `--allow-net`: what the proxy allowed and refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub net: Option<crate::egress::Report>,
}

impl Outcome {
    pub fn setup_failed(message: String, status: i32, wall: Duration) -> Self {
        Self {
            reason: Reason::SetupFailed,
            status,
            exit_code: None,
            signal: None,
            pid: None,
            peak_rss_bytes: 0,
            wall_ms: wall.as_millis() as u64,
            cpu_user_ms: 0,
            cpu_system_ms: 0,
            message: Some(message),
            denials: None,
            net: None,
        }
    }

    pub fn finished(
        pid: i32,
        done: Finished,
        killed_for: Option<Reason>,
        polled_peak: u64,
        wall: Duration,
    ) -> Self {
        let (exit_code, signal) = match done.exit {
            Exit::Code(c) => (Some(c), None),
            Exit::Signal(s) => (None, Some(s)),
        };
        let reason = killed_for.unwrap_or(match done.exit {
            Exit::Code(_) => Reason::Exited,
            Exit::Signal(_) => Reason::Signaled,
        });
        Self {
            reason,
            status: done.exit.status(),
            exit_code,
            signal,
            pid: Some(pid),
            peak_rss_bytes: polled_peak.max(done.usage.max_rss),
            wall_ms: wall.as_millis() as u64,
            cpu_user_ms: done.usage.user.as_millis() as u64,
            cpu_system_ms: done.usage.system.as_millis() as u64,
            message: None,
            denials: None,
            net: None,
        }
    }
}

/// VmRSS of a live process, in bytes.
/// The workload's resident memory (any live thread shows the whole
/// process's), `None` once every thread is gone.
pub fn rss(pid: i32) -> Option<u64> {
    rss_at(&live_task(pid)?)
}

/// The /proc directory of a live thread of process `pid`: /proc/<pid> while
/// its leader lives, else /proc/<pid>/task/<tid> of a thread still running.
/// Stops: a workload ending its main thread to hide from the RSS ceiling and
/// the posture check (the leader then stays a zombie with no memory map and
/// no namespace links, while its other threads run on). `None`: every
/// thread is gone.
pub fn live_task(pid: i32) -> Option<std::path::PathBuf> {
    let base = std::path::PathBuf::from(format!("/proc/{pid}"));
    if rss_at(&base).is_some() {
        return Some(base);
    }
    std::fs::read_dir(base.join("task"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| rss_at(p).is_some())
}

/// Read by hand, not with procfs's Status: that parse fails on any field it
/// cannot read, and a `None` here means "this thread is gone", which would
/// let a live workload outgrow the RSS ceiling unwatched.
fn rss_at(proc_dir: &Path) -> Option<u64> {
    let status = std::fs::read_to_string(proc_dir.join("status")).ok()?;
    status_field(&status, "VmRSS:")?
        .split_whitespace()
        .next()?
        .parse::<u64>()
        .ok()
        .map(|kib| kib * 1024)
}

fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .map(str::trim)
}

/// What the posture check expects of a workload.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    pub no_new_privs: bool,
    pub seccomp: bool,
    pub no_caps: bool,
    /// With `no_caps`, accept a full bounding set (`sandbox --no-userns`:
    /// an ordinary user cannot shrink it). Safe with no_new_privs, which
    /// stops execve from granting anything the bounding set allows.
    pub bounding_may_remain: bool,
    /// The workload must not run as host uid/gid 0.
    pub not_host_root: bool,
    /// Namespaces (as named under /proc/<pid>/ns) that must differ from ours.
    pub namespaces: Vec<&'static str>,
    /// Descriptors above this number must be close-on-exec (2 = only
    /// stdio reaches the workload). Meaningful before exec only: after it,
    /// the workload's own descriptors are its business.
    pub max_fd: Option<i32>,
}

/// Checks a process against `expect` from the host; returns what is off.
/// `status` and the ns/fd listings are read from `proc_dir` (/proc/<pid>).
pub fn posture(proc_dir: &Path, expect: &Expect) -> Result<Vec<String>, String> {
    let status = std::fs::read_to_string(proc_dir.join("status"))
        .map_err(|e| format!("read {}/status: {e}", proc_dir.display()))?;
    Ok(check_status(&status, expect)
        .into_iter()
        .chain(check_namespaces(proc_dir, &expect.namespaces))
        .chain(check_fds(proc_dir, expect.max_fd))
        .collect())
}

/// The pure part of [`posture`]: the fields of /proc/<pid>/status, read
/// with procfs. A status it cannot read is a failure, not a pass.
pub fn check_status(status: &str, expect: &Expect) -> Vec<String> {
    use procfs::FromBufRead;
    match procfs::process::Status::from_buf_read(status.as_bytes()) {
        Ok(st) => check_fields(&st, expect),
        Err(e) => vec![format!("/proc status unreadable: {e}")],
    }
}

fn check_fields(st: &procfs::process::Status, expect: &Expect) -> Vec<String> {
    let mut off = Vec::new();
    // Rendered as the kernel writes them, for messages unchanged from the
    // hand parser: decimal, caps as 16 hex digits, absent as empty.
    let dec = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let nnp = dec(st.nonewprivs);
    if expect.no_new_privs && nnp != "1" {
        off.push(format!("NoNewPrivs is {nnp:?}, want 1"));
    }
    // 3 is SECCOMP_MODE_DEAD: the filter has just killed the process, so
    // a filter was in force; seen when the workload dies of it at once.
    let seccomp = dec(st.seccomp.map(u64::from));
    if expect.seccomp && !matches!(seccomp.as_str(), "2" | "3") {
        off.push(format!("Seccomp is {seccomp:?}, want 2 (filter)"));
    }
    if expect.no_caps {
        let sets = [
            ("CapInh", Some(st.capinh)),
            ("CapPrm", Some(st.capprm)),
            ("CapEff", Some(st.capeff)),
            ("CapBnd", st.capbnd),
            ("CapAmb", st.capamb),
        ];
        for (cap, v) in sets {
            if cap == "CapBnd" && expect.bounding_may_remain && expect.no_new_privs {
                continue;
            }
            if v != Some(0) {
                let v = v.map(|v| format!("{v:016x}")).unwrap_or_default();
                off.push(format!("{cap} is {v}, want 0"));
            }
        }
    }
    if expect.not_host_root {
        let ids = [
            ("Uid", [st.ruid, st.euid, st.suid, st.fuid]),
            ("Gid", [st.rgid, st.egid, st.sgid, st.fgid]),
        ];
        for (id, v) in ids {
            if v.contains(&0) {
                let text = format!("{}\t{}\t{}\t{}", v[0], v[1], v[2], v[3]);
                off.push(format!("{id} is {text:?}: host root"));
            }
        }
    }
    off
}

fn check_namespaces(proc_dir: &Path, names: &[&str]) -> Vec<String> {
    let mut off = Vec::new();
    for ns in names {
        let theirs = std::fs::read_link(proc_dir.join("ns").join(ns));
        let ours = std::fs::read_link(Path::new("/proc/self/ns").join(ns));
        match (theirs, ours) {
            (Ok(t), Ok(o)) if t == o => off.push(format!("{ns} namespace is the host's")),
            (Err(e), _) => off.push(format!("{ns} namespace unreadable: {e}")),
            // Without our own link there is nothing to compare: not a pass.
            (_, Err(e)) => off.push(format!("{ns} namespace of runsbx unreadable: {e}")),
            _ => {}
        }
    }
    off
}

fn check_fds(proc_dir: &Path, max_fd: Option<i32>) -> Vec<String> {
    let Some(max) = max_fd else { return Vec::new() };
    let Ok(rd) = std::fs::read_dir(proc_dir.join("fd")) else {
        return vec!["fd list unreadable".into()];
    };
    let mut off = Vec::new();
    for e in rd.flatten() {
        let Ok(n) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if n <= max {
            continue;
        }
        // Before exec, init still holds its own descriptors; what matters
        // is that each is close-on-exec, so none reaches the workload.
        let info = match std::fs::read_to_string(proc_dir.join("fdinfo").join(n.to_string())) {
            // Closed since the listing: it reaches nobody.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            other => other,
        };
        let cloexec = info
            .ok()
            .and_then(|i| crate::fdinfo::flags(&i))
            .map(|flags| flags & libc::O_CLOEXEC != 0);
        if cloexec != Some(true) {
            let target = std::fs::read_link(e.path()).unwrap_or_default();
            off.push(format!(
                "fd {n} ({}) would reach the workload (not close-on-exec)",
                target.display()
            ));
        }
    }
    off
}

/// Parses `10s`, `500ms`, `2m`, `1h`, or plain seconds (`1.5`).
pub fn parse_duration(s: &str) -> Option<Duration> {
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(secs).ok()
}

pub use runsbx_policy::units::parse_bytes;

/// A size limit (`--rss-limit`, `--memory`): [`parse_bytes`] of the trimmed
/// text, refusing zero, which no workload could run under.
pub fn parse_size(s: &str) -> Option<u64> {
    parse_bytes(s.trim()).filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole status of a sealed workload, as procfs needs every field the
    /// kernel always writes.
    const STATUS: &str = "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t7\nNgid:\t0\nPid:\t7\nPPid:\t1\n\
        TracerPid:\t0\nUid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nFDSize:\t64\nGroups:\t \n\
        NStgid:\t7\nNSpid:\t7\nThreads:\t1\nSigQ:\t0/96362\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n\
        SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\nSigCgt:\t0000000000000000\n\
        VmRSS:\t   1234 kB\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n\
        CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n";

    fn strict() -> Expect {
        Expect {
            no_new_privs: true,
            seccomp: true,
            no_caps: true,
            not_host_root: true,
            ..Default::default()
        }
    }

    #[test]
    fn sealed_status_passes() {
        assert!(check_status(STATUS, &strict()).is_empty());
        // Killed by its own filter a moment ago.
        let dead = STATUS.replace("Seccomp:\t2", "Seccomp:\t3");
        assert!(check_status(&dead, &strict()).is_empty());
    }

    #[test]
    fn each_weakness_is_named() {
        let cases = [
            ("NoNewPrivs:\t1", "NoNewPrivs:\t0", "NoNewPrivs"),
            ("Seccomp:\t2", "Seccomp:\t0", "Seccomp"),
            (
                "CapEff:\t0000000000000000",
                "CapEff:\t0000000000000400",
                "CapEff",
            ),
            (
                "CapBnd:\t0000000000000000",
                "CapBnd:\t000001ffffffffff",
                "CapBnd",
            ),
            ("Uid:\t65534\t65534", "Uid:\t0\t65534", "Uid"),
        ];
        for (from, to, name) in cases {
            let off = check_status(&STATUS.replace(from, to), &strict());
            assert_eq!(off.len(), 1, "{name}: {off:?}");
            assert!(off[0].starts_with(name), "{off:?}");
        }
        // A missing field is a failure, not a pass.
        assert!(!check_status("Name:\tx\n", &strict()).is_empty());
    }

    /// The words stay those of the hand parser procfs replaced.
    #[test]
    fn messages_quote_the_kernels_values() {
        let off = |from: &str, to: &str| check_status(&STATUS.replace(from, to), &strict());
        assert_eq!(
            off("NoNewPrivs:\t1", "NoNewPrivs:\t0"),
            ["NoNewPrivs is \"0\", want 1"]
        );
        assert_eq!(
            off("Seccomp:\t2\n", ""),
            ["Seccomp is \"\", want 2 (filter)"]
        );
        assert_eq!(
            off("CapBnd:\t0000000000000000", "CapBnd:\t000001ffffffffff"),
            ["CapBnd is 000001ffffffffff, want 0"]
        );
        assert_eq!(
            off("Gid:\t65534\t65534", "Gid:\t65534\t0"),
            ["Gid is \"65534\\t0\\t65534\\t65534\": host root"]
        );
    }

    /// This kernel's own status reads (a parse failure would fail every
    /// posture check).
    #[test]
    fn this_kernels_status_reads() {
        let own = std::fs::read_to_string("/proc/self/status").unwrap();
        assert!(check_status(&own, &Expect::default()).is_empty());
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("10s"), Some(Duration::from_secs(10)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Some(Duration::from_millis(1500)));
        for bad in ["", "x", "10x", "-1s", "NaN", "1e999"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("4096"), Some(4096));
        for bad in ["", "M", "0", "-1M", "1T", "99999999999999999999"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    /// The zero case is where the two parsers differed: a limit refuses it,
    /// a plain size (an rlimit) keeps it.
    #[test]
    fn sizes_table_with_zero() {
        let rows: &[(&str, Option<u64>, Option<u64>)] = &[
            ("0", Some(0), None),
            ("0K", Some(0), None),
            ("0g", Some(0), None),
            ("1", Some(1), Some(1)),
            ("64k", Some(64 << 10), Some(64 << 10)),
            ("2M", Some(2 << 20), Some(2 << 20)),
            ("1G", Some(1 << 30), Some(1 << 30)),
            (" 5M ", None, Some(5 << 20)),
            ("", None, None),
            ("K", None, None),
            ("-1", None, None),
            ("1T", None, None),
            ("17179869184G", None, None),
        ];
        for (text, bytes, size) in rows {
            assert_eq!(parse_bytes(text), *bytes, "parse_bytes({text:?})");
            assert_eq!(parse_size(text), *size, "parse_size({text:?})");
        }
    }
}
