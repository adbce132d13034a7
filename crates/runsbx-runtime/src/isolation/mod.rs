//! Which isolation `sandbox` and `selftest` run with, decided here and
//! nowhere else (docs/where.md):
//!
//! - `namespaces`: the container (user, pid, net, mount, ipc, uts and cgroup
//!   namespaces, plus every process layer). Chosen wherever the namespace
//!   probe (sys/nsprobe.rs) gets through every step the set-up takes.
//! - `landlock`: no namespaces; the same process layers on the host
//!   (crate::direct). Chosen by `auto` only where namespaces are refused
//!   *and* the kernel gives this mode what it promises ([`landlock_gap`]),
//!   and announced on stderr unless pinned.
//! - otherwise refused, naming both causes.
//!
//! Facts are gathered by [`choose`]; [`decide`], [`diagnose`] and
//! [`landlock_gap`] are pure and unit-tested with the facts fed in.

use serde::Serialize;

use crate::rootless::HostSettings;
use crate::sys::nsprobe::{self, Step};
use nix::errno::Errno;

#[cfg(test)]
mod tests;

/// The isolation a run gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Namespaces,
    Landlock,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Namespaces => "namespaces",
            Mode::Landlock => "landlock",
        }
    }
}

/// What the caller asked for (`--isolation`; `--no-userns` is `Landlock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Pin {
    #[default]
    Auto,
    Namespaces,
    Landlock,
}

/// What was observed about namespaces on this host.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NsFacts {
    /// runsbx's effective uid is 0.
    pub root: bool,
    /// CAP_SYS_ADMIN in runsbx's effective set.
    pub cap_sys_admin: bool,
    /// `Seccomp: 2` in /proc/self/status: a filter (an engine's) is loaded.
    pub seccomp_filtered: bool,
    pub sysctl: HostSettings,
    /// runsbx runs in the initial user namespace (uid_map `0 0 4294967295`).
    pub initial_userns: bool,
    /// Something is mounted over a path under /proc (an engine's masks).
    pub proc_covered: bool,
    /// The probe's first refused step, `None` when all passed (or when it
    /// was not run: see [`needs_probe`]).
    pub refused: Option<(Step, Errno)>,
}

/// Whether the probe must run. Not for root holding CAP_SYS_ADMIN in the
/// initial user namespace, with no seccomp filter and nothing mounted over
/// /proc: every step it would try is root's own to take there, and the
/// probe costs about 1.5 ms of each start. Should a security module still
/// refuse a step, the run fails with that step's error, as before `auto`
/// existed: never a silent step down. Pure.
pub fn needs_probe(f: &NsFacts) -> bool {
    !(f.root && f.cap_sys_admin && f.initial_userns && !f.seccomp_filtered && !f.proc_covered)
}

/// Why namespaces are unavailable: one per fix an operator can apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    MaxUserNamespacesZero,
    UnprivilegedUsernsClone,
    UserNamespaceLimit,
    AppArmor,
    /// An engine's seccomp profile refused this step (EPERM under a filter).
    EngineSeccomp(&'static str),
    RootWithoutSysAdmin,
    MaskedProc,
    Other(&'static str, Errno),
}

fn step_name(step: Step) -> &'static str {
    match step {
        Step::RootMountNs => "a private mount namespace",
        Step::UserNs => "a user namespace",
        Step::MapIds => "mapping ids in the user namespace",
        Step::Caps => "capabilities in the user namespace",
        Step::Unshare => "mount, pid, ipc, uts and cgroup namespaces",
        Step::Hostname => "sethostname",
        Step::Mount => "mount",
        Step::Proc => "a fresh /proc",
    }
}

/// What the run needs from podman/docker when runsbx runs in a container:
/// verified with podman 4.3 (docs/where.md).
const ENGINE_FLAGS_USER: &str = "--security-opt seccomp=unconfined --security-opt unmask=/proc/*";
const ENGINE_FLAGS_ROOT: &str = "--cap-add SYS_ADMIN,SYS_PTRACE --security-opt unmask=/proc/*";

