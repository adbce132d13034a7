//! Policies runsbx writes itself: the operator's `auto` policy, derived from a
//! spec's own mounts, and the `runsbx gen` sandbox policy.
//!
//! `auto` mirrors what the mounts already say (read-only stays read-only,
//! read-write stays read-write) so that podman and containerd containers run
//! under Landlock unchanged. What it adds over the mount flags: with a
//! read-only root, nothing outside the read-write mounts can be created,
//! removed, renamed or linked, even where a mount flag would allow it (a
//! remount is the classic way around those); no device ioctls outside `/dev`
//! mounts and listed devices; and where the spec shares the host's pid or
//! network namespace, the signal or abstract-socket scope. It cannot take
//! rights away from a path beneath a wider rule (Landlock unions grants down
//! the tree: a `noexec` mount under a read-only root still gets `execute`
//! from `/`), so with a read-write root it restricts little on the
//! filesystem: the mount flags and masked paths keep doing that job.
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use oci_spec::runtime::{LinuxNamespaceType, Spec};

use super::{
    FsRight, LandlockError, LandlockPolicy, NetPortRule, NetRight, PathBeneathRule, ScopeRight,
};
use crate::spec_facts;

/// The ABI whose filesystem rights `auto` and `sandbox` handle: 5, the first
/// with `ioctl_dev`. Later ABIs add no filesystem right runsbx relies on
/// (`resolve_unix` is left to seccomp, which denies `socket` in the sandbox).
const FS_ABI: u8 = 5;

/// procfs files every sandbox may read (see [`LandlockPolicy::sandbox`]).
pub const PROC_FILES: &[&str] = &["/proc/stat", "/proc/meminfo", "/proc/cpuinfo"];
/// The workload's own procfs directory, which the sandbox may read.
pub const PROC_SELF: &str = "/proc/self";
/// What [`PROC_SELF`] resolves to when the Executor opens it for the rule:
/// the Executor runs in init, which execs the workload, and init is PID 1 of
/// the sandbox's own pid namespace.
pub const PROC_SELF_RESOLVED: &str = "/proc/1";
/// The child of [`PROC_SELF_RESOLVED`] that is pinned to pin it (see
/// [`proc_pins`]): a file that is read-only by its mode anyway.
pub const PROC_SELF_PIN: &str = "/proc/1/status";

/// The procfs paths whose dentries a sandbox must pin for its Landlock
/// grants to last (its bundle binds each onto itself: `linux.readonlyPaths`).
///
/// Why: a Landlock rule is tied to the inode it was made on (Landlock holds
/// that inode), and procfs gives a fresh inode to every fresh lookup. Once
/// the kernel reclaims an unused procfs dentry (memory pressure;
/// `drop_caches`), the next lookup makes a new dentry with a new inode that
/// carries no rule, and the grant is gone for the rest of the run (reads
/// fail with EACCES). A mount holds its root and mountpoint dentries, so a
/// bind of the path onto itself keeps that dentry, and its inode, for the
/// container's life.
///
/// `/proc/1` is pinned through its child [`PROC_SELF_PIN`]: a dentry holds
/// its parent, so the child's bind keeps `/proc/1` too, without making the
/// rest of `/proc/1` a read-only mount (a write to `/proc/self/oom_score_adj`
/// keeps failing with Landlock's EACCES, not EROFS). Files below `/proc/1`
/// need no pin of their own: the rule is checked on their ancestors. Rules
/// on a mount's root (`/proc` itself) need none: a root dentry is never
/// reclaimed.
pub fn proc_pins() -> impl Iterator<Item = &'static str> {
    std::iter::once(PROC_SELF_PIN).chain(PROC_FILES.iter().copied())
}

/// The devices libcontainer creates in every container (its `default_devices`),
/// so a rule naming them cannot fail on a missing path.
const DEFAULT_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

fn handled_fs() -> BTreeSet<FsRight> {
    FsRight::up_to_abi(FS_ABI).collect()
}

fn set<T: Ord + Copy>(items: &[T]) -> BTreeSet<T> {
    items.iter().copied().collect()
}

fn read_exec() -> BTreeSet<FsRight> {
    set(&[FsRight::Execute, FsRight::ReadFile, FsRight::ReadDir])
}

