//! runsbx's sandbox as one call: a [`Sandbox`] (the command, its workdir and
//! read-only paths, the isolation, limits) in, a supervised run, a typed
//! [`Outcome`] out. `runsbx sandbox`, `selftest` and `--jupyter` are front
//! ends of it; so is any program that links it.
//!
//! - `stage.rs`: discovery and generation (runsbx-bundle) with the default
//!   policies (runsbx-policy) into a config, and that config materialized as
//!   a bundle in a private directory removed with it.
//! - `selftest.rs`: the static escape probe run in a sandbox and judged.
//!
//! The run itself (create, the posture check, start, watch, report, delete;
//! or the namespace-less run of the landlock mode) is runsbx-runtime's
//! `supervise`. A caller that runs containers must run from a sealed copy of
//! its binary, as the `runsbx` binary re-executes itself (CVE-2019-5736:
//! runsbx_runtime::reexec_sealed).
//!
//! Generating a sandbox's config, without running it (`runsbx gen`):
//!
//! ```
//! use runsbx_sandbox::{prepare, SandboxRequest};
//!
//! let req = SandboxRequest {
//!     command: vec!["/bin/true".into()],
//!     ..Default::default()
//! };
//! let prepared = prepare(&req, None).unwrap();
//! // CMD resolved to its real path: /usr/bin/true where /bin is a link.
//! let exe = &prepared.config.args()[0];
//! assert_eq!(std::path::Path::new(exe), std::fs::canonicalize("/bin/true").unwrap());
//! // The private workdir the config names is removed when `prepared` goes.
//! let workdir = prepared.config.cwd().to_path_buf();
//! assert!(workdir.is_dir());
//! drop(prepared);
//! assert!(!workdir.exists());
//! ```
//!
//! Running one (as root, or as a user with user namespaces; from a sealed
//! binary):
//!
//! ```no_run
//! use runsbx_runtime::isolation::{self, Pin};
//! use runsbx_runtime::supervise::Supervision;
//! use runsbx_sandbox::{run, Sandbox, SandboxRequest};
//!
//! let rt = runsbx_runtime::Runtime::new("/run/runsbx".into(), false, Default::default());
//! let mode = isolation::choose(Pin::Auto).unwrap().mode;
//! let sandbox = Sandbox::new(
//!     SandboxRequest {
//!         command: vec!["python3".into(), "-c".into(), "print(6*7)".into()],
//!         ..Default::default()
//!     },
//!     mode,
//! );
//! let outcome = run(&rt, sandbox, Supervision::default()).unwrap();
//! assert_eq!(outcome.status, 0);
//! ```

#![forbid(unsafe_code)]

mod error;
pub mod selftest;
pub mod stage;

use std::path::{Path, PathBuf};

use nix::sys::signal::Signal;
use runsbx_policy::profile::Profile;
use runsbx_runtime::guard::Outcome;
use runsbx_runtime::isolation::Mode;
use runsbx_runtime::jupyter::{self, connection::Connection};
use runsbx_runtime::supervise::{self, Direct, Supervision};
use runsbx_runtime::{CreateOptions, Runtime};

pub use error::{Result, SandboxError};
pub use runsbx_bundle::SandboxRequest;
pub use stage::{prepare, Prepared};

/// One sandboxed run: what to run ([`SandboxRequest`]) and how.
pub struct Sandbox {
    pub request: SandboxRequest,
    /// As runsbx_runtime::isolation chose it; the landlock mode refuses the
    /// options below that need a container (`memory`, `pids_limit`,
    /// `jupyter`, `id`, `self_test`).
    pub isolation: Mode,
    /// A cgroup memory limit (`--memory`, a size: `64M`).
    pub memory: Option<String>,
    /// A cgroup pids limit (`--pids-limit`).
    pub pids_limit: Option<i64>,
    /// A Jupyter client's connection file: the command is a kernel, served
    /// on the client's endpoints (`--jupyter`).
    pub jupyter: Option<PathBuf>,
    /// The container's id; default `sandbox-<runsbx's pid>`.
    pub id: Option<String>,
    /// Where the workload's host PID is written.
    pub pid_file: Option<PathBuf>,
    /// Run the escape probe under the same policy first, and refuse if any
    /// escape is not blocked (`--self-test`).
    pub self_test: bool,
    /// Check from the host, after create and after start, that the workload
    /// looks like a sandbox (on unless `--no-posture-check`).
    pub posture_check: bool,
    /// `--allow-net`: serve the workload an HTTP proxy with this policy
    /// (runsbx_runtime::egress); sets `request.proxy`.
    pub egress: Option<runsbx_runtime::egress::Proxy>,
}

impl Sandbox {
    /// `request` with no limits, the posture check on.
    pub fn new(request: SandboxRequest, isolation: Mode) -> Self {
        Self {
            request,
            isolation,
            memory: None,
            pids_limit: None,
            jupyter: None,
            id: None,
            pid_file: None,
            self_test: false,
            posture_check: true,
            egress: None,
        }
    }

    /// The first option set, here or in `sup`, that only the container
    /// honours (a cgroup, its id, audit of its namespaces, the kernel's own
    /// network namespace), by its flag.
    pub fn needs_namespaces(&self, sup: &Supervision) -> Option<&'static str> {
        [
            ("--memory", self.memory.is_some()),
            ("--pids-limit", self.pids_limit.is_some()),
            ("--self-test", self.self_test),
            ("--id", self.id.is_some()),
            ("--report-denials", sup.report_denials),
            ("--jupyter", self.jupyter.is_some()),
            ("--allow-net", self.egress.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, set)| set.then_some(flag))
    }
}

