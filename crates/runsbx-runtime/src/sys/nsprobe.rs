//! The namespace probe: in a forked child that is thrown away, the steps a
//! sandbox's set-up takes that a host or an outer container can refuse,
//! stopping at the first that fails. It changes nothing of runsbx's own
//! (every namespace made dies with the child) and costs a fork or two.
//!
//! Steps, in the order the real set-up meets them:
//! - root only: a private mount namespace in runsbx's own user namespace
//!   (prebind.rs makes one; it needs CAP_SYS_ADMIN there);
//! - a user namespace, and a mapping of the caller to its root;
//! - CAP_SYS_ADMIN held in it (AppArmor's userns restriction lets the
//!   unshare pass and leaves the namespace without capabilities);
//! - new mount, pid, ipc, uts and cgroup namespaces in it (not net: the
//!   costliest to make, about 0.8 ms of the probe's 2.5 here, and refused
//!   by no engine profile apart from the others, which filter unshare and
//!   clone as a whole or by CLONE_NEWUSER);
//! - sethostname and a mount (what an engine's seccomp profile refuses
//!   without CAP_SYS_ADMIN);
//! - a fresh proc in the new pid namespace (refused by the kernel where the
//!   visible /proc has masked paths, as an engine's default leaves it).

use std::io::{Read, Write};

use nix::errno::Errno;
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, pipe2, ForkResult};

/// A step of the probe, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Root's private mount namespace in its own user namespace.
    RootMountNs,
    UserNs,
    MapIds,
    /// CAP_SYS_ADMIN in the new user namespace.
    Caps,
    Unshare,
    Hostname,
    Mount,
    Proc,
}

const STEPS: [Step; 8] = [
    Step::RootMountNs,
    Step::UserNs,
    Step::MapIds,
    Step::Caps,
    Step::Unshare,
    Step::Hostname,
    Step::Mount,
    Step::Proc,
];

/// Runs the probe; `Ok(None)` when every step worked, else the first step
/// refused and its errno. `Err`: the probe itself could not run.
///
/// Call only while the process is single-threaded: the child allocates.
pub fn probe(root: bool) -> Result<Option<(Step, Errno)>, String> {
    let (read_end, write_end) =
        pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {}", e.desc()))?;
    // SAFETY: the caller's contract: single-threaded, so the child may run
    // ordinary code; it ends in _exit without returning.
    match unsafe { fork() }.map_err(|e| format!("fork: {}", e.desc()))? {
        ForkResult::Child => {
            drop(read_end);
            let answer = match steps(root) {
                Ok(()) => "ok".to_string(),
                Err((step, errno)) => {
                    let i = STEPS.iter().position(|s| *s == step).unwrap_or(0);
                    format!("{i} {}", errno as i32)
                }
            };
            let _ = std::fs::File::from(write_end).write_all(answer.as_bytes());
            // SAFETY: ends the child without the parent's atexit handlers.
            unsafe { libc::_exit(0) }
        }
        ForkResult::Parent { child } => {
            drop(write_end);
            let mut answer = String::new();
            let read = std::fs::File::from(read_end).read_to_string(&mut answer);
            let _ = waitpid(child, None);
            read.map_err(|e| format!("reading the probe: {e}"))?;
            parse(&answer).ok_or_else(|| format!("the probe answered {answer:?}"))
        }
    }
}

fn parse(answer: &str) -> Option<Option<(Step, Errno)>> {
    if answer == "ok" {
        return Some(None);
    }
    let (i, e) = answer.split_once(' ')?;
    let step = *STEPS.get(i.parse::<usize>().ok()?)?;
    Some(Some((step, Errno::from_raw(e.parse().ok()?))))
}

/// In the probe's child.
fn steps(root: bool) -> Result<(), (Step, Errno)> {
    let euid = nix::unistd::geteuid().as_raw();
    let egid = nix::unistd::getegid().as_raw();
    if root {
        unshare(CloneFlags::CLONE_NEWNS).map_err(|e| (Step::RootMountNs, e))?;
    }
    unshare(CloneFlags::CLONE_NEWUSER).map_err(|e| (Step::UserNs, e))?;
    let write = |path: &str, text: String| {
        std::fs::write(path, text)
            .map_err(|e| (Step::MapIds, Errno::from_raw(e.raw_os_error().unwrap_or(0))))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("0 {euid} 1"))?;
    write("/proc/self/gid_map", format!("0 {egid} 1"))?;
    if !holds_sys_admin() {
        return Err((Step::Caps, Errno::EPERM));
    }
    unshare(
        CloneFlags::CLONE_NEWNS
            | CloneFlags::CLONE_NEWPID
            | CloneFlags::CLONE_NEWIPC
            | CloneFlags::CLONE_NEWUTS
            | CloneFlags::CLONE_NEWCGROUP,
    )
    .map_err(|e| (Step::Unshare, e))?;
    nix::unistd::sethostname("runsbx-probe").map_err(|e| (Step::Hostname, e))?;
    mount::<str, str, str, str>(None, "/", None, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None)
        .map_err(|e| (Step::Mount, e))?;
    // The first child after unshare(CLONE_NEWPID) is the new namespace's
    // PID 1: the only place a fresh proc for it can be mounted.
    // SAFETY: this child is single-threaded (forked from a single-threaded
    // process); the grandchild makes syscalls and _exits.
    match unsafe { fork() }.map_err(|e| (Step::Proc, e))? {
        ForkResult::Child => {
            let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
            let code =
                match mount::<str, str, str, str>(Some("proc"), "/proc", Some("proc"), flags, None)
                {
                    Ok(()) => 0,
                    Err(e) => e as i32,
                };
            // SAFETY: ends the grandchild at once.
            unsafe { libc::_exit(code) }
        }
        ForkResult::Parent { child } => match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, 0)) => Ok(()),
            Ok(WaitStatus::Exited(_, n)) => Err((Step::Proc, Errno::from_raw(n))),
            Ok(_) => Err((Step::Proc, Errno::EINTR)),
            Err(e) => Err((Step::Proc, e)),
        },
    }
}

/// CAP_SYS_ADMIN (bit 21) in this process's effective set.
fn holds_sys_admin() -> bool {
    effective_caps().is_some_and(|c| c & (1 << 21) != 0)
}

/// CapEff of /proc/self/status.
pub fn effective_caps() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_back() {
        assert_eq!(parse("ok"), Some(None));
        assert_eq!(parse("6 1"), Some(Some((Step::Mount, Errno::EPERM))));
        assert_eq!(parse("9 1"), None);
        assert_eq!(parse(""), None);
    }
}
