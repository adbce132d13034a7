//! Flags into the library's types: clap structs (cli.rs) in, plain
//! requests for runsbx-runtime and runsbx-bundle out.

use anyhow::{bail, Context, Result};
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

/// `UID` or `UID:GID`, numbers only: a name lookup would read the host's
/// passwd, not the container's, and could map to the wrong user.
pub fn parse_user(s: &str) -> Result<(u32, Option<u32>)> {
    let num = |p: &str, what: &str| -> Result<u32> {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            bail!("--user {s:?}: {what} must be a number");
        }
        p.parse::<u32>()
            .map_err(|_| anyhow::anyhow!("--user {s:?}: {what} is out of range"))
    };
    match s.split_once(':') {
        Some((u, g)) => Ok((num(u, "uid")?, Some(num(g, "gid")?))),
        None => Ok((num(s, "uid")?, None)),
    }
}

/// `--cgroup` as runc parses it (`PATH` alone, or `CONTROLLER[,...]:PATH`
/// once per controller), reduced to the one path libcontainer takes for
/// every controller; `None` is the container's own cgroup.
pub fn parse_sub_cgroup(args: &[String]) -> Result<Option<String>> {
    let mut path: Option<&str> = None;
    let mut controllers: Vec<&str> = Vec::new();
    for arg in args {
        let p = match arg.split_once(':') {
            None if args.len() > 1 => {
                bail!("--cgroup {arg:?}: needs a CONTROLLER: prefix when --cgroup is repeated")
            }
            None => arg.as_str(),
            Some((_, p)) if p.contains(':') => {
                bail!("--cgroup {arg:?}: expected [CONTROLLER:]PATH")
            }
            Some((ctrls, p)) => {
                for c in ctrls.split(',') {
                    if c.is_empty() {
                        bail!("--cgroup {arg:?}: empty controller name");
                    }
                    if controllers.contains(&c) {
                        bail!("--cgroup: controller {c} given more than once");
                    }
                    controllers.push(c);
                }
                p
            }
        };
        // Stops: an exec'd process placed in a cgroup outside the
        // container's (`..` climbing out of it), where the container's
        // limits, freeze and kill --all would not reach it.
        if p.split('/').any(|c| c == "..") {
            bail!("--cgroup {arg:?}: `..` would leave the container's cgroup");
        }
        let p = p.trim_matches('/');
        match path {
            Some(q) if q != p => bail!(
                "--cgroup: runsbx runs the process in one sub-cgroup for every controller; \
                 got {q:?} and {p:?}"
            ),
            _ => path = Some(p),
        }
    }
    Ok(path.filter(|p| !p.is_empty()).map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_cgroups() {
        let v = |a: &[&str]| parse_sub_cgroup(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(v(&[]).unwrap(), None);
        assert_eq!(v(&["/"]).unwrap(), None);
        assert_eq!(v(&["/sub/x"]).unwrap().as_deref(), Some("sub/x"));
        assert_eq!(v(&["sub"]).unwrap().as_deref(), Some("sub"));
        assert_eq!(
            v(&["cpu,memory:/sub", "pids:sub/"]).unwrap().as_deref(),
            Some("sub")
        );
        for bad in [
            &["../x"][..],
            &["a/../../x"],
            &["cpu:.."],
            &["a", "b"],
            &["cpu:/a", "pids:/b"],
            &["cpu:/a", "cpu:/a"],
            &[",cpu:/a"],
            &["cpu:/a:b"],
        ] {
            assert!(v(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn users() {
        assert_eq!(parse_user("1000").unwrap(), (1000, None));
        assert_eq!(parse_user("0:0").unwrap(), (0, Some(0)));
        assert_eq!(parse_user("65534:65534").unwrap(), (65534, Some(65534)));
        for bad in [
            "",
            ":",
            "root",
            "1000:",
            ":1000",
            "-1",
            "1:2:3",
            "4294967296",
            "1 ",
            "+1",
        ] {
            assert!(parse_user(bad).is_err(), "{bad:?}");
        }
    }
}
