//! Container lifecycle around libcontainer: create, start, state, kill,
//! delete, pause, resume, list, ps, exec, update, events. Each operation
//! loads the state dir, checks the status it needs, calls libcontainer and
//! adds context; one file
//! per operation, as youki's `container/`.

mod create;
mod delete;
mod exec;
mod kill;
mod lock;
mod orphans;
mod pidfd_socket;
mod process;
mod sidecar;
mod start;
mod state;
mod update;

pub use pidfd_socket::PidfdSocket;

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use libcontainer::container::builder::ContainerBuilder;
use libcontainer::container::{Container, ContainerStatus};
use libcontainer::syscall::syscall::SyscallType;
use runsbx_policy::landlock::LandlockDefault;
use serde::Serialize;

use crate::error::{Result, RuntimeError};
use crate::executor::SandboxExecutor;
use crate::report::ReportReader;
use sidecar::{proc_starttime, read_starttime};

impl Runtime {
    pub fn new(root: PathBuf, systemd_cgroup: bool, landlock_default: LandlockDefault) -> Self {
        Self {
            root,
            systemd_cgroup,
            landlock_default,
        }
    }

    fn dir(&self, id: &str) -> PathBuf {
        crate::layout::state_dir(&self.root, id)
    }

    fn ensure_root(&self) -> Result<()> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        let ctx = || format!("state root {}", self.root.display());
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.root)
            .map_err(|e| RuntimeError::io(ctx(), e))?;
        // Stops: another user pre-creating the root (e.g. /tmp/runsbx-<uid>)
        // and planting state or policy records that runsbx would trust.
        let meta = fs::symlink_metadata(&self.root).map_err(|e| RuntimeError::io(ctx(), e))?;
        let euid = nix::unistd::geteuid().as_raw();
        if !meta.is_dir() || meta.uid() != euid || meta.mode() & 0o022 != 0 {
            return Err(RuntimeError::UnsafeRoot {
                root: self.root.clone(),
                euid,
            });
        }
        Ok(())
    }

    /// The cgroup a rootless container has in a delegated subtree, as its
    /// runsbx.json records it (`None`: none, or not found).
    pub fn delegated_cgroup(&self, id: &str) -> Option<String> {
        validate_id(id).ok()?;
        read_starttime(&self.dir(id)).cgroup
    }

    /// The part of libcontainer's builder that create and exec share;
    /// `context` prefixes its errors.
    fn builder(
        &self,
        (root, id): (&Path, &str),
        executor: SandboxExecutor,
        console_socket: Option<&PathBuf>,
        preserve_fds: i32,
        pid_file: Option<&PathBuf>,
        context: String,
    ) -> Result<ContainerBuilder> {
        let lc = |e| RuntimeError::lc(context.clone(), e);
        let mut builder = ContainerBuilder::new(id.to_string(), SyscallType::default())
            .with_executor(executor)
            .with_root_path(root)
            .map_err(lc)?
            .with_console_socket(console_socket)
            .with_preserved_fds(preserve_fds);
        if let Some(p) = pid_file {
            builder = builder.with_pid_file(Some(p)).map_err(lc)?;
        }
        Ok(builder)
    }

    /// Loads a container and brings its status up to date, including the
    /// PID-reuse check libcontainer lacks.
    pub fn load(&self, id: &str) -> Result<Container> {
        validate_id(id)?;
        let dir = self.dir(id);
        if !dir.join("state.json").exists() {
            return Err(RuntimeError::NotFound(id.to_string()));
        }
        let mut c =
            load_state(&dir).map_err(|e| RuntimeError::lc(format!("container {id:?}"), e))?;
        if c.status() != ContainerStatus::Stopped {
            let sidecar = read_starttime(&dir);
            if let (Some(pid), Some(recorded)) = (c.pid(), sidecar.starttime) {
                if proc_starttime(pid.as_raw()) != Some(recorded) {
                    c.set_status(ContainerStatus::Stopped);
                }
            }
        }
        Ok(c)
    }
}

/// Moves this process into a mount namespace of its own (a slave of the
/// host's), where a config view (rootless::ConfigView) is seen by it alone.
fn private_mount_namespace() -> Result<()> {
    use nix::mount::{mount, MsFlags};
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)
        .map_err(|e| RuntimeError::sys("unshare mount namespace", e))?;
    mount::<str, str, str, str>(None, "/", None, MsFlags::MS_REC | MsFlags::MS_SLAVE, None)
        .map_err(|e| RuntimeError::sys("make / a slave mount", e))
}