/// The operator's default policy for `spec`, before any policy of the bundle:
///
/// | what | rights |
/// |---|---|
/// | `/`, `root.readonly: true` | read, execute |
/// | `/`, otherwise | all (ABI 5 set) |
/// | mount with `ro` | read, execute (no execute with `noexec`) |
/// | mount without `ro` | all (no execute with `noexec`) |
/// | `proc` mount | read, `write_file` (`/proc/self/...` knobs); read only with `ro` |
/// | `sysfs`, `cgroup`, `cgroup2` mount | read; with `rw`, also `write_file`, `truncate`, `make_dir`, `remove_dir` (cgroup delegation) |
/// | `/dev/{null,zero,full,random,urandom}` | read, `write_file` |
/// | `/dev/tty`, `linux.devices[]` | read, `write_file`, `ioctl_dev` |
///
/// Handled: every filesystem right up to ABI 5; no network right (the
/// network namespace is the spec's business). Scopes: `signal` when the
/// spec has no pid namespace, `abstract_unix_socket` when it has no network
/// namespace (a namespace joined by path counts as present). Not best effort.
///
/// A later mount of the same destination replaces an earlier one's rights, as
/// the later mount hides the earlier. Mount destinations with `..` get no rule.
pub fn auto(spec: &Spec) -> LandlockPolicy {
    let all = handled_fs();
    let mut grants: Vec<(PathBuf, BTreeSet<FsRight>)> = Vec::new();
    let mut grant = |path: PathBuf, rights: BTreeSet<FsRight>| {
        grants.retain(|(p, _)| *p != path);
        grants.push((path, rights));
    };

    let root_ro = spec
        .root()
        .as_ref()
        .and_then(|r| r.readonly())
        .unwrap_or(false);
    grant(
        PathBuf::from("/"),
        if root_ro { read_exec() } else { all.clone() },
    );

    for mount in spec.mounts().iter().flatten() {
        let Some(dest) = container_path(mount.destination()) else {
            continue;
        };
        let options = || mount.options().iter().flatten().map(String::as_str);
        let ro = spec_facts::options_readonly(options());
        let noexec = spec_facts::options_last(options(), "noexec", "exec").unwrap_or(false);
        let read = set(&[FsRight::ReadFile, FsRight::ReadDir]);
        let mut rights = match mount.typ().as_deref() {
            Some("proc") if ro => read,
            Some("proc") => &read | &set(&[FsRight::WriteFile]),
            Some("sysfs" | "cgroup" | "cgroup2") if ro => read,
            Some("sysfs" | "cgroup" | "cgroup2") => {
                let write = [
                    FsRight::WriteFile,
                    FsRight::Truncate,
                    FsRight::MakeDir,
                    FsRight::RemoveDir,
                ];
                &read | &set(&write)
            }
            _ if ro => read_exec(),
            _ => all.clone(),
        };
        if noexec {
            rights.remove(&FsRight::Execute);
        }
        grant(dest, rights);
    }

    let rw_dev = set(&[FsRight::ReadFile, FsRight::WriteFile]);
    let tty = set(&[FsRight::ReadFile, FsRight::WriteFile, FsRight::IoctlDev]);
    for dev in DEFAULT_DEVICES {
        grant(
            PathBuf::from(dev),
            if *dev == "/dev/tty" {
                tty.clone()
            } else {
                rw_dev.clone()
            },
        );
    }
    let devices = spec
        .linux()
        .as_ref()
        .and_then(|l| l.devices().clone())
        .unwrap_or_default();
    for dev in &devices {
        if let Some(path) = container_path(dev.path()) {
            grant(path, tty.clone());
        }
    }

    let has_ns = |kind| spec_facts::namespace(spec, kind) != spec_facts::NsFact::Host;
    let mut scoped = BTreeSet::new();
    if !has_ns(LinuxNamespaceType::Pid) {
        scoped.insert(ScopeRight::Signal);
    }
    if !has_ns(LinuxNamespaceType::Network) {
        scoped.insert(ScopeRight::AbstractUnixSocket);
    }

    LandlockPolicy {
        handled_fs: all,
        handled_net: BTreeSet::new(),
        scoped,
        path_beneath: group(grants),
        net_port: Vec::new(),
        best_effort: false,
    }
}

