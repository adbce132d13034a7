//! Container lifecycle around libcontainer: create, start, state, kill,
//! delete, pause, resume, list, ps, exec. Each operation loads the state dir,
//! checks the status it needs, calls libcontainer and adds context.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use libcontainer::container::builder::ContainerBuilder;
use libcontainer::container::{Container, ContainerStatus};
use libcontainer::syscall::syscall::SyscallType;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use runsbx_policy::landlock::LandlockDefault;
use serde::{Deserialize, Serialize};

use crate::error::{Result, RuntimeError};
use crate::executor::SandboxExecutor;
use crate::report::{PendingReport, ReportReader};
use crate::spec::{Bundle, SandboxPolicy};

/// runsbx's own file in each container's state dir, beside libcontainer's.
const SIDECAR: &str = "runsbx.json";
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
    /// Report read ends of containers this process created to start itself
    /// (foreground `create`: a pipe, see report.rs), by id.
    reports: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, ReportReader>>>,
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
}

/// What runsbx keeps next to libcontainer's state.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Sidecar {
    /// Start time of init (clock ticks since boot, /proc/<pid>/stat field
    /// 22). Stops: a recycled PID making a dead container look alive, and
    /// `kill` signalling the stranger that now holds the PID.
    starttime: Option<u64>,
    /// Init's host PID; with `starttime`, which init this record is of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pid: Option<i32>,
    // No default: a record without it must not read as "no layers".
    policy: SandboxPolicy,
    /// Made by a rootless runsbx without a delegated cgroup (or a
    /// foreground run that needed none): the container has no cgroup, so
    /// kill and delete find its processes through init (see rootless.rs).
    #[serde(default)]
    no_cgroup: bool,
    /// Made by a rootless runsbx with a delegated cgroup: the container's
    /// cgroup, absolute in the cgroup v2 hierarchy (delegation.rs). Later
    /// commands show its parent in their shim, as the create saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cgroup: Option<String>,
}

/// A container as its creating process holds it (`Runtime::create_owned`).
pub struct Owned {
    pub container: Container,
    /// Init's start time, as runsbx.json records it.
    starttime: Option<u64>,
    /// Made without a cgroup (`needs_no_cgroup`).
    cgroup_free: bool,
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

fn status_name(s: ContainerStatus) -> &'static str {
    match s {
        ContainerStatus::Creating => "creating",
        ContainerStatus::Created => "created",
        ContainerStatus::Running => "running",
        ContainerStatus::Stopped => "stopped",
        ContainerStatus::Paused => "paused",
    }
}

fn proc_starttime(pid: i32) -> Option<u64> {
    procfs::process::Process::new(pid)
        .ok()?
        .stat()
        .ok()
        .map(|s| s.starttime)
}

