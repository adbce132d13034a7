//! `runsbx check BUNDLE`: the checks `create` makes before it forks, and the
//! resulting policy in words or JSON. Creates nothing: no state dir, no
//! cgroup, no process. See runsbx_runtime::explain for what it cannot see.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use runsbx_runtime::explain::{self, Host};
use runsbx_runtime::isolation::{self, Pin};
use runsbx_runtime::spec;

use super::Ctx;
use crate::cli::{Check, LogFormat};

pub fn run(ctx: &Ctx, a: Check) -> Result<()> {
    print(ctx, &a.bundle, a.format, None)
}

/// Validates the bundle at `dir` and prints its policy (also `gen --explain`,
/// which passes what discovery found: why each path is bound).
pub fn print(
    ctx: &Ctx,
    dir: &Path,
    format: LogFormat,
    discovery: Option<&runsbx_bundle::Discovery>,
) -> Result<()> {
    // First, while runsbx is single-threaded (the probe forks).
    let isolation = isolation_here();
    let validated = spec::validate(dir, &ctx.rt.landlock_default)?;
    let executable = explain::find_executable(&validated.bundle)?;
    let explanation = explain::explain(&validated, executable, &Host::current());
    let mut out = std::io::stdout().lock();
    match format {
        LogFormat::Json => {
            let mut v = serde_json::to_value(&explanation)?;
            if let Some(d) = discovery {
                v["discovery"] = serde_json::json!({
                    "binds": d.reasons,
                    "unresolved": d.unresolved.iter()
                        .map(|(lib, by)| serde_json::json!({"library": lib, "needed_by": by}))
                        .collect::<Vec<_>>(),
                });
            }
            v["isolation"] = serde_json::json!({"mode": isolation.0, "note": isolation.1});
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?
        }
        LogFormat::Text => {
            write!(out, "{}", explanation.to_text())?;
            match &isolation {
                (Some(mode), None) => writeln!(out, "isolation on this host: {mode}")?,
                (Some(mode), Some(note)) => {
                    writeln!(out, "isolation on this host: {mode} ({note})")?
                }
                (None, Some(note)) => writeln!(out, "isolation on this host: none ({note})")?,
                (None, None) => {}
            }
            if let Some(d) = discovery {
                write!(out, "{}", discovery_text(d))?;
            }
        }
    }
    Ok(())
}

/// The mode `runsbx sandbox` gets on this host (as it decides it:
/// runsbx_runtime::isolation), with the reason when it is not namespaces.
/// A bundle run with `run` or `create` needs its namespaces either way.
fn isolation_here() -> (Option<&'static str>, Option<String>) {
    match isolation::choose(Pin::Auto) {
        Ok(d) => (
            Some(d.mode.name()),
            d.cause.map(|c| format!("namespaces are unavailable: {c}")),
        ),
        Err(refused) => (None, Some(refused.0)),
    }
}

/// Why each read-only path of a generated bundle is bound, and what an
/// extension module needs that the host lacks too.
fn discovery_text(d: &runsbx_bundle::Discovery) -> String {
    let mut s = String::from("why each read-only path is bound:\n");
    for (path, why) in &d.reasons {
        s.push_str(&format!("  {}  {why}\n", path.display()));
    }
    if !d.unresolved.is_empty() {
        s.push_str("not found on this host either (importing these modules fails there too):\n");
        for (lib, by) in &d.unresolved {
            s.push_str(&format!("  {lib}  needed by {}\n", by.display()));
        }
    }
    s
}
