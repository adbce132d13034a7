use std::fs;
use std::io::Write;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::sys::signal::Signal;
use runsbx_runtime::denials::{DenialReport, Running, Watch};
use runsbx_runtime::guard::{self, Expect, Limits, Outcome, Reason};
use runsbx_runtime::monitor::Monitor;
use runsbx_runtime::{CreateOptions, Owned};

use super::{create, Ctx};
use crate::cli::{GuardFlags, Run};

pub fn run(ctx: &Ctx, a: Run) -> Result<u8> {
    let opts = create::options(&a.id, &a.flags, a.detach);
    if a.detach {
        let g = &a.guard;
        if g.timeout.is_some() || g.rss_limit.is_some() || g.report.is_some() || g.report_denials {
            bail!(
                "--timeout, --rss-limit, --report and --report-denials need a foreground run \
                 (no --detach)"
            );
        }
        return detached(ctx, opts, a.flags.pidfd_socket.as_deref());
    }
    let sup = Supervision::from_flags(&a.guard)?;
    foreground(ctx, opts, a.flags.pidfd_socket.as_deref(), a.keep, sup)
}

fn detached(ctx: &Ctx, opts: CreateOptions, pidfd: Option<&Path>) -> Result<u8> {
    let id = opts.id.clone();
    let c = ctx.rt.create(opts)?;
    let started = send_pidfd(&c, pidfd).and_then(|_| Ok(ctx.rt.start(&id)?));
    if let Err(e) = started {
        let _ = ctx.rt.delete(&id, true);
        return Err(e);
    }
    Ok(0)
}

fn send_pidfd(c: &libcontainer::container::Container, sock: Option<&Path>) -> Result<()> {
    if let (Some(sock), Some(pid)) = (sock, c.pid()) {
        runsbx_runtime::sys::pidfd::send(sock, pid)?;
    }
    Ok(())
}

/// What a foreground run watches and reports.
pub struct Supervision {
    pub limits: Limits,
    pub status_fd: Option<fs::File>,
    pub report: Option<PathBuf>,
    /// Checked after create (init, sealed but for seccomp) and after start.
    pub posture: Option<Expect>,
    /// The status runsbx exits with when the workload never ran (1 for
    /// `run`, as runc; 125 for `sandbox`).
    pub setup_status: i32,
    /// Signals to runsbx that SIGKILL the workload rather than being
    /// forwarded (`sandbox`: SIGTERM, SIGHUP; `run` forwards all, as runc).
    pub kill_on: Vec<Signal>,
    /// `--report-denials`.
    pub report_denials: bool,
    /// After the denials, say which sandbox flag adds what Landlock refused
    /// to read (`sandbox`: `--ro`).
    pub ro_hint: bool,
}

impl Default for Supervision {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            status_fd: None,
            report: None,
            posture: None,
            setup_status: 1,
            kill_on: Vec::new(),
            report_denials: false,
            ro_hint: false,
        }
    }
}

impl Supervision {
    pub fn from_flags(g: &GuardFlags) -> Result<Self> {
        let timeout = g
            .timeout
            .as_deref()
            .map(|t| {
                guard::parse_duration(t).with_context(|| format!("--timeout {t:?}: not a duration"))
            })
            .transpose()?;
        let rss_limit = g
            .rss_limit
            .as_deref()
            .map(|s| guard::parse_size(s).with_context(|| format!("--rss-limit {s:?}: not a size")))
            .transpose()?;
        let status_fd = g.status_fd.map(status_file).transpose()?;
        Ok(Self {
            limits: Limits { timeout, rss_limit },
            status_fd,
            report: g.report.clone(),
            posture: None,
            setup_status: 1,
            report_denials: g.report_denials,
            ..Self::default()
        })
    }

    /// Writes one event to the status fd as one line in one write(2), so a
    /// supervisor reading the file never sees half a line.
    pub fn emit(&mut self, event: serde_json::Value) {
        if let Some(f) = self.status_fd.as_mut() {
            let mut line = event.to_string();
            line.push('\n');
            let _ = f.write_all(line.as_bytes());
        }
    }

    /// Writes the outcome to the status fd and the report file.
    pub fn finish(&mut self, outcome: &Outcome) -> Result<()> {
        let mut v = serde_json::to_value(outcome)?;
        v["event"] = "exit".into();
        self.emit(v);
        if let Some(path) = &self.report {
            write_no_follow(path, &serde_json::to_vec_pretty(outcome)?)
                .with_context(|| format!("--report {}", path.display()))?;
        }
        Ok(())
    }
}

