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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use runsbx_policy::seccomp::SeccompProgram;
use serde::Serialize;

use crate::sys::audit::{self, RawRecord, ReadLog, Received};
use runsbx_policy::landlock::AUDIT_ABI as LANDLOCK_AUDIT_ABI;

const AUDIT_SYSCALL: u16 = 1300;
const AUDIT_EOE: u16 = 1320;
const AUDIT_SECCOMP: u16 = 1326;
const AUDIT_LANDLOCK_ACCESS: u16 = 1423;
const AUDIT_LANDLOCK_DOMAIN: u16 = 1424;
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

/// Why no denial at all can be reported.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error(
        "denials cannot be reported: reading the kernel's audit records needs \
         CAP_AUDIT_READ (run as root)"
    )]
    NotAllowed,
    #[error("denials cannot be reported: this kernel has no audit subsystem (CONFIG_AUDIT)")]
    NoAudit,
    #[error("denials cannot be reported: audit netlink socket: {0}")]
    Socket(std::io::Error),
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
    pub fn open(landlock: bool, seccomp: Option<SeccompProgram>) -> Result<Self, WatchError> {
        let log = ReadLog::open().map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => WatchError::NotAllowed,
            Some(libc::EPROTONOSUPPORT) => WatchError::NoAudit,
            _ => WatchError::Socket(e),
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

mod parse;
mod tracker;

pub use tracker::Tracker;

#[cfg(test)]
#[path = "../denials_tests.rs"]
mod tests;
