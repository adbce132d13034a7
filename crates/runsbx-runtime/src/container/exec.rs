//! `exec`: a new process in a running container, under the same seccomp
//! filter and Landlock layers as its init.

use libcontainer::container::ContainerStatus;
use nix::unistd::Pid;

use super::sidecar::read_sidecar_strict;
use super::{require, ExecOptions, Runtime};
use crate::error::{Result, RuntimeError};
use crate::executor::SandboxExecutor;
use crate::spec::Bundle;

impl Runtime {
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
        let executor = SandboxExecutor::new(
            sidecar.policy.compile_seccomp()?,
            sidecar.policy.landlock.clone(),
        );
        let context = format!("container {:?}", opts.id);
        let builder = self.builder(
            &opts.id,
            executor,
            opts.console_socket.as_ref(),
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