/// Writes a file without following a symlink at its path. Stops: a
/// workload that can write the report's directory (a shared bind) planting
/// a symlink so that runsbx, as root, overwrites a host file.
fn write_no_follow(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(path)?;
    f.write_all(bytes)
}

/// Takes ownership of an inherited descriptor, refusing stdio and closed
/// ones; it is close-on-exec, so it never reaches the container.
fn status_file(fd: RawFd) -> Result<fs::File> {
    if fd <= 2 {
        bail!("--status-fd {fd}: must not be stdin, stdout or stderr");
    }
    runsbx_runtime::sys::fds::take_inherited(fd)
        .with_context(|| format!("--status-fd {fd}: not an open descriptor"))
}

/// create + start, wait (forwarding signals, enforcing limits), delete
/// unless `keep`, and return the workload's status (128+N when killed by
/// signal N), as runc.
pub fn foreground(
    ctx: &Ctx,
    mut opts: CreateOptions,
    pidfd: Option<&Path>,
    keep: bool,
    mut sup: Supervision,
) -> Result<u8> {
    let started_at = Instant::now();
    let id = opts.id.clone();
    let mut denials = Denials::prepare(ctx, &mut opts, sup.report_denials);
    let result = start_supervised(ctx, opts, pidfd, &mut sup, &mut denials);
    let (owned, pid, monitor) = match result {
        Ok(v) => v,
        Err(e) => {
            let status = sup.setup_status;
            let mut outcome = Outcome::setup_failed(format!("{e:#}"), status, started_at.elapsed());
            outcome.denials = denials.finish(sup.ro_hint);
            let _ = sup.finish(&outcome);
            return Err(e);
        }
    };
    sup.emit(serde_json::json!({ "event": "start", "pid": pid.as_raw(), "id": id }));

    let (done, mut killed_for, peak) = watch(&monitor, pid, sup.limits, started_at, || {
        let _ = ctx.rt.kill_owned(&owned);
    })?;
    if killed_for.is_none() && ctx.rt.oom_killed_owned(&owned) {
        killed_for = Some(Reason::Oom);
    }
    let mut outcome = Outcome::finished(pid.as_raw(), done, killed_for, peak, started_at.elapsed());
    outcome.denials = denials.finish(sup.ro_hint);
    if !keep {
        ctx.rt.delete_owned(&owned)?;
    }
    sup.finish(&outcome)?;
    Ok(outcome.status.clamp(0, 255) as u8)
}

fn start_supervised(
    ctx: &Ctx,
    opts: CreateOptions,
    pidfd: Option<&Path>,
    sup: &mut Supervision,
    denials: &mut Denials,
) -> Result<(Owned, nix::unistd::Pid, Monitor)> {
    let opts = CreateOptions {
        // If runsbx is killed, its foreground workload dies with it.
        die_with_parent: true,
        foreground: true,
        ..opts
    };
    let mut owned = ctx.rt.create_owned(opts)?;
    let pid = owned
        .container
        .pid()
        .context("libcontainer reported no pid for init")?;
    let started = (|| -> Result<Monitor> {
        // Blocked only now that libcontainer has forked: init must not
        // inherit a blocked signal mask.
        let monitor = Monitor::new()?.kill_on(&sup.kill_on);
        // Likewise a thread: none may run while libcontainer clones.
        denials.start(pid.as_raw());
        send_pidfd(&owned.container, pidfd)?;
        if let Some(expect) = &sup.posture {
            // Before start, init has everything but seccomp (loaded right
            // before exec): check the rest while no workload code has run.
            let before = Expect {
                seccomp: false,
                ..expect.clone()
            };
            check_posture(pid.as_raw(), &before)?;
        }
        ctx.rt.start_owned(&mut owned)?;
        if let Some(expect) = &sup.posture {
            // After start the workload has exec'd; if it already exited
            // there is nothing left to check or to stop. It may also exit
            // during the check (a zombie has no namespace links): a failure
            // then stands only if it is still alive afterwards.
            if guard::rss(pid.as_raw()).is_some() {
                let after = Expect {
                    max_fd: None,
                    ..expect.clone()
                };
                if let Err(e) = check_posture(pid.as_raw(), &after) {
                    if guard::rss(pid.as_raw()).is_some() {
                        return Err(e);
                    }
                }
            }
        }
        Ok(monitor)
    })();
    match started {
        Ok(m) => Ok((owned, pid, m)),
        Err(e) => {
            // Init is this process's child, not reaped yet: its PID is its.
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(pid, None);
            let _ = ctx.rt.delete_owned(&owned);
            Err(e)
        }
    }
}

