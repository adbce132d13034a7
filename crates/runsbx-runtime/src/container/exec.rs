//! `exec`: a new process in a running container, under the same seccomp
//! filter and Landlock layers as its init.

use std::os::fd::AsRawFd;

use libcontainer::container::ContainerStatus;

use super::process::exec_process;
use super::sidecar::read_sidecar_strict;
use super::{require, ExecOptions, Executed, Runtime};
use crate::cgroup::spec_cgroup_path;
use crate::error::{Result, RuntimeError};
use crate::executor::SandboxExecutor;
use crate::spec::Bundle;

impl Runtime {
    /// Starts a new process in a running container; returns its host PID
    /// and, for a terminal in the foreground, the pty master to relay.
    pub fn exec(&self, opts: ExecOptions) -> Result<Executed> {
        let c = self.load(&opts.id)?;
        match opts.ignore_paused {
            true => require(&c, "exec", "running or paused", |s| {
                matches!(s, ContainerStatus::Running | ContainerStatus::Paused)
            })?,
            // runc's words for a paused one, which scripts look for.
            false if c.status() == ContainerStatus::Paused => require(
                &c,
                "exec",
                "running: cannot exec in a paused container (without --ignore-paused)",
                |_| false,
            )?,
            false => require(
                &c,
                "exec",
                "created or running (paused: --ignore-paused)",
                |s| matches!(s, ContainerStatus::Created | ContainerStatus::Running),
            )?,
        }
        let shadow = match c.status() {
            ContainerStatus::Created => Some(ExecRoot::make(&self.root, &opts.id)?),
            _ => None,
        };
        // Stops: a process exec'd into the container without the seccomp
        // filter and Landlock layers its init has, because runsbx.json went
        // missing or was damaged. Fail closed.
        let sidecar = read_sidecar_strict(&self.dir(&opts.id))?;
        if let Some(p) = &opts.pid_file {
            super::check_parent_dir(p, "--pid-file")?;
        }
        let (sub_cgroup, join_cgroups) = self.exec_cgroups(&c, &opts, sidecar.no_cgroup)?;
        let seccomp = sidecar.policy.compile_seccomp()?;
        // libcontainer reads the bundle's config.json again for an exec.
        let bundle = Bundle::load(c.bundle())?;
        let rootless = crate::rootless::active();
        if rootless {
            crate::rootless::check_exec_user(&bundle.spec, opts.user)?;
        }
        // The --process file, read once here (libcontainer reads it again);
        // without one, the process runsbx writes as runc builds it
        // (process.rs), from the config as runc reads it.
        let given = match &opts.process {
            Some(path) => read_process(path)?,
            None => {
                let read = crate::spec::facts::as_runc_reads(&bundle.raw, &bundle.dir);
                let raw = read.as_ref().unwrap_or(&bundle.raw);
                exec_process(&raw["process"], &opts)
            }
        };
        // As runc: `-t` gives a file without "terminal" one; a file that
        // says false contradicts it.
        let mut given = given;
        if opts.tty && given.get("terminal").is_none_or(|t| t.is_null()) {
            given["terminal"] = true.into();
        }
        let terminal = given["terminal"] == true;
        if let (true, false, Some(path)) = (opts.tty, terminal, &opts.process) {
            return Err(RuntimeError::Bundle {
                path: path.clone(),
                reason: "--tty: the process file's \"terminal\" is false".into(),
            });
        }
        crate::console::check(terminal, opts.detach, opts.console_socket.is_some())?;
        // Its noNewPrivileges, else the container's (libcontainer's order).
        let asked = given["noNewPrivileges"].as_bool().unwrap_or(false);
        let without_nnp = crate::nnp::seccomp_without_nnp(
            asked || opts.no_new_privs,
            seccomp.is_some(),
            !sidecar.policy.landlock.is_empty(),
        );
        // The process file libcontainer reads (a copy: the given one may be
        // a pipe, read once already), and what init keeps for a filter
        // loaded without no_new_privs (nnp.rs).
        let (process, kept, caps_kept) =
            ProcessView::write(&given, &self.dir(&opts.id), without_nnp)?;
        let kept = without_nnp.then_some(kept);
        let pinned = match rootless || sidecar.no_cgroup {
            true => None,
            false => self.pinned_cgroup(&c, &opts.id, &bundle)?.map(|path| {
                let mut raw = bundle.raw.clone();
                raw["linux"]["cgroupsPath"] = serde_json::Value::String(path.display().to_string());
                raw
            }),
        };
        // What runc reads differently from libcontainer, as create showed it.
        let shown = match pinned {
            Some(raw) => Some(crate::spec::facts::as_runc_reads(&raw, &bundle.dir).unwrap_or(raw)),
            None => crate::spec::facts::as_runc_reads(&bundle.raw, &bundle.dir),
        };
        let _view = match (rootless, shown) {
            (true, shown) => Some(crate::rootless::ConfigView::bind(
                &bundle.dir,
                shown.as_ref().unwrap_or(&bundle.raw),
                &self.root,
                &opts.id,
            )?),
            (false, Some(raw)) => {
                super::private_mount_namespace()?;
                Some(crate::rootless::ConfigView::over(
                    &bundle.dir,
                    &raw,
                    &self.root,
                    &opts.id,
                )?)
            }
            (false, None) => None,
        };
        if sidecar.no_cgroup && !rootless {
            // A container made without a cgroup (`needs_no_cgroup`):
            // libcontainer would make one at the default path for the
            // exec'd process alone, which no delete removes. It joins none,
            // like init.
            crate::premount::without_cgroups()?;
        }
        let adj = given["oomScoreAdj"]
            .as_i64()
            .and_then(|n| i32::try_from(n).ok());
        let what = match &opts.process {
            Some(path) => format!("--process {}: oomScoreAdj", path.display()),
            None => "config.json: process.oomScoreAdj".into(),
        };
        super::set_oom_score_adj(adj, &what)?;
        // A terminal in the foreground: runsbx's own console socket, as for
        // a foreground run (console/).
        let console = match terminal && !opts.detach {
            true => Some(crate::console::ConsoleSocket::listen(&self.root)?),
            false => None,
        };
        let console_path = console.as_ref().map(|c| c.path());
        let executor = SandboxExecutor {
            without_nnp: kept,
            caps_kept,
            reset_affinity: true,
            join_cgroups: join_cgroups.iter().map(AsRawFd::as_raw_fd).collect(),
            ..SandboxExecutor::new(seccomp, sidecar.policy.landlock.clone())
        };
        let context = format!("container {:?}", opts.id);
        let root = shadow
            .as_ref()
            .map_or(self.root.as_path(), |s| s.root.as_path());
        let builder = self.builder(
            (root, &opts.id),
            executor,
            opts.console_socket.as_ref().or(console_path.as_ref()),
            opts.preserve_fds,
            opts.pid_file.as_ref(),
            context.clone(),
        )?;
        let lc = |e| RuntimeError::lc(context, e);
        let env = opts
            .env
            .iter()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        // Stops: an exec without --user running as the container's uid 0
        // (libcontainer's default) where the container's process runs as
        // another user, e.g. with the spec's capabilities as root.
        let user = super::process::user(&bundle.raw["process"], &opts);
        let id = |key: &str| user[key].as_u64().and_then(|n| u32::try_from(n).ok());
        let gids: Vec<u32> = user["additionalGids"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|g| g.as_u64()?.try_into().ok())
                    .collect()
            })
            .unwrap_or_default();
        let pid = builder
            .as_tenant()
            // libcontainer sends a pty master only when told it detaches
            // (console::check has checked runc's rules).
            .with_detach(opts.detach || console.is_some())
            .with_process(Some(process.path.as_path()))
            .with_container_args(opts.args.clone())
            .with_env(env)
            .with_cwd(opts.cwd.as_ref())
            .with_user(id("uid"))
            .with_group(id("gid"))
            .with_additional_gids(gids)
            .with_no_new_privs(opts.no_new_privs)
            .with_capabilities(opts.cap.clone())
            .with_ignore_paused(opts.ignore_paused)
            .with_sub_cgroup(sub_cgroup)
            .build()
            .map_err(lc)?;
        let console = match console.map(|c| c.receive()).transpose() {
            Ok(m) => m,
            Err(e) => {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                return Err(e.into());
            }
        };
        Ok(Executed { pid, console })
    }

    /// The cgroups of an exec'd process besides the container's own, which
    /// libcontainer joins: the sub-cgroup it joins for every controller
    /// (`--cgroup PATH`), and the `cgroup.procs` the process writes itself
    /// into before it execs (`--cgroup CONTROLLER:PATH` on cgroup v1, where
    /// each controller has a cgroup of its own; a hybrid host's unified and
    /// systemd hierarchies, which init joined at create).
    fn exec_cgroups(
        &self,
        c: &libcontainer::container::Container,
        opts: &ExecOptions,
        no_cgroup: bool,
    ) -> Result<(Option<String>, Vec<std::os::fd::OwnedFd>)> {
        let subs = &opts.sub_cgroup;
        let mut all = subs.all.clone();
        let mut per = subs.per_controller.clone();
        if crate::cgroup::is_unified() && !per.is_empty() {
            // One cgroup for every controller: the paths must agree.
            let first = per[0].1.clone();
            if per.iter().any(|(_, p)| *p != first) {
                return Err(RuntimeError::Cgroup {
                    context: "exec --cgroup".into(),
                    err: "cgroup v2 has one cgroup for every controller; give one path".into(),
                });
            }
            all = Some(first).filter(|p| !p.is_empty());
            per.clear();
        }
        if let Some(sub) = &all {
            check_sub_cgroup(c, &opts.id, no_cgroup, sub)?;
        }
        if no_cgroup || crate::rootless::active() || c.systemd() {
            if !per.is_empty() {
                return Err(crate::cgroup::no_cgroup(
                    &opts.id,
                    "run an exec'd process in a sub-cgroup",
                ));
            }
            return Ok((all, Vec::new()));
        }
        let recorded = recorded_cgroup_path(c, &opts.id)?;
        let mut fds = crate::cgroup::controller_procs(&recorded, &per)?;
        fds.extend(crate::cgroup::hybrid_procs(&recorded)?);
        Ok((all, fds))
    }

    /// Stops: the process exec'd into a container made with runc's default
    /// cgroup (no `cgroupsPath`, see `cgroup::default_cgroup_path`) joining
    /// libcontainer's own default, `:youki:<id>`, a fresh cgroup outside
    /// the container's that no limit, freeze, kill --all or delete reaches.
    /// libcontainer reads config.json again for an exec: it must be shown
    /// the path create recorded, returned here.
    fn pinned_cgroup(
        &self,
        c: &libcontainer::container::Container,
        id: &str,
        bundle: &Bundle,
    ) -> Result<Option<std::path::PathBuf>> {
        if c.systemd() || spec_cgroup_path(&bundle.spec).is_some() {
            return Ok(None);
        }
        let recorded = recorded_cgroup_path(c, id)?;
        // A container made before runsbx named its cgroup.
        if recorded == libcontainer::utils::get_cgroup_path(&None, id) {
            return Ok(None);
        }
        Ok(Some(recorded))
    }
}