impl Cause {
    /// The cause and what an operator can do, one line.
    pub fn line(&self) -> String {
        match self {
            Cause::MaxUserNamespacesZero => "user namespaces are disabled (user.max_user_namespaces is 0); \
                 an administrator allows them with `sysctl -w user.max_user_namespaces=15000`"
                .into(),
            Cause::UnprivilegedUsernsClone => "unprivileged user namespaces are disabled \
                 (kernel.unprivileged_userns_clone is 0); an administrator allows them with \
                 `sysctl -w kernel.unprivileged_userns_clone=1`"
                .into(),
            Cause::UserNamespaceLimit => "the user.max_user_namespaces limit is reached (for this user or an \
                 enclosing namespace); raise it or end other users of namespaces"
                .into(),
            Cause::AppArmor => "AppArmor restricts unprivileged user namespaces \
                 (kernel.apparmor_restrict_unprivileged_userns=1: a user namespace is made but gets no \
                 capabilities); an administrator allows runsbx with the profile it ships, \
                 hack/apparmor/runsbx (docs/where.md), or sets the sysctl to 0"
                .into(),
            Cause::EngineSeccomp(step) => format!(
                "the container engine's seccomp profile refuses {step} (a seccomp filter is loaded and \
                 answered EPERM); start the container with `{ENGINE_FLAGS_USER}` (podman/docker), or \
                 run runsbx outside the container"
            ),
            Cause::RootWithoutSysAdmin => format!(
                "runsbx runs as root without CAP_SYS_ADMIN (a container's default capabilities), \
                 so it cannot make the sandbox's mount namespace; start the container with \
                 `{ENGINE_FLAGS_ROOT}` (podman/docker), or run runsbx as a non-root user in a \
                 container started with `{ENGINE_FLAGS_USER}`"
            ),
            Cause::MaskedProc => format!(
                "the kernel refuses a fresh /proc because the visible one has masked paths (a \
                 container engine's default); start the container with `--security-opt \
                 unmask=/proc/*`, with the flags for namespaces in it (as a non-root user: \
                 `{ENGINE_FLAGS_USER}`)"
            ),
            Cause::Other(step, errno) => format!(
                "the kernel refused {step} ({}): a seccomp filter or security module forbids it",
                errno.desc()
            ),
        }
    }
}

/// Why namespaces are unavailable, from what was observed; `None` when
/// the probe got through. Pure.
pub fn diagnose(f: &NsFacts) -> Option<Cause> {
    let (step, errno) = f.refused?;
    let filtered_eperm = f.seccomp_filtered && errno == Errno::EPERM;
    Some(match step {
        Step::RootMountNs if !f.cap_sys_admin => Cause::RootWithoutSysAdmin,
        Step::UserNs if f.sysctl.max_user_namespaces == Some(0) => Cause::MaxUserNamespacesZero,
        Step::UserNs if f.sysctl.unprivileged_userns_clone == Some(0) && !f.root => {
            Cause::UnprivilegedUsernsClone
        }
        Step::UserNs if errno == Errno::ENOSPC => Cause::UserNamespaceLimit,
        // AppArmor's restriction lets the unshare pass and takes the
        // capabilities away, or (with the other sysctl) refuses it.
        Step::UserNs | Step::MapIds | Step::Caps if f.sysctl.apparmor_restrict == Some(1) => {
            Cause::AppArmor
        }
        Step::Caps => Cause::Other(step_name(step), errno),
        Step::Proc if errno == Errno::EPERM => Cause::MaskedProc,
        _ if filtered_eperm => Cause::EngineSeccomp(step_name(step)),
        _ => Cause::Other(step_name(step), errno),
    })
}

/// What the kernel offers the landlock mode.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LandlockFacts {
    /// Landlock ABI, `None` when Landlock is off or not built in.
    pub abi: Option<u8>,
    /// /proc/sys/kernel/seccomp/actions_avail, `None` when absent (no
    /// seccomp filter support).
    pub seccomp_actions: Option<String>,
    /// PR_GET_NO_NEW_PRIVS answered.
    pub no_new_privs: bool,
    /// A non-root uid with group 0 among its real, effective and saved
    /// gids (a pod with `runAsUser` and no `runAsGroup`): the uid, else
    /// `None`.
    pub root_group_of: Option<u32>,
}

/// The Landlock ABI the landlock mode needs: 6 is the first with scopes
/// for signals and abstract unix sockets, which stand in for the pid and
/// network namespaces there (no signal to, no abstract socket of, a
/// process outside the sandbox).
pub const LANDLOCK_MODE_ABI: u8 = 6;

/// What the landlock mode needs that the kernel lacks, one line; `None`
/// when it can give what it promises. Pure.
///
/// It needs: Landlock ABI >= 6 (filesystem rules with truncate and ioctl,
/// TCP bind/connect, signal and abstract-socket scopes); seccomp filters
/// that can answer an errno and kill the process (the allowlist); and
/// no_new_privs (Landlock and seccomp without privileges, setuid bits
/// inert).
pub fn landlock_gap(l: &LandlockFacts) -> Option<String> {
    let mut lacks = Vec::new();
    match l.abi {
        None => lacks.push("Landlock (off or not built in: add `landlock` to the `lsm=` boot parameter)".to_string()),
        Some(abi) if abi < LANDLOCK_MODE_ABI => lacks.push(format!(
            "Landlock ABI {LANDLOCK_MODE_ABI} (signal and abstract unix socket scopes; this kernel has ABI {abi}, Linux 6.12 has 6)"
        )),
        Some(_) => {}
    }
    let actions = l.seccomp_actions.as_deref().unwrap_or("");
    if !["errno", "kill_process"]
        .iter()
        .all(|a| actions.split_whitespace().any(|w| w == *a))
    {
        lacks.push("seccomp filters (CONFIG_SECCOMP_FILTER)".into());
    }
    if !l.no_new_privs {
        lacks.push("no_new_privs".into());
    }
    let mut gaps = Vec::new();
    if !lacks.is_empty() {
        gaps.push(format!(
            "the landlock mode needs {} from the kernel",
            lacks.join(", ")
        ));
    }
    // Without a user namespace the workload keeps runsbx's ids, and a
    // non-root uid cannot leave group 0: the workload would open every
    // host file root's group may write (the posture check would stop it
    // after the fork; this says why before anything runs).
    if let Some(uid) = l.root_group_of {
        gaps.push(format!(
            "the landlock mode cannot run with group id 0: runsbx runs as uid {uid} with gid 0, \
             which it cannot leave without privileges, and the workload would keep root's group; \
             run it with a non-zero group (Kubernetes: securityContext.runAsGroup; \
             podman/docker: --user UID:GID)"
        ));
    }
    (!gaps.is_empty()).then(|| gaps.join("; "))
}

