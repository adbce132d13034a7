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
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use libcontainer::oci_spec::runtime::{
    LinuxIdMapping, LinuxNamespaceType, LinuxSeccomp, LinuxSeccompAction, Spec,
};
use runsbx_policy::landlock::{FsRight, LandlockDefault, LandlockPolicy};
use runsbx_policy::seccomp::SeccompProgram;
use serde::Serialize;

use crate::error::Result;
use crate::spec::facts::{self, NsFact};
use crate::spec::{Bundle, SandboxPolicy};

/// What `create` checks before any fork, in the same order and with the
/// same functions, so `check` and `create` refuse a bundle with one message.
pub fn validate(dir: &Path, operator: &LandlockDefault) -> Result<Validated> {
    let bundle = Bundle::load(dir)?;
    let policy = SandboxPolicy::from_bundle(&bundle, operator)?;
    let seccomp = policy.compile_seccomp()?;
    Ok(Validated {
        bundle,
        policy,
        seccomp,
        operator_layer: *operator != LandlockDefault::Off,
    })
}

pub struct Validated {
    pub bundle: Bundle,
    pub policy: SandboxPolicy,
    pub seccomp: Option<SeccompProgram>,
    /// Whether `policy.landlock[0]` is the operator's layer.
    pub operator_layer: bool,
}

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
    /// What the workload gets: runsbx sets it whenever seccomp or Landlock apply.
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

/// Directories holding what the workload (or the host, through a bind)
/// executes or trusts: a writable bind over one lets the workload change
/// host binaries, libraries or configuration.
const RUNTIME_PATHS: &[&str] = &[
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/boot", "/opt",
];

/// Rights that let the workload change what is at a path.
const WRITE_RIGHTS: &[FsRight] = &[
    FsRight::WriteFile,
    FsRight::Truncate,
    FsRight::RemoveFile,
    FsRight::RemoveDir,
    FsRight::MakeReg,
    FsRight::MakeSym,
    FsRight::MakeDir,
    FsRight::Refer,
];

/// Host facts [`explain`] needs, gathered by the caller.
pub struct Host {
    pub kernel_abi: Option<u8>,
    /// Whether a namespace path names one of runsbx's own (the host's) namespaces.
    pub is_host_namespace: fn(&Path, LinuxNamespaceType) -> bool,
}

impl Host {
    pub fn current() -> Self {
        Self {
            kernel_abi: crate::landlock::kernel_abi(),
            is_host_namespace,
        }
    }
}

pub use crate::spec::facts::is_host_namespace;

const NS_KINDS: &[LinuxNamespaceType] = &[
    LinuxNamespaceType::User,
    LinuxNamespaceType::Pid,
    LinuxNamespaceType::Network,
    LinuxNamespaceType::Mount,
    LinuxNamespaceType::Ipc,
    LinuxNamespaceType::Uts,
    LinuxNamespaceType::Cgroup,
    LinuxNamespaceType::Time,
];

/// The OCI spelling of a spec value (`network`, `CAP_SYS_ADMIN`, `RLIMIT_NOFILE`).
fn oci_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".into(),
    }
}

