//! Foreground supervision: create, check the posture, start, watch
//! (forwarding signals, enforcing limits), report, delete; and the same
//! watch over a `--no-userns` process. The CLI turns flags into a
//! [`Supervision`] and adds its own context to a [`SuperviseError`].
//!
//! - `foreground.rs`: the container run (`run`, `sandbox`, `selftest`).
//! - `direct.rs`: the namespace-less run (`sandbox --no-userns`).
//! - `posture.rs`: what the workload must look like from the host.
//! - `watch.rs`: the wait loop and its limits.
//! - `denials.rs`: `--report-denials` over one run.
//! - `files.rs`: the status fd and the report file.
//! - `stdio.rs`: the caller's stdio flags, put back after the run.

mod denials;
mod direct;
mod error;
mod files;
mod foreground;
mod posture;
mod stdio;
mod watch;

use std::fs;
use std::path::PathBuf;

use nix::sys::signal::Signal;

use crate::guard::{Expect, Limits, Outcome};

pub use direct::{direct, spawn, Direct};
pub use error::{render, SuperviseError};
pub use files::{check_workdir_holds_no_bundle, status_file};
pub use foreground::foreground;
pub use posture::{check_posture, sandbox_posture};
pub use watch::watch;

pub type Result<T> = std::result::Result<T, SuperviseError>;

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
    /// A Jupyter kernel's endpoints (`sandbox --jupyter`), served from the
    /// moment init is forked until the run ends.
    pub relay: Option<crate::jupyter::relay::Relay>,
    /// The isolation the run uses (`sandbox`, `selftest`): in the start
    /// event and the report.
    pub isolation: Option<crate::isolation::Mode>,
    /// `sandbox --allow-net`: the proxy served on 127.0.0.1:PROXY_PORT in
    /// the container's network namespace, from before start to the end.
    pub egress: Option<crate::egress::Proxy>,
    /// Once the workload runs, its signals stay blocked when the run
    /// returns (pending, not lost): the caller, which has its own clean-up
    /// to do after (a sandbox's bundle and workdir), restores the mask then.
    pub hold_signals: bool,
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
            relay: None,
            isolation: None,
            egress: None,
            hold_signals: false,
        }
    }
}

impl Supervision {
    /// Writes one event to the status fd as one line in one write(2), so a
    /// supervisor reading the file never sees half a line.
    pub fn emit(&mut self, event: serde_json::Value) {
        if let Some(f) = self.status_fd.as_mut() {
            use std::io::Write;
            let mut line = event.to_string();
            line.push('\n');
            let _ = f.write_all(line.as_bytes());
        }
    }

    /// The start event: the workload's PID, the container's id if any,
    /// the isolation.
    fn started(&mut self, pid: i32, id: Option<&str>) {
        let mut event = serde_json::json!({ "event": "start", "pid": pid });
        if let Some(id) = id {
            event["id"] = id.into();
        }
        if let Some(mode) = self.isolation {
            event["isolation"] = mode.name().into();
        }
        self.emit(event);
    }

    /// Writes the outcome to the status fd and the report file.
    pub fn finish(&mut self, outcome: &Outcome) -> Result<()> {
        let mut report = serde_json::to_value(outcome)?;
        if let Some(mode) = self.isolation {
            report["isolation"] = mode.name().into();
        }
        let mut v = report.clone();
        v["event"] = "exit".into();
        self.emit(v);
        if let Some(path) = &self.report {
            files::write_no_follow(path, &serde_json::to_vec_pretty(&report)?).map_err(
                |source| SuperviseError::Report {
                    path: path.clone(),
                    source,
                },
            )?;
        }
        Ok(())
    }

    /// Records a run that never started (status [`Self::setup_status`])
    /// and hands the error back.
    fn setup_failed(
        &mut self,
        e: SuperviseError,
        started_at: std::time::Instant,
    ) -> SuperviseError {
        let outcome = Outcome::setup_failed(render(&e), self.setup_status, started_at.elapsed());
        let _ = self.finish(&outcome);
        e
    }
}

/// The status runsbx exits with for `outcome` (128+N when killed by signal
/// N, as runc).
pub fn exit_status(outcome: &Outcome) -> u8 {
    outcome.status.clamp(0, 255) as u8
}
