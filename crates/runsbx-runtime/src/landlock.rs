//! Landlock enforcement in the container's init: the last restriction before
//! the seccomp filter and exec, after mounts, pivot_root and the capability
//! drop, so every path resolves in the container's view.
//!
//! What this layer stops: the workload opening, executing, creating, removing,
//! renaming, linking or truncating files outside the policy's grants, device
//! ioctls, TCP bind/connect on ports not granted, and (when scoped) signals
//! and abstract unix socket connections leaving the domain. What it does not:
//! files opened before [`enforce`] (fd hygiene closes them), UDP/raw/MPTCP/
//! vsock sockets and io_uring (seccomp and the network namespace), and
//! anything the kernel's ABI lacks when the policy asks for best effort.
//!
//! Failing closed: unless the policy sets `enableBestEffort`, a right or scope
//! the kernel cannot restrict, a path missing in the container, or a ruleset
//! the kernel reports as not fully enforced is an error, and init must not exec.
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;

use landlock::{
    AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    PathFdError, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus, Scope,
};
use runsbx_policy::landlock::{FsRight, LandlockError, LandlockPolicy, NetRight, ScopeRight};

use crate::sys::landlock as sys_landlock;

/// What [`enforce`] achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandlockOutcome {
    /// The kernel's Landlock ABI, `None` when Landlock is unavailable.
    pub kernel_abi: Option<u8>,
    pub status: Enforcement,
    /// Rights and scopes the policy named but the kernel could not restrict
    /// (only ever non-empty with best effort), with the ABI each needs.
    pub dropped: Vec<(&'static str, u8)>,
}

/// How much of the policy is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement {
    Full,
    /// Best effort: some rights were dropped (see [`LandlockOutcome::dropped`]).
    Partial,
    /// Best effort on a kernel without Landlock: nothing is restricted.
    None,
}

