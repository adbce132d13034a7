use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::time::Instant;

use libcontainer::oci_spec::runtime::Spec;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use runsbx_policy::landlock::LandlockPolicy;

use super::posture::{check_posture, without_namespaces};
use super::stdio::StdioFlags;
use super::{watch, Result, SuperviseError, Supervision};
use crate::guard::{self, Outcome};
use crate::monitor::Monitor;
use crate::Runtime;

/// A generated config's process run without a container (`sandbox
/// --no-userns`, see crate::direct for what that does and does not hold).
pub struct Direct {
    pub spec: Spec,
    /// The config's `process.landlock`.
    pub landlock: Option<LandlockPolicy>,
    pub pid_file: Option<PathBuf>,
}

/// Runs a generated config's process without a container; `stdio`
/// replaces runsbx's own.
pub fn spawn(
    rt: &Runtime,
    spec: &Spec,
    landlock: Option<LandlockPolicy>,
    stdio: Option<[OwnedFd; 3]>,
) -> Result<Pid> {
    Ok(crate::direct::spawn(
        spec,
        landlock,
        &rt.landlock_default,
        stdio,
    )?)
}

/// Spawns `d`, checks its posture (`sup.posture`, less what needs
/// namespaces), writes the pid file, and watches it as [`super::foreground`]
/// watches a container.
pub fn direct(rt: &Runtime, d: Direct, mut sup: Supervision) -> Result<Outcome> {
    let started_at = Instant::now();
    let _stdio = StdioFlags::save();
    let pid = match spawn(rt, &d.spec, d.landlock, None) {
        Ok(pid) => pid,
        Err(e) => return Err(sup.setup_failed(e, started_at)),
    };
    // Pinned, the caller knows; chosen by `auto`, isolation.rs announced it.
    tracing::debug!("--isolation landlock: no namespaces; Landlock, seccomp and no_new_privs only");
    let kill = || {
        let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
    };
    let mut monitor = Monitor::new()?.kill_on(&sup.kill_on).continue_stopped();
    if sup.hold_signals {
        monitor.keep_blocked();
    }
    // After exec (there is no "before start" here); a workload that already
    // exited leaves nothing to check.
    // Root left for an unprivileged uid with an empty bounding set
    // (crate::direct::leave_root): check that it is.
    let was_root = nix::unistd::geteuid().is_root();
    if let Some(expect) = sup
        .posture
        .as_ref()
        .map(|e| without_namespaces(e, was_root))
    {
        if guard::rss(pid.as_raw()).is_some() {
            if let Err(e) = check_posture(pid.as_raw(), &expect) {
                kill();
                let _ = nix::sys::wait::waitpid(pid, None);
                return Err(sup.setup_failed(e, started_at));
            }
        }
    }
    if let Some(path) = d.pid_file {
        std::fs::write(&path, pid.as_raw().to_string())
            .map_err(|source| SuperviseError::PidFile { path, source })?;
    }
    sup.started(pid.as_raw(), None);
    let (done, killed_for, peak) = watch(&monitor, pid, sup.limits, started_at, kill)?;
    let outcome = Outcome::finished(pid.as_raw(), done, killed_for, peak, started_at.elapsed());
    sup.finish(&outcome)?;
    Ok(outcome)
}
