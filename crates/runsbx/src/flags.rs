//! Flags into the library's types: clap structs (cli.rs) in, plain
//! requests for runsbx-runtime and runsbx-bundle out.

use anyhow::{bail, Context, Result};
use runsbx_bundle::SandboxRequest;
use runsbx_policy::profile::Profile;
use runsbx_runtime::guard::{self, Limits};
use runsbx_runtime::supervise::{self, Supervision};

use runsbx_runtime::resources::ResourceUpdate;
use runsbx_runtime::SubCgroups;

use crate::cli::{GuardFlags, SandboxFlags, Update};

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
            ro: f.inside.ro.clone(),
            env: f.inside.env.clone(),
            rlimits: f.inside.rlimit.clone(),
            profile: profile(f.profile),
            proxy: !f.allow_net.is_empty(),
            state_root: None,
        }
    }
}

/// `--allow-net` and `--allow-net-range` as the proxy's policy; `None`
/// without `--allow-net`.
pub fn egress(f: &SandboxFlags) -> Result<Option<runsbx_runtime::egress::Proxy>> {
    if f.allow_net.is_empty() {
        if !f.allow_net_range.is_empty() {
            bail!("--allow-net-range needs --allow-net: it widens the proxy's policy, and there is no proxy without a list");
        }
        return Ok(None);
    }
    let allow = runsbx_policy::egress::Allowlist::parse(&f.allow_net, &f.allow_net_range)
        .map_err(anyhow::Error::msg)?;
    Ok(Some(runsbx_runtime::egress::Proxy {
        allow,
        ..Default::default()
    }))
}

