//! `run`: create and start; in the foreground, supervised until the
//! workload ends (runsbx_runtime::supervise), then deleted.

use anyhow::{bail, Result};
use runsbx_runtime::supervise;
use runsbx_runtime::{CreateOptions, PidfdSocket};

use super::{create, Ctx};
use crate::cli::Run;

pub fn run(ctx: &Ctx, a: Run) -> Result<u8> {
    let opts = create::options(&a.id, &a.flags, a.detach);
    if a.detach {
        let g = &a.guard;
        if g.timeout.is_some() || g.rss_limit.is_some() || g.report.is_some() || g.report_denials {
            bail!(
                "--timeout, --rss-limit, --report and --report-denials need a foreground run \
                 (no --detach)"
            );
        }
        let pidfd = create::pidfd_socket(&a.flags)?;
        return detached(ctx, opts, pidfd.as_ref());
    }
    let sup = crate::flags::supervision(&a.guard)?;
    let pidfd = create::pidfd_socket(&a.flags)?;
    let outcome = supervise::foreground(&ctx.rt, opts, pidfd.as_ref(), a.keep, sup)?;
    Ok(supervise::exit_status(&outcome))
}

fn detached(ctx: &Ctx, opts: CreateOptions, pidfd: Option<&PidfdSocket>) -> Result<u8> {
    let id = opts.id.clone();
    let c = ctx.rt.create(opts)?.container;
    let started = send_pidfd(&c, pidfd).and_then(|_| Ok(ctx.rt.start(&id)?));
    if let Err(e) = started {
        let _ = ctx.rt.delete(&id, true);
        return Err(e);
    }
    Ok(0)
}

fn send_pidfd(c: &libcontainer::container::Container, sock: Option<&PidfdSocket>) -> Result<()> {
    if let (Some(sock), Some(pid)) = (sock, c.pid()) {
        sock.send(pid)?;
    }
    Ok(())
}
