use anyhow::{Context, Result};
use runsbx_runtime::monitor::Monitor;

use super::{create, Ctx};
use crate::cli::Run;

/// create + start; in the foreground, wait (forwarding signals), delete, and
/// exit with the workload's status (128+N when killed by signal N).
pub fn run(ctx: &Ctx, a: Run) -> Result<u8> {
    let c = ctx.rt.create(create::options(&a.id, &a.flags, a.detach))?;
    let pid = c.pid().context("libcontainer reported no pid for init")?;
    if let Some(sock) = &a.flags.pidfd_socket {
        if let Err(e) = runsbx_runtime::sys::pidfd::send(sock, pid) {
            let _ = ctx.rt.delete(&a.id, true);
            return Err(e.into());
        }
    }
    // Blocked only now that libcontainer has forked: init must not inherit
    // a blocked signal mask.
    let monitor = if a.detach {
        None
    } else {
        Some(Monitor::new()?)
    };
    if let Err(e) = ctx.rt.start(&a.id) {
        let _ = ctx.rt.delete(&a.id, true);
        let _ = nix::sys::wait::waitpid(pid, None);
        return Err(e.into());
    }
    let Some(monitor) = monitor else {
        return Ok(0);
    };
    let exit = monitor.wait(pid, None, || false)?;
    if !a.keep {
        ctx.rt.delete(&a.id, true)?;
    }
    Ok(exit.status().clamp(0, 255) as u8)
}
