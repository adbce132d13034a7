//! `create`: validate the bundle, take the id, fork init through
//! libcontainer and record what runsbx needs later (runsbx.json).

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use libcontainer::container::Container;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::lock::CreateLock;
use super::sidecar::{proc_starttime, write_sidecar, Sidecar};
use super::{check_parent_dir, validate_id, CreateOptions, Owned, Runtime};
use crate::cgroup::{bundle_cgroup_path, kill_cgroup_path, needs_no_cgroup, verify_cgroup_free};
use crate::error::{Result, RuntimeError};
use crate::executor::SandboxExecutor;
use crate::report::{PendingReport, ReportReader};
use crate::spec::{Bundle, SandboxPolicy};

/// What `create` decided before it touched the state root.
struct Plan {
    bundle: Bundle,
    policy: SandboxPolicy,
    seccomp: Option<runsbx_policy::seccomp::SeccompProgram>,
    rootless: bool,
    /// A pidfd of this process for init to poll (`die_with_parent`).
    parent: Option<OwnedFd>,
    /// Made without a cgroup (`needs_no_cgroup`).
    cgroup_free: bool,
    /// seccomp loaded without no_new_privs (nnp.rs).
    without_nnp: bool,
    /// Mount flags libcontainer leaves off, set by the Executor (remount.rs).
    remounts: Vec<crate::remount::Remount>,
    /// Init keeps CAP_SYS_ADMIN through libcontainer's capability drop (for
    /// `without_nnp` or `remounts`); the sets it is kept in are known once
    /// libcontainer's view is made.
    kept: Option<crate::nnp::Kept>,
    /// Capabilities init keeps through libcontainer's capability drop
    /// (capsets.rs: CAP_SETPCAP for its inheritable set, CAP_CHOWN for its
    /// stdio's owner); known once libcontainer's view is made.
    caps_kept: crate::capsets::Applied,
    delegated: Option<&'static crate::delegation::Delegation>,
    /// Bring `lo` up in a new network namespace (not `loopback_down`).
    loopback: bool,
    /// A terminal in the foreground: runsbx makes the console socket and
    /// relays the pty (console/).
    own_console: bool,
    /// What init closes before it waits for `start` (executor.rs), known
    /// once the lock and the report are made.
    not_for_init: Vec<crate::sys::fds::NotForInit>,
}

impl Runtime {
    /// Creates a container; the handle keeps what was made, so that a
    /// process that goes on to start, wait for and delete it (a foreground
    /// `run`) need not find it again by id.
    pub fn create(&self, opts: CreateOptions) -> Result<Owned> {
        let mut plan = self.plan(&opts)?;
        let process = plan.bundle.spec.process().as_ref();
        super::set_oom_score_adj(
            process.and_then(|p| p.oom_score_adj()),
            "config.json: process.oomScoreAdj",
        )?;
        self.ensure_root()?;
        let lock = self.claim_id(&opts.id, plan.delegated)?;
        let dir = self.dir(&opts.id);
        let console = match plan.own_console {
            true => Some(crate::console::ConsoleSocket::listen(&self.root)?),
            false => None,
        };
        if plan.cgroup_free {
            crate::premount::without_cgroups()?;
            tracing::debug!("{}: needs no cgroup; running without one", opts.id);
        }
        let copy = self.shown(&opts.id, &mut plan)?;
        let report = match opts.foreground {
            true => PendingReport::pipe()?,
            false => PendingReport::new(&self.root, &opts.id)?,
        };
        // Right before the fork: the table init inherits.
        let mut own = lock.descriptors();
        own.extend(report.not_for_init());
        plan.not_for_init = crate::sys::fds::not_for_init(opts.preserve_fds, &own);
        let console_path = console.as_ref().map(|c| c.path());
        let forked = self.fork_init(&opts, &mut plan, report, &dir, copy.as_ref(), console_path);
        // libcontainer has read it and forked.
        drop(copy);
        let (container, report) = match forked {
            Ok(v) => v,
            Err(e) => {
                if let RuntimeError::Hook(_) = e {
                    // The runtime-spec: a failed prestart or createRuntime
                    // hook stops the container, then poststop runs.
                    self.poststop_after_failed_create(&opts.id, &plan);
                }
                return Err(e);
            }
        };
        // Init sent the pty master before it reported ready.
        let master = console.map(|c| c.receive()).transpose();
        let recorded = master.map_err(RuntimeError::from).and_then(|m| {
            let (starttime, report) = self.record(&opts.id, &mut plan, &container, report, &dir)?;
            Ok((m, starttime, report))
        });
        match recorded {
            Ok((console, starttime, report)) => Ok(Owned {
                container,
                console,
                starttime,
                report,
                cgroup_free: plan.cgroup_free,
                poststart: crate::hooks::Later::of(&plan.bundle.spec)
                    .map(|l| l.poststart)
                    .unwrap_or_default(),
            }),
            Err(e) => {
                self.remove_leftovers(&opts.id, &dir);
                Err(e)
            }
        }
    }

