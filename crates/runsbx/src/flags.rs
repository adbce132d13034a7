//! Flags into the library's types: clap structs (cli.rs) in, plain
//! requests for runsbx-runtime and runsbx-bundle out.

use anyhow::{Context, Result};
use runsbx_bundle::SandboxRequest;
use runsbx_policy::profile::Profile;
use runsbx_runtime::guard::{self, Limits};
use runsbx_runtime::supervise::{self, Supervision};

use crate::cli::{GuardFlags, SandboxFlags};

/// `--timeout`, `--rss-limit`, `--status-fd`, `--report`, `--report-denials`.
pub fn supervision(g: &GuardFlags) -> Result<Supervision> {
    let timeout = g
        .timeout
        .as_deref()
        .map(|t| {
            guard::parse_duration(t).with_context(|| format!("--timeout {t:?}: not a duration"))
        })
        .transpose()?;
    let rss_limit = g
        .rss_limit
        .as_deref()
        .map(|s| guard::parse_size(s).with_context(|| format!("--rss-limit {s:?}: not a size")))
        .transpose()?;
    let status_fd = g.status_fd.map(supervise::status_file).transpose()?;
    Ok(Supervision {
        limits: Limits { timeout, rss_limit },
        status_fd,
        report: g.report.clone(),
        report_denials: g.report_denials,
        ..Supervision::default()
    })
}

impl From<&SandboxFlags> for SandboxRequest {
    fn from(f: &SandboxFlags) -> Self {
        SandboxRequest {
            command: f.command.clone(),
            workdir: f.workdir.clone(),
            ro: f.ro.clone(),
            env: f.env.clone(),
            rlimits: f.rlimit.clone(),
            profile: profile(f.profile),
            state_root: None,
        }
    }
}

/// `--profile`'s value.
pub fn profile(p: crate::cli::Profile) -> Profile {
    match p {
        crate::cli::Profile::Default => Profile::Default,
        crate::cli::Profile::Jupyter => Profile::Jupyter,
    }
}
