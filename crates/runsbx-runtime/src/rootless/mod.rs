//! Rootless runsbx: what changes when an ordinary user runs it.
//!
//! - Before libcontainer runs, the process moves into the cgroup shim
//!   (sys/userns.rs): its own user namespace mapping the caller to itself,
//!   private mount and cgroup namespaces, a read-only cgroup2 on
//!   /sys/fs/cgroup. libcontainer then runs the container without a cgroup.
//! - Unless the caller has a delegated cgroup v2 (delegation.rs): the shim
//!   then shows that cgroup read-write on /sys/fs/cgroup, and each container
//!   gets a cgroup `runsbx-<id>` below it, recorded in its runsbx.json so
//!   that delete, kill --all, ps and pause show the same cgroup.
//! - A spec that asks for resource limits is refused: without a cgroup they
//!   would silently not hold, with a delegated one unless its controllers
//!   are enabled there ([`check_spec`]).
//! - The container's user namespace must map exactly the caller (one uid,
//!   one gid): the only mapping an unprivileged process may write.
//! - libcontainer forces its systemd cgroup manager (not built in) for a
//!   container with a user namespace and a relative `cgroupsPath` on a
//!   unified host, which the shim makes it see. It is shown a config.json
//!   whose `cgroupsPath` is absolute and runsbx's own ([`rootless_config`]):
//!   at create a copy in a directory of runsbx's ([`ConfigCopy`]), at exec
//!   through a bind mount only this process's private mount namespace sees
//!   ([`ConfigView`]).
//!
//! What does not change: every sandbox layer (namespaces, seccomp, Landlock,
//! no_new_privs, capability drop, env scrub, fd hygiene) is applied by the
//! same code as for root. Timeouts and the RSS ceiling need no cgroup.

use std::fs;
use std::sync::OnceLock;

use crate::delegation::{self, Delegation};
use crate::error::{Result, RuntimeError};
use crate::sys::userns::{self, ShimError};

mod check;
mod view;

pub use check::{check_exec_user, check_spec};
pub use view::{rootless_config, ConfigCopy, ConfigView};

pub use crate::error::RootlessError;

/// Set once the process is in the shim; a rootless create or exec outside
/// it fails closed (libcontainer would otherwise hit the host's cgroups).
static IN_SHIM: OnceLock<()> = OnceLock::new();

static ROOTLESS: OnceLock<bool> = OnceLock::new();

/// Whether runsbx runs as an ordinary user. Decided on the first call, which
/// comes before any shim: `exec` makes runsbx the root of the container's
/// user namespace, where its euid is 0.
pub fn active() -> bool {
    *ROOTLESS.get_or_init(|| !nix::unistd::geteuid().is_root())
}

/// The caller's delegated cgroup, when the shim uses it (set once, by
/// [`enter_shim`]); `None` inside: no delegation, containers get no cgroup.
static DELEGATED: OnceLock<Option<Delegation>> = OnceLock::new();

/// Enters a fresh shim for a new container (create, run, sandbox,
/// selftest): with the caller's delegated cgroup v2 read-write when it has
/// one (delegation.rs), else the read-only cgroup2 of no cgroup at all.
pub fn enter_shim() -> Result<()> {
    active();
    let uid = nix::unistd::geteuid().as_raw();
    let gid = nix::unistd::getegid().as_raw();
    let found = delegation::detect(uid);
    userns::enter(uid, gid, found.as_ref().map(Delegation::dir).as_deref()).map_err(shim_error)?;
    let _ = IN_SHIM.set(());
    match &found {
        Some(d) => tracing::debug!(
            "rootless: using the delegated cgroup {} (controllers: {}); containers get a cgroup below it",
            d.cgroup,
            d.controllers.join(" ")
        ),
        None => tracing::debug!(
            "rootless: running without cgroups (uid {uid} cannot write this host's cgroups); \
             resource limits in a spec are refused"
        ),
    }
    let _ = DELEGATED.set(found);
    Ok(())
}