/// The `--process` file, read once. Without `user`, uid and gid 0, as
/// runc reads it (libcontainer's types require the field).
fn read_process(path: &std::path::Path) -> Result<serde_json::Value> {
    let text =
        std::fs::read(path).map_err(|e| RuntimeError::io(format!("read {}", path.display()), e))?;
    let mut process: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| RuntimeError::Bundle {
            path: path.to_path_buf(),
            reason: format!("--process: {e}"),
        })?;
    if let Some(obj) = process.as_object_mut() {
        obj.entry("user")
            .or_insert_with(|| serde_json::json!({ "uid": 0, "gid": 0 }));
    }
    Ok(process)
}

/// The process file libcontainer reads for an exec: a copy of the given
/// one (or the one runsbx builds), with CAP_SYS_ADMIN kept when
/// `keep_admin` (nnp.rs) and its capability sets as runc applies them
/// (capsets.rs), in the container's state dir; removed on drop. Returns
/// too where each capability was kept.
struct ProcessView {
    path: std::path::PathBuf,
}

impl ProcessView {
    fn write(
        process: &serde_json::Value,
        state_dir: &std::path::Path,
        keep_admin: bool,
    ) -> Result<(Self, crate::nnp::Kept, crate::capsets::Applied)> {
        let mut raw = serde_json::json!({ "process": process });
        let kept = match keep_admin {
            true => crate::nnp::keep_admin(&mut raw),
            false => crate::nnp::Kept::default(),
        };
        let caps = crate::capsets::Plan::of(process);
        caps.warn();
        let caps_kept = caps.apply(&mut raw);
        let path = state_dir.join(format!(".exec.{}.process.json", std::process::id()));
        let view = Self { path };
        std::fs::write(&view.path, raw["process"].to_string())
            .map_err(|e| RuntimeError::io(format!("write {}", view.path.display()), e))?;
        Ok((view, kept, caps_kept))
    }
}

