use anyhow::{Context, Result};
use runsbx_runtime::monitor::Monitor;
use runsbx_runtime::CreateOptions;

use super::{create, Ctx};
use crate::cli::Run;

pub fn run(ctx: &Ctx, a: Run) -> Result<u8> {
    let opts = create::options(&a.id, &a.flags, a.detach);
    if a.detach {
        detached(ctx, opts, a.flags.pidfd_socket.as_deref())
    } else {
        foreground(ctx, opts, a.flags.pidfd_socket.as_deref(), a.keep)
    }
}

fn detached(ctx: &Ctx, opts: CreateOptions, pidfd: Option<&std::path::Path>) -> Result<u8> {
    let id = opts.id.clone();
    let c = ctx.rt.create(opts)?;
    let started = send_pidfd(&c, pidfd).and_then(|_| Ok(ctx.rt.start(&id)?));
    if let Err(e) = started {
        let _ = ctx.rt.delete(&id, true);
        return Err(e);
    }
    Ok(0)
}

fn send_pidfd(
    c: &libcontainer::container::Container,
    sock: Option<&std::path::Path>,
) -> Result<()> {
    if let (Some(sock), Some(pid)) = (sock, c.pid()) {
        runsbx_runtime::sys::pidfd::send(sock, pid)?;
    }
    Ok(())
}

/// create + start, wait (forwarding signals), delete unless `keep`, and
/// return the workload's status (128+N when killed by signal N), as runc.
pub fn foreground(
    ctx: &Ctx,
    opts: CreateOptions,
    pidfd: Option<&std::path::Path>,
    keep: bool,
) -> Result<u8> {
    let id = opts.id.clone();
    let c = ctx.rt.create(opts)?;
    let pid = c.pid().context("libcontainer reported no pid for init")?;
    // Blocked only now that libcontainer has forked: init must not inherit
    // a blocked signal mask.
    let monitor = Monitor::new();
    let started = monitor
        .as_ref()
        .map_err(|e| anyhow::anyhow!("{e}"))
        .and_then(|_| send_pidfd(&c, pidfd))
        .and_then(|_| Ok(ctx.rt.start(&id)?));
    if let Err(e) = started {
        let _ = ctx.rt.delete(&id, true);
        let _ = nix::sys::wait::waitpid(pid, None);
        return Err(e);
    }
    let exit = monitor?.wait(pid, None, || false)?;
    if !keep {
        ctx.rt.delete(&id, true)?;
    }
    Ok(exit.status().clamp(0, 255) as u8)
}