    /// Everything decided before the state root is touched: the validated
    /// bundle, the policy, rootless checks and whether the container can do
    /// without a cgroup.
    fn plan(&self, opts: &CreateOptions) -> Result<Plan> {
        validate_id(&opts.id)?;
        // The same validation `check` runs, so both refuse alike.
        let crate::spec::Validated {
            bundle,
            policy,
            seccomp,
            ..
        } = crate::spec::validate(&opts.bundle, &self.landlock_default)?;
        if let Some(p) = &opts.pid_file {
            check_parent_dir(p, "--pid-file")?;
        }
        crate::cgroup::check_unified_supported(&bundle.spec)?;
        let terminal = bundle.spec.process().as_ref().and_then(|p| p.terminal()) == Some(true);
        crate::console::check(terminal, opts.detach, opts.console_socket.is_some())?;
        let rootless = crate::rootless::active();
        // A pidfd of this process, held until the create returns: init
        // polls it (executor.rs). Without one (pidfd_open refused by an
        // outer seccomp profile, or a kernel before 5.3) init only gets
        // PDEATHSIG, and a create killed early could leave it waiting: then
        // the container needs a cgroup for delete --force to find it.
        let parent = match opts.die_with_parent {
            true => crate::sys::pidfd::open_self()
                .inspect_err(|e| {
                    tracing::debug!("pidfd_open(self): {e}; init cannot check on runsbx")
                })
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
            && needs_no_cgroup(&bundle.spec)
            && crate::cgroup::rootfs_nodev(&bundle.rootfs());
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
        let without_nnp = crate::nnp::seccomp_without_nnp(
            crate::nnp::asks(&bundle.spec),
            seccomp.is_some(),
            !policy.landlock.is_empty(),
        );
        let remounts = crate::remount::plan(&bundle.spec);
        let kept = (without_nnp || !remounts.is_empty()).then_some(crate::nnp::Kept::default());
        Ok(Plan {
            bundle,
            policy,
            seccomp,
            rootless,
            parent,
            cgroup_free,
            delegated,
            without_nnp,
            remounts,
            kept,
            caps_kept: Default::default(),
            loopback: !opts.loopback_down,
            own_console: terminal && !opts.detach,
            not_for_init: Vec::new(),
        })
    }

    /// Takes the id: its create lock, no state dir, no orphans of a dead
    /// create, and (rootless, delegated) no cgroup of that name yet.
    fn claim_id(
        &self,
        id: &str,
        delegated: Option<&crate::delegation::Delegation>,
    ) -> Result<CreateLock> {
        let mut lock = CreateLock::take(&self.root, id)?;
        if self.dir(id).exists() {
            lock.keep_if_left();
            return Err(RuntimeError::Exists(id.to_string()));
        }
        // A dead create's file without its state dir: killed during its own
        // clean-up, after the dir went but before its processes did.
        lock.kill_orphans();
        if let Some(d) = delegated {
            // Stops: a container joining a cgroup that holds another's
            // processes (the same id under another --root, or one left by a
            // runsbx killed half-way), which its delete would then kill.
            let shim = Path::new("/sys/fs/cgroup").join(crate::delegation::child_name(id));
            if fs::symlink_metadata(&shim).is_ok() {
                return Err(RuntimeError::CgroupExists(d.container_cgroup(id)));
            }
        }
        Ok(lock)
    }

    /// What libcontainer is shown instead of the bundle's config.json
    /// (`shown_config`), as a copy in a bundle directory of runsbx's
    /// (`ConfigCopy`); `None`: the bundle as it is. Root, a user namespace:
    /// the read-only binds the container's root could not make itself are
    /// made here by runsbx first (see prebind.rs). Rootless: the cgroup path
    /// of rootless.rs.
    fn shown(&self, id: &str, plan: &mut Plan) -> Result<Option<crate::rootless::ConfigCopy>> {
        // Bundle::load made `bundle.dir` canonical.
        let bundle = &plan.bundle;
        let report = crate::rootless::ConfigCopy::hook_report(&self.root, id);
        let hooks = (bundle.dir.as_path(), report.as_path());
        let write = |raw: &serde_json::Value| {
            crate::rootless::ConfigCopy::write(raw, &bundle.rootfs(), &bundle.dir, &self.root, id)
                .map(Some)
        };
        let tmpfs = bundle.with_tmpfs_modes(&bundle.raw);
        let mut adjusted = tmpfs;
        if !plan.rootless && !plan.cgroup_free {
            let base = adjusted.as_ref().unwrap_or(&bundle.raw);
            adjusted = Some(crate::spec::facts::with_runc_device_rules(base));
        }
        let file = (adjusted.as_ref().unwrap_or(&bundle.raw), adjusted.is_some());
        if plan.rootless {
            // An arbitrary mapping needs root; the caller's own is its
            // namespace's already.
            let binds = crate::prebind::plan(&bundle.spec, &bundle.dir);
            if let Some(b) = binds.iter().find(|b| b.idmap.is_some()) {
                return Err(RuntimeError::Spec(format!(
                    "mounts[{}] ({}): idmapped binds need runsbx run by root",
                    b.index,
                    b.destination.display()
                )));
            }
            if let Some(c) = crate::copyup::plan(&bundle.spec).first() {
                return Err(RuntimeError::Spec(format!(
                    "mounts[{}] ({}): option tmpcopyup needs runsbx run by root; with podman \
                     --read-only, add --read-only-tmpfs=false",
                    c.index,
                    c.destination.display()
                )));
            }
            let kept = (&mut plan.kept, &mut plan.caps_kept);
            let raw = shown_config(file, id, &[], false, kept, hooks)
                .unwrap_or_else(|| bundle.raw.clone());
            return write(&crate::rootless::rootless_config(&raw, id)?);
        }
        let binds = crate::prebind::plan(&bundle.spec, &bundle.dir);
        let copies = crate::copyup::plan(&bundle.spec);
        // The owner of the mount points runsbx creates.
        let owner = (!binds.is_empty() || !copies.is_empty())
            .then(|| crate::prebind::container_root(&bundle.spec).unwrap_or((0, 0)));
        let made: Vec<usize> = binds
            .iter()
            .map(|b| b.index)
            .chain(crate::copyup::indexes(&copies))
            .collect();
        let named = !plan.cgroup_free
            && !self.systemd_cgroup
            && crate::cgroup::spec_cgroup_path(&bundle.spec).is_none();
        if !plan.cgroup_free && !self.systemd_cgroup {
            let path = bundle_cgroup_path(id, bundle, false);
            crate::cgroup::check_cgroup_empty(id, &path)?;
            crate::cgroup::check_not_frozen(id, &path)?;
        }
        let kept = (&mut plan.kept, &mut plan.caps_kept);
        let Some(raw) = shown_config(file, id, &made, named, kept, hooks) else {
            return Ok(None);
        };
        if let Some(owner) = owner {
            crate::prebind::apply(&bundle.rootfs(), &binds, &copies, owner)?;
            for b in &binds {
                let why = match b.idmap {
                    Some(_) => "idmapped".to_string(),
                    None => format!("out of reach of uid {}", owner.0),
                };
                tracing::debug!(
                    "{id}: mounts[{}] ({} on {}): bound by runsbx, {why}",
                    b.index,
                    b.source.display(),
                    b.destination.display(),
                );
            }
        }
        write(&raw)
    }

    /// Forks init through libcontainer; on failure, removes what it left
    /// (state dir, cgroup and the processes in it).
    fn fork_init(
        &self,
        opts: &CreateOptions,
        plan: &mut Plan,
        report: PendingReport,
        dir: &Path,
        copy: Option<&crate::rootless::ConfigCopy>,
        console: Option<PathBuf>,
    ) -> Result<(Container, PendingReport)> {
        let executor = SandboxExecutor {
            report_fd: Some(report.raw_fd()),
            die_with_parent: opts.die_with_parent,
            parent_pidfd: plan.parent.as_ref().map(std::os::fd::AsRawFd::as_raw_fd),
            log_denials: opts.log_denials,
            dumpable: plan.rootless,
            without_nnp: plan.kept.filter(|_| plan.without_nnp),
            remounts: plan.remounts.clone(),
            remount_kept: plan.kept.filter(|_| !plan.without_nnp),
            caps_kept: plan.caps_kept,
            start_hooks: crate::hooks::StartHooks::of(
                &plan.bundle.spec,
                &opts.id,
                &plan.bundle.dir,
            ),
            reset_affinity: !opts.keep_affinity,
            proc_root: crate::spec::facts::mounts_proc(&plan.bundle.spec),
            not_for_init: std::mem::take(&mut plan.not_for_init),
            ..SandboxExecutor::new(plan.seccomp.take(), plan.policy.landlock.clone())
        };
        // libcontainer brings init's errors back as their first line only
        // ("failed to prepare rootfs"); what its children logged names the
        // mount, the path and the errno (initlog.rs).
        let capture = crate::initlog::Capture::start();
        let built = self.build_init(opts, &plan.bundle, copy, executor, console);
        let notes = capture.map(|c| c.finish()).unwrap_or_default();
        match built {
            Ok(container) => Ok((container, report)),
            Err(e) => {
                let report_path = crate::rootless::ConfigCopy::hook_report(&self.root, &opts.id);
                let scheduler =
                    crate::initlog::scheduler_failure(&e.to_string(), &plan.bundle.spec);
                let e = match (copy, crate::hooks::shim_report(&report_path), scheduler) {
                    (Some(_), Some(hook), _) => RuntimeError::Hook(hook),
                    (_, _, Some(why)) => RuntimeError::Spec(why),
                    _ => with_notes(e, &notes, &plan.bundle),
                };
                report.abandon();
                // libcontainer leaves its state dir behind when it fails
                // before its own clean-up runs (spec or console errors).
                self.remove_leftovers(&opts.id, dir);
                match plan.delegated {
                    // The path libcontainer was shown (ConfigCopy).
                    Some(_) => kill_cgroup_path(
                        &opts.id,
                        PathBuf::from(crate::delegation::shim_path(&opts.id)),
                    ),
                    None => kill_cgroup_path(
                        &opts.id,
                        bundle_cgroup_path(&opts.id, &plan.bundle, self.systemd_cgroup),
                    ),
                }
                Err(e)
            }
        }
    }

    /// After the fork: the cgroup-free check, the report channel and
    /// runsbx.json. Returns init's start time and, for a foreground create,
    /// the report's read end.
    fn record(
        &self,
        id: &str,
        plan: &mut Plan,
        container: &Container,
        report: PendingReport,
        dir: &Path,
    ) -> Result<(Option<u64>, Option<ReportReader>)> {
        if plan.cgroup_free {
            let pid = container.pid().map(|p| p.as_raw()).unwrap_or(0);
            if let Err(e) = verify_cgroup_free(pid) {
                // Not pid 0: that would be runsbx's own process group.
                if pid > 0 {
                    let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
                }
                return Err(e);
            }
        }
        if let Some(pid) = container.pid() {
            if plan.loopback {
                crate::netns::loopback_up(&plan.bundle.spec, pid)?;
            }
            // Only in a cgroup of the container's own: rootless, init is in
            // a delegated v2 cgroup (no such switch) or in the caller's.
            if !plan.rootless && !plan.cgroup_free {
                crate::cgroup::disable_oom_killer(&plan.bundle.spec, pid.as_raw())?;
                if !self.systemd_cgroup {
                    let path = container
                        .spec()
                        .map_err(|e| RuntimeError::lc(format!("container {id:?}"), e))?
                        .cgroup_path;
                    crate::cgroup::join_hybrid(&path, pid.as_raw())?;
                }
            }
        }
        let reader = report.commit(dir)?;
        let rootless = plan.rootless;
        let sidecar = Sidecar {
            starttime: container.pid().and_then(|p| proc_starttime(p.as_raw())),
            pid: container.pid().map(|p| p.as_raw()),
            policy: std::mem::take(&mut plan.policy),
            no_cgroup: (rootless && plan.delegated.is_none()) || plan.cgroup_free,
            cgroup: plan.delegated.map(|d| d.container_cgroup(id)),
            resources: plan
                .bundle
                .spec
                .linux()
                .as_ref()
                .and_then(|l| l.resources().clone()),
            hooks: crate::hooks::Later::of(&plan.bundle.spec),
            shared_pidns: !crate::spec::facts::is_new_namespace(
                &plan.bundle.spec,
                libcontainer::oci_spec::runtime::LinuxNamespaceType::Pid,
            ),
        };
        write_sidecar(dir, &sidecar)?;
        Ok((sidecar.starttime, reader))
    }

    fn build_init(
        &self,
        opts: &CreateOptions,
        bundle: &Bundle,
        copy: Option<&crate::rootless::ConfigCopy>,
        executor: SandboxExecutor,
        console: Option<PathBuf>,
    ) -> Result<Container> {
        let lc = |e| RuntimeError::lc(String::new(), e);
        // libcontainer sends the pty master to a console socket only when
        // told it detaches (its check of runc's rules, done by
        // console::check already); runsbx's own socket counts as detached.
        let detach = opts.detach || console.is_some();
        let mut builder = self.builder(
            (&self.root, &opts.id),
            executor,
            opts.console_socket.as_ref().or(console.as_ref()),
            opts.preserve_fds,
            opts.pid_file.as_ref(),
            String::new(),
        )?;
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
        let mut container = builder
            .as_init(copy.map_or(bundle.dir.as_path(), |c| c.dir()))
            .with_systemd(self.systemd_cgroup)
            .with_detach(detach)
            .with_no_pivot(opts.no_pivot)
            .build()
            .map_err(lc)?;
        if copy.is_some() {
            // libcontainer recorded the copy's directory as the bundle;
            // `state`, the hooks and `exec` must find the real one.
            container.state.bundle = bundle.dir.clone();
            container.save().map_err(lc)?;
        }
        Ok(container)
    }

    /// The poststop hooks after a prestart or createRuntime hook failed the
    /// create: the container never was, so they are told `stopped` without
    /// a pid.
    fn poststop_after_failed_create(&self, id: &str, plan: &Plan) {
        let later = crate::hooks::Later::of(&plan.bundle.spec).unwrap_or_default();
        if later.poststop.is_empty() {
            return;
        }
        let state = crate::hooks::State {
            oci_version: super::OCI_VERSION,
            id,
            status: "stopped",
            pid: None,
            bundle: &plan.bundle.dir,
            annotations: plan
                .bundle
                .spec
                .annotations()
                .as_ref()
                .filter(|a| !a.is_empty()),
        };
        crate::hooks::run_warn("poststop", &later.poststop, &state);
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
}

/// What libcontainer is shown of the bundle's config.json where it must
/// differ from the file (`None`: the file as it is). Every change runsbx
/// makes to it is here: the read-only binds it made itself left out, runc's
/// cgroup name when `named`, poststart and poststop left out and prestart
/// and createRuntime run through runsbx's hook shim (hooks.rs), and, where
/// `kept.0` asks (a filter loaded without no_new_privs, mount flags set in
/// init), CAP_SYS_ADMIN kept, recording where (nnp.rs), the capability sets
/// as runc applies them (capsets.rs: CAP_SETPCAP and CAP_CHOWN kept,
/// recorded in `kept.1`; ambient capabilities runc cannot raise left out,
/// with its warning), and what runc reads differently from libcontainer
/// (`facts::as_runc_reads`). `raw` is
/// the file, or, with `adjusted`, the file with the tmpfs modes runc would
/// give (`Bundle::with_tmpfs_modes`). (Rootless, `rootless_config` also replaces
/// linux.cgroupsPath.)
fn shown_config(
    (raw, adjusted): (&serde_json::Value, bool),
    id: &str,
    made: &[usize],
    named: bool,
    (kept, caps_kept): (&mut Option<crate::nnp::Kept>, &mut crate::capsets::Applied),
    (bundle, hook_report): (&Path, &Path),
) -> Option<serde_json::Value> {
    let hooks = crate::hooks::has_runtime_hooks(raw);
    let cleaned = crate::spec::facts::as_runc_reads(raw, bundle);
    let caps = crate::capsets::Plan::of(&cleaned.as_ref().unwrap_or(raw)["process"]);
    caps.warn();
    if !adjusted
        && made.is_empty()
        && !named
        && !hooks
        && kept.is_none()
        && cleaned.is_none()
        && caps.is_empty()
    {
        return None;
    }
    let mut raw = crate::prebind::without(cleaned.as_ref().unwrap_or(raw), made);
    if named {
        raw = with_default_cgroup(raw, id);
    }
    crate::hooks::for_libcontainer(&mut raw, bundle, hook_report);
    if let Some(kept) = kept {
        *kept = crate::nnp::keep_admin(&mut raw);
    }
    *caps_kept = caps.apply(&mut raw);
    Some(raw)
}

/// `raw` with runc's default cgroup path for `id` (see
/// `cgroup::default_cgroup_path`), where it has none.
fn with_default_cgroup(mut raw: serde_json::Value, id: &str) -> serde_json::Value {
    let path = crate::cgroup::default_cgroup_path(id);
    raw["linux"]["cgroupsPath"] = serde_json::Value::String(path.display().to_string());
    raw
}

/// A libcontainer error with the detail its forked processes logged (see
/// initlog.rs), when they logged any the message lacks.
fn with_notes(err: RuntimeError, notes: &[String], bundle: &Bundle) -> RuntimeError {
    if !matches!(err, RuntimeError::Libcontainer { .. }) {
        return err;
    }
    let rootfs = bundle.rootfs();
    let inspect = |dest: &Path| crate::initlog::inspect_destination(&rootfs, dest);
    let Some(detail) = crate::initlog::describe(notes, &bundle.spec, &inspect) else {
        return err;
    };
    let text = err.to_string();
    // A message that carries its errno already, or that the innermost note
    // only wraps (an exec that failed in init), says what the notes would;
    // a failed mount is always named, and so is a cause that only a note's
    // `err=` field carries.
    let innermost = notes.first().map(String::as_str).unwrap_or("");
    let repeats =
        text.contains("(os error ") || (innermost.contains(&text) && !innermost.contains(" err="));
    if text.contains(&detail) || (!detail.starts_with("mounts[") && repeats) {
        return err;
    }
    // "failed to prepare rootfs: prepare rootfs: ..." says it twice.
    let op = format!("{}: ", text.strip_prefix("failed to ").unwrap_or(&text));
    RuntimeError::Logged {
        detail: detail.replacen(&op, "", 1),
        message: text,
    }
}