/// Sets this process's OOM score adjustment to what the container's process
/// asks (`what`), before libcontainer sets it the same way: libcontainer's
/// own failure reaches the caller as "failed to create container: io error",
/// without the file or the errno. Lowering the score needs CAP_SYS_RESOURCE,
/// which containerd's CRI needs for every pod sandbox (-998) and a kubelet's
/// Guaranteed pods (-997); a containerd that runs without it (in a container)
/// needs `restrict_oom_score_adj`. Children inherit the score.
fn set_oom_score_adj(adj: Option<i32>, what: &str) -> Result<()> {
    let Some(adj) = adj else { return Ok(()) };
    fs::write("/proc/self/oom_score_adj", adj.to_string()).map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::PermissionDenied => " (lowering it needs CAP_SYS_RESOURCE)",
            _ => "",
        };
        RuntimeError::io(format!("{what} {adj}: /proc/self/oom_score_adj{hint}"), e)
    })
}

/// Longest accepted container id (a file name, so at most NAME_MAX, minus
/// room for the temporary report FIFO's prefix and suffix).
const MAX_ID_LEN: usize = 200;

#[derive(Debug, Clone)]
pub struct Runtime {
    pub root: PathBuf,
    pub systemd_cgroup: bool,
    /// The operator's Landlock layer for every container (`--landlock-default`
    /// or /etc/runsbx/config.json).
    pub landlock_default: LandlockDefault,
}

#[derive(Debug, Default)]
pub struct CreateOptions {
    pub id: String,
    pub bundle: PathBuf,
    pub pid_file: Option<PathBuf>,
    pub console_socket: Option<PathBuf>,
    pub preserve_fds: i32,
    pub no_pivot: bool,
    /// The caller does not stay attached (create, run -d): a terminal then
    /// needs a console socket.
    pub detach: bool,
    pub stdio: Option<[OwnedFd; 3]>,
    /// Kill the workload (SIGKILL) when the runsbx process that created it
    /// dies: for foreground runs, so a killed supervisor leaves no workload.
    pub die_with_parent: bool,
    /// The caller supervises the container to its end (foreground `run`,
    /// `sandbox`): a container that needs no cgroup may run without one
    /// (see `needs_no_cgroup`).
    pub foreground: bool,
    /// Have seccomp and Landlock log denials to audit (`--report-denials`).
    pub log_denials: bool,
    /// Leave `lo` down in a new network namespace (netns.rs brings it up,
    /// as runc does): for sandboxes, whose policy refuses every IP socket,
    /// so that a start saves the fork that joins the namespace.
    pub loopback_down: bool,
    /// Keep the caller's CPU affinity for the workload (sandboxes: a
    /// supervisor pins one with taskset); otherwise every CPU the cgroup
    /// allows, as runc 1.2 (executor.rs).
    pub keep_affinity: bool,
}

#[derive(Debug, Default)]
pub struct ExecOptions {
    pub id: String,
    pub process: Option<PathBuf>,
    pub args: Vec<String>,
    pub env: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub user: Option<(u32, Option<u32>)>,
    pub additional_gids: Vec<u32>,
    pub tty: bool,
    pub console_socket: Option<PathBuf>,
    pub pid_file: Option<PathBuf>,
    pub detach: bool,
    pub preserve_fds: i32,
    pub no_new_privs: bool,
    pub cap: Vec<String>,
    /// Exec into a paused container too (runc's `--ignore-paused`).
    pub ignore_paused: bool,
    /// Sub-cgroups of the container's to run the process in (runc's
    /// `--cgroup`).
    pub sub_cgroup: SubCgroups,
}

/// Where `exec --cgroup` puts the process, relative to the container's
/// cgroup, without `..`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SubCgroups {
    /// `--cgroup PATH`: every controller.
    pub all: Option<String>,
    /// `--cgroup CONTROLLER[,...]:PATH`: (controller, path; `""` the
    /// container's own); the controllers not named stay in the container's
    /// own cgroup.
    pub per_controller: Vec<(String, String)>,
}

/// A process `exec` started.
pub struct Executed {
    pub pid: nix::unistd::Pid,
    /// The pty master of a terminal in the foreground, for the relay
    /// (console/).
    pub console: Option<OwnedFd>,
}