/// `--profile`'s value.
pub fn profile(p: crate::cli::Profile) -> Profile {
    match p {
        crate::cli::Profile::Default => Profile::Default,
        crate::cli::Profile::Jupyter => Profile::Jupyter,
        crate::cli::Profile::ForkServer => Profile::ForkServer,
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

/// `--cgroup` as runc parses it: `PATH` alone (every controller), or
/// `CONTROLLER[,...]:PATH` once per controller (the others stay in the
/// container's own cgroup). Paths relative, without `..`, `""` for the
/// container's own.
pub fn parse_sub_cgroup(args: &[String]) -> Result<SubCgroups> {
    let mut out = SubCgroups::default();
    for arg in args {
        let (ctrls, p) = match arg.split_once(':') {
            None if args.len() > 1 => {
                bail!("--cgroup {arg:?}: needs a CONTROLLER: prefix when --cgroup is repeated")
            }
            None => (None, arg.as_str()),
            Some((_, p)) if p.contains(':') => {
                bail!("--cgroup {arg:?}: expected [CONTROLLER:]PATH")
            }
            Some((ctrls, p)) => (Some(ctrls), p),
        };
        // Stops: an exec'd process placed in a cgroup outside the
        // container's (`..` climbing out of it), where the container's
        // limits, freeze and kill --all would not reach it.
        if p.split('/').any(|c| c == "..") {
            bail!("--cgroup {arg:?}: {p} is not a sub cgroup path (it would leave the container's cgroup)");
        }
        let p = p.trim_matches('/').to_string();
        let Some(ctrls) = ctrls else {
            out.all = Some(p).filter(|p| !p.is_empty());
            continue;
        };
        for c in ctrls.split(',') {
            if c.is_empty() {
                bail!("--cgroup {arg:?}: empty controller name");
            }
            if out.per_controller.iter().any(|(known, _)| known == c) {
                bail!("--cgroup: controller {c} given more than once");
            }
            out.per_controller.push((c.to_string(), p.clone()));
        }
    }
    Ok(out)
}

/// `update`'s flags (without `--resources`) as a change of resources.
pub fn resource_update(a: &Update) -> Result<ResourceUpdate> {
    // Stops: a schema accepted and then not applied (runc refuses it too
    // where the host has no Intel RDT).
    for (flag, v) in [
        ("--l3-cache-schema", &a.l3_cache_schema),
        ("--mem-bw-schema", &a.mem_bw_schema),
    ] {
        if v.is_some() {
            bail!("{flag}: Intel RDT is not supported by runsbx");
        }
    }
    let size = |flag: &str, v: &Option<String>| -> Result<Option<i64>> {
        v.as_deref()
            .map(|s| match s {
                "-1" => Ok(-1),
                _ => runsbx_policy::units::parse_ram(s).ok_or_else(|| {
                    anyhow::anyhow!("{flag} {s:?}: not a size (100M, 1G, 1.5g, -1)")
                }),
            })
            .transpose()
    };
    Ok(ResourceUpdate {
        memory: size("--memory", &a.memory)?,
        memory_swap: size("--memory-swap", &a.memory_swap)?,
        memory_reservation: size("--memory-reservation", &a.memory_reservation)?,
        kernel_memory: size("--kernel-memory", &a.kernel_memory)?,
        kernel_memory_tcp: size("--kernel-memory-tcp", &a.kernel_memory_tcp)?,
        cpu_shares: a.cpu_share,
        cpu_period: a.cpu_period,
        cpu_quota: a.cpu_quota,
        cpu_burst: a.cpu_burst,
        cpu_idle: a
            .cpu_idle
            .map(|v| runsbx_runtime::resources::check_idle(v).map(|()| v))
            .transpose()
            .map_err(|e| anyhow::anyhow!("--cpu-idle {e}"))?,
        cpu_rt_period: a.cpu_rt_period,
        cpu_rt_runtime: a.cpu_rt_runtime,
        cpuset_cpus: a.cpuset_cpus.clone(),
        cpuset_mems: a.cpuset_mems.clone(),
        pids_limit: a.pids_limit,
        blkio_weight: a.blkio_weight,
        ..ResourceUpdate::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(args: &[&str]) -> Result<ResourceUpdate> {
        use clap::Parser;
        let argv = ["runsbx", "update"].iter().chain(args).chain(&["c1"]);
        let cli = crate::cli::Cli::try_parse_from(argv)?;
        match cli.command {
            Some(crate::cli::Command::Update(a)) => resource_update(&a),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn update_flags() {
        let u = update(&[
            "--memory",
            "100M",
            "--memory-swap=-1",
            "--memory-reservation",
            "50MB",
            "--cpu-shares",
            "512",
            "--cpu-quota",
            "-1",
            "--cpu-period",
            "100000",
            "--cpuset-cpus",
            "0",
            "--pids-limit",
            "-1",
            "--blkio-weight",
            "300",
        ])
        .unwrap();
        assert_eq!(
            u,
            ResourceUpdate {
                memory: Some(100 << 20),
                memory_swap: Some(-1),
                memory_reservation: Some(50 << 20),
                cpu_shares: Some(512),
                cpu_quota: Some(-1),
                cpu_period: Some(100000),
                cpuset_cpus: Some("0".into()),
                pids_limit: Some(-1),
                blkio_weight: Some(300),
                ..Default::default()
            }
        );
        assert_eq!(update(&["--cpu-share", "2"]).unwrap().cpu_shares, Some(2));
        assert_eq!(update(&[]).unwrap(), ResourceUpdate::default());
        for bad in [
            &["--memory", "lots"][..],
            &["--memory", "-2"],
            &["--memory-swap", "1X"],
            &["--pids-limit", "many"],
            &["--blkio-weight", "70000"],
            &["--l3-cache-schema", "L3:0=f"],
            &["--mem-bw-schema", "MB:0=50"],
            &["--resources", "-", "--memory", "1M"],
        ] {
            assert!(update(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sub_cgroups() {
        let v = |a: &[&str]| parse_sub_cgroup(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let all = |p: Option<&str>| SubCgroups {
            all: p.map(str::to_string),
            per_controller: Vec::new(),
        };
        assert_eq!(v(&[]).unwrap(), all(None));
        assert_eq!(v(&["/"]).unwrap(), all(None));
        assert_eq!(v(&["/sub/x"]).unwrap(), all(Some("sub/x")));
        assert_eq!(v(&["sub"]).unwrap(), all(Some("sub")));
        let per = v(&["cpu,memory:/sub", "pids:x/", "devices:/"]).unwrap();
        let pairs: Vec<(&str, &str)> = per
            .per_controller
            .iter()
            .map(|(c, p)| (c.as_str(), p.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("cpu", "sub"),
                ("memory", "sub"),
                ("pids", "x"),
                ("devices", "")
            ]
        );
        assert_eq!(per.all, None);
        let err = v(&[".."]).unwrap_err().to_string();
        assert!(err.contains(".. is not a sub cgroup path"), "{err}");
        for bad in [
            &["../x"][..],
            &["a/../../x"],
            &["cpu:.."],
            &["a", "b"],
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
