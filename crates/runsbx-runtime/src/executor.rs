//! The Executor: the last code runsbx runs in the container's init, after
//! libcontainer has done mounts, pivot_root, set_id, the capability drop and
//! marked every inherited fd above the preserved ones close-on-exec.
//!
//! Order, and why:
//! 1. `validate` (before init reports ready, so errors fail `create`):
//!    resolve the executable inside the container, and enforce Landlock.
//!    Landlock needs nothing from the rest of init afterwards (init only waits
//!    on the already-open notify socket), and applying it here means a policy
//!    the kernel cannot honour stops `create`, before anything is started.
//! 2. `exec` (after `start`): set no_new_privs before loading a seccomp
//!    filter, unless the process runs without it (nnp.rs: then init kept
//!    CAP_SYS_ADMIN to load the filter, and drops it right after), load the
//!    filter, execve. The filter comes last so it need not allow any of
//!    init's own syscalls; it must allow the execve itself (and capset when
//!    loaded without no_new_privs).
//!
//! An error in `exec` is written to the report channel (see `report.rs`)
//! before init exits, so `start`/`run` print it instead of "exit 255".

use std::convert::Infallible;
use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use libcontainer::oci_spec::runtime::Spec;
use libcontainer::workload::{Executor, ExecutorError, ExecutorValidationError};
use runsbx_policy::landlock::LandlockPolicy;
use runsbx_policy::seccomp::SeccompProgram;

use crate::report;

#[derive(Clone, Default)]
pub struct SandboxExecutor {
    pub seccomp: Option<SeccompProgram>,
    /// Landlock layers, enforced in order (operator default, then bundle).
    pub landlock: Vec<LandlockPolicy>,
    /// Write end of the report FIFO (init containers only; libcontainer has
    /// its own channel for exec'd processes).
    pub report_fd: Option<RawFd>,
    /// Set PR_SET_PDEATHSIG(SIGKILL) in init; it survives the exec.
    pub die_with_parent: bool,
    /// A pidfd of init's parent, the runsbx that creates it
    /// (`sys::pidfd::open_self`), inherited across libcontainer's forks:
    /// with `die_with_parent`, init stops if that runsbx is already gone.
    pub parent_pidfd: Option<RawFd>,
    /// `--report-denials`: seccomp and Landlock log what they refuse to
    /// audit, where `crate::denials` reads it back.
    pub log_denials: bool,
    /// The executable `validate` resolved, reused by `exec` (both run in
    /// the same init process): one PATH walk per start, not two.
    pub resolved: std::sync::OnceLock<(PathBuf, Vec<String>)>,
    /// Rootless: make init dumpable again (see `validate`).
    pub dumpable: bool,
    /// Load the seccomp filter without no_new_privs, with the CAP_SYS_ADMIN
    /// init was left (see nnp.rs), then drop it from these sets.
    pub without_nnp: Option<crate::nnp::Kept>,
}

impl SandboxExecutor {
    /// An executor that applies `seccomp` and `landlock` and nothing else:
    /// no report channel, no parent check, not dumpable. Init and direct
    /// runs set their extra fields with struct update syntax.
    pub fn new(seccomp: Option<SeccompProgram>, landlock: Vec<LandlockPolicy>) -> Self {
        Self {
            seccomp,
            landlock,
            ..Self::default()
        }
    }
}

impl Executor for SandboxExecutor {
    fn validate(&self, spec: &Spec) -> Result<(), ExecutorValidationError> {
        let (path, args) = resolve(spec).map_err(ExecutorValidationError::ArgValidationError)?;
        check_executable(&path).map_err(ExecutorValidationError::ArgValidationError)?;
        let _ = self.resolved.set((path, args));
        if self.die_with_parent {
            // init is a child of the runsbx process (CLONE_PARENT); when
            // that process dies, the kernel kills the workload. A runsbx
            // killed before this line is no longer init's parent: stop
            // rather than wait for a start that never comes. Without a
            // cgroup (`needs_no_cgroup`) nothing else would find that init.
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(|e| {
                ExecutorValidationError::ArgValidationError(format!("PR_SET_PDEATHSIG: {e}"))
            })?;
            // Not getppid(): in its own pid namespace init sees 0 for a
            // parent outside it, alive or not.
            let gone = self
                .parent_pidfd
                .map(|fd| !matches!(crate::sys::pidfd::exited(fd), Ok(false)));
            if gone == Some(true) {
                return Err(ExecutorValidationError::ArgValidationError(
                    "runsbx exited during create".into(),
                ));
            }
        }
        if self.dumpable {
            // Rootless: entering the user namespace made init non-dumpable,
            // and its memory belongs to the host's namespace, where the
            // caller has no CAP_SYS_PTRACE: runsbx could not read the
            // /proc/<pid>/ns and fd entries its posture check needs. Only
            // processes of the caller's own uid gain access, which already
            // own every namespace of this container; execve resets it.
            nix::sys::prctl::set_dumpable(true).map_err(|e| {
                ExecutorValidationError::ArgValidationError(format!("PR_SET_DUMPABLE: {e}"))
            })?;
        }
        crate::sys::fds::fix_dev_null_stdio().map_err(|e| {
            ExecutorValidationError::ArgValidationError(format!("reopen /dev/null for stdio: {e}"))
        })?;
        for policy in &self.landlock {
            let outcome = crate::landlock::enforce_logging(policy, self.log_denials)
                .map_err(|e| ExecutorValidationError::ArgValidationError(e.to_string()))?;
            // Only with enableBestEffort can rights be dropped; say which.
            if !outcome.dropped.is_empty() {
                let names: Vec<String> = outcome
                    .dropped
                    .iter()
                    .map(|(right, abi)| format!("{right} (needs ABI {abi})"))
                    .collect();
                tracing::warn!(
                    "landlock: best effort: kernel ABI {} cannot restrict {}; running without them",
                    outcome.kernel_abi.unwrap_or(0),
                    names.join(", ")
                );
            }
        }
        Ok(())
    }

