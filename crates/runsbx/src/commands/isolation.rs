//! `--isolation` (and its alias `--no-userns`) turned into the mode a
//! `sandbox` or `selftest` runs with, decided once, before runsbx enters any
//! namespace, by runsbx_runtime::isolation.

use anyhow::{bail, Result};
use runsbx_runtime::isolation::{self, Mode, Pin};

use crate::cli::{Command, Isolation, Sandbox};

fn pin(flag: Isolation, no_userns: bool) -> Pin {
    match (flag, no_userns) {
        (_, true) | (Isolation::Landlock, _) => Pin::Landlock,
        (Isolation::Namespaces, _) => Pin::Namespaces,
        (Isolation::Auto, _) => Pin::Auto,
    }
}

/// The mode of a command that runs a generated sandbox (`sandbox`,
/// `selftest` without `--bundle`: a bundle says for itself); `None` for
/// the others. A step down `auto` takes is announced on stderr, one line.
pub fn decide(command: &Command) -> Result<Option<Mode>> {
    let pin = match command {
        Command::Sandbox(a) => pin(a.isolation, a.no_userns),
        Command::Selftest(a) if a.bundle.is_none() => pin(a.isolation, a.no_userns),
        _ => return Ok(None),
    };
    let decision = isolation::choose(pin)?;
    if let (Command::Sandbox(a), Mode::Landlock) = (command, decision.mode) {
        if let Some(flag) = needs_namespaces(a) {
            // One line, instead of the announcement and then this.
            match &decision.cause {
                Some(cause) => bail!(
                    "{flag} needs the namespaces mode, and namespaces are unavailable here: {cause}"
                ),
                None => bail!(
                    "{flag} needs the namespaces mode, and this run uses --isolation landlock"
                ),
            }
        }
    }
    if let Some(line) = &decision.announce {
        eprintln!("{line}");
    }
    Ok(Some(decision.mode))
}

/// The first flag set in `a` that only the container honours. Pinned with
/// `--no-userns`, clap refuses them already.
fn needs_namespaces(a: &Sandbox) -> Option<&'static str> {
    let sup = runsbx_runtime::supervise::Supervision {
        report_denials: a.guard.report_denials,
        ..Default::default()
    };
    // A bad flag value is reported by the run itself (sandbox::request).
    super::sandbox::request(a, Mode::Landlock)
        .ok()?
        .needs_namespaces(&sup)
}