/// Which of two opposite mount options comes last, if either appears.
/// A spec path as an absolute container path: relative destinations are
/// taken from `/` as libcontainer does; `.` is dropped; `..` refuses.
fn container_path(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// One rule per distinct set of rights, in first-seen order.
fn group(grants: Vec<(PathBuf, BTreeSet<FsRight>)>) -> Vec<PathBeneathRule> {
    let mut rules: Vec<PathBeneathRule> = Vec::new();
    for (path, allowed) in grants {
        match rules.iter_mut().find(|r| r.allowed == allowed) {
            Some(rule) => rule.paths.push(path),
            None => rules.push(PathBeneathRule {
                allowed,
                paths: vec![path],
            }),
        }
    }
    rules
}

impl LandlockPolicy {
    /// The policy `runsbx gen` writes: `read_exec` paths readable and
    /// executable, `read_write` paths readable and writable (no symlinks made) but not
    /// executable (with seccomp denying exec anyway, nothing the workload
    /// writes should run), `/dev/null` writable, `/dev/{zero,full,random,urandom}`
    /// readable, `/proc/self` and `/proc/{stat,meminfo,cpuinfo}` readable, every TCP bind and connect denied, abstract unix sockets and
    /// signals scoped to the sandbox. Requires ABI 6; not best effort.
    ///
    /// Paths must be absolute ([`LandlockPolicy::validate`] checks). A
    /// `read_write` path above a `read_exec` one widens it: see
    /// [`LandlockPolicy::widened`].
    pub fn sandbox(read_exec_paths: &[PathBuf], read_write_paths: &[PathBuf]) -> Self {
        use FsRight::*;
        let rw: BTreeSet<FsRight> = [
            ReadFile, ReadDir, WriteFile, Truncate, RemoveDir, RemoveFile,
        ]
        .into_iter()
        // No MakeSym: a symlink in the workdir is resolved by the host programs
        // that read it with host rights (see profile.rs, symlink); seccomp
        // refuses symlink too.
        .chain([MakeDir, MakeReg, MakeSock, MakeFifo, Refer])
        .collect();
        let mut grants = Vec::new();
        grants.extend(read_exec_paths.iter().map(|p| (p.clone(), read_exec())));
        grants.extend(read_write_paths.iter().map(|p| (p.clone(), rw.clone())));
        // ioctl_dev on /dev/null: Python's open() asks isatty() (TCGETS) of
        // every file it opens in text mode, and `open(os.devnull, "w")` is how
        // scripts silence output. Without the right Landlock answered EACCES
        // and logged a denial for each (numpy's test suite: --report-denials);
        // the null driver has no ioctl, so the kernel now answers ENOTTY, as on
        // any host. Which requests reach the driver at all is seccomp's
        // allowlist (eight read-only terminal and fd requests); the other
        // devices stay without the right.
        grants.push((
            PathBuf::from("/dev/null"),
            set(&[ReadFile, WriteFile, IoctlDev]),
        ));
        for dev in ["/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"] {
            grants.push((PathBuf::from(dev), set(&[ReadFile])));
        }
        // The workload's own /proc entry, read-only: glibc reads
        // /proc/self/maps (pthread_getattr_np, for the main thread's stack),
        // OpenBLAS and psutil-style code /proc/self/status, Python's
        // resource reports /proc/self/statm. The rule is made inside the
        // container, where /proc/self is PID 1 of a pid namespace that holds
        // the workload alone, so it names no other process; a magic link
        // below it (root, cwd, fd/N) is checked at its target like any path.
        // No write right: /proc/self/mem, attr/ and oom_score_adj stay shut.
        grants.push((PathBuf::from(PROC_SELF), set(&[ReadFile, ReadDir])));
        // System-wide counters that sizing code reads: glibc's get_nprocs
        // (os.cpu_count, OpenBLAS's thread count) falls back to /proc/stat
        // without /sys; numpy and pandas read meminfo, cpuinfo for CPU
        // features. The host's totals, as any container shows; no process
        // of the host is named in them.
        for info in PROC_FILES {
            grants.push((PathBuf::from(info), set(&[ReadFile])));
        }
        LandlockPolicy {
            handled_fs: handled_fs(),
            handled_net: set(&[NetRight::BindTcp, NetRight::ConnectTcp]),
            scoped: set(&[ScopeRight::AbstractUnixSocket, ScopeRight::Signal]),
            path_beneath: group(grants),
            net_port: Vec::new(),
            best_effort: false,
        }
    }
}

impl LandlockPolicy {
    /// Takes the execute right away from every rule, then grants read and
    /// execute on `paths` alone (for a sandbox: the workload binary and its
    /// ELF interpreter, the two files the first execve opens).
    ///
    /// Stops: the workload exec'ing any other program it can read (a shell,
    /// a helper binary next to the interpreter). seccomp cannot tell a later
    /// execve from the runtime's own; Landlock can, by file. Shared libraries
    /// need no execute right: the loader maps them from plain reads.
    pub fn only_execute(mut self, paths: &[PathBuf]) -> Self {
        let mut grants: Vec<(PathBuf, BTreeSet<FsRight>)> = Vec::new();
        for rule in self.path_beneath.drain(..) {
            let mut allowed = rule.allowed;
            allowed.remove(&FsRight::Execute);
            if !allowed.is_empty() {
                grants.extend(rule.paths.into_iter().map(|p| (p, allowed.clone())));
            }
        }
        grants.extend(
            paths
                .iter()
                .map(|p| (p.clone(), set(&[FsRight::Execute, FsRight::ReadFile]))),
        );
        self.path_beneath = group(grants);
        self
    }
}

impl LandlockPolicy {
    /// Grants connect_tcp on `port` alone (`--allow-net`: the proxy's).
    /// TCP bind stays denied, and every other port refuses connect with
    /// EACCES, so the workload reaches nothing but the proxy even on the
    /// loopback of its own network namespace.
    pub fn connect_port(mut self, port: u16) -> Self {
        self.net_port.push(NetPortRule {
            allowed: set(&[NetRight::ConnectTcp]),
            ports: vec![port],
        });
        self
    }

    /// Adds listing `/proc` (read_dir, no file read): ipykernel lists its
    /// children through psutil when it shuts down, which walks `/proc`. In
    /// the sandbox's pid namespace `/proc` lists the sandbox's own processes
    /// alone; what is below stays as unreadable as before, but for
    /// `/proc/self`'s grant.
    pub fn list_proc(mut self) -> Self {
        let mut grants: Vec<(PathBuf, BTreeSet<FsRight>)> = Vec::new();
        for rule in self.path_beneath.drain(..) {
            grants.extend(rule.paths.into_iter().map(|p| (p, rule.allowed.clone())));
        }
        grants.push((PathBuf::from("/proc"), set(&[FsRight::ReadDir])));
        self.path_beneath = group(grants);
        self
    }
}

/// The operator's Landlock setting, applied to every container whatever its
/// bundle says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LandlockDefault {
    /// No operator layer: only a policy from the bundle is enforced.
    #[default]
    Off,
    /// [`auto`] derived from each container's spec; `best_effort` relaxes
    /// the ABI 5 requirement on older kernels (spelt `auto-best-effort`).
    Auto { best_effort: bool },
    /// A fixed policy for every container.
    Policy(LandlockPolicy),
}

