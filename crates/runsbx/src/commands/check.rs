//! `runsbx check BUNDLE`: the checks `create` makes before it forks, and the
//! resulting policy in words or JSON. Creates nothing: no state dir, no
//! cgroup, no process. See runsbx_runtime::explain for what it cannot see.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use runsbx_runtime::explain::{self, Host};

use super::Ctx;
use crate::cli::{Check, LogFormat};

pub fn run(ctx: &Ctx, a: Check) -> Result<()> {
    print(ctx, &a.bundle, a.format)
}

/// Validates the bundle at `dir` and prints its policy (also `gen --explain`).
pub fn print(ctx: &Ctx, dir: &Path, format: LogFormat) -> Result<()> {
    let validated = explain::validate(dir, &ctx.rt.landlock_default)?;
    let executable = explain::find_executable(&validated.bundle)?;
    let explanation = explain::explain(&validated, executable, &Host::current());
    let mut out = std::io::stdout().lock();
    match format {
        LogFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&explanation)?)?,
        LogFormat::Text => write!(out, "{}", explanation.to_text())?,
    }
    Ok(())
}