/// Runs `sandbox` in the foreground under `sup` (limits, status fd, report,
/// denials: the caller's), with a sandbox's supervision added: status 125
/// when the workload never ran, SIGTERM and SIGHUP kill it, the isolation
/// in the start event and the report, the posture check. The private
/// workdir and the bundle are removed before it returns.
pub fn run(rt: &Runtime, sandbox: Sandbox, mut sup: Supervision) -> Result<Outcome> {
    // Stops: the bundle and the private workdir left behind when the
    // caller's SIGTERM (a supervisor, the Python and Node packages' close)
    // lands after the workload ended, while they are being removed: the
    // signal waits until they are gone, then takes effect.
    let mask = nix::sys::signal::SigSet::thread_get_mask();
    // Held only when the mask can be put back.
    sup.hold_signals = mask.is_ok();
    let outcome = run_held(rt, sandbox, sup);
    if let Ok(mask) = mask {
        let _ = mask.thread_set_mask();
    }
    outcome
}

/// [`run`], with the signals left blocked after the workload (`hold_signals`).
fn run_held(rt: &Runtime, sandbox: Sandbox, mut sup: Supervision) -> Result<Outcome> {
    sup.isolation = Some(sandbox.isolation);
    sup.setup_status = 125;
    sup.ro_hint = true;
    sup.kill_on = vec![Signal::SIGTERM, Signal::SIGHUP];
    if sandbox.posture_check {
        sup.posture = Some(supervise::sandbox_posture());
    }
    if sandbox.isolation == Mode::Landlock {
        if let Some(flag) = sandbox.needs_namespaces(&sup) {
            return Err(SandboxError::Message(format!(
                "{flag} needs the namespaces mode, and this run uses --isolation landlock"
            )));
        }
    }
    let mut req = sandbox.request;
    if req.profile == Profile::ForkServer && sandbox.isolation == Mode::Landlock {
        // Its sessions rely on the pid namespace: without one they would
        // see, and be seen by, every process of the host.
        return Err(SandboxError::Message(
            "--profile fork-server needs the namespaces mode, and this run uses --isolation landlock"
                .into(),
        ));
    }
    req.state_root = Some(rt.root.clone());
    if sandbox.jupyter.is_some() && sandbox.egress.is_some() {
        return Err(SandboxError::Message(
            "--allow-net and --jupyter cannot be combined".into(),
        ));
    }
    req.proxy = sandbox.egress.is_some();
    // The proxy listens on the container's loopback: it must be up.
    let loopback_down = sandbox.egress.is_none();
    sup.egress = sandbox.egress;
    let cache = rt.root.join(".discovery");
    if sandbox.isolation == Mode::Landlock {
        let Prepared {
            config, workdir, ..
        } = prepare(&req, Some(&cache))?;
        let (spec, landlock) = config.into_parts();
        let run = Direct {
            spec,
            landlock,
            pid_file: sandbox.pid_file,
        };
        let outcome = supervise::direct(rt, run, sup)?;
        drop(workdir);
        return Ok(outcome);
    }

    if sandbox.self_test {
        let profile = match sandbox.jupyter {
            Some(_) => Profile::Jupyter,
            None => req.profile,
        };
        selftest::check(rt, None, None, profile, req.proxy)
            .and_then(selftest::Verdict::passed)
            .map_err(|e| e.flag("--self-test"))?;
    }
    let connection = match &sandbox.jupyter {
        Some(file) => {
            req.profile = Profile::Jupyter;
            req.command
                .extend(["-f".into(), jupyter::KERNEL_FILE.into()]);
            Some(Connection::read(file).map_err(|e| SandboxError::from(e).flag("--jupyter"))?)
        }
        None => None,
    };
    let Prepared {
        mut config,
        workdir,
        discovery,
    } = prepare(&req, Some(&cache))?;
    // Before anything is staged: materialize makes the bundle under TMPDIR.
    if let Some(w) = &req.workdir {
        supervise::check_workdir_holds_no_bundle(w)?;
    }
    stage::add_resources(&mut config, sandbox.memory.as_deref(), sandbox.pids_limit)?;
    sup.relay = match &connection {
        Some(c) => {
            let dir = config.cwd();
            let system = |p: &Path| {
                runsbx_bundle::discover::SYSTEM_DIRS
                    .iter()
                    .chain(&["/etc", "/dev", "/proc"])
                    .any(|d| p.starts_with(d))
            };
            let ro: Vec<_> = (discovery.ro_paths.iter().chain(&req.ro))
                .filter(|p| !system(p))
                .cloned()
                .collect();
            Some(jupyter::stage(c, dir, &ro).map_err(|e| SandboxError::from(e).flag("--jupyter"))?)
        }
        None => None,
    };
    let bundle = stage::materialize(config)?;
    let opts = CreateOptions {
        id: sandbox
            .id
            .unwrap_or_else(|| format!("sandbox-{}", std::process::id())),
        bundle: bundle.dir.0.clone(),
        pid_file: sandbox.pid_file,
        loopback_down,
        keep_affinity: true,
        ..Default::default()
    };
    let outcome = supervise::foreground(rt, opts, None, false, sup)?;
    drop(workdir);
    drop(bundle);
    Ok(outcome)
}
