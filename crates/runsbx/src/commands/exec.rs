use anyhow::{bail, Context, Result};
use runsbx_runtime::monitor::Monitor;
use runsbx_runtime::ExecOptions;

use super::Ctx;
use crate::cli::Exec;
use crate::flags::{parse_sub_cgroup, parse_user};

pub fn run(ctx: &Ctx, a: Exec) -> Result<u8> {
    // Nothing that changes isolation is accepted and then ignored.
    if a.apparmor.is_some() {
        bail!("--apparmor: AppArmor profiles are not supported by runsbx");
    }
    if a.process_label.is_some() {
        bail!("--process-label: SELinux labels are not supported by runsbx");
    }
    // libcontainer takes a --process file as it is; flags that would also
    // shape the process are refused rather than silently dropped.
    if a.process.is_some() {
        let mut given = Vec::new();
        if !a.command.is_empty() {
            given.push("a command");
        }
        for (set, flag) in [
            (!a.env.is_empty(), "--env"),
            (a.cwd.is_some(), "--cwd"),
            (a.user.is_some(), "--user"),
            (!a.additional_gids.is_empty(), "--additional-gids"),
            (!a.cap.is_empty(), "--cap"),
            (a.no_new_privs, "--no-new-privs"),
        ] {
            if set {
                given.push(flag);
            }
        }
        if !given.is_empty() {
            bail!(
                "--process cannot be combined with {}: put them in the process file",
                given.join(", ")
            );
        }
    }
    if let Some(bad) = a.env.iter().find(|e| !e.contains('=')) {
        bail!("--env {bad:?}: expected KEY=VALUE");
    }
    if a.process.is_none() && a.command.is_empty() {
        bail!("no command given: pass a command or --process FILE");
    }
    let user = a.user.as_deref().map(parse_user).transpose()?;
    let sub_cgroup = parse_sub_cgroup(&a.cgroup)?;
    let detach = a.detach;
    // Connected before the process exists, as runc does: an unreachable
    // socket fails the exec before anything runs.
    let pidfd_socket = a
        .pidfd_socket
        .as_deref()
        .map(runsbx_runtime::PidfdSocket::connect)
        .transpose()?;
    let id = a.id.clone();
    let opts = ExecOptions {
        id: a.id,
        process: a.process,
        args: a.command,
        env: a.env,
        cwd: a.cwd,
        user,
        additional_gids: a.additional_gids,
        tty: a.tty,
        console_socket: a.console_socket,
        pid_file: a.pid_file,
        detach,
        preserve_fds: a.preserve_fds,
        no_new_privs: a.no_new_privs,
        cap: a.cap,
        ignore_paused: a.ignore_paused,
        sub_cgroup,
    };
    let executed = ctx.rt.exec(opts)?;
    let pid = executed.pid;
    if let Some(sock) = &pidfd_socket {
        if let Err(e) = sock.send(pid) {
            // As `create`: the caller never got the process.
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            return Err(e.into());
        }
    }
    if detach {
        return Ok(0);
    }
    let monitor = Monitor::new().with_context(|| format!("exec {id}"))?;
    // A terminal: its pty relayed until the process ends (console/).
    let (monitor, tty) = runsbx_runtime::console::relay(executed.console, monitor)?;
    let exit = monitor.wait(pid, None, || false);
    if let Some(mut t) = tty {
        t.workload_ended();
        t.finish();
    }
    Ok(exit?.exit.status().clamp(0, 255) as u8)
}
