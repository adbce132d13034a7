//! Which records are the container's, grouped by event and counted.
use std::collections::{HashMap, HashSet};

use runsbx_policy::seccomp::{Call, SeccompProgram};

use super::parse::{parse, Record};
use super::*;

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
    pub(super) denials: Vec<Denial>,
    seen: HashMap<String, usize>,
    pub(super) overrun: bool,
    pub(super) dropped: usize,
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