/// Why the policy could not be put in force. Every variant means "do not exec".
#[derive(Debug, thiserror::Error)]
pub enum EnforceError {
    #[error(transparent)]
    Policy(#[from] LandlockError),
    #[error("landlock: not available ({reason}); the policy needs ABI {needs}; not starting")]
    Unavailable { reason: &'static str, needs: u8 },
    #[error("landlock: kernel ABI {kernel} cannot restrict {}; not starting", list_missing(.missing))]
    MissingRights {
        kernel: u8,
        missing: Vec<(&'static str, u8)>,
    },
    #[error("landlock: {field}: cannot open \"{}\" in the container: {source}; not starting", .path.display())]
    Path {
        field: String,
        path: PathBuf,
        source: io::Error,
    },
    #[error("landlock: setting no_new_privs: {0}; not starting")]
    NoNewPrivs(nix::errno::Errno),
    #[error("landlock: {0}; not starting")]
    Ruleset(#[from] RulesetError),
    #[error("landlock: the kernel reports the ruleset {0}; not starting")]
    NotEnforced(&'static str),
}

fn list_missing(missing: &[(&'static str, u8)]) -> String {
    let items: Vec<String> = missing
        .iter()
        .map(|(name, abi)| format!("{name} (needs ABI {abi})"))
        .collect();
    items.join(", ")
}

/// The running kernel's Landlock ABI version, `None` when Landlock is not
/// built in or not enabled (for `runsbx features`).
pub fn kernel_abi() -> Option<u8> {
    sys_landlock::abi_version()
        .ok()
        .map(|v| u8::try_from(v).unwrap_or(u8::MAX))
}

/// Checks, without restricting anything, that this kernel can enforce
/// `policy`: for the caller to refuse a container before any fork. Paths are
/// not checked here (they only exist in the container's view).
pub fn preflight(policy: &LandlockPolicy) -> Result<(), EnforceError> {
    policy.validate()?;
    if policy.best_effort {
        return Ok(());
    }
    match sys_landlock::abi_version() {
        Err(errno) => Err(EnforceError::Unavailable {
            reason: unavailable_reason(errno),
            needs: policy.required_abi(),
        }),
        Ok(abi) => {
            let kernel = u8::try_from(abi).unwrap_or(u8::MAX);
            let missing = policy.beyond_abi(kernel);
            if missing.is_empty() {
                Ok(())
            } else {
                Err(EnforceError::MissingRights { kernel, missing })
            }
        }
    }
}

fn unavailable_reason(errno: nix::errno::Errno) -> &'static str {
    match errno {
        nix::errno::Errno::EOPNOTSUPP => {
            "disabled at boot; add landlock to the lsm= kernel parameter"
        }
        nix::errno::Errno::ENOSYS => "not built into this kernel",
        _ => "landlock_create_ruleset failed",
    }
}

/// Restricts the calling thread, and everything it later execs or forks, to
/// `policy`. Call it in init after pivot_root and the capability drop, right
/// before seccomp and exec; paths are opened as the calling process sees them.
///
/// Sets no_new_privs first, always: landlock_restrict_self requires it unless
/// the caller has CAP_SYS_ADMIN in its user namespace, and a setuid binary
/// must not regain what the domain takes away. Setuid binaries inside the
/// container therefore never elevate once a Landlock policy applies.
///
/// Calling it again adds a layer: the domains intersect (operator policy, then
/// the bundle's). Without best effort, the kernel must support every right
/// and scope the policy names; with it, what the kernel lacks is dropped and
/// reported in [`LandlockOutcome::dropped`]. A path that cannot be opened is an
/// error either way. On a non-directory, rules keep only the rights that
/// apply to files (the kernel rejects the others there; they would grant nothing).
pub fn enforce(policy: &LandlockPolicy) -> Result<LandlockOutcome, EnforceError> {
    enforce_logging(policy, false)
}

/// [`enforce`], and with `log_after_exec` (`--report-denials`) ask the kernel
/// to keep logging denials to audit after the exec (ABI 7's
/// `LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON`; without it Landlock logs only
/// what the restricting program itself is denied). Ignored on older ABIs,
/// where there is nothing to ask for: the report says so.
pub fn enforce_logging(
    policy: &LandlockPolicy,
    log_after_exec: bool,
) -> Result<LandlockOutcome, EnforceError> {
    policy.validate()?;
    let kernel_abi = kernel_abi();
    let dropped = policy.beyond_abi(kernel_abi.unwrap_or(0));
    if !policy.best_effort {
        preflight(policy)?;
    }

    // Open every path before touching the process, so a missing path leaves
    // nothing changed.
    let mut path_rules = Vec::new();
    for (i, rule) in policy.path_beneath.iter().enumerate() {
        for (j, path) in rule.paths.iter().enumerate() {
            let field = || format!("rules.pathBeneath[{i}].paths[{j}]");
            let fd = PathFd::new(path).map_err(|e| EnforceError::Path {
                field: field(),
                path: path.clone(),
                source: match e {
                    PathFdError::OpenCall { source, .. } => source,
                    other => io::Error::other(other.to_string()),
                },
            })?;
            let stat =
                nix::sys::stat::fstat(fd.as_fd().as_raw_fd()).map_err(|e| EnforceError::Path {
                    field: field(),
                    path: path.clone(),
                    source: e.into(),
                })?;
            let is_dir = (stat.st_mode & libc::S_IFMT) == libc::S_IFDIR;
            let allowed: Vec<FsRight> = rule
                .allowed
                .iter()
                .copied()
                .filter(|r| is_dir || r.applies_to_files())
                .collect();
            if !allowed.is_empty() {
                path_rules.push(PathBeneath::new(fd, fs_access(&allowed)));
            }
        }
    }

    nix::sys::prctl::set_no_new_privs().map_err(EnforceError::NoNewPrivs)?;

    let level = if policy.best_effort {
        CompatLevel::BestEffort
    } else {
        CompatLevel::HardRequirement
    };
    let mut ruleset = Ruleset::default().set_compatibility(level);
    if !policy.handled_fs.is_empty() {
        ruleset = ruleset.handle_access(fs_access(
            &policy.handled_fs.iter().copied().collect::<Vec<_>>(),
        ))?;
    }
    if !policy.handled_net.is_empty() {
        ruleset = ruleset.handle_access(net_access(policy.handled_net.iter().copied()))?;
    }
    if !policy.scoped.is_empty() {
        ruleset = ruleset.scope(scopes(policy.scoped.iter().copied()))?;
    }
    let mut created = ruleset.create()?.no_new_privs(true);
    if log_after_exec && runsbx_policy::landlock::can_log(kernel_abi) {
        created = created.log_new_exec(true)?;
    }
    for rule in path_rules {
        created = created.add_rule(rule)?;
    }
    for rule in &policy.net_port {
        let access = net_access(rule.allowed.iter().copied());
        for port in &rule.ports {
            created = created.add_rule(NetPort::new(*port, access))?;
        }
    }
    let status = created.restrict_self()?;

    let status = match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    };
    // The crate already refuses under HardRequirement; this keeps the
    // guarantee if that ever changes.
    if !policy.best_effort && status != Enforcement::Full {
        return Err(EnforceError::NotEnforced(match status {
            Enforcement::Partial => "partially enforced",
            _ => "not enforced",
        }));
    }
    Ok(LandlockOutcome {
        kernel_abi,
        status,
        dropped,
    })
}

fn fs_access(rights: &[FsRight]) -> BitFlags<AccessFs> {
    let mut out = BitFlags::<AccessFs>::empty();
    for right in rights {
        out |= match right {
            FsRight::Execute => AccessFs::Execute,
            FsRight::WriteFile => AccessFs::WriteFile,
            FsRight::ReadFile => AccessFs::ReadFile,
            FsRight::ReadDir => AccessFs::ReadDir,
            FsRight::RemoveDir => AccessFs::RemoveDir,
            FsRight::RemoveFile => AccessFs::RemoveFile,
            FsRight::MakeChar => AccessFs::MakeChar,
            FsRight::MakeDir => AccessFs::MakeDir,
            FsRight::MakeReg => AccessFs::MakeReg,
            FsRight::MakeSock => AccessFs::MakeSock,
            FsRight::MakeFifo => AccessFs::MakeFifo,
            FsRight::MakeBlock => AccessFs::MakeBlock,
            FsRight::MakeSym => AccessFs::MakeSym,
            FsRight::Refer => AccessFs::Refer,
            FsRight::Truncate => AccessFs::Truncate,
            FsRight::IoctlDev => AccessFs::IoctlDev,
            FsRight::ResolveUnix => AccessFs::ResolveUnix,
        };
    }
    out
}

fn net_access(rights: impl Iterator<Item = NetRight>) -> BitFlags<AccessNet> {
    let mut out = BitFlags::<AccessNet>::empty();
    for right in rights {
        out |= match right {
            NetRight::BindTcp => AccessNet::BindTcp,
            NetRight::ConnectTcp => AccessNet::ConnectTcp,
            NetRight::BindUdp => AccessNet::BindUdp,
            NetRight::ConnectSendUdp => AccessNet::ConnectSendUdp,
        };
    }
    out
}

fn scopes(items: impl Iterator<Item = ScopeRight>) -> BitFlags<Scope> {
    let mut out = BitFlags::<Scope>::empty();
    for item in items {
        out |= match item {
            ScopeRight::AbstractUnixSocket => Scope::AbstractUnixSocket,
            ScopeRight::Signal => Scope::Signal,
        };
    }
    out
}

#[cfg(test)]
#[path = "landlock_tests.rs"]
mod tests;
