//! Facts about a parsed command that decide how it runs: its name (for
//! messages), whether it only prints, and where a rootless runsbx must
//! stand before it runs (runsbx_runtime::rootless).

use anyhow::Result;
use runsbx_runtime::isolation::Mode;

use super::Ctx;
use crate::cli::Command;

impl Command {
    /// Commands whose only job is printing: a closed stdout (`| head`)
    /// ends them quietly, as it ends runc, instead of a panic.
    pub fn only_prints(&self) -> bool {
        matches!(
            self,
            Command::State(_)
                | Command::List(_)
                | Command::Ps(_)
                | Command::Features
                | Command::Check(_)
                | Command::Events(_)
        )
    }

    pub fn name(&self) -> &'static str {
        match self {
            Command::Create(_) => "create",
            Command::Start(_) => "start",
            Command::Run(_) => "run",
            Command::State(_) => "state",
            Command::Kill(_) => "kill",
            Command::Delete(_) => "delete",
            Command::List(_) => "list",
            Command::Ps(_) => "ps",
            Command::Exec(_) => "exec",
            Command::Pause(_) => "pause",
            Command::Resume(_) => "resume",
            Command::Update(_) => "update",
            Command::Events(_) => "events",
            Command::Checkpoint(_) => "checkpoint",
            Command::Restore(_) => "restore",
            Command::Features => "features",
            Command::Spec(_) => "spec",
            Command::Sandbox(_) => "sandbox",
            Command::Gen(_) => "gen",
            Command::Serve(_) => "serve",
            Command::Mcp(_) => "mcp",
            Command::Selftest(_) => "selftest",
            Command::Check(_) => "check",
            Command::Kernelspec(_) => "kernelspec",
            Command::HookShim(_) => "hook-shim",
        }
    }
}

/// Where a command run by an ordinary user must stand before libcontainer
/// runs (see runsbx_runtime::rootless).
enum Shim {
    /// Touches no cgroup: the host's namespaces are fine.
    None,
    /// A fresh shim namespace of its own, for a new container.
    Fresh,
    /// A fresh shim showing the cgroup of the container with this id, if
    /// it has one (delegation.rs), at the paths its create saw.
    Existing(String),
    /// `Existing` when the container has a cgroup; else the host's
    /// namespaces (kill of init, ps's "no cgroup" error).
    IfCgroup(String),
    /// The user namespace of the container with this id (`exec`).
    Join(String),
}

impl Command {
    /// `mode`: the isolation of a `sandbox` or `selftest` (commands/isolation.rs).
    fn shim(&self, mode: Option<Mode>) -> Shim {
        match self {
            Command::Create(_) | Command::Run(_) => Shim::Fresh,
            Command::Delete(a) => Shim::Existing(a.id.clone()),
            Command::Pause(a) | Command::Resume(a) => Shim::Existing(a.id.clone()),
            Command::Kill(a) if a.all => Shim::IfCgroup(a.id.clone()),
            Command::Ps(a) => Shim::IfCgroup(a.id.clone()),
            Command::Update(a) => Shim::IfCgroup(a.id.clone()),
            Command::Events(a) => Shim::IfCgroup(a.id.clone()),
            Command::Sandbox(_) | Command::Selftest(_) if mode != Some(Mode::Landlock) => {
                Shim::Fresh
            }
            Command::Exec(a) => Shim::Join(a.id.clone()),
            _ => Shim::None,
        }
    }
}

/// Moves a rootless runsbx into its user namespace. Runs before anything
/// that could start a thread (the kernel refuses a single-threaded-only
/// namespace change otherwise) and after the sealed re-exec (an execve
/// would drop the namespace's capabilities).
pub(super) fn enter_rootless(ctx: &Ctx, command: &Command, mode: Option<Mode>) -> Result<()> {
    if !runsbx_runtime::rootless::active() {
        // Root: `exec` must still enter the container's user namespace.
        if let Shim::Join(id) = command.shim(mode) {
            let state = ctx.rt.state(&id)?;
            if state.pid != 0 {
                runsbx_runtime::rootless::join_as_root(state.pid)?;
            }
        }
        return Ok(());
    }
    match command.shim(mode) {
        Shim::None => Ok(()),
        Shim::Fresh => Ok(runsbx_runtime::rootless::enter_shim()?),
        Shim::Existing(id) => {
            if matches!(command, Command::Delete(_)) {
                ctx.rt.stop_orphans(&id);
            }
            let cgroup = ctx.rt.delegated_cgroup(&id);
            Ok(runsbx_runtime::rootless::enter_shim_for(cgroup.as_deref())?)
        }
        Shim::IfCgroup(id) => match ctx.rt.delegated_cgroup(&id) {
            Some(cgroup) => Ok(runsbx_runtime::rootless::enter_shim_for(Some(&cgroup))?),
            None => Ok(()),
        },
        Shim::Join(id) => {
            let state = ctx.rt.state(&id)?;
            if state.pid == 0 {
                // Not running: runtime's exec says so in its own words.
                return Ok(());
            }
            let cgroup = ctx.rt.delegated_cgroup(&id);
            Ok(runsbx_runtime::rootless::join_shim(
                state.pid,
                cgroup.as_deref(),
            )?)
        }
    }
}