pub fn explain(v: &Validated, executable: Executable, host: &Host) -> Explanation {
    let spec = &v.bundle.spec;
    let linux = spec.linux().clone().unwrap_or_default();
    let process = spec.process().clone().unwrap_or_default();

    let namespaces = namespaces(spec, host);
    let has_userns = namespaces
        .iter()
        .any(|n| n.kind == "user" && n.mode != NsMode::Host);
    let joined_userns = namespaces
        .iter()
        .any(|n| n.kind == "user" && matches!(n.mode, NsMode::Joined { .. }));
    let mappings = |m: &Option<Vec<LinuxIdMapping>>| -> Vec<Mapping> {
        m.iter()
            .flatten()
            .map(|m| Mapping {
                container_id: m.container_id(),
                host_id: m.host_id(),
                size: m.size(),
            })
            .collect()
    };
    let uid_mappings = mappings(linux.uid_mappings());
    let uid = process.user().uid();
    let host_uid = host_id(uid, has_userns, joined_userns, &uid_mappings);
    let user = UserFacts {
        uid,
        gid: process.user().gid(),
        additional_gids: process.user().additional_gids().clone().unwrap_or_default(),
        uid_mappings,
        gid_mappings: mappings(linux.gid_mappings()),
        host_uid,
        host_root: host_uid == Some(0),
    };

    let caps = process.capabilities().clone().unwrap_or_default();
    let names = |set: &Option<libcontainer::oci_spec::runtime::Capabilities>| {
        let mut v: Vec<String> = set.iter().flatten().map(oci_name).collect();
        v.sort();
        v
    };
    let capabilities = Capabilities {
        bounding: names(caps.bounding()),
        effective: names(caps.effective()),
        permitted: names(caps.permitted()),
        inheritable: names(caps.inheritable()),
        ambient: names(caps.ambient()),
    };

    let nnp_spec = process.no_new_privileges().unwrap_or(false);
    let no_new_privs = NoNewPrivs {
        spec: nnp_spec,
        effective: nnp_spec || v.policy.seccomp.is_some() || !v.policy.landlock.is_empty(),
    };

    let layers = &v.policy.landlock;
    let access = |path: &Path| effective_access(layers, host.kernel_abi, path).map(right_names);
    let root = RootFacts {
        readonly: spec
            .root()
            .as_ref()
            .and_then(|r| r.readonly())
            .unwrap_or(false),
        landlock: access(Path::new("/")),
    };
    let mounts: Vec<MountFacts> = spec
        .mounts()
        .iter()
        .flatten()
        .map(|m| MountFacts {
            destination: m.destination().clone(),
            kind: m.typ().clone(),
            source: m.source().clone(),
            options: m.options().clone().unwrap_or_default(),
            bind: facts::is_bind(m),
            readonly: facts::is_readonly(m),
            landlock: access(m.destination()),
        })
        .collect();

    let landlock = LandlockFacts {
        kernel_abi: host.kernel_abi,
        layers: landlock_layers(layers, v.operator_layer, host.kernel_abi),
    };
    let seccomp = v
        .policy
        .seccomp
        .as_ref()
        .map(|s| seccomp_facts(s, v.seccomp.as_ref()));

    let rlimits = process
        .rlimits()
        .iter()
        .flatten()
        .map(|r| Rlimit {
            kind: oci_name(&r.typ()),
            soft: r.soft(),
            hard: r.hard(),
        })
        .collect();
    let res = linux.resources().clone().unwrap_or_default();
    let memory = res.memory().unwrap_or_default();
    let cpu = res.cpu().clone().unwrap_or_default();
    let cgroup = CgroupLimits {
        memory_limit: memory.limit(),
        memory_swap: memory.swap(),
        pids_limit: res.pids().as_ref().map(|p| p.limit()),
        cpu_shares: cpu.shares(),
        cpu_quota: cpu.quota(),
        cpu_period: cpu.period(),
        cpus: cpu.cpus().clone(),
    };
    let env = process
        .env()
        .iter()
        .flatten()
        .map(|e| e.split('=').next().unwrap_or_default().to_string())
        .collect();

    let mut e = Explanation {
        bundle: v.bundle.dir.clone(),
        rootfs: v.bundle.rootfs(),
        process: ProcessFacts {
            args: process.args().clone().unwrap_or_default(),
            cwd: process.cwd().clone(),
            executable,
        },
        namespaces,
        user,
        capabilities,
        no_new_privs,
        root,
        mounts,
        landlock,
        seccomp,
        rlimits,
        cgroup,
        env,
        warnings: Vec::new(),
    };
    e.warnings = warnings(&e);
    e
}

fn namespaces(spec: &Spec, host: &Host) -> Vec<Namespace> {
    NS_KINDS
        .iter()
        .map(|&kind| {
            let mode = match facts::namespace(spec, kind) {
                NsFact::Host => NsMode::Host,
                NsFact::New => NsMode::New,
                NsFact::Joined(p) => NsMode::Joined {
                    path: p.to_path_buf(),
                    host: (host.is_host_namespace)(p, kind),
                },
            };
            Namespace {
                kind: oci_name(&kind),
                mode,
            }
        })
        .collect()
}

/// The host uid of container uid `uid`. Without a user namespace it is the
/// same number; in a new one, what the mappings say (`None` when no mapping
/// covers it); in a joined one it cannot be told from the spec.
pub fn host_id(uid: u32, has_userns: bool, joined: bool, maps: &[Mapping]) -> Option<u32> {
    if !has_userns {
        return Some(uid);
    }
    if joined {
        return None;
    }
    maps.iter().find_map(|m| {
        let offset = uid.checked_sub(m.container_id)?;
        (offset < m.size).then(|| m.host_id.checked_add(offset))?
    })
}

/// Rights a layer really handles on this kernel: with best effort, what the
/// kernel's ABI lacks is dropped (and so allowed); without, preflight has
/// already refused a policy the kernel cannot enforce.
fn handled_here(layer: &LandlockPolicy, kernel_abi: Option<u8>) -> BTreeSet<FsRight> {
    let abi = kernel_abi.unwrap_or(0);
    layer
        .handled_fs
        .iter()
        .copied()
        .filter(|r| !layer.best_effort || r.abi() <= abi)
        .collect()
}

