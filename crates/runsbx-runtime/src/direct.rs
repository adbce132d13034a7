//! `sandbox --isolation landlock` (alias `--no-userns`): the mode for hosts
//! where runsbx cannot have its namespaces (docs/where.md). No container: runsbx
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
//! path walks), and it runs as the caller's own uid (root: the config's
//! unprivileged uid, see `leave_root`). Nothing here is chosen silently:
//! the flag pins it, or crate::isolation chooses it and says so.

use std::convert::Infallible;
use std::os::fd::{AsRawFd, OwnedFd};

use libcontainer::oci_spec::runtime::Spec;
use libcontainer::syscall::syscall::SyscallType;
use libcontainer::workload::Executor;
use nix::unistd::Pid;
use runsbx_policy::landlock::{LandlockDefault, LandlockPolicy};

use crate::error::{Result, RuntimeError};
use crate::executor::SandboxExecutor;
use crate::spec::SandboxPolicy;

fn refuse(m: &str) -> RuntimeError {
    RuntimeError::Direct(m.to_string())
}

/// Whether this process may use the mode at all: root (which the child
/// leaves for the config's unprivileged uid, see [`leave_root`]), or an
/// ordinary user holding no capabilities.
pub fn available() -> Result<()> {
    if !crate::rootless::active() {
        return Ok(());
    }
    // Stops: the workload inheriting capabilities (file capabilities or an
    // ambient set on runsbx) that no user namespace would have confined.
    if let Some(caps) = held_capabilities(false) {
        return Err(refuse(&format!("runsbx holds capabilities ({caps})")));
    }
    Ok(())
}

/// Starts the config's process on the host under Landlock, seccomp and
/// no_new_privs, with `stdio` as its fds 0-2 (else runsbx's own); returns
/// its PID once it has exec'd. Fails closed when the config lacks either
/// layer or runsbx holds capabilities.
pub fn spawn(
    spec: &Spec,
    landlock: Option<LandlockPolicy>,
    operator: &LandlockDefault,
    stdio: Option<[OwnedFd; 3]>,
) -> Result<Pid> {
    available()?;
    let policy = SandboxPolicy::new(spec, landlock, operator)?;
    let seccomp = policy.compile_seccomp()?;
    if seccomp.is_none() || policy.landlock.is_empty() {
        return Err(refuse("the config has no seccomp profile or no Landlock policy, which this mode relies on alone"));
    }
    // child() checks the parent itself (no pid namespace: getppid works),
    // so no parent pidfd.
    let executor = SandboxExecutor {
        die_with_parent: true,
        ..SandboxExecutor::new(seccomp, policy.landlock)
    };
    let parent = nix::unistd::getpid();
    let spawned = crate::sys::spawn::spawn(|| child(parent, spec, &executor, stdio.as_ref()));
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
    if nix::unistd::geteuid().is_root() {
        leave_root(spec)?;
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

/// Root (e.g. uid 0 in a container without CAP_SYS_ADMIN) becomes the
/// host uid and gid the config maps its root to (nobody, or the owner of
/// `--workdir`), as the workload is in the namespace mode, with every
/// capability set empty, the bounding set included.
///
/// Stops: the workload running as root, with root's capabilities or with a
/// bounding set it could regain them through (a setuid binary is inert
/// under no_new_privs; the empty bounding set holds even without it).
fn leave_root(spec: &Spec) -> std::result::Result<(), String> {
    use caps::CapSet;
    let host = |maps: Option<&Vec<libcontainer::oci_spec::runtime::LinuxIdMapping>>, what| {
        maps.into_iter()
            .flatten()
            .find(|m| m.container_id() == 0 && m.size() >= 1)
            .map(|m| m.host_id())
            .filter(|id| *id != 0)
            .ok_or_else(|| {
                format!("as root, the config must map its root to an unprivileged host {what}")
            })
    };
    let linux = spec.linux().as_ref();
    let uid = host(linux.and_then(|l| l.uid_mappings().as_ref()), "uid")?;
    let gid = host(linux.and_then(|l| l.gid_mappings().as_ref()), "gid")?;
    let cap_err = |what: &str, e: caps::errors::CapsError| format!("capabilities: {what}: {e}");
    // The bounding set first: emptying it needs CAP_SETPCAP, gone after setuid.
    caps::clear(None, CapSet::Bounding).map_err(|e| cap_err("emptying the bounding set", e))?;
    caps::clear(None, CapSet::Ambient).map_err(|e| cap_err("emptying the ambient set", e))?;
    caps::clear(None, CapSet::Inheritable)
        .map_err(|e| cap_err("emptying the inheritable set", e))?;
    nix::unistd::setgroups(&[]).map_err(|e| format!("setgroups: {}", e.desc()))?;
    let (g, u) = (
        nix::unistd::Gid::from_raw(gid),
        nix::unistd::Uid::from_raw(uid),
    );
    nix::unistd::setresgid(g, g, g).map_err(|e| format!("setresgid {gid}: {}", e.desc()))?;
    nix::unistd::setresuid(u, u, u).map_err(|e| format!("setresuid {uid}: {}", e.desc()))?;
    // The kernel clears permitted and effective when every uid leaves 0
    // (unless SECBIT_KEEP_CAPS); check rather than trust it.
    caps::clear(None, CapSet::Effective).map_err(|e| cap_err("emptying the effective set", e))?;
    caps::clear(None, CapSet::Permitted).map_err(|e| cap_err("emptying the permitted set", e))?;
    // Read from /proc, not through the caps crate, which knows only the
    // capabilities of its own release: a newer kernel's would go unseen.
    match held_capabilities(true) {
        None => Ok(()),
        Some(held) => Err(format!(
            "capabilities still held after leaving root: {held}"
        )),
    }
}

/// The non-empty capability sets of this process (with `bounding`, the
/// bounding set too), if any; unknown (an unreadable /proc) counts as
/// held: fail closed.
fn held_capabilities(bounding: bool) -> Option<String> {
    let Ok(status) = procfs::process::Process::myself().and_then(|p| p.status()) else {
        return Some("unknown: /proc/self/status is unreadable".into());
    };
    // No CapAmb line (before Linux 4.3): no ambient set.
    let held: Vec<&str> = [
        ("CapInh", status.capinh),
        ("CapPrm", status.capprm),
        ("CapEff", status.capeff),
        ("CapAmb", status.capamb.unwrap_or(0)),
        // No CapBnd line: unknown, so held.
        (
            "CapBnd",
            match bounding {
                true => status.capbnd.unwrap_or(u64::MAX),
                false => 0,
            },
        ),
    ]
    .into_iter()
    .filter(|(_, set)| *set != 0)
    .map(|(k, _)| k)
    .collect();
    (!held.is_empty()).then(|| held.join(", "))
}