impl Runtime {
    pub fn new(root: PathBuf, systemd_cgroup: bool, landlock_default: LandlockDefault) -> Self {
        Self {
            root,
            systemd_cgroup,
            landlock_default,
            reports: Default::default(),
        }
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
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
            return Err(RuntimeError::Init(format!(
                "state root {}: must be a directory owned by uid {euid} and writable by nobody else",
                self.root.display()
            )));
        }
        Ok(())
    }

    pub fn create(&self, opts: CreateOptions) -> Result<Container> {
        self.create_owned(opts).map(|o| o.container)
    }

    /// `create` for the process that goes on to start, wait for and delete
    /// the container (a foreground `run`): it keeps what it made, so start
    /// and delete need not find it again by id.
    pub fn create_owned(&self, opts: CreateOptions) -> Result<Owned> {
        validate_id(&opts.id)?;
        // The same validation `check` runs, so both refuse alike.
        let crate::explain::Validated {
            bundle,
            policy,
            seccomp,
            ..
        } = crate::explain::validate(&opts.bundle, &self.landlock_default)?;
        if let Some(p) = &opts.pid_file {
            check_parent_dir(p, "--pid-file")?;
        }
        let rootless = crate::rootless::active();
        // A pidfd of this process, held until the create returns: init
        // polls it (executor.rs). Without one (pidfd_open refused by an
        // outer seccomp profile, or a kernel before 5.3) init only gets
        // PDEATHSIG, and a create killed early could leave it waiting: then
        // the container needs a cgroup for delete --force to find it.
        let parent = match opts.die_with_parent {
            true => crate::sys::pidfd::open_self()
                .inspect_err(|e| tracing::debug!("{e}; init cannot check on runsbx"))
                .ok(),
            false => None,
        };
        // Root's fast path: cgroup set-up and removal are a third of a
        // container's start on a v1 host, and a foreground container that
        // asks for no limit needs none (see `needs_no_cgroup`).
        let cgroup_free = !rootless
            && opts.foreground
            && !self.systemd_cgroup
            && (parent.is_some() || !opts.die_with_parent)
            && needs_no_cgroup(&bundle.spec);
        let delegated = crate::rootless::delegated().filter(|_| rootless);
        if rootless {
            crate::rootless::require_shim()?;
            crate::rootless::check_spec(
                &bundle.spec,
                nix::unistd::geteuid().as_raw(),
                nix::unistd::getegid().as_raw(),
                delegated,
            )?;
        }
        self.ensure_root()?;
        let mut lock = CreateLock::take(&self.root, &opts.id)?;
        let dir = self.dir(&opts.id);
        if dir.exists() {
            lock.keep_if_left();
            return Err(RuntimeError::Exists(opts.id));
        }
        // A dead create's file without its state dir: killed during its own
        // clean-up, after the dir went but before its processes did.
        lock.kill_orphans();
        if let Some(d) = delegated {
            // Stops: a container joining a cgroup that holds another's
            // processes (the same id under another --root, or one left by a
            // runsbx killed half-way), which its delete would then kill.
            let shim = Path::new("/sys/fs/cgroup").join(crate::delegation::child_name(&opts.id));
            if fs::symlink_metadata(&shim).is_ok() {
                return Err(RuntimeError::Init(format!(
                    "rootless: cgroup {} already exists (another container of this id, or left \
                     by a killed runsbx: rmdir it once empty)",
                    d.container_cgroup(&opts.id)
                )));
            }
        }
        let _view = match rootless {
            true => Some(crate::rootless::ConfigView::bind(
                &bundle.dir,
                &bundle.raw,
                &self.root,
                &opts.id,
            )?),
            false => None,
        };
        if cgroup_free {
            crate::premount::without_cgroups()?;
            tracing::debug!("{}: needs no cgroup; running without one", opts.id);
        }
        // Root, a user namespace: the read-only binds the container's root
        // could not make itself, made by runsbx (see prebind.rs). Held until
        // libcontainer has read the config and forked.
        let binds = match rootless {
            true => Vec::new(),
            false => crate::prebind::plan(&bundle.spec, &bundle.dir),
        };
        let _prebound = match crate::prebind::container_root(&bundle.spec) {
            Some(owner) if !binds.is_empty() => {
                crate::prebind::apply(&bundle.rootfs(), &binds, owner)?;
                for b in &binds {
                    tracing::debug!(
                        "{}: mounts[{}] ({} on {}): bound by runsbx, out of reach of uid {}",
                        opts.id,
                        b.index,
                        b.source.display(),
                        b.destination.display(),
                        owner.0
                    );
                }
                Some(crate::rootless::ConfigView::over(
                    &bundle.dir,
                    &crate::prebind::without(&bundle.raw, &binds),
                    &self.root,
                    &opts.id,
                )?)
            }
            _ => None,
        };
        let report = match opts.foreground {
            true => PendingReport::pipe()?,
            false => PendingReport::new(&self.root, &opts.id)?,
        };
        let executor = SandboxExecutor {
            seccomp,
            landlock: policy.landlock.clone(),
            report_fd: Some(report.raw_fd()),
            die_with_parent: opts.die_with_parent,
            parent_pidfd: parent.as_ref().map(std::os::fd::AsRawFd::as_raw_fd),
            log_denials: opts.log_denials,
            resolved: Default::default(),
            dumpable: rootless,
        };
        // libcontainer brings init's errors back as their first line only
        // ("failed to prepare rootfs"); what its children logged names the
        // mount, the path and the errno (initlog.rs).
        let capture = crate::initlog::Capture::start();
        let built = self.build_init(&opts, &bundle, executor);
        let notes = capture.map(|c| c.finish()).unwrap_or_default();
        let built = built.map_err(|e| with_notes(e, &notes, &bundle.spec));
        let container = match built {
            Ok(c) => c,
            Err(e) => {
                report.abandon();
                // libcontainer leaves its state dir behind when it fails
                // before its own clean-up runs (spec or console errors).
                self.remove_leftovers(&opts.id, &dir);
                match delegated {
                    // The path libcontainer was shown (ConfigView).
                    Some(_) => kill_cgroup_path(
                        &opts.id,
                        PathBuf::from(crate::delegation::shim_path(&opts.id)),
                    ),
                    None => kill_cgroup(&opts.id, &bundle),
                }
                return Err(e);
            }
        };
        let finish = || -> Result<Option<u64>> {
            if cgroup_free {
                let pid = container.pid().map(|p| p.as_raw()).unwrap_or(0);
                if let Err(e) = verify_cgroup_free(pid) {
                    // Not pid 0: that would be runsbx's own process group.
                    if pid > 0 {
                        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
                    }
                    return Err(e);
                }
            }
            if let Some(reader) = report.commit(&dir)? {
                self.reports
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(opts.id.clone(), reader);
            }
            let sidecar = Sidecar {
                starttime: container.pid().and_then(|p| proc_starttime(p.as_raw())),
                pid: container.pid().map(|p| p.as_raw()),
                policy,
                no_cgroup: (rootless && delegated.is_none()) || cgroup_free,
                cgroup: delegated.map(|d| d.container_cgroup(&opts.id)),
            };
            write_sidecar(&dir, &sidecar)?;
            Ok(sidecar.starttime)
        };
        match finish() {
            Ok(starttime) => Ok(Owned {
                container,
                starttime,
                cgroup_free,
            }),
            Err(e) => {
                self.remove_leftovers(&opts.id, &dir);
                Err(e)
            }
        }
    }

    fn build_init(
        &self,
        opts: &CreateOptions,
        bundle: &Bundle,
        executor: SandboxExecutor,
    ) -> Result<Container> {
        let lc = |e| RuntimeError::lc(String::new(), e);
        let mut builder = ContainerBuilder::new(opts.id.clone(), SyscallType::default())
            .with_executor(executor)
            .with_root_path(&self.root)
            .map_err(lc)?
            .with_console_socket(opts.console_socket.as_ref())
            .with_preserved_fds(opts.preserve_fds);
        if let Some(p) = &opts.pid_file {
            builder = builder.with_pid_file(Some(p)).map_err(lc)?;
        }
        if let Some(stdio) = opts.stdio.as_ref() {
            let dup = |fd: &OwnedFd| {
                fd.try_clone()
                    .map_err(|e| RuntimeError::io("duplicate stdio", e))
            };
            builder = builder
                .with_stdin(dup(&stdio[0])?)
                .with_stdout(dup(&stdio[1])?)
                .with_stderr(dup(&stdio[2])?);
        }
        builder
            .as_init(&bundle.dir)
            .with_systemd(self.systemd_cgroup)
            .with_detach(opts.detach)
            .with_no_pivot(opts.no_pivot)
            .build()
            .map_err(lc)
    }

    fn remove_leftovers(&self, id: &str, dir: &Path) {
        if !dir.exists() {
            return;
        }
        if let Ok(mut c) = Container::load(dir.to_path_buf()) {
            let _ = c.delete(true);
        }
        let _ = fs::remove_dir_all(dir);
        tracing::debug!(id, "removed a partly created container");
    }

    /// The cgroup a rootless container has in a delegated subtree, as its
    /// runsbx.json records it (`None`: none, or not found).
    pub fn delegated_cgroup(&self, id: &str) -> Option<String> {
        validate_id(id).ok()?;
        read_starttime(&self.dir(id)).cgroup
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

    pub fn start(&self, id: &str) -> Result<()> {
        let mut c = self.load(id)?;
        require(&c, "start", "created", |s| s == ContainerStatus::Created)?;
        self.start_loaded(&mut c)
    }

    /// `start` of the container this process just created.
    pub fn start_owned(&self, o: &mut Owned) -> Result<()> {
        self.start_loaded(&mut o.container)
    }

    fn start_loaded(&self, c: &mut Container) -> Result<()> {
        let id = c.id().to_string();
        let kept = self
            .reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        let reader = match kept {
            Some(r) => Some(r),
            None => ReportReader::open(&self.dir(&id))?,
        };
        c.start()
            .map_err(|e| RuntimeError::lc(format!("container {id:?}"), e))?;
        if let Some(reader) = reader {
            reader.wait()?;
        }
        Ok(())
    }

    /// Whether the state dir of `o`'s id is still `o`'s: after a `delete
    /// --force` from elsewhere the id may name a new container, which the
    /// `_owned` calls below must not touch.
    fn still_owned(&self, o: &Owned) -> bool {
        let head = read_starttime(&o.container.root);
        (head.pid, head.starttime) == (o.container.pid().map(|p| p.as_raw()), o.starttime)
    }

    /// SIGKILL for the container this process created (`--timeout`,
    /// `--rss-limit`): its cgroup while the id is still its own, else init,
    /// a child of this process not yet reaped, so its PID cannot have been
    /// reused. Without a cgroup init is PID 1 of the container's pid
    /// namespace (`verify_cgroup_free`): its death ends every process in it.
    pub fn kill_owned(&self, o: &Owned) -> Result<()> {
        if !o.cgroup_free && self.still_owned(o) {
            return self.kill(o.container.id(), Signal::SIGKILL, true);
        }
        signal_init(&o.container, Signal::SIGKILL)
    }

    /// `oom_killed` of the container this process created: one without a
    /// cgroup has no OOM record to read.
    pub fn oom_killed_owned(&self, o: &Owned) -> bool {
        !o.cgroup_free && self.still_owned(o) && self.oom_killed(o.container.id())
    }

    /// `delete --force` of the container this process created, once it has
    /// reaped init. Without a cgroup (nor an Intel RDT group) that is the
    /// poststop hooks and the state dir: init was PID 1 of its own pid
    /// namespace, which the kernel empties before init's exit can be reaped.
    pub fn delete_owned(&self, o: &Owned) -> Result<()> {
        if !self.still_owned(o) {
            return Ok(());
        }
        if !o.cgroup_free || o.container.intel_rdt_dir().is_some() {
            return self.delete(o.container.id(), true);
        }
        Self::finish_delete(&o.container)
    }

    pub fn state(&self, id: &str) -> Result<StateView> {
        let c = self.load(id)?;
        Ok(self.view(&c))
    }

    fn view(&self, c: &Container) -> StateView {
        let status = c.status();
        let pid = match status {
            ContainerStatus::Stopped => 0,
            _ => c.pid().map(|p| p.as_raw()).unwrap_or(0),
        };
        let rootfs = Bundle::load(c.bundle())
            .map(|b| b.rootfs())
            .unwrap_or_else(|_| c.bundle().join("rootfs"));
        StateView {
            oci_version: "1.0.2".into(),
            id: c.id().to_string(),
            pid,
            status: status_name(status),
            bundle: c.bundle().clone(),
            rootfs,
            created: c
                .created()
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true))
                .unwrap_or_default(),
            owner: c
                .creator()
                .map(|o| o.to_string_lossy().into_owned())
                .unwrap_or_default(),
            annotations: c.state.annotations.clone().filter(|a| !a.is_empty()),
        }
    }

    /// Signals init (or, with `all`, every process in the cgroup). Unlike
    /// libcontainer's kill, it writes no state: the status is read from the
    /// process when next loaded, so a signal that stops nothing (SIGWINCH)
    /// does not mark the container stopped, and a concurrent reader never
    /// sees a half-written state.json.
    pub fn kill(&self, id: &str, signal: Signal, all: bool) -> Result<()> {
        let c = self.load(id)?;
        let status = c.status();
        if all {
            if read_starttime(&self.dir(id)).without_cgroup() {
                return signal_pidns(&c, signal);
            }
            // As runc: the cgroup of a stopped container may be gone (systemd
            // removes an empty scope), and then there is nothing to signal.
            if status == ContainerStatus::Stopped && !cgroup_exists(&c) {
                return Ok(());
            }
            return signal_cgroup(id, &self.cgroup(&c)?, signal);
        }
        if !c.can_kill() {
            return Err(RuntimeError::WrongState {
                id: id.to_string(),
                status: status_name(status),
                action: "kill",
                wanted: "created, running or paused",
            });
        }
        let pid = c
            .pid()
            .ok_or_else(|| RuntimeError::Init(format!("kill {id}: no pid in state")))?;
        match nix::sys::signal::kill(pid, signal) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
            Err(e) => return Err(RuntimeError::sys(format!("kill {id}"), e)),
        }
        // A frozen process cannot die until thawed (cgroup v1).
        if status == ContainerStatus::Paused && signal == Signal::SIGKILL {
            use libcgroups::common::CgroupManager;
            self.cgroup(&c)?
                .freeze(libcgroups::common::FreezerState::Thawed)
                .map_err(|e| RuntimeError::Init(format!("kill {id}: thaw: {e}")))?;
        }
        Ok(())
    }

    fn cgroup(&self, c: &Container) -> Result<libcgroups::common::AnyCgroupManager> {
        let config = c
            .spec()
            .map_err(|e| RuntimeError::lc(format!("cgroup of {}", c.id()), e))?;
        libcgroups::common::create_cgroup_manager(libcgroups::common::CgroupConfig {
            cgroup_path: config.cgroup_path,
            systemd_cgroup: c.systemd(),
            container_name: c.id().to_string(),
        })
        .map_err(|e| RuntimeError::Init(format!("cgroup of {}: {e}", c.id())))
    }

    /// Whether the kernel OOM-killed something in the container's memory
    /// cgroup (v1 memory.oom_control or v2 memory.events `oom_kill`).
    pub fn oom_killed(&self, id: &str) -> bool {
        let Ok(c) = self.load(id) else { return false };
        let Ok(config) = c.spec() else { return false };
        let rel = config.cgroup_path;
        let rel = rel.strip_prefix("/").unwrap_or(&rel);
        let base = Path::new("/sys/fs/cgroup");
        [
            base.join("memory").join(rel).join("memory.oom_control"),
            base.join("unified").join(rel).join("memory.events"),
            base.join(rel).join("memory.events"),
        ]
        .iter()
        .filter_map(|p| fs::read_to_string(p).ok())
        .any(|text| {
            text.lines().any(|l| {
                l.strip_prefix("oom_kill ")
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .is_some_and(|n| n > 0)
            })
        })
    }

    fn wait_cgroup_empty(manager: &libcgroups::common::AnyCgroupManager) {
        use libcgroups::common::CgroupManager;
        // Up to 5 s: the zombie of an init whose runsbx was killed stays in
        // the cgroup until the host's init reaps it, which can take a while
        // (about 2 s on the CI machine).
        for _ in 0..2500 {
            match manager.get_all_pids() {
                Ok(p) if !p.is_empty() => std::thread::sleep(std::time::Duration::from_millis(2)),
                _ => return,
            }
        }
    }

    /// Rootless, before `delete` enters its shim: stops what a create of
    /// `id` killed half-way left ([`CreateLock::kill_orphans`]). In the
    /// shim's user namespace /proc does not show another container's
    /// descriptors; in the caller's own it does (the caller owns theirs).
    pub fn stop_orphans(&self, id: &str) {
        if validate_id(id).is_err() {
            return;
        }
        if let Ok(LockFile::Taken(mut lock)) = CreateLock::try_take_existing(&self.root, id) {
            lock.kill_orphans();
        }
    }

    pub fn delete(&self, id: &str, force: bool) -> Result<()> {
        validate_id(id)?;
        let dir = self.dir(id);
        if !dir.join("state.json").exists() {
            if !dir.exists() && !force {
                return Err(RuntimeError::NotFound(id.to_string()));
            }
            if !self.root.is_dir() {
                return Ok(());
            }
            // A create in flight, or one killed half-way. Only the latter's
            // leftovers are ours to remove.
            let Some(mut lock) = CreateLock::try_take(&self.root, id)? else {
                return Err(RuntimeError::Init(format!(
                    "delete {id}: another runsbx is creating or deleting it"
                )));
            };
            lock.kill_orphans();
            // Its init may live on, waiting for a start that never comes, in
            // the cgroup libcontainer's youki_config.json names.
            if let Ok(config) = libcontainer::config::YoukiConfig::load(&dir) {
                kill_cgroup_path(id, config.cgroup_path);
            }
            let _ = fs::remove_dir_all(&dir);
            remove_stale_reports(&self.root, id);
            return Ok(());
        }
        // A create or run killed after libcontainer saved its first state
        // (before it forked) left its lock file, and what it forked may
        // still be about to make cgroups, which must go before the clean-up
        // below. A create still running holds the lock: only --force goes
        // on. With --force the lock is taken even without a file, so that no
        // create starts while stale report FIFOs and config views go.
        let found = match CreateLock::try_take_existing(&self.root, id)? {
            LockFile::Absent if force => match CreateLock::try_take(&self.root, id)? {
                Some(lock) => LockFile::Taken(lock),
                None => LockFile::Held,
            },
            found => found,
        };
        match found {
            LockFile::Taken(mut lock) => {
                lock.kill_orphans();
                remove_stale_reports(&self.root, id);
            }
            LockFile::Held if !force => {
                return Err(RuntimeError::Init(format!(
                    "delete {id}: another runsbx is creating or deleting it"
                )))
            }
            LockFile::Held | LockFile::Absent => {}
        }
        let mut c = match self.load(id) {
            Ok(c) => c,
            Err(e) if force && !matches!(e, RuntimeError::NotFound(_)) => {
                return self.remove_unloadable(id, &dir, e)
            }
            Err(e) => return Err(e),
        };
        let status = c.status();
        if !force && matches!(status, ContainerStatus::Running | ContainerStatus::Paused) {
            return Err(RuntimeError::WrongState {
                id: id.to_string(),
                status: status_name(status),
                action: "delete",
                wanted: "stopped or created (or --force)",
            });
        }
        // A container without a cgroup: its init stands for it (a
        // SIGKILL to init ends its whole pid namespace; see rootless.rs).
        let head = read_starttime(&dir);
        let no_cgroup = head.without_cgroup();
        if no_cgroup {
            if status != ContainerStatus::Stopped {
                signal_init(&c, Signal::SIGKILL)?;
            }
            if !wait_init_gone(&c, head.starttime) {
                return Err(RuntimeError::Init(format!(
                    "container {id:?}: init still alive 5 s after SIGKILL; not deleting"
                )));
            }
            if c.intel_rdt_dir().is_none() {
                return Self::finish_delete(&c);
            }
        }
        // One manager for the whole delete: building one scans mountinfo
        // once per controller.
        let manager = match no_cgroup {
            true => None,
            false => match self.cgroup(&c) {
                Ok(m) => Some(m),
                Err(e) if status != ContainerStatus::Stopped => return Err(e),
                Err(_) => None,
            },
        };
        if let (false, Some(m)) = (status == ContainerStatus::Stopped, &manager) {
            // Kill everything first and wait for the cgroup to empty:
            // libcontainer removes the cgroup right after signalling, which
            // fails while the processes are still exiting.
            match signal_cgroup(id, m, Signal::SIGKILL) {
                // A create killed before it made the cgroup (its orphans
                // were stopped above): nothing is in it. Init is signalled
                // itself only when its start time was recorded: a bare pid
                // may be someone else's by now (an init that died since).
                Err(_) if !cgroup_exists(&c) => {
                    if let (Some(pid), Some(t)) = (c.pid(), head.starttime) {
                        let _ = kill_checked(pid, || init_alive(pid, Some(t)));
                    }
                }
                r => r?,
            }
        } else if let Some(m) = &manager {
            // "Stopped" can be wrong: a create killed before it recorded
            // init's pid reads as stopped while init waits for `start`; and
            // without a pid namespace init's children outlive it. Frozen
            // first, so that a forking chain cannot outrun the kill.
            // Best effort: a stopped container's cgroup may be gone, and
            // an empty one needs no freeze.
            use libcgroups::common::CgroupManager;
            if m.get_all_pids().is_ok_and(|p| !p.is_empty()) {
                let _ = signal_cgroup(id, m, Signal::SIGKILL);
            }
        }
        // Also when stopped: a dead init not yet reaped (its runsbx was
        // killed, the host's init reaps it later) still holds the cgroup.
        if let Some(m) = &manager {
            Self::wait_cgroup_empty(m);
        }
        // A zombie the host's init has not reaped yet keeps a v1 cgroup busy
        // even when no pid is listed: retry the removal for a while.
        let mut tries = 0;
        let retry = |tries: &mut u32, e: &dyn std::fmt::Display| {
            *tries += 1;
            tracing::debug!(id, %e, "delete: retrying");
            std::thread::sleep(std::time::Duration::from_millis(250));
        };
        match manager {
            // The manager at hand removes the cgroup: libcontainer's delete
            // would build a second one (a mountinfo scan per v1 controller).
            // It alone cleans up an Intel RDT group.
            Some(m) if c.intel_rdt_dir().is_none() => {
                use libcgroups::common::CgroupManager;
                loop {
                    match m.remove() {
                        Ok(()) => break,
                        Err(e) if tries < 40 => retry(&mut tries, &e),
                        Err(e) => {
                            return Err(RuntimeError::Init(format!(
                                "container {id:?}: remove cgroup: {e}"
                            )))
                        }
                    }
                }
                Self::finish_delete(&c)
            }
            _ => loop {
                match c.delete(force) {
                    Ok(()) => return Ok(()),
                    Err(e @ libcontainer::error::LibcontainerError::CgroupManager(_))
                        if tries < 40 =>
                    {
                        retry(&mut tries, &e)
                    }
                    Err(e) => return Err(RuntimeError::lc(format!("container {id:?}"), e)),
                }
            },
        }
    }

    /// The end of libcontainer's delete, once init is gone
    /// (`wait_init_gone`) and so is the cgroup, if the container had one:
    /// run the poststop hooks, remove the state dir.
    fn finish_delete(c: &Container) -> Result<()> {
        let hooks = c
            .spec()
            .ok()
            .and_then(|config| config.hooks.as_ref().and_then(|h| h.poststop().clone()));
        // What the hooks are told, as libcontainer does; `c` may still hold
        // the status it was loaded (or started) with.
        let state = libcontainer::container::State {
            status: ContainerStatus::Stopped,
            ..c.state.clone()
        };
        // One at a time: the runtime spec makes a failing poststop hook a
        // warning, after which the other hooks and the delete go on.
        for (i, hook) in hooks.into_iter().flatten().enumerate() {
            if let Err(e) =
                libcontainer::hooks::run_hooks(Some(&vec![hook]), Some(&state), None, None, None)
            {
                tracing::warn!("container {:?}: poststop hook {i}: {e}", c.id());
            }
        }
        match fs::remove_dir_all(&c.root) {
            // A concurrent delete (the run's own, after a `delete --force`)
            // got there first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r.map_err(|e| RuntimeError::io(format!("remove {}", c.root.display()), e)),
        }
    }

    /// `delete --force` of a container whose state.json cannot be loaded
    /// (emptied, cut short or edited by hand): kills what is in its cgroup,
    /// found through libcontainer's youki_config.json, and removes the state
    /// dir. An unreadable youki_config.json means the create died before it
    /// forked (libcontainer writes that file first).
    fn remove_unloadable(&self, id: &str, dir: &Path, cause: RuntimeError) -> Result<()> {
        match libcontainer::config::YoukiConfig::load(dir) {
            Ok(config) => {
                tracing::warn!(id, %cause, "state unreadable: killing the cgroup and removing the state dir");
                kill_cgroup_path(id, config.cgroup_path);
            }
            Err(e) => {
                // libcontainer writes youki_config.json before it forks: a
                // create killed while (or before) writing it forked nothing.
                // Clear the default cgroup path anyway, in case.
                tracing::warn!(id, %cause, %e, "state and config unreadable: create died before forking");
                kill_cgroup_path(id, libcontainer::utils::get_cgroup_path(&None, id));
            }
        }
        fs::remove_dir_all(dir)
            .map_err(|e| RuntimeError::io(format!("remove {}", dir.display()), e))
    }

    pub fn pause(&self, id: &str) -> Result<()> {
        let mut c = self.load(id)?;
        if read_starttime(&self.dir(id)).without_cgroup() {
            return Err(no_cgroup(id, "freeze it"));
        }
        require(&c, "pause", "running", |s| s == ContainerStatus::Running)?;
        c.pause()
            .map_err(|e| RuntimeError::lc(format!("container {id:?}"), e))
    }

    pub fn resume(&self, id: &str) -> Result<()> {
        let mut c = self.load(id)?;
        if read_starttime(&self.dir(id)).without_cgroup() {
            return Err(no_cgroup(id, "thaw it"));
        }
        require(&c, "resume", "paused", |s| s == ContainerStatus::Paused)?;
        c.resume()
            .map_err(|e| RuntimeError::lc(format!("container {id:?}"), e))
    }

    /// Every container under the root, oldest first. Entries that cannot be
    /// loaded (a create killed half-way) are skipped.
    pub fn list(&self) -> Result<Vec<StateView>> {
        let entries = match fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(RuntimeError::io(format!("read {}", self.root.display()), e)),
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str() else { continue };
            if id.starts_with('.') {
                continue;
            }
            if let Ok(c) = self.load(id) {
                out.push(self.view(&c));
            }
        }
        out.sort_by(|a, b| a.created.cmp(&b.created));
        Ok(out)
    }

    /// PIDs of every process in the container's cgroup.
    pub fn pids(&self, id: &str) -> Result<Vec<i32>> {
        use libcgroups::common::CgroupManager;
        let c = self.load(id)?;
        if read_starttime(&self.dir(id)).without_cgroup() {
            return match (c.status(), c.pid()) {
                (ContainerStatus::Stopped, _) | (_, None) => Ok(Vec::new()),
                (_, Some(pid)) => crate::pidns::members(pid.as_raw()),
            };
        }
        let mut pids: Vec<i32> = self
            .cgroup(&c)?
            .get_all_pids()
            .map_err(|e| RuntimeError::Init(format!("ps {id}: cgroup: {e}")))?
            .into_iter()
            .map(Pid::as_raw)
            .collect();
        pids.sort_unstable();
        Ok(pids)
    }

    /// Starts a new process in a running container; returns its host PID.
    pub fn exec(&self, opts: ExecOptions) -> Result<Pid> {
        let c = self.load(&opts.id)?;
        require(&c, "exec", "running", |s| s == ContainerStatus::Running)?;
        // Stops: a process exec'd into the container without the seccomp
        // filter and Landlock layers its init has, because runsbx.json went
        // missing or was damaged. Fail closed.
        let sidecar = read_sidecar_strict(&self.dir(&opts.id))?;
        // libcontainer reads the bundle's config.json again for an exec.
        let _view = match crate::rootless::active() {
            true => {
                let bundle = Bundle::load(c.bundle())?;
                crate::rootless::check_exec_user(&bundle.spec, opts.user)?;
                Some(crate::rootless::ConfigView::bind(
                    &bundle.dir,
                    &bundle.raw,
                    &self.root,
                    &opts.id,
                )?)
            }
            false => None,
        };
        if sidecar.no_cgroup && !crate::rootless::active() {
            // A container made without a cgroup (`needs_no_cgroup`):
            // libcontainer would make one at the default path for the
            // exec'd process alone, which no delete removes. It joins none,
            // like init.
            crate::premount::without_cgroups()?;
        }
        let executor = SandboxExecutor {
            seccomp: sidecar.policy.compile_seccomp()?,
            landlock: sidecar.policy.landlock.clone(),
            report_fd: None,
            die_with_parent: false,
            parent_pidfd: None,
            log_denials: false,
            resolved: Default::default(),
            dumpable: false,
        };
        let lc = |e| RuntimeError::lc(format!("container {:?}", opts.id), e);
        let mut builder = ContainerBuilder::new(opts.id.clone(), SyscallType::default())
            .with_executor(executor)
            .with_root_path(&self.root)
            .map_err(lc)?
            .with_console_socket(opts.console_socket.as_ref())
            .with_preserved_fds(opts.preserve_fds);
        if let Some(p) = &opts.pid_file {
            builder = builder.with_pid_file(Some(p)).map_err(lc)?;
        }
        let env = opts
            .env
            .iter()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let (uid, gid) = match opts.user {
            Some((u, g)) => (Some(u), g),
            None => (None, None),
        };
        builder
            .as_tenant()
            .with_detach(opts.detach)
            .with_process(opts.process.as_ref())
            .with_container_args(opts.args.clone())
            .with_env(env)
            .with_cwd(opts.cwd.as_ref())
            .with_user(uid)
            .with_group(gid)
            .with_additional_gids(opts.additional_gids.clone())
            .with_no_new_privs(opts.no_new_privs)
            .with_capabilities(opts.cap.clone())
            .build()
            .map_err(lc)
    }
}