/// The filesystem rights this kernel's Landlock knows (every right without
/// Landlock, where nothing is restricted). Rights of later ABIs are left out
/// of what [`layer_access`] reports: no layer can restrict them here.
fn known_rights(kernel_abi: Option<u8>) -> BTreeSet<FsRight> {
    FsRight::up_to_abi(kernel_abi.unwrap_or(u8::MAX)).collect()
}

/// The filesystem rights one layer leaves at `path`: what it does not handle,
/// plus what a rule on `path` or an ancestor grants (grants are inherited
/// down the tree), among the rights this kernel knows.
pub fn layer_access(
    layer: &LandlockPolicy,
    kernel_abi: Option<u8>,
    path: &Path,
) -> BTreeSet<FsRight> {
    let handled = handled_here(layer, kernel_abi);
    let known = known_rights(kernel_abi);
    let mut rights: BTreeSet<FsRight> = known
        .iter()
        .copied()
        .filter(|r| !handled.contains(r))
        .collect();
    for rule in &layer.path_beneath {
        if rule.paths.iter().any(|p| path.starts_with(p)) {
            rights.extend(rule.allowed.iter().copied().filter(|r| known.contains(r)));
        }
    }
    rights
}

/// What all layers together leave at `path` (layers intersect); `None`
/// when there is no layer.
pub fn effective_access(
    layers: &[LandlockPolicy],
    kernel_abi: Option<u8>,
    path: &Path,
) -> Option<BTreeSet<FsRight>> {
    layers
        .iter()
        .map(|l| layer_access(l, kernel_abi, path))
        .reduce(|a, b| &a & &b)
}

fn right_names(rights: BTreeSet<FsRight>) -> Vec<String> {
    rights.iter().map(|r| r.name().to_string()).collect()
}

/// Rights in words: `all` (every right of ABI `kernel_abi`), `none`, or the
/// names with `read_file read_dir` shortened to `read` and the seven
/// `make_*` to `make_*`.
pub fn describe_rights(names: &[String], kernel_abi: Option<u8>) -> String {
    let known = known_rights(kernel_abi);
    if names.len() >= known.len() && known.iter().all(|r| names.iter().any(|n| n == r.name())) {
        return "all".into();
    }
    if names.is_empty() {
        return "none".into();
    }
    let has = |n: &str| names.iter().any(|x| x == n);
    let mut out: Vec<&str> = Vec::new();
    let read = has("read_file") && has("read_dir");
    let makes = [
        "make_char",
        "make_dir",
        "make_reg",
        "make_sock",
        "make_fifo",
        "make_block",
        "make_sym",
    ];
    let all_make = makes.iter().all(|m| has(m));
    if read {
        out.push("read");
    }
    for n in names {
        let n = n.as_str();
        if (read && (n == "read_file" || n == "read_dir")) || (all_make && makes.contains(&n)) {
            continue;
        }
        out.push(n);
    }
    if all_make {
        out.push("make_*");
    }
    out.join(", ")
}

fn landlock_layers(
    layers: &[LandlockPolicy],
    operator_layer: bool,
    kernel_abi: Option<u8>,
) -> Vec<LandlockLayer> {
    layers
        .iter()
        .enumerate()
        .map(|(i, l)| LandlockLayer {
            source: if operator_layer && i == 0 {
                "operator default"
            } else {
                "bundle"
            },
            required_abi: l.required_abi(),
            best_effort: l.best_effort,
            handled_fs: l.handled_fs.iter().map(|r| r.name().into()).collect(),
            handled_net: l.handled_net.iter().map(|r| r.name().into()).collect(),
            scoped: l.scoped.iter().map(|r| r.name().into()).collect(),
            tcp_ports: l.net_port.iter().flat_map(|r| r.ports.clone()).collect(),
            dropped: if l.best_effort {
                l.beyond_abi(kernel_abi.unwrap_or(0))
                    .into_iter()
                    .map(|(n, a)| (n.to_string(), a))
                    .collect()
            } else {
                Vec::new()
            },
        })
        .collect()
}

fn seccomp_facts(s: &LinuxSeccomp, program: Option<&SeccompProgram>) -> SeccompFacts {
    let allows = |a: LinuxSeccompAction| {
        matches!(
            a,
            LinuxSeccompAction::ScmpActAllow | LinuxSeccompAction::ScmpActLog
        )
    };
    let mut allowed = BTreeSet::new();
    let mut denied = BTreeSet::new();
    let mut conditional = 0;
    for rule in s.syscalls().iter().flatten() {
        if rule.args().as_ref().is_some_and(|a| !a.is_empty()) {
            conditional += 1;
            continue;
        }
        let set = if allows(rule.action()) {
            &mut allowed
        } else {
            &mut denied
        };
        set.extend(rule.names().iter().cloned());
    }
    SeccompFacts {
        default_action: oci_name(&s.default_action()),
        default_errno: s.default_errno_ret(),
        architectures: s.architectures().iter().flatten().map(oci_name).collect(),
        allowed_syscalls: allowed.len(),
        denied_syscalls: denied.len(),
        conditional_rules: conditional,
        unknown_syscalls: program
            .map(|p| p.unknown_syscalls.clone())
            .unwrap_or_default(),
    }
}

