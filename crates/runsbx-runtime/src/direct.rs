//! `sandbox --no-userns`: the weaker mode for hosts where an ordinary user
//! cannot have a user namespace (docs/rootless.md). No container: runsbx
//! forks, and the child applies the same process layers the container's
//! init applies (see executor.rs) to itself on the host, then execs:
//! fd hygiene, the scrubbed environment and rlimits of the generated
//! config, Landlock, no_new_privs, the seccomp allowlist.
//!
//! What still holds: no sockets at all (seccomp denies socket(); Landlock
//! denies TCP bind/connect too), no writes outside the workdir and no reads
//! outside the runtime paths (Landlock), no exec of anything but the
//! workload, no fork, no ptrace, no signals or abstract unix sockets outside
//! the sandbox (Landlock scopes).
//! What does not: there are no namespaces, so the workload shares the
//! host's pid, ipc, uts and network namespaces and sees the host's
//! filesystem layout (Landlock stops reading file contents, not stat(2) or
//! path walks), and it runs as the caller's own uid. Nothing here is chosen
//! silently: only the explicit flag gets here.

use std::convert::Infallible;
use std::os::fd::{AsRawFd, OwnedFd};

use libcontainer::oci_spec::runtime::Spec;
use libcontainer::syscall::syscall::SyscallType;
use libcontainer::workload::Executor;
use nix::unistd::Pid;
use runsbx_policy::landlock::LandlockDefault;

use crate::error::{Result, RuntimeError};
use crate::executor::SandboxExecutor;
use crate::spec::{Bundle, SandboxPolicy};

fn refuse(m: &str) -> RuntimeError {
    RuntimeError::Direct(m.to_string())
}

/// Whether this process may use the mode at all: not as root, not holding
/// capabilities.
pub fn available() -> Result<()> {
    if !crate::rootless::active() {
        return Err(refuse(
            "root always gets namespaces; this mode is for ordinary users",
        ));
    }
    // Stops: the workload inheriting capabilities (file capabilities or an
    // ambient set on runsbx) that no user namespace would have confined.
    if let Some(caps) = held_capabilities() {
        return Err(refuse(&format!("runsbx holds capabilities ({caps})")));
    }
    Ok(())
}

/// Starts the config's process on the host under Landlock, seccomp and
/// no_new_privs, with `stdio` as its fds 0-2 (else runsbx's own); returns
/// its PID once it has exec'd. Fails closed when the config lacks either
/// layer or runsbx holds capabilities.
pub fn spawn(
    bundle: &Bundle,
    operator: &LandlockDefault,
    stdio: Option<[OwnedFd; 3]>,
) -> Result<Pid> {
    available()?;
    let policy = SandboxPolicy::from_bundle(bundle, operator)?;
    let seccomp = policy.compile_seccomp()?;
    if seccomp.is_none() || policy.landlock.is_empty() {
        return Err(refuse("the config has no seccomp profile or no Landlock policy, which this mode relies on alone"));
    }
    let spec = bundle.spec.clone();
    // child() checks the parent itself (no pid namespace: getppid works),
    // so no parent pidfd.
    let executor = SandboxExecutor {
        die_with_parent: true,
        ..SandboxExecutor::new(seccomp, policy.landlock)
    };
    let parent = nix::unistd::getpid();
    let spawned = crate::sys::spawn::spawn(|| child(parent, &spec, &executor, stdio.as_ref()));
    // The parent's copies go now: a pipe on stdout then ends with the child.
    drop(stdio);
    spawned.map_err(RuntimeError::Init)
}

/// In the forked child: what libcontainer's init does before the Executor
/// (for the parts that apply without namespaces), then the Executor.
fn child(
    parent: Pid,
    spec: &Spec,
    executor: &SandboxExecutor,
    stdio: Option<&[OwnedFd; 3]>,
) -> std::result::Result<Infallible, String> {
    // First: a runsbx killed from here on takes the workload with it (no
    // supervisor means no timeout, no RSS ceiling, no outcome). If it died
    // before this line, the parent is already someone else: stop.
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(|e| format!("PR_SET_PDEATHSIG: {}", e.desc()))?;
    if nix::unistd::getppid() != parent {
        return Err("runsbx exited before the workload started".into());
    }
    let process = spec
        .process()
        .as_ref()
        .ok_or("config.json: process is missing")?;
    for (target, fd) in stdio.into_iter().flatten().enumerate() {
        nix::unistd::dup2(fd.as_raw_fd(), target as i32)
            .map_err(|e| format!("dup2 stdio: {}", e.desc()))?;
    }
    // Its own session: the workload cannot reach runsbx's terminal's
    // foreground job control (TIOCSTI is also denied by seccomp).
    nix::unistd::setsid().map_err(|e| format!("setsid: {}", e.desc()))?;
    let sys = SyscallType::default().create_syscall();
    for r in process.rlimits().iter().flatten() {
        sys.set_rlimit(r)
            .map_err(|e| format!("rlimit {:?}: {e}", r.typ()))?;
    }
    nix::unistd::chdir(process.cwd())
        .map_err(|e| format!("chdir {}: {}", process.cwd().display(), e.desc()))?;
    // The scrubbed environment of the generated config, nothing of runsbx's.
    for (key, _) in std::env::vars_os() {
        std::env::remove_var(key);
    }
    for kv in process.env().iter().flatten() {
        if let Some((k, v)) = kv.split_once('=') {
            std::env::set_var(k, v);
        }
    }
    // Stops: a descriptor runsbx inherited or opened reaching the workload
    // (CVE-2024-21626 is the container form of it): all close on exec.
    sys.close_range(0)
        .map_err(|e| format!("close_range: {e}"))?;
    executor.validate(spec).map_err(|e| e.to_string())?;
    match executor.exec(spec) {
        Ok(()) => Err("exec returned".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// The non-empty capability sets of this process, if any; unknown (an
/// unreadable /proc) counts as held: fail closed.
fn held_capabilities() -> Option<String> {
    let Ok(status) = procfs::process::Process::myself().and_then(|p| p.status()) else {
        return Some("unknown: /proc/self/status is unreadable".into());
    };
    // No CapAmb line (before Linux 4.3): no ambient set.
    let held: Vec<&str> = [
        ("CapInh", status.capinh),
        ("CapPrm", status.capprm),
        ("CapEff", status.capeff),
        ("CapAmb", status.capamb.unwrap_or(0)),
    ]
    .into_iter()
    .filter(|(_, set)| *set != 0)
    .map(|(k, _)| k)
    .collect();
    (!held.is_empty()).then(|| held.join(", "))
}
