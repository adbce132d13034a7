//! `sandbox` and `gen`: the flags into a runsbx_sandbox request; the
//! sandbox crate prepares, stages, runs and removes it.

use anyhow::{bail, Result};
use runsbx_bundle::write_bundle;
use runsbx_runtime::isolation::Mode;
use runsbx_runtime::supervise;
use runsbx_sandbox::stage::make_traversable;
use runsbx_sandbox::{prepare, SandboxRequest};

use super::Ctx;
use crate::cli::{Gen, Sandbox};

pub fn gen(ctx: &Ctx, a: Gen) -> Result<()> {
    if a.flags.workdir.is_none() {
        bail!("gen needs --workdir: a generated bundle outlives this command");
    }
    // The allowlist is the proxy's, which gen does not run; parsed all the
    // same, so a bad entry fails here rather than at `sandbox`.
    crate::flags::egress(&a.flags)?;
    let mut req: SandboxRequest = (&a.flags).into();
    req.state_root = Some(ctx.rt.root.clone());
    let prepared = prepare(&req, None)?;
    write_bundle(&a.output, &prepared.config)?;
    make_traversable(&a.output)?;
    if let Some(format) = a.explain {
        super::check::print(ctx, &a.output, format, Some(&prepared.discovery))?;
    }
    Ok(())
}

/// Runs `a` with the isolation commands/isolation.rs chose.
pub fn sandbox(ctx: &Ctx, a: Sandbox, mode: Mode) -> Result<u8> {
    let sup = crate::flags::supervision(&a.guard)?;
    let outcome = runsbx_sandbox::run(&ctx.rt, request(&a, mode)?, sup)?;
    Ok(supervise::exit_status(&outcome))
}

/// The library's request for `a`.
pub fn request(a: &Sandbox, mode: Mode) -> Result<runsbx_sandbox::Sandbox> {
    Ok(runsbx_sandbox::Sandbox {
        memory: a.memory.clone(),
        pids_limit: a.pids_limit,
        jupyter: a.jupyter.clone(),
        id: a.id.clone(),
        pid_file: a.pid_file.clone(),
        self_test: a.self_test,
        posture_check: !a.no_posture_check,
        egress: crate::flags::egress(&a.flags)?,
        ..runsbx_sandbox::Sandbox::new((&a.flags).into(), mode)
    })
}