/// A libcontainer error with the detail its forked processes logged (see
/// initlog.rs), when they logged any the message lacks.
fn with_notes(
    err: RuntimeError,
    notes: &[String],
    spec: &libcontainer::oci_spec::runtime::Spec,
) -> RuntimeError {
    if !matches!(err, RuntimeError::Libcontainer { .. }) {
        return err;
    }
    let Some(detail) = crate::initlog::describe(notes, spec) else {
        return err;
    };
    let text = err.to_string();
    // A message that carries its errno already, or that the innermost note
    // only wraps (an exec that failed in init), says what the notes would;
    // a failed mount is always named.
    let repeats = text.contains("(os error ") || notes.first().is_some_and(|n| n.contains(&text));
    if text.contains(&detail) || (!detail.starts_with("mounts[") && repeats) {
        return err;
    }
    RuntimeError::Init(format!("{text}: {detail}"))
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

fn check_parent_dir(path: &Path, flag: &str) -> Result<()> {
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

/// Kills whatever a failed create left in the container's cgroup and
/// removes it. libcontainer's own clean-up misses an init that was forked
/// before the failure (e.g. the pid file could not be written).
fn kill_cgroup(id: &str, bundle: &Bundle) {
    let path = libcontainer::utils::get_cgroup_path(
        &bundle
            .spec
            .linux()
            .as_ref()
            .and_then(|l| l.cgroups_path().clone()),
        id,
    );
    kill_cgroup_path(id, path);
}

/// Freezes the cgroup so nothing forks meanwhile, signals every process,
/// thaws.
fn signal_cgroup(
    id: &str,
    manager: &libcgroups::common::AnyCgroupManager,
    signal: Signal,
) -> Result<()> {
    use libcgroups::common::{CgroupManager, FreezerState};
    let _ = manager.freeze(FreezerState::Frozen);
    let pids = manager.get_all_pids();
    if let Ok(pids) = &pids {
        for pid in pids {
            let _ = nix::sys::signal::kill(*pid, signal);
        }
    }
    let thawed = manager.freeze(FreezerState::Thawed);
    pids.map_err(|e| RuntimeError::Init(format!("kill {id}: cgroup: {e}")))?;
    thawed.map_err(|e| RuntimeError::Init(format!("kill {id}: thaw: {e}")))?;
    Ok(())
}

/// SIGKILLs `pid` if `still()` holds once a pidfd of it is open, through
/// that pidfd: checked after the pidfd pins the process, so a newcomer that
/// took the pid is never signalled. The pidfd of the killed process (to
/// wait on), `None` when it is gone or `still()` no longer holds.
fn kill_checked(pid: Pid, still: impl Fn() -> bool) -> std::io::Result<Option<OwnedFd>> {
    use std::os::fd::AsRawFd;
    let pidfd = match crate::sys::pidfd::pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(None),
        Err(e) => return Err(e),
    };
    if !still() {
        return Ok(None);
    }
    match crate::sys::pidfd::signal(pidfd.as_raw_fd(), Signal::SIGKILL) {
        Ok(()) => Ok(Some(pidfd)),
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether a directory of the container's cgroup exists (v2's, or v1's
/// devices one, which libcgroups lists processes from). True when unsure:
/// a systemd path (`slice:prefix:name`) is no directory name.
fn cgroup_exists(c: &Container) -> bool {
    if c.systemd() {
        return true;
    }
    let Ok(config) = c.spec() else { return true };
    let rel = config.cgroup_path;
    let rel = rel.strip_prefix("/").unwrap_or(&rel);
    let base = Path::new("/sys/fs/cgroup");
    [
        base.join(rel),
        base.join("devices").join(rel),
        base.join("unified").join(rel),
    ]
    .iter()
    .any(|p| p.exists())
}

fn kill_cgroup_path(id: &str, path: PathBuf) {
    use libcgroups::common::CgroupManager;
    let Ok(manager) = libcgroups::common::create_cgroup_manager(libcgroups::common::CgroupConfig {
        cgroup_path: path,
        systemd_cgroup: false,
        container_name: id.to_string(),
    }) else {
        return;
    };
    if let Ok(pids) = manager.get_all_pids() {
        for pid in pids {
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        }
    }
    for _ in 0..1000 {
        // A failed init is our child (libcontainer clones it with
        // CLONE_PARENT): until it is reaped, its zombie keeps the cgroup busy.
        // An orphan's (its runsbx was killed) waits for the host's init.
        while let Ok(status) =
            nix::sys::wait::waitpid(None, Some(nix::sys::wait::WaitPidFlag::WNOHANG))
        {
            if status == nix::sys::wait::WaitStatus::StillAlive {
                break;
            }
        }
        if manager.remove().is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Held by `create` from its "already exists" check until the state dir is
/// complete or removed. Stops: two `create`s of one id at the same moment
/// both passing the check, sharing one state dir and cgroup, and the loser's
/// clean-up removing the winner's container (tests/bad_input.rs
/// `duplicate_id_under_concurrent_create`). A lock on `<root>/.<id>.create`,
/// not a marker file, so a create killed half-way leaves nothing that blocks
/// the id (the kernel drops the lock with the process).
///
/// A POSIX record lock, not flock(2): it is not inherited across fork, so
/// the init libcontainer forks does not hold it on after its create died,
/// and `delete` can tell a create in flight from one killed half-way
/// (tests/faults.rs `sigkill_during_create_and_run`).
///
/// `create` also keeps the file open read-only (`_marker`). Both of its
/// descriptors are inherited: libcontainer's intermediate process and init
/// hold them until they exit or exec (close-on-exec). After a create was
/// killed half-way, `delete` finds what is left of it by that pair
/// ([`CreateLock::kill_orphans`]).
struct CreateLock {
    path: PathBuf,
    file: fs::File,
    /// The file was there before: left by a create that died (one that
    /// finished or failed removed it), whose orphans may still hold it, or
    /// made by a concurrent opener.
    existed: bool,
    /// Leave the file on drop: it may be the only way to find a dead
    /// create's orphans ([`CreateLock::keep_if_left`]).
    keep: bool,
    _marker: Option<fs::File>,
}

/// What `<root>/.<id>.create` says about creates of an id.
enum LockFile {
    /// No file: no create of the id runs, and none died half-way.
    Absent,
    /// A create of the id runs.
    Held,
    Taken(CreateLock),
}

impl CreateLock {
    fn take(root: &Path, id: &str) -> Result<Self> {
        let mut lock =
            Self::try_take(root, id)?.ok_or_else(|| RuntimeError::Exists(id.to_string()))?;
        let marker = fs::File::open(&lock.path)
            .map_err(|e| RuntimeError::io(format!("open {}", lock.path.display()), e))?;
        lock._marker = Some(marker);
        Ok(lock)
    }

    /// `Ok(None)` when another process holds it: a create of `id` in flight.
    fn try_take(root: &Path, id: &str) -> Result<Option<Self>> {
        match Self::open_and_lock(root, id, true)? {
            LockFile::Taken(lock) => Ok(Some(lock)),
            LockFile::Held | LockFile::Absent => Ok(None),
        }
    }

    /// The lock when the file is there; without creating it (a delete of a
    /// container whose create finished pays one failed open).
    fn try_take_existing(root: &Path, id: &str) -> Result<LockFile> {
        Self::open_and_lock(root, id, false)
    }

    fn open_and_lock(root: &Path, id: &str, create: bool) -> Result<LockFile> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let path = root.join(format!(".{id}.create"));
        let open = |new: bool| {
            fs::OpenOptions::new()
                .create_new(new)
                .write(true)
                .mode(0o600)
                .open(&path)
        };
        // One open on the usual path of each: a create finds no file, a
        // delete of a finished create's container none either.
        let opened = match open(create) {
            Ok(file) => Ok((file, !create)),
            Err(e) if create && e.kind() == std::io::ErrorKind::AlreadyExists => {
                open(false).map(|file| (file, true))
            }
            Err(e) => Err(e),
        };
        let (file, existed) = match opened {
            Ok(opened) => opened,
            Err(e) if !create && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(LockFile::Absent)
            }
            // Its holder removed it between our two opens: it was in flight.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockFile::Held),
            Err(e) => return Err(RuntimeError::io(format!("open {}", path.display()), e)),
        };
        let whole_file = libc::flock {
            l_type: libc::F_WRLCK as libc::c_short,
            l_whence: libc::SEEK_SET as libc::c_short,
            l_start: 0,
            l_len: 0,
            l_pid: 0,
        };
        match nix::fcntl::fcntl(file.as_raw_fd(), nix::fcntl::FcntlArg::F_SETLK(&whole_file)) {
            Ok(_) => {}
            Err(nix::errno::Errno::EACCES | nix::errno::Errno::EAGAIN) => {
                return Ok(LockFile::Held)
            }
            Err(e) => return Err(RuntimeError::sys(format!("lock {}", path.display()), e)),
        }
        // A create that finished meanwhile unlinked the file we locked: it
        // then made the container (or failed), so treat the id as taken.
        let now = fs::metadata(&path);
        if !create
            && now
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            // Its holder finished and removed it meanwhile.
            return Ok(LockFile::Absent);
        }
        let same = match (now, file.metadata()) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if !same {
            // Not `then_some`: a Self built here would unlink the new file on drop.
            return Ok(LockFile::Held);
        }
        Ok(LockFile::Taken(Self {
            path,
            file,
            existed,
            keep: false,
            _marker: None,
        }))
    }

    /// For a create that fails because the container exists: a file that
    /// was there before may be a dead create's, whose orphans hold it until
    /// a delete finds them by it, so it stays.
    fn keep_if_left(&mut self) {
        self.keep = self.existed;
    }

    /// SIGKILLs the processes a create of this id that died half-way left
    /// behind and waits up to 5 s for them to exit. Stops: libcontainer's
    /// intermediate process, orphaned by a create killed before it saved its
    /// state, making the container's cgroups after `delete --force` has
    /// removed them, and its init waiting for ever on a channel to its dead
    /// parent inside them. Call it holding the lock, so that no live create
    /// shares the file.
    ///
    /// A process counts only if it holds the file both write-only (the lock
    /// descriptor) and read-only (the marker), as a fork of that create
    /// does: a file-access monitor (fanotify) holds it read-only alone, and
    /// another runsbx trying the lock write-only alone. The scan reads only
    /// /proc's link texts and fdinfo, never the files behind descriptors (a
    /// stat of a hung FUSE or NFS file would hang the delete).
    ///
    /// Rootless, the delete runs in a user namespace of its own, from which
    /// another container's descriptors are not shown: it calls this first
    /// through [`Runtime::stop_orphans`], outside (docs/rootless.md).
    fn kill_orphans(&mut self) {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        if !self.existed {
            return;
        }
        if crate::rootless::in_shim() {
            // Nothing to see from here (see above): keep the way to them
            // for a delete that looks from outside.
            self.keep = true;
            return;
        }
        let Ok(meta) = self.file.metadata() else {
            return;
        };
        let Some(name) = self.path.file_name().and_then(|n| n.to_str()) else {
            return;
        };
        let Some(id) = name
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(".create"))
        else {
            return;
        };
        let (suffix, deleted) = (format!("/{name}"), format!("/{name} (deleted)"));
        let me = std::process::id();
        let uid = nix::unistd::geteuid().as_raw();
        let holds = |pid: u32| -> Holds {
            // Unreadable: a process of ours in the middle of changing its
            // credentials (dumpable again soon), or another user's.
            let unreadable = || match runsbx_of_id(pid, uid, id) {
                true => Holds::Unsure,
                false => Holds::Neither,
            };
            let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
                return unreadable();
            };
            let (mut write, mut read) = (false, false);
            for fd in fds.flatten() {
                let target = match fs::read_link(fd.path()) {
                    Ok(t) => t,
                    Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                        return unreadable()
                    }
                    Err(_) => continue,
                };
                let target = target.to_string_lossy();
                if !target.ends_with(&suffix) && !target.ends_with(&deleted) {
                    continue;
                }
                match fd_mode(pid, &fd.file_name(), meta.ino()) {
                    Some(libc::O_WRONLY) => write = true,
                    Some(libc::O_RDONLY) => read = true,
                    _ => {}
                }
            }
            match write && read {
                true => Holds::Both,
                false => Holds::Neither,
            }
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        // Again until a scan finds none: the intermediate may fork init
        // after /proc was read, and a killed process forks no more.
        loop {
            let Ok(procs) = fs::read_dir("/proc") else {
                return;
            };
            let (mut killed, mut unsure) = (Vec::new(), 0);
            for pid in procs
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            {
                if pid == me {
                    continue;
                }
                match holds(pid) {
                    Holds::Neither => continue,
                    Holds::Unsure => {
                        unsure += 1;
                        continue;
                    }
                    Holds::Both => {}
                }
                let pid = Pid::from_raw(pid as i32);
                match kill_checked(pid, || matches!(holds(pid.as_raw() as u32), Holds::Both)) {
                    Ok(Some(pidfd)) => {
                        tracing::debug!(%pid, "delete: killed a process of a create killed half-way");
                        killed.push(pidfd);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(%pid, %e, "delete: cannot stop a process of a create killed half-way")
                    }
                }
            }
            if killed.is_empty() && unsure == 0 {
                return;
            }
            if std::time::Instant::now() >= deadline {
                // Kept, so that the next delete can try again.
                tracing::warn!(
                    id,
                    unsure,
                    "delete: processes of a create killed half-way could not be read"
                );
                self.keep = true;
                return;
            }
            for pidfd in &killed {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                let _ =
                    crate::sys::pidfd::exited_within(pidfd.as_raw_fd(), left.as_millis() as i32);
            }
            if killed.is_empty() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// What a process holds of a create's lock file.
enum Holds {
    /// Both descriptors a fork of the create inherits.
    Both,
    Neither,
    /// Its descriptors cannot be read, and it is a runsbx of the caller's
    /// for the same id.
    Unsure,
}

/// Whether `pid` runs as `uid` and is a runsbx whose arguments name `id`
/// (/proc status and cmdline, which need no access to the process).
fn runsbx_of_id(pid: u32, uid: u32, id: &str) -> bool {
    let owner = fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u32>().ok())
        });
    if owner != Some(uid) {
        return false;
    }
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let mut args = cmdline.split(|b| *b == 0);
    let runsbx = args
        .next()
        .and_then(|a| a.rsplit(|b| *b == b'/').next())
        .is_some_and(|a| a.starts_with(b"runsbx"));
    runsbx && args.any(|a| a == id.as_bytes())
}

