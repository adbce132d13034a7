//! `mcp`: the flags into a session factory; crate::mcp serves MCP on stdio.

use anyhow::{Context, Result};

use super::serve::{fork_config, global_args, sandbox_args};
use super::Ctx;
use crate::cli::Mcp;
use crate::serve::{Factory, SessionConfig};

pub fn run(ctx: &Ctx, a: Mcp) -> Result<u8> {
    let t = &a.call_timeout;
    let call_timeout = runsbx_runtime::guard::parse_duration(t)
        .with_context(|| format!("--call-timeout {t:?}: not a duration"))?;
    let fork = fork_config(&a.session)?;
    let mut sandbox = sandbox_args(&a.session, fork.is_none())?;
    // Figures render to PNG without a display (the operator's --env wins).
    if !a
        .session
        .inside
        .env
        .iter()
        .any(|e| e.starts_with("MPLBACKEND="))
    {
        sandbox.extend(["--env".into(), "MPLBACKEND=Agg".into()]);
    }
    let factory = Factory::new(SessionConfig {
        global: global_args(ctx),
        sandbox,
        python: a.session.command,
        preload: a.preload,
        fork,
    })?;
    crate::mcp::run(factory, Some(call_timeout))
}