/// A container as its creating process holds it (`Runtime::create`).
pub struct Owned {
    pub container: Container,
    /// The pty master of a foreground run with a terminal (console/), for
    /// the relay.
    pub(crate) console: Option<OwnedFd>,
    /// Init's start time, as runsbx.json records it.
    starttime: Option<u64>,
    /// Made without a cgroup (`needs_no_cgroup`).
    cgroup_free: bool,
    /// Its poststart hooks (runsbx.json has them too), for `start_owned`.
    poststart: Vec<libcontainer::oci_spec::runtime::Hook>,
    /// The report's read end of a foreground create (a pipe, report.rs);
    /// otherwise `start` opens the FIFO in the state dir.
    report: Option<ReportReader>,
}

/// The runtime-spec state of a container, with runc's extra fields.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateView {
    pub oci_version: String,
    pub id: String,
    pub pid: i32,
    pub status: &'static str,
    pub bundle: PathBuf,
    pub rootfs: PathBuf,
    pub created: String,
    pub owner: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<std::collections::HashMap<String, String>>,
}

pub fn validate_id(id: &str) -> Result<()> {
    let bad = |reason| {
        Err(RuntimeError::InvalidId {
            id: id.to_string(),
            reason,
        })
    };
    if id.is_empty() {
        return bad("empty");
    }
    if id.len() > MAX_ID_LEN {
        return bad("longer than 200 bytes");
    }
    if id == "." || id == ".." {
        return bad("not a usable file name");
    }
    // Stops: an id like `../x` or `a/b` naming a state dir outside --root.
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'-' | b'.'))
    {
        return bad("only letters, digits and _ + - . are allowed");
    }
    Ok(())
}

pub(crate) use crate::hooks::OCI_VERSION;

/// The state a hook of `c` is given, with `status`; a pid unless stopped.
fn hook_state<'a>(c: &'a Container, status: &'a str) -> crate::hooks::State<'a> {
    crate::hooks::State {
        oci_version: OCI_VERSION,
        id: c.id(),
        status,
        pid: c.pid().map(|p| p.as_raw()).filter(|_| status != "stopped"),
        bundle: c.bundle(),
        // None rather than empty, as `state` and runc give it.
        annotations: c.state.annotations.as_ref().filter(|a| !a.is_empty()),
    }
}

fn status_name(s: ContainerStatus) -> &'static str {
    match s {
        ContainerStatus::Creating => "creating",
        ContainerStatus::Created => "created",
        ContainerStatus::Running => "running",
        ContainerStatus::Stopped => "stopped",
        ContainerStatus::Paused => "paused",
    }
}

/// libcontainer rewrites state.json in place (truncate, then write), so a
/// reader racing a writer can see it empty or cut short; retry briefly.
fn load_state(
    dir: &Path,
) -> std::result::Result<Container, libcontainer::error::LibcontainerError> {
    let mut tries = 0;
    loop {
        match Container::load(dir.to_path_buf()) {
            Err(libcontainer::error::LibcontainerError::State(
                libcontainer::container::state::StateError::ParseStateFile { .. },
            )) if tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            other => return other,
        }
    }
}

fn require(
    c: &Container,
    action: &'static str,
    wanted: &'static str,
    ok: impl Fn(ContainerStatus) -> bool,
) -> Result<()> {
    if ok(c.status()) {
        Ok(())
    } else {
        Err(RuntimeError::WrongState {
            id: c.id().to_string(),
            status: status_name(c.status()),
            action,
            wanted,
        })
    }
}

/// Stops: a pid file runsbx cannot write once the process exists (its
/// directory is missing), found before anything is made.
pub(super) fn check_parent_dir(path: &Path, flag: &str) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if parent.is_dir() {
        Ok(())
    } else {
        Err(RuntimeError::Bundle {
            path: path.to_path_buf(),
            reason: format!("{flag}: directory {} does not exist", parent.display()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        for good in ["a", "abc-1_2+3.4", &"x".repeat(200)] {
            assert!(validate_id(good).is_ok(), "{good}");
        }
        for bad in ["", ".", "..", "../x", "a/b", "a b", "é", &"x".repeat(201)] {
            assert!(validate_id(bad).is_err(), "{bad}");
        }
    }
}