/// The access mode (`O_RDONLY`, `O_WRONLY`, `O_RDWR`) of descriptor `fd` of
/// `pid` when it is open on inode `ino` and not an `O_PATH` handle, from
/// /proc fdinfo.
fn fd_mode(pid: u32, fd: &std::ffi::OsStr, ino: u64) -> Option<i32> {
    let path = Path::new("/proc")
        .join(pid.to_string())
        .join("fdinfo")
        .join(fd);
    let info = fs::read_to_string(path).ok()?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    let flags = i32::from_str_radix(&field("flags:")?, 8).ok()?;
    let same = field("ino:")?.parse::<u64>().ok()? == ino;
    (same && flags & libc::O_PATH == 0).then_some(flags & libc::O_ACCMODE)
}

impl Drop for CreateLock {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        // Unlinked while still locked; the lock goes with the file.
        let _ = fs::remove_file(&self.path);
    }
}

/// Removes the report FIFO (`.<id>.report`; `.<id>.<pid>.report` from
/// earlier builds) that a create of `id` killed before moving it into the
/// state dir left in the root, and the
/// config views (`.<id>.<pid>.config.json`, rootless.rs) of creates and
/// execs killed half-way. Call it holding the id's [`CreateLock`], so no
/// live create owns a report; a view is left while its process lives (an
/// exec holds no lock).
fn remove_stale_reports(root: &Path, id: &str) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    let prefix = format!(".{id}.");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        if rest == "report" {
            let _ = fs::remove_file(entry.path());
            continue;
        }
        let (pid, live_ok) = match (
            rest.strip_suffix(".report"),
            rest.strip_suffix(".config.json"),
        ) {
            (Some(pid), _) => (pid, true),
            (None, Some(pid)) => (pid, false),
            (None, None) => continue,
        };
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if live_ok || !Path::new("/proc").join(pid).exists() {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn write_sidecar(dir: &Path, sidecar: &Sidecar) -> Result<()> {
    let path = dir.join(SIDECAR);
    let text = serde_json::to_vec(sidecar).map_err(|e| RuntimeError::Spec(e.to_string()))?;
    fs::write(&path, text).map_err(|e| RuntimeError::io(format!("write {}", path.display()), e))
}

fn read_sidecar_strict(dir: &Path) -> Result<Sidecar> {
    let path = dir.join(SIDECAR);
    let text = fs::read(&path).map_err(|e| {
        RuntimeError::io(
            format!(
                "{} (the container's policy; not running without it)",
                path.display()
            ),
            e,
        )
    })?;
    serde_json::from_slice(&text).map_err(|e| {
        RuntimeError::Spec(format!(
            "{}: {e} (the container's policy; not running without it)",
            path.display()
        ))
    })
}

/// Only the start time, on the path of every command that loads a
/// container: the policy part of the record is skipped, not built.
#[derive(Default, Deserialize)]
struct SidecarHead {
    starttime: Option<u64>,
    #[serde(default)]
    pid: Option<i32>,
    #[serde(default)]
    no_cgroup: bool,
    #[serde(default)]
    cgroup: Option<String>,
}

impl SidecarHead {
    /// Whether kill, delete, ps and pause must do without a cgroup: none
    /// was made, or the delegated cgroup it was made in is gone (then the
    /// shim's cgroup view is not the container's: a cgroup found at its
    /// path there would be someone else's).
    fn without_cgroup(&self) -> bool {
        self.no_cgroup || (self.cgroup.is_some() && crate::rootless::cgroup_gone())
    }
}

fn no_cgroup(id: &str, what: &str) -> RuntimeError {
    RuntimeError::Init(format!(
        "container {id:?} has no cgroup to {what} (made by a rootless runsbx without a delegated \
         cgroup, or a foreground run of a bundle without linux.resources and linux.cgroupsPath: \
         give it a cgroupsPath to have one; see `run` in docs/runsbx.1.md and docs/rootless.md)"
    ))
}

/// The cgroup-free decision was made on runsbx's own parse of config.json,
/// and libcontainer read the file again. Stops: a config swapped in between
/// (one sharing the host's pid namespace) running without a cgroup, where
/// kill and delete would reach init only and its children would outlive
/// it. Fails closed.
fn verify_cgroup_free(pid: i32) -> Result<()> {
    // PID 1 of its namespace, not merely outside runsbx's: an init that
    // joined an existing namespace (a config.json swapped to name one by
    // path) would leave its children running, uncounted, when it dies.
    if pid <= 0 || !crate::pidns::is_namespace_init(pid)? {
        return Err(RuntimeError::Init(
            "init is not PID 1 of a pid namespace of its own, but config.json asked for one when \
             runsbx checked it (changed meanwhile?); not running without a cgroup"
                .into(),
        ));
    }
    Ok(())
}

/// Whether a container can do without a cgroup, with nothing lost but
/// `pause`/`resume`:
/// - no `linux.resources`: libcontainer (like crun) then writes nothing
///   into the cgroup, not even a device rule (the devices controller stays
///   at its parent's "a *:* rwm"), so the cgroup holds no limit and no
///   barrier, only a list of processes;
/// - its own pid namespace, which is that list: SIGKILL to init ends every
///   process in it, and `ps`/`kill --all` find them through it (pidns.rs);
/// - no `cgroupsPath` (nobody expects a cgroup at a place), no cgroup
///   mount (it would show runsbx's empty cgroup view) and no hook (a hook
///   may look for the container's cgroup).
pub fn needs_no_cgroup(spec: &libcontainer::oci_spec::runtime::Spec) -> bool {
    use libcontainer::oci_spec::runtime::LinuxNamespaceType as Ns;
    let Some(linux) = spec.linux() else {
        return false;
    };
    let own_pid_ns = linux
        .namespaces()
        .iter()
        .flatten()
        .any(|n| n.typ() == Ns::Pid && n.path().is_none());
    let cgroup_mount = spec.mounts().iter().flatten().any(|m| {
        matches!(m.typ().as_deref(), Some("cgroup") | Some("cgroup2"))
            || m.source()
                .as_ref()
                .is_some_and(|s| s.starts_with("/sys/fs/cgroup"))
    });
    own_pid_ns
        && linux.resources().is_none()
        && linux.cgroups_path().is_none()
        && !cgroup_mount
        && spec.hooks().is_none()
}

/// `kill --all` of a container without a cgroup: every process of its pid
/// namespace (and below), as the cgroup's list would give them. SIGKILL
/// goes to init alone: that ends the whole namespace at once, and a
/// process forking meanwhile cannot outrun it.
fn signal_pidns(c: &Container, signal: Signal) -> Result<()> {
    if signal == Signal::SIGKILL || c.status() == ContainerStatus::Stopped {
        return signal_init(c, signal);
    }
    let Some(init) = c.pid() else { return Ok(()) };
    for pid in crate::pidns::members(init.as_raw())? {
        match nix::sys::signal::kill(Pid::from_raw(pid), signal) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
            Err(e) => return Err(RuntimeError::sys(format!("kill {} (pid {pid})", c.id()), e)),
        }
    }
    Ok(())
}