/// Enters a fresh shim for a command on an existing container (delete,
/// kill --all, ps, pause, resume). `cgroup`: the container's cgroup as its
/// runsbx.json records it, whose parent (the delegated cgroup) the shim
/// then shows read-write on /sys/fs/cgroup, at the paths its create saw.
pub fn enter_shim_for(cgroup: Option<&str>) -> Result<()> {
    active();
    let uid = nix::unistd::geteuid().as_raw();
    let gid = nix::unistd::getegid().as_raw();
    let dir = match cgroup {
        Some(c) => delegation::parent_dir(uid, c).map_err(RootlessError::Cgroup)?,
        None => None,
    };
    userns::enter(uid, gid, dir.as_deref()).map_err(shim_error)?;
    let _ = IN_SHIM.set(());
    let _ = DELEGATED.set(None);
    let _ = CGROUP_GONE.set(cgroup.is_some() && dir.is_none());
    Ok(())
}

/// Set by [`enter_shim_for`]: the container's delegated cgroup is gone
/// with its parent, and the shim shows the read-only view instead.
static CGROUP_GONE: OnceLock<bool> = OnceLock::new();

pub fn cgroup_gone() -> bool {
    CGROUP_GONE.get().copied().unwrap_or(false)
}

/// The delegated cgroup new containers go below, if any.
pub fn delegated() -> Option<&'static Delegation> {
    DELEGATED.get().and_then(Option::as_ref)
}

/// For `exec`: joins the user namespace of the container whose init is
/// `pid` (see sys::userns::join), with the same cgroup2 mount. `cgroup`:
/// the container's delegated cgroup (its runsbx.json). The new process
/// joins it when this runsbx runs in that cgroup's parent, the delegated
/// cgroup: the kernel lets a process in a cgroup namespace move processes
/// only below the namespace's root, which is where runsbx stands. From
/// elsewhere it stays in the caller's cgroup (init's pid namespace still
/// holds it: SIGKILL to init ends it).
pub fn join_shim(pid: i32, cgroup: Option<&str>) -> Result<()> {
    active();
    let uid = nix::unistd::geteuid().as_raw();
    let here = cgroup
        .and_then(|c| delegation::detect(uid).filter(|d| delegation::parent_of(c) == d.cgroup));
    if cgroup.is_some() && here.is_none() {
        tracing::debug!(
            "rootless: exec from outside the container's delegated cgroup; the new process stays in runsbx's cgroup"
        );
    }
    match userns::join(pid, uid, here.as_ref().map(Delegation::dir).as_deref())
        .map_err(shim_error)?
    {
        true => {
            let _ = IN_SHIM.set(());
            let _ = DELEGATED.set(here);
            Ok(())
        }
        false => Err(RootlessError::NotOurs { uid }.into()),
    }
}

/// For `exec` as root: see sys::userns::join_as_root. Fails closed: the
/// process must not run outside the container's user namespace.
pub fn join_as_root(pid: i32) -> Result<()> {
    userns::join_as_root(pid).map(|_| ()).map_err(|e| {
        let (what, errno) = match e {
            ShimError::Refused(n) => ("join the container's user namespace", n),
            ShimError::Step(w, n) => (w, n),
        };
        RootlessError::Join { what, errno }.into()
    })
}

/// Whether this runsbx runs in its shim's user namespace.
pub fn in_shim() -> bool {
    IN_SHIM.get().is_some()
}

pub fn require_shim() -> Result<()> {
    match in_shim() {
        true => Ok(()),
        false => Err(RootlessError::NotInShim.into()),
    }
}

fn shim_error(e: ShimError) -> RuntimeError {
    match e {
        ShimError::Refused(errno) => {
            RootlessError::Refused(refusal(errno, &HostSettings::read())).into()
        }
        // Any later failure is most likely an LSM taking the namespace's
        // capabilities away (AppArmor's restriction lets the unshare pass).
        ShimError::Step(what, errno) => {
            let host = HostSettings::read();
            let hint = if host.apparmor_restrict == Some(1) {
                format!("; {}", APPARMOR_HINT)
            } else {
                String::new()
            };
            RootlessError::Step { what, errno, hint }.into()
        }
    }
}

const APPARMOR_HINT: &str = "AppArmor restricts unprivileged user namespaces \
     (kernel.apparmor_restrict_unprivileged_userns=1): an administrator can allow runsbx with \
     the profile it ships, hack/apparmor/runsbx (docs/where.md), or set the sysctl to 0";

/// The host settings that decide whether an ordinary user may have a user
/// namespace. `None`: the file does not exist on this kernel.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct HostSettings {
    pub max_user_namespaces: Option<u64>,
    pub unprivileged_userns_clone: Option<u64>,
    pub apparmor_restrict: Option<u64>,
}

