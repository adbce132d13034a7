//! The Executor: the last code runsbx runs in the container's init, after
//! libcontainer has done mounts, pivot_root, set_id, the capability drop and
//! marked every inherited fd above the preserved ones close-on-exec.
//!
//! Order, and why:
//! 1. `validate` (before init reports ready, so errors fail `create`):
//!    give stdio to the process's uid, as runc, and drop the CAP_SETPCAP
//!    and CAP_CHOWN init kept for that and its inheritable set (capsets.rs),
//!    resolve the executable inside the container, set the mount flags
//!    libcontainer left off (remount.rs, with the CAP_SYS_ADMIN init kept
//!    for them, dropped right after), and enforce Landlock.
//!    Landlock needs nothing from the rest of init afterwards (init only waits
//!    on the already-open notify socket), and applying it here means a policy
//!    the kernel cannot honour stops `create`, before anything is started.
//! 2. `exec` (after `start`): set no_new_privs before loading a seccomp
//!    filter, unless the process runs without it (nnp.rs: then init kept
//!    CAP_SYS_ADMIN to load the filter, and drops it right after), load the
//!    filter, run the startContainer hooks (under the filter, as runc runs
//!    them; hooks.rs), execve. The filter comes last so it need not allow
//!    any of init's own syscalls; it must allow the execve itself (and
//!    capset when loaded without no_new_privs, and what the hooks need).
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
    /// Mount flags libcontainer left off (remount.rs), set in `validate`.
    pub remounts: Vec<crate::remount::Remount>,
    /// CAP_SYS_ADMIN was kept for `remounts` alone: the sets to drop it
    /// from once they are set.
    pub remount_kept: Option<crate::nnp::Kept>,
    /// What was kept through libcontainer's capability drop (capsets.rs:
    /// CAP_SETPCAP for the inheritable set, CAP_CHOWN for the stdio's
    /// owner): dropped first thing in `validate`.
    pub caps_kept: crate::capsets::Applied,
    /// The container's startContainer hooks, run in `exec` right before
    /// the workload's execve (init containers only).
    pub start_hooks: Option<crate::hooks::StartHooks>,
    /// Give the process every CPU its cpuset allows (`reset_cpu_affinity`).
    pub reset_affinity: bool,
    /// The spec mounts a procfs on /proc: check in init that /proc is still
    /// that procfs's root once every mount is made (`check_proc_root`).
    pub proc_root: bool,
    /// What init inherited from the create and must not hold while it
    /// waits for `start` (`sys::fds::not_for_init`: the caller's leftovers,
    /// the create lock), closed at the end of `validate`.
    pub not_for_init: Vec<crate::sys::fds::NotForInit>,
    /// `cgroup.procs` files (descriptors runsbx opened on the host, close
    /// on exec) an exec'd process writes itself into first thing in
    /// `validate`: the sub-cgroups `exec --cgroup CONTROLLER:PATH` names
    /// and a hybrid host's unified and systemd hierarchies, which
    /// libcontainer does not join (cgroup.rs).
    pub join_cgroups: Vec<RawFd>,
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
        // Before anything of the workload's can run: "0" is the writer.
        for &fd in &self.join_cgroups {
            let joined = nix::unistd::write(crate::sys::fds::borrow(fd), b"0");
            let _ = nix::unistd::close(fd);
            joined.map_err(|e| {
                ExecutorValidationError::ArgValidationError(format!("join a cgroup: {e}"))
            })?;
        }
        // As runc: the pty made for a terminal process owned by its uid
        // (usable by a non-root user), with the CAP_CHOWN kept for it when
        // the spec gives none. Not the caller's stdio (capsets.rs).
        let terminal = spec
            .process()
            .as_ref()
            .filter(|p| p.terminal() == Some(true));
        if let Some(uid) = terminal.map(|p| p.user().uid()) {
            crate::capsets::fix_stdio_owner(uid)
                .map_err(ExecutorValidationError::ArgValidationError)?;
            // As runc, which clears it as it makes the pty: `\n` reaches the
            // caller as written. Here, in the process, because `exec -t`'s
            // master reaches runsbx's relay (which clears it too) only as
            // the process starts: what it wrote first would get `\r\n`.
            let stdin = crate::sys::fds::borrow(0);
            if nix::unistd::isatty(0).unwrap_or(false) {
                let _ = crate::console::clear_onlcr(stdin);
                // `process.consoleSize`, which libcontainer 0.7 never
                // applies (runc sets it as it makes the pty); here, before
                // the workload can read it.
                if let Some(size) = terminal.and_then(|p| p.console_size()) {
                    let ws = crate::sys::tty::WindowSize {
                        ws_row: size.height().min(u16::MAX.into()) as u16,
                        ws_col: size.width().min(u16::MAX.into()) as u16,
                        ws_xpixel: 0,
                        ws_ypixel: 0,
                    };
                    let _ = crate::sys::tty::set_window_size(stdin, &ws);
                }
            }
        }
        // Stops: init holding a CAP_SETPCAP or CAP_CHOWN the spec did not
        // give (it could add any bounding capability to its inheritable
        // set, or take any file) past libcontainer's capability drop; first,
        // before anything else of runsbx's.
        self.caps_kept
            .give_back()
            .map_err(ExecutorValidationError::ArgValidationError)?;
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
        if self.reset_affinity {
            reset_cpu_affinity().map_err(|e| {
                ExecutorValidationError::ArgValidationError(format!("sched_setaffinity: {e}"))
            })?;
        }
        if self.proc_root {
            check_proc_root(Path::new("/proc"))
                .map_err(ExecutorValidationError::ArgValidationError)?;
        }
        // Before Landlock, which forbids changing mounts, and before the
        // workload exists.
        crate::remount::apply(&self.remounts)
            .map_err(ExecutorValidationError::ArgValidationError)?;
        if let Some(kept) = self.remount_kept {
            kept.give_back().map_err(|e| {
                ExecutorValidationError::ArgValidationError(format!(
                    "capabilities: dropping the CAP_SYS_ADMIN kept to set mount flags: {e}"
                ))
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
        // Last, before init reports ready and waits for `start`: runc's
        // init holds stdio and its channels then, nothing of its caller's
        // (runc's suite lists /proc/<init>/fd of a created container).
        // libcontainer has made these close-on-exec, so the workload never
        // gets them; a created init held them until `start`. The create
        // lock goes too: it is the create's, and a delete finds this init
        // by state.json from here on (or by its cgroup, or it dies with a
        // foreground runsbx: PR_SET_PDEATHSIG above). Kept: the report
        // channel, close-on-exec, until exec (report.rs: its close at exec
        // tells `start` the workload runs).
        crate::sys::fds::close_not_for_init(&self.not_for_init);
        if let Some(fd) = self.parent_pidfd {
            let _ = nix::unistd::close(fd);
        }
        // A created init ends on `kill ID TERM` (and INT, HUP, ...) as
        // runc's does; the workload gets the default actions back at exec.
        if self.report_fd.is_some() {
            crate::sys::signal::end_on_terminating_signals().map_err(|e| {
                ExecutorValidationError::ArgValidationError(format!("signal handlers: {e}"))
            })?;
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
        let err = self.seal(&mut Kernel, &cpath, &cargs)?;
        Err(format!("exec {}: {err}", path.display()))
    }

    /// The last steps before the workload, in their order: no_new_privs
    /// (unless CAP_SYS_ADMIN was kept instead), the seccomp filter, the
    /// kept capability given back, exec. Returns exec's error; an earlier
    /// step's failure stops here, before the workload runs.
    fn seal<S: Steps>(
        &self,
        steps: &mut S,
        path: &CString,
        args: &[CString],
    ) -> Result<String, String> {
        if let Some(program) = &self.seccomp {
            // seccomp(2) needs no_new_privs or CAP_SYS_ADMIN. Without
            // `without_nnp` (a process that asks for no_new_privs, or
            // Landlock) runsbx sets it here; with it, init kept
            // CAP_SYS_ADMIN through libcontainer's capability drop for this
            // one call (nnp.rs), so setuid programs inside work as under runc.
            if self.without_nnp.is_none() {
                steps
                    .no_new_privs()
                    .map_err(|e| format!("seccomp: setting no_new_privs: {e}"))?;
            }
            let mut program = std::borrow::Cow::Borrowed(program);
            if self.log_denials {
                // Every non-allow answer goes to audit, with pid and syscall.
                program.to_mut().flags |= libc::SECCOMP_FILTER_FLAG_LOG as u32;
            }
            steps
                .load_filter(&program)
                .map_err(|e| format!("seccomp: loading the filter: {e}"))?;
        }
        // Outside the seccomp branch: whatever kept CAP_SYS_ADMIN, it never
        // reaches the workload's execve (nnp.rs says why it could not
        // survive it anyway).
        if let Some(kept) = &self.without_nnp {
            steps.give_back(kept).map_err(|e| {
                format!(
                    "seccomp: dropping the CAP_SYS_ADMIN kept to load the filter without \
                     no_new_privs: {e} (the profile must allow capset, as under runc)"
                )
            })?;
        }
        if let Some(hooks) = &self.start_hooks {
            steps.start_hooks(hooks)?;
        }
        Ok(steps.exec(path, args))
    }
}

/// What `seal` does to the process, one method a step: the kernel's in
/// init, a recording double in the unit tests (the order is what they
/// check; no root needed).
trait Steps {
    fn no_new_privs(&mut self) -> Result<(), String>;
    fn load_filter(&mut self, program: &SeccompProgram) -> Result<(), String>;
    fn give_back(&mut self, kept: &crate::nnp::Kept) -> Result<(), String>;
    fn start_hooks(&mut self, hooks: &crate::hooks::StartHooks) -> Result<(), String>;
    /// Returns only when exec failed, with why.
    fn exec(&mut self, path: &CString, args: &[CString]) -> String;
}

struct Kernel;

impl Steps for Kernel {
    fn no_new_privs(&mut self) -> Result<(), String> {
        nix::sys::prctl::set_no_new_privs().map_err(|e| e.to_string())
    }
    fn load_filter(&mut self, program: &SeccompProgram) -> Result<(), String> {
        crate::sys::seccomp::load(program).map_err(|e| e.to_string())
    }
    fn give_back(&mut self, kept: &crate::nnp::Kept) -> Result<(), String> {
        (*kept).give_back().map_err(|e| e.to_string())
    }
    fn start_hooks(&mut self, hooks: &crate::hooks::StartHooks) -> Result<(), String> {
        hooks.run()
    }
    fn exec(&mut self, path: &CString, args: &[CString]) -> String {
        // The Rust runtime ignores SIGPIPE in runsbx, and an ignored signal
        // stays ignored across exec: the workload gets the default, as
        // under runc (a pipeline's writer ends instead of seeing EPIPE).
        crate::sys::fds::default_sigpipe();
        nix::unistd::execv(path, args)
            .unwrap_err()
            .desc()
            .to_string()
    }
}

/// Fails unless `proc` is the root of a procfs: the one the spec mounted,
/// not a volume, a bind of something else or a file over it.
///
/// Stops: a fake /proc that a mount slipped in after the bundle gate's
/// check (`spec/proc_mounts.rs`) by racing it: a symlink in a rootfs shared
/// with another container swapped while `create` ran (CVE-2019-19921,
/// CVE-2019-16884). Runs in init after every mount libcontainer makes and
/// before the workload exists, so a race lost here stops the create. Not
/// covered: a bind of another procfs's root (its inode is 1 too); the gate
/// refuses such a mount by its destination.
fn check_proc_root(proc: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let fs = nix::sys::statfs::statfs(proc)
        .map_err(|e| format!("/proc: statfs: {e}"))?
        .filesystem_type();
    let ino = std::fs::symlink_metadata(proc)
        .map_err(|e| format!("/proc: {e}"))?
        .ino();
    match fs == nix::sys::statfs::PROC_SUPER_MAGIC && ino == 1 {
        true => Ok(()),
        false => Err(format!(
            "/proc is not the procfs the spec mounted (filesystem {fs:?}, inode {ino}): \
             a mount covered it (CVE-2019-16884); not starting"
        )),
    }
}

/// Every CPU, as runc 1.2 starts a container's processes: the kernel keeps
/// the ones the container's cpuset allows. Without it the workload (init
/// and every exec'd process) would inherit the affinity of whoever ran
/// runsbx (`taskset -c 0 runsbx run ...`: one CPU however many the cgroup
/// gives).
fn reset_cpu_affinity() -> nix::Result<()> {
    let mut all = nix::sched::CpuSet::new();
    for cpu in 0..nix::sched::CpuSet::count() {
        all.set(cpu)?;
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &all)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Records each step; `fail` names the step that fails.
    #[derive(Default)]
    struct Recorder {
        steps: Vec<String>,
        fail: Option<&'static str>,
    }

    impl Recorder {
        fn step(&mut self, name: &str) -> Result<(), String> {
            self.steps.push(name.to_string());
            match self.fail {
                Some(f) if f == name => Err("refused".into()),
                _ => Ok(()),
            }
        }
    }

    impl Steps for Recorder {
        fn no_new_privs(&mut self) -> Result<(), String> {
            self.step("no_new_privs")
        }
        fn load_filter(&mut self, program: &SeccompProgram) -> Result<(), String> {
            let logged = program.flags & libc::SECCOMP_FILTER_FLAG_LOG as u32 != 0;
            self.step(if logged {
                "load_filter(log)"
            } else {
                "load_filter"
            })
        }
        fn give_back(&mut self, _: &crate::nnp::Kept) -> Result<(), String> {
            self.step("give_back")
        }
        fn start_hooks(&mut self, _: &crate::hooks::StartHooks) -> Result<(), String> {
            self.step("start_hooks")
        }
        fn exec(&mut self, _: &CString, _: &[CString]) -> String {
            self.steps.push("exec".into());
            "no such file".into()
        }
    }

    fn seal(
        exec: &SandboxExecutor,
        fail: Option<&'static str>,
    ) -> (Vec<String>, Result<String, String>) {
        let mut r = Recorder {
            fail,
            ..Default::default()
        };
        let path = CString::new("/bin/true").unwrap();
        let result = exec.seal(&mut r, &path, std::slice::from_ref(&path));
        (r.steps, result)
    }

    fn filter() -> Option<SeccompProgram> {
        Some(SeccompProgram {
            filters: Vec::new(),
            flags: 0,
            unknown_syscalls: Vec::new(),
        })
    }

    #[test]
    fn no_new_privs_then_the_filter_then_exec() {
        let e = SandboxExecutor::new(filter(), vec![]);
        assert_eq!(
            seal(&e, None),
            (
                vec!["no_new_privs".into(), "load_filter".into(), "exec".into()],
                Ok("no such file".into())
            )
        );
        let logged = SandboxExecutor {
            log_denials: true,
            ..SandboxExecutor::new(filter(), vec![])
        };
        assert_eq!(
            seal(&logged, None).0,
            ["no_new_privs", "load_filter(log)", "exec"]
        );
        // No filter: nothing before exec.
        assert_eq!(seal(&SandboxExecutor::default(), None).0, ["exec"]);
    }

    #[test]
    fn a_kept_cap_sys_admin_replaces_no_new_privs_and_is_given_back_before_exec() {
        let kept = crate::nnp::Kept {
            effective: true,
            permitted: true,
        };
        let e = SandboxExecutor {
            without_nnp: Some(kept),
            ..SandboxExecutor::new(filter(), vec![])
        };
        assert_eq!(seal(&e, None).0, ["load_filter", "give_back", "exec"]);
        // Kept without a filter to load: still given back.
        let e = SandboxExecutor {
            without_nnp: Some(kept),
            ..SandboxExecutor::default()
        };
        assert_eq!(seal(&e, None).0, ["give_back", "exec"]);
    }

    /// Stops: a workload that runs without a layer because setting it up
    /// failed. Each failure ends the sequence before exec, naming the step.
    #[test]
    fn a_failed_step_stops_before_exec() {
        let e = SandboxExecutor::new(filter(), vec![]);
        let (steps, r) = seal(&e, Some("no_new_privs"));
        assert_eq!(steps, ["no_new_privs"]);
        assert_eq!(r.unwrap_err(), "seccomp: setting no_new_privs: refused");
        let (steps, r) = seal(&e, Some("load_filter"));
        assert_eq!(steps, ["no_new_privs", "load_filter"]);
        assert_eq!(r.unwrap_err(), "seccomp: loading the filter: refused");
        let kept = SandboxExecutor {
            without_nnp: Some(crate::nnp::Kept::default()),
            ..SandboxExecutor::new(filter(), vec![])
        };
        let (steps, r) = seal(&kept, Some("give_back"));
        assert_eq!(steps, ["load_filter", "give_back"]);
        assert!(r
            .unwrap_err()
            .starts_with("seccomp: dropping the CAP_SYS_ADMIN kept"));
    }

    /// runc's order: the startContainer hooks under the filter, right
    /// before exec; one that fails stops the container there.
    #[test]
    fn start_container_hooks_run_under_the_filter_right_before_exec() {
        let spec: Spec = serde_json::from_value(serde_json::json!({
            "ociVersion": "1.0.2",
            "hooks": { "startContainer": [{ "path": "/bin/true" }] }
        }))
        .unwrap();
        let e = SandboxExecutor {
            start_hooks: crate::hooks::StartHooks::of(&spec, "x", Path::new("/b")),
            ..SandboxExecutor::new(filter(), vec![])
        };
        assert_eq!(
            seal(&e, None).0,
            ["no_new_privs", "load_filter", "start_hooks", "exec"]
        );
        let (steps, r) = seal(&e, Some("start_hooks"));
        assert_eq!(steps, ["no_new_privs", "load_filter", "start_hooks"]);
        assert_eq!(r.unwrap_err(), "refused");
    }

    #[test]
    fn only_a_procfs_root_passes_for_proc() {
        assert!(check_proc_root(Path::new("/proc")).is_ok());
        let err = check_proc_root(Path::new("/proc/self")).unwrap_err();
        assert!(err.contains("not the procfs"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let err = check_proc_root(dir.path()).unwrap_err();
        assert!(err.contains("CVE-2019-16884"), "{err}");
    }
}
