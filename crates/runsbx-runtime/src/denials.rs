//! `--report-denials`: what the sandbox refused, read back from the kernel's
//! audit records and said in words after the run.
//!
//! Sources: seccomp records (`AUDIT_SECCOMP`, 1326), which the kernel emits
//! for every non-allow answer of a filter loaded with
//! `SECCOMP_FILTER_FLAG_LOG`, audit enabled or not; and Landlock records
//! (`AUDIT_LANDLOCK_ACCESS`/`_DOMAIN`, 1423/1424, ABI 7), which need the
//! audit subsystem enabled and a domain restricted with
//! `LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON` (by default Landlock stops
//! logging at the exec). Both arrive on the audit multicast group with the
//! `SYSCALL` record of the same event (pid, syscall, arguments) when audit
//! is enabled. The records carry host PIDs: a record is the container's when
//! its process descends from the container's init, or when it names a
//! Landlock domain that init created.
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use runsbx_policy::seccomp::{Call, SeccompProgram};
use serde::Serialize;

use crate::sys::audit::{self, RawRecord, ReadLog, Received};

const AUDIT_SYSCALL: u16 = 1300;
const AUDIT_EOE: u16 = 1320;
const AUDIT_SECCOMP: u16 = 1326;
const AUDIT_LANDLOCK_ACCESS: u16 = 1423;
const AUDIT_LANDLOCK_DOMAIN: u16 = 1424;
/// Landlock's first ABI with audit records.
const LANDLOCK_AUDIT_ABI: u8 = 7;
/// After the workload exits, records still in the kernel's queue arrive
/// within this much silence. kauditd delivers them when it gets a CPU, so a
/// loaded machine needs more room than an idle one; it only costs time
/// with `--report-denials`.
const DRAIN_QUIET: Duration = Duration::from_millis(250);
const DRAIN_MAX: Duration = Duration::from_secs(2);
/// Distinct denials kept; a loop hammering one syscall is one line.
const MAX_DISTINCT: usize = 200;
/// Events awaiting their end record.
const MAX_PENDING: usize = 1024;

/// One kind of refused access, with how often it happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Denial {
    /// "landlock" or "seccomp".
    pub layer: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syscall: Option<String>,
    /// Landlock: the object (`"/etc/shadow"`, `daddr=10.0.0.1 dest=80`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Landlock: the rights that blocked it (`fs.read_file`); seccomp: the
    /// answer (`EPERM`, `killed`).
    pub denied: String,
    pub count: u32,
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "denied by {}: ", self.layer)?;
        // The workload names itself (PR_SET_NAME): escaped, so that a
        // name of control bytes cannot rewrite the operator's terminal.
        let comm = self.comm.as_deref().map(|c| c.escape_debug().to_string());
        match (comm, self.pid) {
            (Some(c), Some(p)) => write!(f, "{c} (pid {p})")?,
            (None, Some(p)) => write!(f, "pid {p}")?,
            (Some(c), None) => write!(f, "{c}")?,
            (None, None) => write!(f, "a container process")?,
        }
        if let Some(s) = &self.syscall {
            write!(f, " {s}")?;
        }
        if let Some(o) = &self.object {
            write!(f, " {o}")?;
        }
        match self.layer {
            "landlock" => write!(f, ": needs {}", self.denied)?,
            _ => write!(f, ": {}", self.denied)?,
        }
        if self.count > 1 {
            write!(f, " ({} times)", self.count)?;
        }
        Ok(())
    }
}