impl Drop for ProcessView {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// An exec into a created container, as runc allows: the process joins the
/// namespaces init has made while init waits for `start`. libcontainer's
/// tenant builder refuses a container whose state is not `running`, so it
/// is shown a state root of its own (`layout::exec_root`) holding a copy of
/// the container's state that says `running`; the container's own state is
/// left as it is (a concurrent `start` or `state` sees it unchanged), and
/// the copy goes when the exec has its process.
struct ExecRoot {
    root: std::path::PathBuf,
}

impl ExecRoot {
    fn make(root: &std::path::Path, id: &str) -> Result<Self> {
        let dir = crate::layout::state_dir(root, id);
        let shadow = Self {
            root: crate::layout::exec_root(root, id, std::process::id()),
        };
        let copy = shadow.root.join(id);
        let io =
            |what: &str, e| RuntimeError::io(format!("exec into a created container: {what}"), e);
        std::fs::create_dir_all(&copy).map_err(|e| io("make its state root", e))?;
        let text = std::fs::read(dir.join("state.json")).map_err(|e| io("read state.json", e))?;
        let mut state: serde_json::Value = serde_json::from_slice(&text)
            .map_err(|e| RuntimeError::Spec(format!("state.json: {e}")))?;
        state["status"] = "running".into();
        std::fs::write(copy.join("state.json"), state.to_string())
            .map_err(|e| io("write state.json", e))?;
        for name in ["youki_config.json"] {
            if let Err(e) = std::fs::copy(dir.join(name), copy.join(name)) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    return Err(io(name, e));
                }
            }
        }
        Ok(shadow)
    }
}