/// `--report-denials` over one foreground run.
enum Denials {
    Off,
    /// Nothing can be reported on this host; the note says why.
    Unavailable(String),
    Ready(Watch),
    Running(Running),
}

impl Denials {
    /// Subscribes to the audit log before the container exists, and has
    /// its layers log what they refuse.
    fn prepare(ctx: &Ctx, opts: &mut CreateOptions, wanted: bool) -> Self {
        if !wanted {
            return Self::Off;
        }
        opts.log_denials = true;
        // Which layers there are, for the notes; a bundle that does not
        // validate is refused by create, with its own error.
        let (landlock, seccomp) =
            match runsbx_runtime::explain::validate(&opts.bundle, &ctx.rt.landlock_default) {
                Ok(v) => (!v.policy.landlock.is_empty(), v.seccomp),
                Err(_) => (true, None),
            };
        match Watch::open(landlock, seccomp) {
            Ok(w) => Self::Ready(w),
            Err(note) => Self::Unavailable(note.to_string()),
        }
    }

    /// Starts reading once init exists (`pid`), before it starts.
    fn start(&mut self, pid: i32) {
        if let Self::Ready(_) = self {
            if let Self::Ready(w) = std::mem::replace(self, Self::Off) {
                *self = Self::Running(w.start(pid));
            }
        }
    }

    /// Prints the report, one line each, and returns it for `--report`.
    /// Nothing when no container was created.
    fn finish(self, ro_hint: bool) -> Option<DenialReport> {
        let report = match self {
            Self::Off | Self::Ready(_) => return None,
            Self::Unavailable(note) => DenialReport {
                denials: Vec::new(),
                notes: vec![note],
            },
            Self::Running(r) => r.finish(),
        };
        for line in report.lines() {
            eprintln!("runsbx: {line}");
        }
        if ro_hint {
            // /proc and /dev are the sandbox's own, not host paths to bind.
            let host = |p: &String| !p.starts_with("/proc/") && !p.starts_with("/dev/");
            for path in report.unreadable_paths().into_iter().filter(host) {
                eprintln!("runsbx: {path} is not readable in the sandbox: --ro {path} adds it");
            }
        }
        Some(report)
    }
}

fn check_posture(pid: i32, expect: &Expect) -> Result<()> {
    // A live thread's view: the leader may have ended while others run.
    let dir = guard::live_task(pid).unwrap_or_else(|| PathBuf::from(format!("/proc/{pid}")));
    let off = guard::posture(&dir, expect).map_err(anyhow::Error::msg)?;
    if !off.is_empty() {
        bail!("posture check failed, not running: {}", off.join("; "));
    }
    Ok(())
}

/// Waits for `pid`, forwarding signals and enforcing `limits` (calling
/// `kill` once one is exceeded). Returns how it ended, the limit that killed
/// it, and the peak RSS seen.
pub fn watch(
    monitor: &Monitor,
    pid: nix::unistd::Pid,
    limits: Limits,
    started_at: Instant,
    kill: impl Fn(),
) -> Result<(runsbx_runtime::monitor::Finished, Option<Reason>, u64)> {
    let tick = match (limits.rss_limit, limits.timeout) {
        (Some(_), _) => Some(guard::RSS_POLL),
        (None, Some(t)) => Some(t.min(Duration::from_millis(100))),
        (None, None) => None,
    };
    let mut peak = 0u64;
    let mut killed_for = None;
    let done = monitor.wait(pid, tick, || {
        if let Some(limit) = limits.rss_limit {
            if let Some(rss) = guard::rss(pid.as_raw()) {
                peak = peak.max(rss);
                if rss > limit {
                    killed_for = Some(Reason::RssLimit);
                }
            }
        }
        if limits.timeout.is_some_and(|t| started_at.elapsed() >= t) {
            killed_for.get_or_insert(Reason::Timeout);
        }
        if killed_for.is_some() {
            kill();
            return true;
        }
        false
    })?;
    Ok((done, killed_for, peak))
}