/// What a run's denial report holds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DenialReport {
    pub denials: Vec<Denial>,
    /// What could not be reported on this host, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl DenialReport {
    /// The lines to print after the run, one per denial or note.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self.denials.iter().map(|d| d.to_string()).collect();
        if self.denials.is_empty() && self.notes.is_empty() {
            out.push("no denials recorded".into());
        }
        out.extend(self.notes.iter().cloned());
        out
    }

    /// The paths Landlock refused to read or list, once each, unquoted.
    pub fn unreadable_paths(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for d in &self.denials {
            let reads = d.denied.contains("fs.read_file") || d.denied.contains("fs.read_dir");
            let path = d
                .object
                .as_deref()
                .and_then(|o| o.strip_prefix('"')?.strip_suffix('"'));
            if let (true, Some(p)) = (d.layer == "landlock" && reads, path) {
                if !out.iter().any(|x| x == p) {
                    out.push(p.to_string());
                }
            }
        }
        out
    }
}

/// Opened before the container starts; see [`Watch::start`].
pub struct Watch {
    log: ReadLog,
    notes: Vec<String>,
    seccomp: Option<SeccompProgram>,
}

impl Watch {
    /// Subscribes to the audit log and works out what this host can report.
    /// `landlock`: whether the container has that layer; `seccomp`: its
    /// compiled filter, if any. An error means nothing at all can be
    /// reported, and says why.
    pub fn open(landlock: bool, seccomp: Option<SeccompProgram>) -> Result<Self, String> {
        let log = ReadLog::open().map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => {
                "denials cannot be reported: reading the kernel's audit records needs \
                 CAP_AUDIT_READ (run as root)"
                    .to_string()
            }
            Some(libc::EPROTONOSUPPORT) => {
                "denials cannot be reported: this kernel has no audit subsystem (CONFIG_AUDIT)"
                    .to_string()
            }
            _ => format!("denials cannot be reported: audit netlink socket: {e}"),
        })?;
        let mut notes = Vec::new();
        if seccomp.is_some() && !seccomp_logs_errno() {
            notes.push(
                "seccomp denials are not reported: /proc/sys/kernel/seccomp/actions_logged \
                 does not list errno"
                    .into(),
            );
        }
        if landlock {
            if let Some(why) = landlock_unreportable() {
                notes.push(format!("Landlock denials are not reported: {why}"));
            }
        }
        Ok(Self {
            log,
            notes,
            seccomp,
        })
    }

    /// Starts reading records in a thread. Call after the container's init
    /// exists (a thread must not be running when libcontainer clones) and
    /// before it starts; `init` is its host PID.
    pub fn start(self, init: i32) -> Running {
        let shared = Arc::new(Mutex::new(Tracker::new(init, descends_from, self.seccomp)));
        let stop = Arc::new(AtomicBool::new(false));
        let (t, s) = (shared.clone(), stop.clone());
        let log = self.log;
        let thread = std::thread::spawn(move || read_loop(&log, &t, &s));
        Running {
            shared,
            stop,
            thread: Some(thread),
            notes: self.notes,
        }
    }
}

/// The reader thread of a started [`Watch`].
pub struct Running {
    shared: Arc<Mutex<Tracker>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    notes: Vec<String>,
}

impl Running {
    /// Call once the workload has exited: reads what is still queued, stops
    /// the thread and returns the report.
    pub fn finish(mut self) -> DenialReport {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut tracker = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        tracker.flush();
        let mut notes = self.notes.clone();
        if tracker.overrun {
            notes.push("some audit records were lost (receive buffer overrun)".into());
        }
        if tracker.dropped > 0 {
            notes.push(format!(
                "{} more kinds of denial not listed",
                tracker.dropped
            ));
        }
        DenialReport {
            denials: tracker.denials.clone(),
            notes,
        }
    }
}

