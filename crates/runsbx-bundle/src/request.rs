//! What `sandbox`, `gen` and `selftest` ask for, as plain values: the CLI
//! converts its flags into a [`SandboxRequest`], selftest builds one
//! directly, and runsbx_sandbox::stage turns it into a config.

use std::path::PathBuf;

use crate::error::BundleError;
use crate::generate::rlimit_name;

/// One sandbox to generate. Flag values that need parsing are kept as
/// given, and parsed (in this order, so the first bad one is reported)
/// while the config is prepared: `--env` by [`crate::parse_env_flag`],
/// `--rlimit` by [`parse_rlimit_flag`].
#[derive(Debug, Clone, Default)]
pub struct SandboxRequest {
    /// The command and its arguments; the first is looked up in PATH.
    pub command: Vec<String>,
    /// The read-write directory; `None`: a private one made for the run.
    pub workdir: Option<PathBuf>,
    /// Extra read-only paths (`--ro`).
    pub ro: Vec<PathBuf>,
    /// `KEY=VALUE` or `KEY` (`--env`).
    pub env: Vec<String>,
    /// `NAME=SOFT[:HARD]` (`--rlimit`).
    pub rlimits: Vec<String>,
    /// The seccomp profile (`--profile`).
    pub profile: runsbx_policy::profile::Profile,
    /// `--allow-net`: the workload may connect to runsbx's HTTP proxy on
    /// 127.0.0.1 (runsbx_policy::egress::PROXY_PORT) and finds it in
    /// HTTP_PROXY and its kin; nothing else of the network changes.
    pub proxy: bool,
    /// runsbx's state root (`--root`): a workdir that overlaps it is refused.
    pub state_root: Option<PathBuf>,
}

/// `NAME=SOFT[:HARD]`; sizes take K, M, G suffixes; `unlimited` is allowed.
/// Zero is a valid limit (`CORE=0`): runsbx_policy::units::parse_bytes, not
/// guard::parse_size.
pub fn parse_rlimit_flag(arg: &str) -> Result<(String, u64, u64), BundleError> {
    let bad = |reason: String| BundleError::RlimitFlag {
        arg: arg.to_string(),
        reason,
    };
    let Some((name, value)) = arg.split_once('=') else {
        return Err(bad("expected NAME=SOFT[:HARD]".into()));
    };
    let name = rlimit_name(name)?;
    let (soft, hard) = match value.split_once(':') {
        Some((s, h)) => (s, h),
        None => (value, value),
    };
    let num = |v: &str| -> Result<u64, BundleError> {
        if v == "unlimited" {
            return Ok(u64::MAX);
        }
        runsbx_policy::units::parse_bytes(v).ok_or_else(|| bad(format!("{v:?} is not a number")))
    };
    Ok((name, num(soft)?, num(hard)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rlimits() {
        assert_eq!(
            parse_rlimit_flag("NOFILE=256").unwrap(),
            ("RLIMIT_NOFILE".into(), 256, 256)
        );
        assert_eq!(
            parse_rlimit_flag("as=1G:2G").unwrap(),
            ("RLIMIT_AS".into(), 1 << 30, 2 << 30)
        );
        assert_eq!(parse_rlimit_flag("CPU=unlimited").unwrap().1, u64::MAX);
        for bad in [
            "NOFILE",
            "NOFILE=",
            "NOFILE=x",
            "BOGUS=1",
            "NOFILE=1:2:3",
            "AS=99999999999G",
        ] {
            assert!(parse_rlimit_flag(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rlimit_messages() {
        let e = |a: &str| parse_rlimit_flag(a).unwrap_err().to_string();
        assert_eq!(
            e("NOFILE"),
            r#"--rlimit "NOFILE": expected NAME=SOFT[:HARD]"#
        );
        assert_eq!(e("NOFILE=x"), r#"--rlimit "NOFILE=x": "x" is not a number"#);
        assert_eq!(e("BOGUS=1"), "--rlimit BOGUS: unknown resource");
    }
}
