//! `serve`: the flags into crate::serve's config; the server runs until
//! SIGTERM or SIGINT.

use anyhow::{Context, Result};
use clap::ValueEnum;

use super::Ctx;
use crate::cli::{Serve, SessionFlags};
use crate::serve::{self, Config, SessionConfig};

pub fn run(ctx: &Ctx, a: Serve) -> Result<u8> {
    let session_timeout = a
        .session_timeout
        .as_deref()
        .map(|t| {
            runsbx_runtime::guard::parse_duration(t)
                .with_context(|| format!("--session-timeout {t:?}: not a duration"))
        })
        .transpose()?;
    serve::run(
        Config {
            listen: a.listen,
            warm: a.warm,
            max_sessions: a.max_sessions,
            session_timeout,
        },
        SessionConfig {
            global: global_args(ctx),
            sandbox: sandbox_args(&a.session)?,
            python: a.session.command,
            preload: a.preload,
        },
    )
}

/// The `sandbox` flags of each session.
pub fn sandbox_args(a: &SessionFlags) -> Result<Vec<String>> {
    if let Some(s) = &a.rss_limit {
        runsbx_runtime::guard::parse_size(s)
            .with_context(|| format!("--rss-limit {s:?}: not a size"))?;
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
    if let Some(s) = &a.rss_limit {
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