fn read_loop(log: &ReadLog, tracker: &Mutex<Tracker>, stop: &AtomicBool) {
    let mut quiet_since: Option<Instant> = None;
    let mut stopping_since: Option<Instant> = None;
    loop {
        if stop.load(Ordering::SeqCst) {
            let now = Instant::now();
            let since = *stopping_since.get_or_insert(now);
            let quiet = quiet_since.get_or_insert(now);
            if now.duration_since(*quiet) >= DRAIN_QUIET || now.duration_since(since) >= DRAIN_MAX {
                return;
            }
        }
        match log.recv(Duration::from_millis(20)) {
            Ok(Received::Records(records)) => {
                quiet_since = None;
                let mut t = tracker.lock().unwrap_or_else(|p| p.into_inner());
                for r in records {
                    t.add(&r);
                }
            }
            Ok(Received::Overrun) => {
                tracker.lock().unwrap_or_else(|p| p.into_inner()).overrun = true;
            }
            Ok(Received::Timeout) => {
                if stop.load(Ordering::SeqCst) {
                    quiet_since.get_or_insert_with(Instant::now);
                }
            }
            Err(e) => {
                tracing::warn!("audit: {e}");
                return;
            }
        }
    }
}

/// Whether `pid` is `init` or descends from it, following PPid in /proc.
/// A process that already exited cannot be placed and is not counted.
fn descends_from(pid: i32, init: i32) -> bool {
    let mut cur = pid;
    for _ in 0..64 {
        if cur == init {
            return true;
        }
        if cur <= 1 {
            return false;
        }
        let Ok(stat) = procfs::process::Process::new(cur).and_then(|p| p.stat()) else {
            return false;
        };
        cur = stat.ppid;
    }
    false
}

fn seccomp_logs_errno() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_logged")
        .is_ok_and(|s| s.split_whitespace().any(|a| a == "errno"))
}

fn landlock_unreportable() -> Option<String> {
    match crate::landlock::kernel_abi() {
        None => return Some("Landlock is not available".into()),
        Some(abi) if abi < LANDLOCK_AUDIT_ABI => {
            return Some(format!(
                "this kernel's Landlock ABI is {abi}; audit records need ABI \
                 {LANDLOCK_AUDIT_ABI} (Linux 6.15)"
            ))
        }
        Some(_) => {}
    }
    match audit::enabled() {
        Ok(true) => None,
        Ok(false) => Some(
            "the kernel's audit subsystem is disabled (an administrator enables it with \
             `auditctl -e 1`)"
                .into(),
        ),
        Err(e) => Some(format!("cannot read the audit status: {e}")),
    }
}

/// Whether the running kernel can log Landlock denials past exec (ABI 7),
/// for the Executor to ask for it.
pub fn landlock_can_log(kernel_abi: Option<u8>) -> bool {
    kernel_abi.is_some_and(|abi| abi >= LANDLOCK_AUDIT_ABI)
}

/// A parsed record: type, serial, fields in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub kind: u16,
    pub serial: u64,
    pub fields: Vec<(String, String)>,
}

impl Record {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Fields whose values the kernel logs as untrusted strings: quoted when
/// plain, hex-encoded when they contain a space, quote or control byte.
const UNTRUSTED: &[&str] = &["path", "comm", "exe", "name", "ocomm", "cwd"];

/// Parses `audit(1729738800.268:30): key=value key="quoted value" ...`.
pub fn parse(raw: &RawRecord) -> Option<Record> {
    let rest = raw.text.strip_prefix("audit(")?;
    let (stamp, body) = rest.split_once("):")?;
    let serial = stamp.rsplit_once(':')?.1.parse().ok()?;
    let mut fields = Vec::new();
    let mut s = body.trim_start();
    while !s.is_empty() {
        let Some((key, after)) = s.split_once('=') else {
            break;
        };
        let key = key.trim().to_string();
        let (value, next) = if let Some(q) = after.strip_prefix('"') {
            match q.find('"') {
                Some(end) => (q[..end].to_string(), &q[end + 1..]),
                None => (q.to_string(), ""),
            }
        } else {
            let end = after.find(' ').unwrap_or(after.len());
            let v = &after[..end];
            let v = if UNTRUSTED.contains(&key.as_str()) {
                unhex(v).unwrap_or_else(|| v.to_string())
            } else {
                v.to_string()
            };
            (v, &after[end..])
        };
        fields.push((key, value));
        s = next.trim_start();
    }
    Some(Record {
        kind: raw.kind,
        serial,
        fields,
    })
}

fn unhex(v: &str) -> Option<String> {
    if v.is_empty() || !v.len().is_multiple_of(2) || !v.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..v.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&v[i..i + 2], 16).ok())
        .collect();
    Some(String::from_utf8_lossy(&bytes?).into_owned())
}