/// The weak spots of an explained bundle.
pub fn warnings(e: &Explanation) -> Vec<Warning> {
    let mut w = Vec::new();
    let mut warn = |code, message: String| w.push(Warning { code, message });

    for ns in &e.namespaces {
        let host = match &ns.mode {
            NsMode::Host => true,
            NsMode::Joined { host, .. } => *host,
            NsMode::New => false,
        };
        if !host {
            continue;
        }
        match ns.kind.as_str() {
            "network" => warn(
                "host-network",
                "shares the host's network namespace: the workload can reach host and \
                 outside networks and abstract unix sockets"
                    .into(),
            ),
            "pid" => warn(
                "host-pid",
                "shares the host's pid namespace: the workload sees host processes \
                 (and can signal those of its uid)"
                    .into(),
            ),
            "ipc" => warn(
                "host-ipc",
                "shares the host's ipc namespace (System V IPC, POSIX message queues)".into(),
            ),
            "mount" => warn("host-mount", "shares the host's mount namespace".into()),
            "user" => warn(
                "no-user-namespace",
                "no user namespace: container uids are host uids, and kept \
                 capabilities are host capabilities"
                    .into(),
            ),
            _ => {}
        }
    }
    if e.user.host_root {
        warn(
            "host-root",
            format!(
                "the workload runs as uid {} in the container, which is root (uid 0) on the host",
                e.user.uid
            ),
        );
    }
    let c = &e.capabilities;
    let sets: [(&str, &Vec<String>); 5] = [
        ("bounding", &c.bounding),
        ("effective", &c.effective),
        ("permitted", &c.permitted),
        ("inheritable", &c.inheritable),
        ("ambient", &c.ambient),
    ];
    let all: BTreeSet<&String> = sets.iter().flat_map(|(_, v)| v.iter()).collect();
    for cap in all {
        let in_sets: Vec<&str> = sets
            .iter()
            .filter(|(_, v)| v.contains(cap))
            .map(|(n, _)| *n)
            .collect();
        warn(
            "capability",
            format!("keeps {cap} ({})", in_sets.join(", ")),
        );
    }
    match &e.seccomp {
        None => warn(
            "no-seccomp",
            "no seccomp profile: every syscall reaches the kernel".into(),
        ),
        Some(s) if s.default_action == "SCMP_ACT_ALLOW" || s.default_action == "SCMP_ACT_LOG" => {
            warn(
                "seccomp-allow-default",
                format!(
                    "seccomp allows by default ({}): only the {} listed syscalls are denied",
                    s.default_action, s.denied_syscalls
                ),
            )
        }
        Some(_) => {}
    }
    if e.landlock.layers.is_empty() {
        warn(
            "no-landlock",
            "no Landlock policy: file access is limited by mounts and permissions only".into(),
        );
    }
    for l in &e.landlock.layers {
        if l.dropped.is_empty() {
            continue;
        }
        let what: Vec<String> = l
            .dropped
            .iter()
            .map(|(n, a)| format!("{n} (needs ABI {a})"))
            .collect();
        let kernel = match e.landlock.kernel_abi {
            Some(abi) => format!("kernel ABI {abi}"),
            None => "this kernel (no Landlock)".into(),
        };
        warn(
            "landlock-downgrade",
            format!(
                "{} Landlock layer is best effort: {kernel} cannot restrict {}, which are left unrestricted",
                l.source,
                what.join(", ")
            ),
        );
    }
    for m in &e.mounts {
        if m.readonly || !is_runtime_path(&m.destination) {
            continue;
        }
        if !m.bind {
            continue;
        }
        let writable = match &m.landlock {
            None => true,
            Some(names) => WRITE_RIGHTS
                .iter()
                .any(|r| names.iter().any(|n| n == r.name())),
        };
        if writable {
            warn(
                "writable-runtime-path",
                format!(
                    "{} is a writable bind of {} over a runtime path: the workload can change what \
                     the host (and it) executes or trusts",
                    m.destination.display(),
                    m.source.as_deref().unwrap_or(Path::new("?")).display()
                ),
            );
        }
    }
    w
}

fn is_runtime_path(dest: &Path) -> bool {
    dest == Path::new("/") || RUNTIME_PATHS.iter().any(|p| dest.starts_with(p))
}

mod executable;
mod text;

pub use executable::find_executable;

#[cfg(test)]
#[path = "explain_tests.rs"]
mod tests;
