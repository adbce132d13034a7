//! The workload's environment: an allowlist of the caller's variables plus
//! explicit `--env K=V`, with HOME and TMPDIR pointing into the workdir.
//!
//! Stops: secrets in the caller's environment (tokens, keys, `*_PASSWORD`)
//! reaching untrusted code, and variables that change how the runtime paths
//! behave (`LD_PRELOAD`, `LD_LIBRARY_PATH`, `PYTHONPATH`, `PYTHONSTARTUP`).
//! Nothing outside the allowlist passes unless the user names it with `--env`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::BundleError;

/// Variables taken from the caller's environment when set there.
pub const ENV_ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
];

/// PATH when the caller has none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Builds the environment, sorted by name. HOME and TMPDIR are the workdir
/// (as seen inside the container) whatever the caller's are; an explicit
/// `--env` wins over everything, HOME and TMPDIR included.
pub fn scrub_env(
    host: impl Iterator<Item = (String, String)>,
    explicit: &[(String, String)],
    workdir_in_container: &Path,
) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = host
        .filter(|(k, _)| ENV_ALLOWLIST.contains(&k.as_str()))
        .collect();
    env.entry("PATH".into())
        .or_insert_with(|| DEFAULT_PATH.into());
    let wd = workdir_in_container.to_string_lossy().into_owned();
    env.insert("HOME".into(), wd.clone());
    env.insert("TMPDIR".into(), wd);
    for (k, v) in explicit {
        env.insert(k.clone(), v.clone());
    }
    env.into_iter().collect()
}

/// Parses one `--env K=V` value. The name must be non-empty and free of `=`
/// and NUL; the value may be empty and may contain `=`.
pub fn parse_env_flag(arg: &str) -> Result<(String, String), BundleError> {
    let bad = |reason: &str| BundleError::Env {
        arg: arg.to_string(),
        reason: reason.to_string(),
    };
    let (k, v) = arg
        .split_once('=')
        .ok_or_else(|| bad("expected NAME=VALUE"))?;
    if k.is_empty() {
        return Err(bad("empty variable name"));
    }
    if arg.contains('\0') {
        return Err(bad("contains a NUL byte"));
    }
    Ok((k.to_string(), v.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(vars: &[(&str, &str)]) -> impl Iterator<Item = (String, String)> {
        vars.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn keeps_only_the_allowlist_and_points_home_and_tmpdir_at_the_workdir() {
        let env = scrub_env(
            host(&[
                ("PATH", "/usr/bin:/bin"),
                ("LANG", "C.UTF-8"),
                ("HOME", "/root"),
                ("TMPDIR", "/tmp"),
                ("AWS_SECRET_ACCESS_KEY", "hunter2"),
                ("OPENAI_API_KEY", "sk-secret"),
                ("LD_PRELOAD", "/evil.so"),
                ("PYTHONPATH", "/somewhere"),
                ("PYTHONHASHSEED", "0"),
            ]),
            &[],
            Path::new("/work/w"),
        );
        let want: Vec<(String, String)> = [
            ("HOME", "/work/w"),
            ("LANG", "C.UTF-8"),
            ("PATH", "/usr/bin:/bin"),
            ("PYTHONHASHSEED", "0"),
            ("TMPDIR", "/work/w"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(env, want);
    }

    #[test]
    fn explicit_variables_win_and_path_has_a_default() {
        let env = scrub_env(
            host(&[("SECRET_TOKEN", "x")]),
            &[
                ("FOO".into(), "a=b".into()),
                ("HOME".into(), "/elsewhere".into()),
            ],
            Path::new("/w"),
        );
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("PATH"), Some(DEFAULT_PATH));
        assert_eq!(get("FOO"), Some("a=b"));
        assert_eq!(get("HOME"), Some("/elsewhere"));
        assert_eq!(get("TMPDIR"), Some("/w"));
        assert_eq!(get("SECRET_TOKEN"), None);
    }

    #[test]
    fn env_flag_table() {
        for (arg, want) in [
            ("A=1", Some(("A", "1"))),
            ("A=", Some(("A", ""))),
            ("A=b=c", Some(("A", "b=c"))),
            ("A", None),
            ("=1", None),
            ("A=\0", None),
        ] {
            let got = parse_env_flag(arg).ok();
            assert_eq!(
                got,
                want.map(|(k, v)| (k.to_string(), v.to_string())),
                "{arg:?}"
            );
        }
        let e = parse_env_flag("NOPE").unwrap_err().to_string();
        assert_eq!(e, "--env NOPE: expected NAME=VALUE");
    }
}