impl Drop for ExecRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The cgroup path libcontainer recorded at create (youki_config.json).
fn recorded_cgroup_path(
    c: &libcontainer::container::Container,
    id: &str,
) -> Result<std::path::PathBuf> {
    c.spec()
        .map(|config| config.cgroup_path)
        .map_err(|e| RuntimeError::lc(format!("container {id:?}"), e))
}

/// `exec --cgroup`: libcontainer's intermediate process joins the cgroup
/// (container's path + `sub`) before it forks the process, so the process
/// never runs outside it. Checked here: a container that has a cgroup,
/// a path libcontainer will read the same as create recorded, and a
/// sub-cgroup that exists (libcgroups would otherwise make it, per
/// controller, where no delete looks).
fn check_sub_cgroup(
    c: &libcontainer::container::Container,
    id: &str,
    no_cgroup: bool,
    sub: &str,
) -> Result<()> {
    if no_cgroup || crate::rootless::active() {
        return Err(crate::cgroup::no_cgroup(
            id,
            "run an exec'd process in a sub-cgroup",
        ));
    }
    let bad = |err: String| RuntimeError::Cgroup {
        context: format!("exec --cgroup {sub:?}"),
        err,
    };
    if c.systemd() {
        return Err(bad("not supported with --systemd-cgroup".into()));
    }
    // Stops: `..` reaching here by another caller than the CLI's parser.
    if sub.split('/').any(|p| p == ".." || p.is_empty()) || sub.starts_with('/') {
        return Err(bad(
            "must be a relative path inside the container's cgroup".into()
        ));
    }
    let recorded = recorded_cgroup_path(c, id)?;
    // libcontainer joins the path config.json names now (or, without one,
    // the recorded one: `pin_cgroup`).
    let bundle = Bundle::load(c.bundle())?;
    if spec_cgroup_path(&bundle.spec).is_some_and(|p| p != recorded) {
        return Err(bad(format!(
            "config.json's cgroupsPath is no longer the container's ({})",
            recorded.display()
        )));
    }
    if let Some(missing) = crate::cgroup::missing_sub_cgroup(&recorded, sub) {
        return Err(bad(format!(
            "adding pid to {}: no such file or directory (no such cgroup under the container's)",
            missing.join("cgroup.procs").display()
        )));
    }
    Ok(())
}
