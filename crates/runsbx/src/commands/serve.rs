//! `serve`: the flags into crate::serve's config; the server runs until
//! SIGTERM or SIGINT.

use anyhow::{bail, Context, Result};
use clap::ValueEnum;

use super::Ctx;
use crate::cli::{Serve, SessionFlags};
use crate::serve::{self, Config, ForkConfig, SessionConfig};

pub fn run(ctx: &Ctx, a: Serve) -> Result<u8> {
    let session_timeout = a
        .session_timeout
        .as_deref()
        .map(|t| {
            runsbx_runtime::guard::parse_duration(t)
                .with_context(|| format!("--session-timeout {t:?}: not a duration"))
        })
        .transpose()?;
    let fork = fork_config(&a.session)?;
    let sandbox = sandbox_args(&a.session, fork.is_none())?;
    serve::run(
        Config {
            listen: a.listen,
            warm: a.warm,
            max_sessions: a.max_sessions,
            session_timeout,
        },
        SessionConfig {
            global: global_args(ctx),
            sandbox,
            python: a.session.command,
            preload: a.preload,
            fork,
        },
    )
}

/// `--fork-server`'s part of the session config.
pub fn fork_config(a: &SessionFlags) -> Result<Option<ForkConfig>> {
    if !a.fork_server {
        return Ok(None);
    }
    if a.isolation == crate::cli::Isolation::Landlock {
        bail!("--fork-server needs the namespaces mode: its sessions share the fork server's pid namespace");
    }
    Ok(Some(ForkConfig {
        ro: a.inside.ro.clone(),
        rss_limit: a.rss_limit.as_deref().map(size).transpose()?,
    }))
}

fn size(s: &str) -> Result<u64> {
    runsbx_runtime::guard::parse_size(s).with_context(|| format!("--rss-limit {s:?}: not a size"))
}

/// The `sandbox` flags of each session (of the fork server with
/// `--fork-server`, where the server itself enforces `--rss-limit` on each
/// session: `rss_limit` false).
pub fn sandbox_args(a: &SessionFlags, rss_limit: bool) -> Result<Vec<String>> {
    if let Some(s) = &a.rss_limit {
        size(s)?;
    }
    let mut sandbox = Vec::new();
    let mut flag = |name: &str, value: String| {
        sandbox.push(name.to_string());
        sandbox.push(value);
    };
    for p in &a.inside.ro {
        flag("--ro", p.display().to_string());
    }
    for e in &a.inside.env {
        flag("--env", e.clone());
    }
    for r in &a.inside.rlimit {
        flag("--rlimit", r.clone());
    }
    if let Some(m) = &a.memory {
        flag("--memory", m.clone());
    }
    if let Some(n) = a.pids_limit {
        flag("--pids-limit", n.to_string());
    }
    if let (true, Some(s)) = (rss_limit, &a.rss_limit) {
        flag("--rss-limit", s.clone());
    }
    let mode = a.isolation.to_possible_value().expect("a value");
    flag("--isolation", mode.get_name().to_string());
    Ok(sandbox)
}

/// runsbx's global flags for each session's `runsbx`.
pub fn global_args(ctx: &Ctx) -> Vec<String> {
    vec!["--root".into(), ctx.rt.root.display().to_string()]
}
