//! One module per command. Each gathers its arguments, calls the runtime
//! core and adds context; logic worth a unit test lives in the library crates.

mod check;
mod checkpoint;
mod command;
mod create;
mod delete;
mod events;
mod exec;
mod features;
mod isolation;
mod kernelspec;
mod kill;
mod list;
mod mcp;
mod pause;
mod ps;
mod run;
mod sandbox;
mod selftest;
mod serve;
mod spec;
mod start;
mod state;
mod update;

use std::path::{Path, PathBuf};

use anyhow::Result;
use runsbx_runtime::isolation::Mode;
use runsbx_runtime::Runtime;

use crate::cli::Command;
use crate::logging::Logger;

pub struct Ctx {
    pub rt: Runtime,
    #[allow(dead_code)]
    pub logger: &'static Logger,
}

impl Ctx {
    pub fn new(
        root: &Option<PathBuf>,
        systemd_cgroup: bool,
        config: crate::config::Config,
        logger: &'static Logger,
    ) -> Self {
        let root = root.clone().unwrap_or_else(default_root);
        Self {
            rt: Runtime::new(root, systemd_cgroup, config.landlock),
            logger,
        }
    }
}

/// /run/runsbx for root; $XDG_RUNTIME_DIR/runsbx for other users, since they
/// cannot write /run.
fn default_root() -> PathBuf {
    if nix::unistd::geteuid().is_root() {
        return PathBuf::from("/run/runsbx");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if Path::new(&dir).is_absolute() => Path::new(&dir).join("runsbx"),
        _ => std::env::temp_dir().join(format!("runsbx-{}", nix::unistd::geteuid())),
    }
}

impl Command {
    /// Whether this command must run from a sealed view of the binary
    /// (CVE-2019-5736; see runsbx_runtime::reexec_sealed).
    ///
    /// The attack needs a container process that can see a runsbx process
    /// (its /proc/<pid>/exe) in its pid namespace:
    /// - `exec`: its init joins a running container.
    /// - `create`: its init waits for `start` in a pid namespace that
    ///   another container may join meanwhile.
    /// - `run` of a bundle that joins an existing pid namespace or shares
    ///   the host's.
    ///
    /// `run` with a new pid namespace starts its init right after creating
    /// it, and `sandbox`/`selftest` always make a new pid namespace nobody
    /// is told about: no process but runsbx's own init lives there until
    /// that init has exec'd the workload. They skip the re-exec.
    pub fn needs_sealed_binary(&self) -> bool {
        match self {
            Command::Exec(_) | Command::Create(_) => true,
            Command::Run(a) => joins_pid_namespace(&a.flags.bundle),
            Command::Selftest(a) => a.bundle.as_deref().is_some_and(joins_pid_namespace),
            _ => false,
        }
    }
}

/// Runs a command; the Ok value is the process exit code.
pub fn dispatch(ctx: &Ctx, command: Command) -> Result<u8> {
    let mode = isolation::decide(&command)?;
    command::enter_rootless(ctx, &command, mode)?;
    match command {
        Command::Create(a) => create::run(ctx, a).map(|_| 0),
        Command::Start(a) => start::run(ctx, &a.id).map(|_| 0),
        Command::Run(a) => run::run(ctx, a),
        Command::State(a) => state::run(ctx, &a.id).map(|_| 0),
        Command::Kill(a) => kill::run(ctx, a).map(|_| 0),
        Command::Delete(a) => delete::run(ctx, a).map(|_| 0),
        Command::List(a) => list::run(ctx, a).map(|_| 0),
        Command::Ps(a) => ps::run(ctx, a).map(|_| 0),
        Command::Exec(a) => exec::run(ctx, a),
        Command::Pause(a) => pause::pause(ctx, &a.id).map(|_| 0),
        Command::Resume(a) => pause::resume(ctx, &a.id).map(|_| 0),
        Command::Update(a) => update::run(ctx, a).map(|_| 0),
        Command::Events(a) => events::run(ctx, a).map(|_| 0),
        Command::Checkpoint(a) => checkpoint::refuse("checkpoint", &a.id),
        Command::Restore(a) => checkpoint::refuse("restore", &a.id),
        Command::Features => features::run().map(|_| 0),
        Command::Spec(a) => spec::run(a).map(|_| 0),
        Command::Sandbox(a) => sandbox::sandbox(ctx, a, mode.unwrap_or(Mode::Namespaces)),
        Command::Gen(a) => sandbox::gen(ctx, a).map(|_| 0),
        Command::Serve(a) => serve::run(ctx, a),
        Command::Mcp(a) => mcp::run(ctx, a),
        Command::Selftest(a) => selftest::run(ctx, a, mode.unwrap_or(Mode::Namespaces)),
        Command::Check(a) => check::run(ctx, a).map(|_| 0),
        Command::Kernelspec(a) => kernelspec::run(a).map(|_| 0),
        Command::HookShim(a) => Ok(runsbx_runtime::hooks::run_shim(
            &a.kind,
            a.index,
            &a.hook,
            &a.bundle,
            &a.report,
            a.cwd.as_deref(),
        ) as u8),
    }
}

/// True unless the bundle's config asks for a new pid namespace (no path).
/// An unreadable config counts as joining: fail safe, seal.
fn joins_pid_namespace(bundle: &Path) -> bool {
    use runsbx_runtime::spec::facts;
    let Ok(text) = std::fs::read(bundle.join("config.json")) else {
        return true;
    };
    // Unreadable as a spec: sealed, since load refuses it later anyway.
    let Ok(spec) = serde_json::from_slice::<libcontainer::oci_spec::runtime::Spec>(&text) else {
        return true;
    };
    // As libcontainer decides (spec::facts): the last pid entry counts
    // (duplicates are refused later, at load), and only one without a
    // path is new; an empty path is a join.
    !facts::is_new_namespace(
        &spec,
        libcontainer::oci_spec::runtime::LinuxNamespaceType::Pid,
    )
}

/// `--version`, in runc's layout (containerd and podman parse the first
/// line's last word and the `spec:` line).
pub fn version() -> String {
    format!(
        "runsbx version {}\nspec: 1.0.2\nlibcontainer: 0.7.0\n",
        env!("CARGO_PKG_VERSION")
    )
}