    fn exec(&self, spec: &Spec) -> Result<(), ExecutorError> {
        let Err(msg) = self.seal_and_exec(spec);
        if let Some(fd) = self.report_fd {
            report::send(fd, &msg);
        }
        Err(ExecutorError::Other(msg))
    }
}

impl SandboxExecutor {
    fn seal_and_exec(&self, spec: &Spec) -> Result<Infallible, String> {
        let (path, args) = match self.resolved.get() {
            Some(r) => r.clone(),
            None => resolve(spec)?,
        };
        let cpath = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| format!("exec {}: path contains a NUL byte", path.display()))?;
        let cargs = args
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| "exec: process.args contains a NUL byte".to_string())?;

        if let Some(program) = &self.seccomp {
            // seccomp(2) needs no_new_privs or CAP_SYS_ADMIN. Without
            // `without_nnp` (a process that asks for no_new_privs, or
            // Landlock) runsbx sets it here; with it, init kept
            // CAP_SYS_ADMIN through libcontainer's capability drop for this
            // one call (nnp.rs), so setuid programs inside work as under runc.
            if self.without_nnp.is_none() {
                nix::sys::prctl::set_no_new_privs()
                    .map_err(|e| format!("seccomp: setting no_new_privs: {e}"))?;
            }
            let mut program = std::borrow::Cow::Borrowed(program);
            if self.log_denials {
                // Every non-allow answer goes to audit, with pid and syscall.
                program.to_mut().flags |= libc::SECCOMP_FILTER_FLAG_LOG as u32;
            }
            crate::sys::seccomp::load(&program)
                .map_err(|e| format!("seccomp: loading the filter: {e}"))?;
        }
        // Outside the seccomp branch: whatever kept CAP_SYS_ADMIN, it never
        // reaches the workload's execve (nnp.rs says why it could not
        // survive it anyway).
        if let Some(kept) = self.without_nnp {
            kept.give_back().map_err(|e| {
                format!(
                    "seccomp: dropping the CAP_SYS_ADMIN kept to load the filter without \
                     no_new_privs: {e} (the profile must allow capset, as under runc)"
                )
            })?;
        }
        let err = nix::unistd::execv(&cpath, &cargs).unwrap_err();
        Err(format!("exec {}: {}", path.display(), err.desc()))
    }
}

/// The container's PATH: from process.env, else execvp's default. `check`
/// resolves the executable with the same one.
pub(crate) fn path_var(process: &libcontainer::oci_spec::runtime::Process) -> &str {
    process
        .env()
        .iter()
        .flatten()
        .find_map(|e| e.strip_prefix("PATH="))
        .unwrap_or("/usr/local/bin:/usr/bin:/bin")
}

/// process.args[0] resolved the way execvp would, with the container's PATH.
fn resolve(spec: &Spec) -> Result<(PathBuf, Vec<String>), String> {
    let process = spec
        .process()
        .as_ref()
        .ok_or("config.json: process is missing")?;
    let args = process
        .args()
        .clone()
        .filter(|a| !a.is_empty())
        .ok_or("config.json: process.args is empty")?;
    let name = &args[0];
    if name.contains('/') {
        return Ok((PathBuf::from(name), args));
    }
    for dir in path_var(process).split(':').filter(|d| !d.is_empty()) {
        let candidate = Path::new(dir).join(name);
        if candidate.is_file() {
            return Ok((candidate, args));
        }
    }
    Err(format!(
        "exec: {name:?}: executable file not found in $PATH"
    ))
}

fn check_executable(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("exec {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("exec {}: not a regular file", path.display()));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(format!(
            "exec {}: permission denied (no execute bit)",
            path.display()
        ));
    }
    Ok(())
}
