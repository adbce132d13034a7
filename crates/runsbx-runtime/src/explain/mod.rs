//! `runsbx check`: what a bundle will allow, worked out before anything runs.
//!
//! [`validate`] runs the checks `create` runs before it forks (the same
//! functions, so a bad bundle gets the same message), then [`explain`] turns
//! the spec and the policy derived from it into an [`Explanation`]: plain
//! values, rendered as text by [`Explanation::to_text`] or as JSON by serde.
//!
//! What this cannot see: anything only init finds out, such as a Landlock
//! path missing in the container or an executable that fails to load (a
//! missing ELF interpreter, a bad `#!` line), and libcontainer's own late
//! refusals (mount, device and cgroup errors). [`find_executable`] looks for
//! `process.args[0]` from the host, the way init resolves it, and says when
//! it cannot tell (the path lies under a mount that is not a bind).
use std::path::PathBuf;

use serde::Serialize;

/// The effective policy of a bundle, in the terms `docs/runsbx.1.md` uses.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub bundle: PathBuf,
    pub rootfs: PathBuf,
    pub process: ProcessFacts,
    pub namespaces: Vec<Namespace>,
    pub user: UserFacts,
    pub capabilities: Capabilities,
    pub no_new_privs: NoNewPrivs,
    pub root: RootFacts,
    pub mounts: Vec<MountFacts>,
    pub landlock: LandlockFacts,
    pub seccomp: Option<SeccompFacts>,
    pub rlimits: Vec<Rlimit>,
    pub cgroup: CgroupLimits,
    /// Names only: values may hold secrets.
    pub env: Vec<String>,
    /// The HTTP proxy the environment names when it is `--allow-net`'s
    /// (`http://127.0.0.1:3128`): the only TCP destination of such a bundle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    pub warnings: Vec<Warning>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcessFacts {
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub executable: Executable,
}

/// What [`find_executable`] found for `process.args[0]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Executable {
    /// Found, as a regular file with an execute bit, at this container path.
    Found { path: PathBuf },
    /// Not looked for to the end: the reason (a tmpfs or proc mount in the way).
    NotChecked { reason: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Namespace {
    /// The OCI name (`pid`, `network`, `mount`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(flatten)]
    pub mode: NsMode,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum NsMode {
    New,
    /// Joined by path; `host` when the path is runsbx's own namespace.
    Joined {
        path: PathBuf,
        host: bool,
    },
    /// Not in the spec: the container shares the host's.
    Host,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserFacts {
    pub uid: u32,
    pub gid: u32,
    pub additional_gids: Vec<u32>,
    pub uid_mappings: Vec<Mapping>,
    pub gid_mappings: Vec<Mapping>,
    /// The uid the workload has on the host; `None` when it cannot be told
    /// (a user namespace joined by path, or a uid no mapping covers).
    pub host_uid: Option<u32>,
    pub host_root: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Mapping {
    pub container_id: u32,
    pub host_id: u32,
    pub size: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    pub bounding: Vec<String>,
    pub effective: Vec<String>,
    pub permitted: Vec<String>,
    pub inheritable: Vec<String>,
    pub ambient: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NoNewPrivs {
    /// `process.noNewPrivileges`.
    pub spec: bool,
    /// What the workload gets: runsbx also sets it whenever Landlock applies.
    pub effective: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RootFacts {
    pub readonly: bool,
    /// Rights Landlock leaves at `/`; `None` without Landlock.
    pub landlock: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountFacts {
    pub destination: PathBuf,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub source: Option<PathBuf>,
    pub options: Vec<String>,
    /// A bind mount: its content is the host's `source`.
    pub bind: bool,
    pub readonly: bool,
    /// The filesystem rights every Landlock layer leaves at the destination
    /// (the intersection of the layers); `None` without Landlock.
    pub landlock: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LandlockFacts {
    /// The kernel's ABI, `None` without Landlock.
    pub kernel_abi: Option<u8>,
    pub layers: Vec<LandlockLayer>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LandlockLayer {
    /// `operator default` or `bundle`.
    pub source: &'static str,
    pub required_abi: u8,
    pub best_effort: bool,
    pub handled_fs: Vec<String>,
    pub handled_net: Vec<String>,
    pub scoped: Vec<String>,
    pub tcp_ports: Vec<u16>,
    /// What this kernel cannot restrict and best effort drops (name, ABI).
    pub dropped: Vec<(String, u8)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeccompFacts {
    pub default_action: String,
    pub default_errno: Option<u32>,
    pub architectures: Vec<String>,
    /// Syscall names allowed without a condition (ALLOW or LOG).
    pub allowed_syscalls: usize,
    /// Syscall names given another action without a condition.
    pub denied_syscalls: usize,
    /// Rules with argument conditions.
    pub conditional_rules: usize,
    /// Names no syscall table knows, skipped (as runc skips them).
    pub unknown_syscalls: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rlimit {
    #[serde(rename = "type")]
    pub kind: String,
    pub soft: u64,
    pub hard: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CgroupLimits {
    pub memory_limit: Option<i64>,
    pub memory_swap: Option<i64>,
    pub pids_limit: Option<i64>,
    pub cpu_shares: Option<u64>,
    pub cpu_quota: Option<i64>,
    pub cpu_period: Option<u64>,
    pub cpus: Option<String>,
}

/// A weak spot, with a stable code for scripts and tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    pub code: &'static str,
    pub message: String,
}

mod executable;
mod gather;
mod landlock;
mod text;
mod warnings;

pub use executable::{find_executable, ExecutableError};
pub use gather::{explain, host_id, Host};
pub use warnings::warnings;

#[cfg(test)]
#[path = "../explain_tests.rs"]
mod tests;
