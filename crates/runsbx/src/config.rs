//! The operator's configuration: `/etc/runsbx/config.json` (or the file
//! named by `RUNSBX_CONFIG`), overridden by global flags. It exists so that
//! engines which cannot pass runtime flags still get runsbx's defaults for
//! every container they start.
//!
//! ```json
//! { "landlock": "auto" }
//! ```
//! `landlock`: `"off"` (default), `"auto"`, `"auto-best-effort"`, or a policy
//! object in the `process.landlock` form; see docs/landlock.md.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use runsbx_policy::landlock::LandlockDefault;

pub const DEFAULT_PATH: &str = "/etc/runsbx/config.json";

#[derive(Debug, Default)]
pub struct Config {
    pub landlock: LandlockDefault,
}

fn path() -> (PathBuf, bool) {
    match std::env::var_os("RUNSBX_CONFIG") {
        Some(p) => (PathBuf::from(p), true),
        None => (PathBuf::from(DEFAULT_PATH), false),
    }
}

/// Loads the file (absent is fine unless RUNSBX_CONFIG names it), then
/// applies the flag.
pub fn load(landlock_flag: Option<&str>) -> Result<Config> {
    let (path, explicit) = path();
    let mut config = match std::fs::read(&path) {
        Ok(text) => parse(&text).with_context(|| path.display().to_string())?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => Config::default(),
        Err(e) => return Err(e).with_context(|| path.display().to_string()),
    };
    if let Some(flag) = landlock_flag {
        let value = if flag.trim_start().starts_with('{') {
            serde_json::from_str(flag).context("--landlock-default: not valid JSON")?
        } else {
            serde_json::Value::String(flag.to_string())
        };
        config.landlock = LandlockDefault::from_json(&value, "--landlock-default")?;
    }
    Ok(config)
}

pub fn parse(text: &[u8]) -> Result<Config> {
    let value: serde_json::Value = serde_json::from_slice(text)?;
    let Some(obj) = value.as_object() else {
        bail!("expected a JSON object");
    };
    let mut config = Config::default();
    for (key, v) in obj {
        match key.as_str() {
            "landlock" => config.landlock = LandlockDefault::from_json(v, "landlock")?,
            // An unknown key may be a setting the operator thinks is in
            // force; refuse rather than ignore it.
            other => bail!("unknown setting {other:?}"),
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_settings() {
        assert_eq!(parse(b"{}").unwrap().landlock, LandlockDefault::Off);
        assert_eq!(
            parse(br#"{"landlock":"auto"}"#).unwrap().landlock,
            LandlockDefault::Auto { best_effort: false }
        );
        assert!(parse(br#"{"landlok":"auto"}"#).is_err());
        assert!(parse(br#"{"landlock":"sometimes"}"#).is_err());
        assert!(parse(b"[]").is_err());
    }
}