impl LandlockDefault {
    /// The policies to enforce for a container, in order: the operator's layer,
    /// then the bundle's. Each becomes its own Landlock layer, and layers only
    /// intersect, so a bundle can narrow the operator's policy but never widen it.
    pub fn layers(&self, spec: &Spec, bundle: Option<LandlockPolicy>) -> Vec<LandlockPolicy> {
        let operator = match self {
            LandlockDefault::Off => None,
            LandlockDefault::Auto { best_effort } => Some(LandlockPolicy {
                best_effort: *best_effort,
                ..auto(spec)
            }),
            LandlockDefault::Policy(p) => Some(p.clone()),
        };
        operator.into_iter().chain(bundle).collect()
    }

    /// Reads the setting from a config-file value: `"off"`, `"auto"`,
    /// `"auto-best-effort"`, or a policy object (the `process.landlock` form).
    /// `field` names the value in errors.
    pub fn from_json(value: &serde_json::Value, field: &str) -> Result<Self, LandlockError> {
        match value {
            serde_json::Value::String(word) => Self::from_word(word, field),
            serde_json::Value::Object(_) => Ok(LandlockDefault::Policy(LandlockPolicy::from_json(
                value, field,
            )?)),
            _ => Err(LandlockError::invalid(
                field,
                "expected \"off\", \"auto\", \"auto-best-effort\" or a policy object",
            )),
        }
    }

    fn from_word(word: &str, field: &str) -> Result<Self, LandlockError> {
        match word {
            "off" => Ok(LandlockDefault::Off),
            "auto" => Ok(LandlockDefault::Auto { best_effort: false }),
            "auto-best-effort" => Ok(LandlockDefault::Auto { best_effort: true }),
            other => Err(LandlockError::invalid(
                field,
                format!("unknown setting \"{}\" (expected off, auto, auto-best-effort or a JSON policy)", other.escape_default()),
            )),
        }
    }
}

/// Parses a flag value: `off`, `auto`, `auto-best-effort`, or a JSON policy
/// object (text starting with `{`). Errors name the field `--landlock`.
impl FromStr for LandlockDefault {
    type Err = LandlockError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        const FIELD: &str = "--landlock";
        if text.trim_start().starts_with('{') {
            let value: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| LandlockError::invalid(FIELD, format!("not JSON: {e}")))?;
            return Self::from_json(&value, FIELD);
        }
        Self::from_word(text, FIELD)
    }
}