/// `delete` of a container without a cgroup: signal its init. Every
/// container without one has its own pid namespace (`needs_no_cgroup`,
/// rootless.rs), so SIGKILL to init kills every process in it.
fn signal_init(c: &Container, signal: Signal) -> Result<()> {
    if c.status() == ContainerStatus::Stopped {
        return Ok(());
    }
    let Some(pid) = c.pid() else { return Ok(()) };
    match nix::sys::signal::kill(pid, signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
        Err(e) => Err(RuntimeError::sys(format!("kill {}", c.id()), e)),
    }
}

/// Whether init still runs: alive, not a zombie, and (when recorded) still
/// the process that started at `starttime`. Not libcontainer's
/// refresh_status: a stranger that took init's pid would read as a live
/// init and block a delete for good.
fn init_alive(pid: Pid, starttime: Option<u64>) -> bool {
    procfs::process::Process::new(pid.as_raw())
        .and_then(|p| p.stat())
        .is_ok_and(|s| !matches!(s.state, 'Z' | 'X') && starttime.is_none_or(|t| t == s.starttime))
}

/// Waits (up to 5 s) until init is a zombie or gone; false if it is not.
fn wait_init_gone(c: &Container, starttime: Option<u64>) -> bool {
    let Some(pid) = c.pid() else { return true };
    for _ in 0..2500 {
        if !init_alive(pid, starttime) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    false
}

fn read_starttime(dir: &Path) -> SidecarHead {
    fs::read(dir.join(SIDECAR))
        .ok()
        .and_then(|t| serde_json::from_slice(&t).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_free_only_when_the_cgroup_would_hold_nothing() {
        let spec = |linux: serde_json::Value, mounts: serde_json::Value| {
            let v = serde_json::json!({ "ociVersion": "1.0.2", "linux": linux, "mounts": mounts });
            serde_json::from_value::<libcontainer::oci_spec::runtime::Spec>(v).unwrap()
        };
        let own_pid = serde_json::json!([{ "type": "pid" }, { "type": "mount" }]);
        let none = serde_json::json!([]);
        let plain = spec(serde_json::json!({ "namespaces": own_pid }), none.clone());
        assert!(needs_no_cgroup(&plain));
        let mut hooked = plain.clone();
        hooked.set_hooks(Some(Default::default()));
        assert!(!needs_no_cgroup(&hooked), "a hook may look for the cgroup");
        for (linux, mounts) in [
            (
                serde_json::json!({ "namespaces": [{ "type": "mount" }] }),
                none.clone(),
            ),
            (
                serde_json::json!({ "namespaces": [{ "type": "pid", "path": "/proc/1/ns/pid" }] }),
                none.clone(),
            ),
            (
                serde_json::json!({ "namespaces": own_pid, "resources": {} }),
                none.clone(),
            ),
            (
                serde_json::json!({ "namespaces": own_pid, "cgroupsPath": "/x" }),
                none.clone(),
            ),
            (
                serde_json::json!({ "namespaces": own_pid }),
                serde_json::json!([{ "destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup" }]),
            ),
        ] {
            assert!(!needs_no_cgroup(&spec(linux.clone(), mounts)), "{linux}");
        }
    }

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