/// Groups records by event, decides which belong to the container and
/// counts what was denied.
pub struct Tracker {
    init: i32,
    /// Whether a host PID is the container's: `belongs(pid, init)`.
    belongs: fn(i32, i32) -> bool,
    /// The container's filter, asked which errno a denied call got.
    seccomp: Option<SeccompProgram>,
    /// Landlock domain ids created by the container's processes.
    domains: HashSet<String>,
    pending: HashMap<u64, Vec<Record>>,
    /// In order of first occurrence, with an index by identity.
    denials: Vec<Denial>,
    seen: HashMap<String, usize>,
    overrun: bool,
    dropped: usize,
}

impl Tracker {
    pub fn new(init: i32, belongs: fn(i32, i32) -> bool, seccomp: Option<SeccompProgram>) -> Self {
        Self {
            init,
            belongs,
            seccomp,
            domains: HashSet::new(),
            pending: HashMap::new(),
            denials: Vec::new(),
            seen: HashMap::new(),
            overrun: false,
            dropped: 0,
        }
    }

    /// Takes one record.
    pub fn add(&mut self, raw: &RawRecord) {
        let Some(rec) = parse(raw) else { return };
        match rec.kind {
            AUDIT_SECCOMP => self.seccomp(&rec),
            AUDIT_EOE => {
                if let Some(group) = self.pending.remove(&rec.serial) {
                    self.event(group);
                }
            }
            AUDIT_LANDLOCK_ACCESS | AUDIT_LANDLOCK_DOMAIN | AUDIT_SYSCALL => {
                // Events whose end record was lost (an overrun) must not
                // pile up: the oldest are settled early.
                if self.pending.len() >= MAX_PENDING && !self.pending.contains_key(&rec.serial) {
                    if let Some(&oldest) = self.pending.keys().min() {
                        if let Some(group) = self.pending.remove(&oldest) {
                            self.event(group);
                        }
                    }
                }
                self.pending.entry(rec.serial).or_default().push(rec);
            }
            _ => {}
        }
    }

    /// Settles events whose end-of-event record never came.
    pub fn flush(&mut self) {
        let mut serials: Vec<u64> = self.pending.keys().copied().collect();
        serials.sort_unstable();
        for s in serials {
            if let Some(group) = self.pending.remove(&s) {
                self.event(group);
            }
        }
    }

    fn seccomp(&mut self, rec: &Record) {
        let Some(pid) = rec.get("pid").and_then(|p| p.parse().ok()) else {
            return;
        };
        let num = |k: &str| {
            rec.get(k)
                .and_then(|c| u32::from_str_radix(c.trim_start_matches("0x"), 16).ok())
        };
        let action = num("code").unwrap_or(0);
        let call = Call {
            arch: num("arch").unwrap_or(0),
            nr: rec.get("syscall").and_then(|n| n.parse().ok()).unwrap_or(0),
            args: [0; 6],
        };
        // The record names the action, not the errno: ask the filter, with
        // the arguments unknown (zero).
        let answer = self.seccomp.as_ref().and_then(|p| p.answer(&call));
        let Some(answer) = seccomp_answer(action, answer) else {
            return;
        };
        if !(self.belongs)(pid, self.init) {
            return;
        }
        let syscall = syscall_of(rec);
        self.count(Denial {
            layer: "seccomp",
            pid: Some(pid),
            comm: rec.get("comm").map(str::to_string),
            syscall,
            object: None,
            denied: answer,
            count: 1,
        });
    }