/// The mode chosen, and the line to print on stderr when it steps down.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub mode: Mode,
    pub announce: Option<String>,
    /// Why namespaces were unavailable, when `auto` stepped down.
    pub cause: Option<String>,
}

/// Refused: no mode can run here as asked.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct Refused(pub String);

/// The mode for `pin`, given why namespaces are unavailable (`ns`, asked
/// only when needed) and what the landlock mode lacks (`ll`). Pure.
pub fn decide(
    pin: Pin,
    ns: impl FnOnce() -> Option<Cause>,
    ll: impl FnOnce() -> Option<String>,
) -> Result<Decision, Refused> {
    let chosen = |mode| Decision {
        mode,
        announce: None,
        cause: None,
    };
    match pin {
        Pin::Namespaces => match ns() {
            None => Ok(chosen(Mode::Namespaces)),
            Some(c) => Err(Refused(format!(
                "--isolation namespaces: namespaces are unavailable here: {}",
                c.line()
            ))),
        },
        Pin::Landlock => match ll() {
            None => Ok(chosen(Mode::Landlock)),
            Some(gap) => Err(Refused(format!("--isolation landlock: {gap}"))),
        },
        Pin::Auto => {
            let Some(cause) = ns() else {
                return Ok(chosen(Mode::Namespaces));
            };
            match ll() {
                // Never a silent step down.
                None => Ok(Decision {
                    mode: Mode::Landlock,
                    announce: Some(format!(
                        "runsbx: namespaces are unavailable here ({}); running with --isolation \
                         landlock: Landlock, seccomp and no_new_privs without namespaces \
                         (docs/where.md; --isolation namespaces refuses instead)",
                        cause.line()
                    )),
                    cause: Some(cause.line()),
                }),
                Some(gap) => Err(Refused(format!(
                    "no isolation mode can run here: namespaces are unavailable ({}), and {gap}",
                    cause.line()
                ))),
            }
        }
    }
}

/// What this host shows about namespaces: the facts read from /proc, then
/// the probe where [`needs_probe`] says so. Forks: call while
/// single-threaded.
pub fn ns_facts() -> NsFacts {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid_map = std::fs::read_to_string("/proc/self/uid_map").unwrap_or_default();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut f = NsFacts {
        root: nix::unistd::geteuid().is_root(),
        cap_sys_admin: nsprobe::effective_caps().is_some_and(|c| c & (1 << 21) != 0),
        seccomp_filtered: status
            .lines()
            .find_map(|l| l.strip_prefix("Seccomp:"))
            .is_some_and(|v| v.trim() == "2"),
        sysctl: HostSettings::read(),
        initial_userns: uid_map.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"],
        proc_covered: proc_covered(&mountinfo),
        refused: None,
    };
    if needs_probe(&f) {
        let probing = std::time::Instant::now();
        let probed = nsprobe::probe(f.root);
        tracing::debug!(
            "isolation: namespace probe: {probed:?} in {:?}",
            probing.elapsed()
        );
        // The probe could not run: count namespaces as refused (fail closed).
        f.refused = probed.unwrap_or(Some((Step::UserNs, Errno::EIO)));
    }
    f
}

/// Whether mountinfo shows a mount below /proc other than binfmt_misc
/// (an empty procfs directory, which the kernel's check for a fresh proc
/// ignores). Pure.
fn proc_covered(mountinfo: &str) -> bool {
    mountinfo
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|m| m.starts_with("/proc/") && m != "/proc/sys/fs/binfmt_misc")
}

pub fn landlock_facts() -> LandlockFacts {
    LandlockFacts {
        abi: crate::landlock::kernel_abi(),
        seccomp_actions: std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail").ok(),
        no_new_privs: nix::sys::prctl::get_no_new_privs().is_ok(),
        root_group_of: root_group_of(),
    }
}

fn root_group_of() -> Option<u32> {
    let uid = nix::unistd::geteuid().as_raw();
    let g = nix::unistd::getresgid().ok()?;
    let root = nix::unistd::Gid::from_raw(0);
    (uid != 0 && [g.real, g.effective, g.saved].contains(&root)).then_some(uid)
}

/// The one place a run's isolation is decided: the facts gathered (the
/// probe only when they matter), then [`decide`]. Forks: call while
/// single-threaded.
pub fn choose(pin: Pin) -> Result<Decision, Refused> {
    decide(
        pin,
        || diagnose(&ns_facts()),
        || landlock_gap(&landlock_facts()),
    )
}
