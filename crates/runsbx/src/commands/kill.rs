use anyhow::{bail, Result};
use nix::sys::signal::Signal;

use super::Ctx;
use crate::cli::Kill;

pub fn run(ctx: &Ctx, a: Kill) -> Result<()> {
    // Signal 0: only whether the container could be signalled.
    if a.signal.as_deref() == Some("0") {
        ctx.rt.kill_check(&a.id, a.all)?;
        return Ok(());
    }
    let signal = match &a.signal {
        Some(s) => parse_signal(s)?,
        None => Signal::SIGTERM,
    };
    ctx.rt.kill(&a.id, signal, a.all)?;
    Ok(())
}

/// "9", "KILL", "SIGKILL" and "sigkill" all name SIGKILL, as with runc.
pub fn parse_signal(s: &str) -> Result<Signal> {
    if let Ok(n) = s.parse::<i32>() {
        return Signal::try_from(n).map_err(|_| anyhow::anyhow!("unknown signal {s:?}"));
    }
    let upper = s.to_ascii_uppercase();
    let name = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    match name.parse::<Signal>() {
        Ok(sig) => Ok(sig),
        Err(_) => bail!("unknown signal {s:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals() {
        for s in ["9", "KILL", "SIGKILL", "kill", "sigkill"] {
            assert_eq!(parse_signal(s).unwrap(), Signal::SIGKILL, "{s}");
        }
        assert_eq!(parse_signal("15").unwrap(), Signal::SIGTERM);
        assert_eq!(parse_signal("winch").unwrap(), Signal::SIGWINCH);
        // "0" is `run`'s own case, never a signal.
        for s in ["", "0", "65", "-1", "SIGFOO", "FOO", "9x"] {
            assert!(parse_signal(s).is_err(), "{s}");
        }
    }
}