    fn event(&mut self, group: Vec<Record>) {
        let syscall = group.iter().find(|r| r.kind == AUDIT_SYSCALL);
        let pid: Option<i32> = syscall
            .and_then(|r| r.get("pid"))
            .and_then(|p| p.parse().ok());
        for r in group.iter().filter(|r| r.kind == AUDIT_LANDLOCK_DOMAIN) {
            let creator: Option<i32> = r.get("pid").and_then(|p| p.parse().ok());
            if let (Some(domain), Some(creator)) = (r.get("domain"), creator) {
                if (self.belongs)(creator, self.init) {
                    self.domains.insert(domain.to_string());
                }
            }
        }
        let ours_by_pid = pid.is_some_and(|p| (self.belongs)(p, self.init));
        for r in group.iter().filter(|r| r.kind == AUDIT_LANDLOCK_ACCESS) {
            let ours = ours_by_pid || r.get("domain").is_some_and(|d| self.domains.contains(d));
            if !ours {
                continue;
            }
            self.count(Denial {
                layer: "landlock",
                pid,
                comm: syscall.and_then(|s| s.get("comm")).map(str::to_string),
                syscall: syscall.and_then(syscall_of),
                object: landlock_object(r),
                denied: r.get("blockers").unwrap_or("?").replace(',', ", "),
                count: 1,
            });
        }
    }

    fn count(&mut self, d: Denial) {
        let key = format!(
            "{}|{:?}|{:?}|{:?}|{}",
            d.layer, d.pid, d.syscall, d.object, d.denied
        );
        if let Some(&i) = self.seen.get(&key) {
            self.denials[i].count += 1;
        } else if self.denials.len() < MAX_DISTINCT {
            self.seen.insert(key, self.denials.len());
            self.denials.push(d);
        } else {
            self.dropped += 1;
        }
    }
}

fn syscall_of(rec: &Record) -> Option<String> {
    let arch = u32::from_str_radix(rec.get("arch")?, 16).ok()?;
    let nr: u32 = rec.get("syscall")?.parse().ok()?;
    Some(
        runsbx_policy::seccomp::syscall_name(arch, nr)
            .map(str::to_string)
            .unwrap_or_else(|| format!("syscall {nr}")),
    )
}

/// The answer a seccomp record's action (`code`) stands for, or `None`
/// when it is not a denial: an allow or log action, or ENOSYS, which
/// profiles answer to ask the program to fall back (clone3 -> clone).
/// `filter`: what the container's filter returns for that syscall.
fn seccomp_answer(action: u32, filter: Option<u32>) -> Option<String> {
    let errno = filter
        .filter(|r| r & libc::SECCOMP_RET_ACTION_FULL == libc::SECCOMP_RET_ERRNO)
        .map(|r| r & libc::SECCOMP_RET_DATA);
    match action & libc::SECCOMP_RET_ACTION_FULL {
        libc::SECCOMP_RET_ERRNO => match errno {
            Some(e) if e == libc::ENOSYS as u32 => None,
            Some(e) => Some(format!("{:?}", nix::errno::Errno::from_raw(e as i32))),
            None => Some("an errno".into()),
        },
        libc::SECCOMP_RET_KILL_PROCESS | libc::SECCOMP_RET_KILL_THREAD => {
            Some("killed (SIGSYS)".into())
        }
        libc::SECCOMP_RET_TRAP => Some("trapped (SIGSYS)".into()),
        libc::SECCOMP_RET_TRACE => Some("sent to a tracer".into()),
        libc::SECCOMP_RET_USER_NOTIF => Some("sent to a notifier".into()),
        _ => None,
    }
}

/// What a Landlock access record says was touched: a path, or the
/// network or scope details.
fn landlock_object(r: &Record) -> Option<String> {
    if let Some(path) = r.get("path") {
        return Some(format!("{path:?}"));
    }
    let rest: Vec<String> = r
        .fields
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "domain" | "blockers" | "dev" | "ino"))
        .map(|(k, v)| format!("{k}={}", v.escape_debug()))
        .collect();
    (!rest.is_empty()).then(|| rest.join(" "))
}

#[cfg(test)]
#[path = "denials_tests.rs"]
mod tests;