impl HostSettings {
    pub fn read() -> Self {
        let read = |p: &str| {
            fs::read_to_string(p)
                .ok()
                .and_then(|t| t.trim().parse().ok())
        };
        Self {
            max_user_namespaces: read("/proc/sys/user/max_user_namespaces"),
            unprivileged_userns_clone: read("/proc/sys/kernel/unprivileged_userns_clone"),
            apparmor_restrict: read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        }
    }
}

/// One line: what refused the user namespace, and how an administrator
/// allows it. Pure, for tests.
pub fn refusal(errno: nix::errno::Errno, host: &HostSettings) -> String {
    let head = format!(
        "rootless: the kernel refused a user namespace ({})",
        errno.desc()
    );
    let why = if host.max_user_namespaces == Some(0) {
        "user.max_user_namespaces is 0 here; an administrator allows them with \
         `sysctl -w user.max_user_namespaces=15000`"
            .to_string()
    } else if host.unprivileged_userns_clone == Some(0) {
        "kernel.unprivileged_userns_clone is 0 here; an administrator allows them with \
         `sysctl -w kernel.unprivileged_userns_clone=1`"
            .to_string()
    } else if errno == nix::errno::Errno::ENOSPC {
        "the user.max_user_namespaces limit is reached (for this user or an enclosing namespace)"
            .to_string()
    } else if host.apparmor_restrict == Some(1) {
        APPARMOR_HINT.to_string()
    } else if errno == nix::errno::Errno::EINVAL {
        "the process is multithreaded (internal error)".to_string()
    } else {
        "a seccomp filter or security module forbids it (a container runtime's default \
         profile does, for one)"
            .to_string()
    };
    format!(
        "{head}: {why}. Without a user namespace, `runsbx sandbox --no-userns` runs with \
         Landlock, seccomp and no_new_privs only (weaker; see docs/rootless.md)"
    )
}

/// The cgroup path libcontainer is given rootless without a delegated
/// cgroup. It is never created (the shim's cgroup2 is read-only); it only has to be absolute, and not name a
/// cgroup that exists, so that libcontainer's clean-up finds nothing.
pub fn cgroup_path(id: &str) -> String {
    format!("/runsbx-rootless/{id}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::errno::Errno;

    /// The typed errors keep the words they had as RuntimeError::Init.
    #[test]
    fn errors_read_as_before() {
        let text = |e: RootlessError| RuntimeError::from(e).to_string();
        assert_eq!(
            text(RootlessError::NotOurs { uid: 1000 }),
            "rootless: the container's user namespace was not made by a rootless runsbx of uid \
             1000; exec it as the user that created it"
        );
        assert_eq!(
            text(RootlessError::Join {
                what: "join the container's user namespace",
                errno: Errno::EPERM
            }),
            "exec: join the container's user namespace: Operation not permitted; not running"
        );
        assert_eq!(
            text(RootlessError::NotInShim),
            "rootless: not in runsbx's user namespace (internal error); not running"
        );
        assert_eq!(
            text(RootlessError::Step {
                what: "setgroups",
                errno: Errno::EACCES,
                hint: String::new()
            }),
            "rootless: user namespace: setgroups: Permission denied"
        );
        assert_eq!(
            text(RootlessError::Cgroup(
                delegation::DelegationError::NoCgroupV2
            )),
            "rootless: cgroup: this host has no cgroup v2 hierarchy"
        );
    }

    #[test]
    fn refusal_names_the_setting() {
        let zero = HostSettings {
            max_user_namespaces: Some(0),
            ..Default::default()
        };
        let msg = refusal(Errno::ENOSPC, &zero);
        assert!(msg.contains("user.max_user_namespaces is 0"), "{msg}");
        assert!(msg.contains("--no-userns"), "{msg}");
        let clone = HostSettings {
            max_user_namespaces: Some(100),
            unprivileged_userns_clone: Some(0),
            ..Default::default()
        };
        assert!(refusal(Errno::EPERM, &clone).contains("kernel.unprivileged_userns_clone=1"));
        let aa = HostSettings {
            max_user_namespaces: Some(100),
            apparmor_restrict: Some(1),
            ..Default::default()
        };
        assert!(refusal(Errno::EACCES, &aa).contains("AppArmor"));
        assert!(!refusal(Errno::EPERM, &HostSettings::default()).contains('\n'));
    }
}
