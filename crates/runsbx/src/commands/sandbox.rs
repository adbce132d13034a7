//! `sandbox` and `gen`: the minimal bundle for one command (discovery and
//! generation live in runsbx-bundle; the default seccomp and Landlock
//! policies in runsbx-policy), written to disk, and for `sandbox` run in the
//! foreground and removed.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use runsbx_bundle::{
    discover, discover_cached, generate, host_ids, make_mountpoints, merge_rlimits, parse_env_flag,
    rlimit_name, scrub_env, write_bundle, GenerateOptions, DEFAULT_PATH, NOBODY,
};
use runsbx_policy::landlock::LandlockPolicy;
use runsbx_policy::profile::sandbox_seccomp;
use runsbx_runtime::guard::Expect;
use runsbx_runtime::CreateOptions;

use super::{run, Ctx};
use crate::cli::{Gen, Sandbox, SandboxFlags};

/// A workdir runsbx made and must remove.
pub struct PrivateDir(pub PathBuf);

impl Drop for PrivateDir {
    fn drop(&mut self) {
        if let Err(e) = runsbx_runtime::premount::remove_tree(&self.0) {
            tracing::warn!("leaving {}: {e}", self.0.display());
        }
    }
}

/// A generated bundle on disk, with the read-only binds made for it.
pub struct Materialized {
    // Field order is drop order: detach the tmpfs (and the binds in it),
    // then remove the now empty directory.
    _scratch: Option<runsbx_runtime::premount::Scratch>,
    pub dir: PrivateDir,
}

pub fn private_dir(prefix: &str, owner: Option<(u32, u32)>) -> Result<PrivateDir> {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .context("creating a private directory")?
        .keep();
    let guard = PrivateDir(dir);
    if let Some((uid, gid)) = owner {
        nix::unistd::chown(&guard.0, Some(uid.into()), Some(gid.into()))
            .with_context(|| format!("chown {}", guard.0.display()))?;
    }
    Ok(guard)
}

/// A generated config.json, what discovery found for it, and the private
/// workdir it refers to (kept alive by the caller).
pub struct Prepared {
    pub config: serde_json::Value,
    pub workdir: Option<PrivateDir>,
    pub discovery: runsbx_bundle::Discovery,
}

/// The generated config.json for `flags`.
pub fn prepare(flags: &SandboxFlags, cache: Option<&Path>) -> Result<Prepared> {
    let path_env = std::env::var("PATH").unwrap_or_else(|_| DEFAULT_PATH.to_string());
    let ro: Vec<PathBuf> = flags.ro.clone();
    let found = match cache {
        Some(dir) => {
            let cwd = std::env::current_dir().context("current directory")?;
            discover_cached(&flags.command, &path_env, &ro, &cwd, dir)?
        }
        None => discover(&flags.command, &path_env, &ro)?,
    };

    let invoker = (
        nix::unistd::getuid().as_raw(),
        nix::unistd::getgid().as_raw(),
    );
    let (workdir, private) = match &flags.workdir {
        Some(w) => {
            if !w.is_absolute() {
                bail!("--workdir {}: must be an absolute path", w.display());
            }
            (w.clone(), None)
        }
        None => {
            // Root's workload runs as host nobody: give it its directory.
            let owner = (invoker.0 == 0).then_some((NOBODY, NOBODY));
            let dir = private_dir("runsbx-work-", owner)?;
            (dir.0.clone(), Some(dir))
        }
    };
    let meta =
        fs::metadata(&workdir).with_context(|| format!("--workdir {}", workdir.display()))?;
    let ids = host_ids(invoker, &workdir, (meta.uid(), meta.gid()))?;

    let explicit = flags
        .env
        .iter()
        .map(|e| parse_env_flag(e))
        .collect::<Result<Vec<_>, _>>()?;
    let env = scrub_env(std::env::vars(), &explicit, &workdir);
    let rlimits = merge_rlimits(
        &flags
            .rlimit
            .iter()
            .map(|r| parse_rlimit(r))
            .collect::<Result<Vec<_>>>()?,
    )?;
    let landlock = LandlockPolicy::sandbox(&found.ro_paths, std::slice::from_ref(&workdir))
        .only_execute(&found.exec_paths());
    let options = GenerateOptions {
        workdir,
        env,
        host_ids: ids,
        rlimits,
        seccomp: Some(serde_json::to_value(sandbox_seccomp())?),
        landlock: Some(landlock.to_json()),
        net: false,
    };
    Ok(Prepared {
        config: generate(&found, &options)?,
        workdir: private,
        discovery: found,
    })
}

impl Materialized {
    /// A bundle with no binds of ours.
    pub fn plain(dir: PrivateDir) -> Self {
        Self {
            _scratch: None,
            dir,
        }
    }
}

/// What every generated sandbox must look like from the host.
pub fn sandbox_posture() -> Expect {
    Expect {
        no_new_privs: true,
        seccomp: true,
        no_caps: true,
        not_host_root: true,
        namespaces: vec!["user", "pid", "net", "mnt", "ipc", "uts"],
        max_fd: Some(2),
        ..Default::default()
    }
}

/// Writes `config` as a bundle in a private directory. As root, the
/// bundle lives on a tmpfs in runsbx's own mount namespace and its
/// read-only binds are made by runsbx (see premount.rs): the workload's
/// unprivileged root could not reach sources under /root.
pub fn materialize(mut config: serde_json::Value) -> Result<Materialized> {
    let bundle = private_dir("runsbx-bundle-", None)?;
    make_traversable(&bundle.0)?;
    if !nix::unistd::geteuid().is_root() {
        write_bundle(&bundle.0, &config)?;
        return Ok(Materialized::plain(bundle));
    }
    let scratch = runsbx_runtime::premount::scratch(&bundle.0)?;
    let premounted = take_readonly_binds(&mut config);
    write_bundle(&bundle.0, &config)?;
    let rootfs = bundle.0.join("rootfs");
    make_mountpoints(&rootfs, &premounted).map_err(anyhow::Error::msg)?;
    let paths: Vec<PathBuf> = premounted
        .iter()
        .filter_map(|m| m["source"].as_str().map(PathBuf::from))
        .collect();
    runsbx_runtime::premount::bind_readonly(&rootfs, &paths)?;
    Ok(Materialized {
        _scratch: Some(scratch),
        dir: bundle,
    })
}

/// `--memory` / `--pids-limit`: cgroup limits in linux.resources.
fn add_resources(
    config: &mut serde_json::Value,
    memory: Option<&str>,
    pids: Option<i64>,
) -> Result<()> {
    if let Some(m) = memory {
        let bytes = runsbx_runtime::guard::parse_size(m)
            .with_context(|| format!("--memory {m:?}: not a size"))?;
        config["linux"]["resources"]["memory"] =
            serde_json::json!({ "limit": bytes, "swap": bytes });
    }
    if let Some(n) = pids {
        if n < 1 {
            bail!("--pids-limit {n}: must be at least 1");
        }
        config["linux"]["resources"]["pids"] = serde_json::json!({ "limit": n });
    }
    Ok(())
}

/// Removes the read-only bind mounts from the config and returns them.
pub fn take_readonly_binds(config: &mut serde_json::Value) -> Vec<serde_json::Value> {
    let Some(mounts) = config["mounts"].as_array_mut() else {
        return Vec::new();
    };
    let (ro, rest): (Vec<_>, Vec<_>) = mounts.drain(..).partition(|m| {
        m["type"] == "bind"
            && m["options"]
                .as_array()
                .is_some_and(|o| o.iter().any(|x| x == "ro"))
    });
    *mounts = rest;
    ro
}

/// `NAME=SOFT[:HARD]`; sizes take K, M, G suffixes; `unlimited` is allowed.
fn parse_rlimit(arg: &str) -> Result<(String, u64, u64)> {
    let Some((name, value)) = arg.split_once('=') else {
        bail!("--rlimit {arg:?}: expected NAME=SOFT[:HARD]");
    };
    let name = rlimit_name(name)?;
    let (soft, hard) = match value.split_once(':') {
        Some((s, h)) => (s, h),
        None => (value, value),
    };
    let num = |v: &str| -> Result<u64> {
        if v == "unlimited" {
            return Ok(u64::MAX);
        }
        let (digits, mult) = match v.as_bytes().last() {
            Some(b'K' | b'k') => (&v[..v.len() - 1], 1u64 << 10),
            Some(b'M' | b'm') => (&v[..v.len() - 1], 1 << 20),
            Some(b'G' | b'g') => (&v[..v.len() - 1], 1 << 30),
            _ => (v, 1),
        };
        digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(mult))
            .with_context(|| format!("--rlimit {arg:?}: {v:?} is not a number"))
    };
    Ok((name, num(soft)?, num(hard)?))
}

pub fn gen(ctx: &Ctx, a: Gen) -> Result<()> {
    if a.flags.workdir.is_none() {
        bail!("gen needs --workdir: a generated bundle outlives this command");
    }
    let prepared = prepare(&a.flags, None)?;
    write_bundle(&a.output, &prepared.config)?;
    make_traversable(&a.output)?;
    if let Some(format) = a.explain {
        super::check::print(ctx, &a.output, format, Some(&prepared.discovery))?;
    }
    Ok(())
}

/// The container's root is host nobody (or the invoking user): it must be
/// able to reach the rootfs through the bundle dir.
pub fn make_traversable(dir: &Path) -> Result<()> {
    let mut perms = fs::metadata(dir)?.permissions();
    perms.set_mode(perms.mode() | 0o111);
    fs::set_permissions(dir, perms).with_context(|| format!("chmod {}", dir.display()))
}

pub fn sandbox(ctx: &Ctx, a: Sandbox) -> Result<u8> {
    if a.no_userns {
        return direct(ctx, a);
    }
    if a.self_test {
        // Quiet: stdout belongs to the workload.
        super::selftest::check(ctx, None, None, false).context("--self-test")?;
    }
    let Prepared {
        mut config,
        workdir,
        ..
    } = prepare(&a.flags, Some(&ctx.rt.root.join(".discovery")))?;
    add_resources(&mut config, a.memory.as_deref(), a.pids_limit)?;
    let bundle = materialize(config)?;
    let id =
        a.id.clone()
            .unwrap_or_else(|| format!("sandbox-{}", std::process::id()));
    let opts = CreateOptions {
        id,
        bundle: bundle.dir.0.clone(),
        pid_file: a.pid_file.clone(),
        ..Default::default()
    };
    let mut sup = run::Supervision::from_flags(&a.guard)?;
    sup.setup_status = 125;
    sup.ro_hint = true;
    sup.kill_on = vec![
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGHUP,
    ];
    if !a.no_posture_check {
        sup.posture = Some(sandbox_posture());
    }
    let status = run::foreground(ctx, opts, None, false, sup)?;
    drop(workdir);
    drop(bundle);
    Ok(status)
}

/// Runs a generated config's process without a container (see
/// runsbx_runtime::direct); `stdio` replaces runsbx's own.
pub fn spawn_direct(
    ctx: &Ctx,
    config: serde_json::Value,
    stdio: Option<[std::os::fd::OwnedFd; 3]>,
) -> Result<nix::unistd::Pid> {
    let spec = serde_json::from_value(config.clone()).context("generated config")?;
    let bundle = runsbx_runtime::spec::Bundle {
        dir: std::env::temp_dir(),
        raw: config,
        spec,
    };
    Ok(runsbx_runtime::direct::spawn(
        &bundle,
        &ctx.rt.landlock_default,
        stdio,
    )?)
}

/// `sandbox --no-userns`: the same generated config, its process run on
/// the host under Landlock, seccomp and no_new_privs alone (see
/// runsbx_runtime::direct for what that does and does not hold).
fn direct(ctx: &Ctx, a: Sandbox) -> Result<u8> {
    use std::time::Instant;

    use runsbx_runtime::guard::Outcome;
    use runsbx_runtime::monitor::Monitor;

    let Prepared {
        config, workdir, ..
    } = prepare(&a.flags, Some(&ctx.rt.root.join(".discovery")))?;
    let mut sup = run::Supervision::from_flags(&a.guard)?;
    let started_at = Instant::now();
    let pid = match spawn_direct(ctx, config, None) {
        Ok(pid) => pid,
        Err(e) => {
            let _ = sup.finish(&Outcome::setup_failed(
                format!("{e:#}"),
                125,
                started_at.elapsed(),
            ));
            return Err(e);
        }
    };
    tracing::warn!("--no-userns: no namespaces; Landlock, seccomp and no_new_privs only");
    let kill = || {
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    };
    let monitor = Monitor::new()?.kill_on(&[
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGHUP,
    ]);
    // After exec (there is no "before start" here); a workload that already
    // exited leaves nothing to check.
    if !a.no_posture_check && runsbx_runtime::guard::rss(pid.as_raw()).is_some() {
        let expect = Expect {
            namespaces: Vec::new(),
            max_fd: None,
            bounding_may_remain: true,
            ..sandbox_posture()
        };
        let proc_dir = runsbx_runtime::guard::live_task(pid.as_raw())
            .unwrap_or_else(|| PathBuf::from(format!("/proc/{pid}")));
        let checked = runsbx_runtime::guard::posture(&proc_dir, &expect)
            .map_err(anyhow::Error::msg)
            .and_then(|off| match off.is_empty() {
                true => Ok(()),
                false => Err(anyhow::anyhow!(
                    "posture check failed, not running: {}",
                    off.join("; ")
                )),
            });
        if let Err(e) = checked {
            kill();
            let _ = nix::sys::wait::waitpid(pid, None);
            let _ = sup.finish(&Outcome::setup_failed(
                format!("{e:#}"),
                125,
                started_at.elapsed(),
            ));
            return Err(e);
        }
    }
    if let Some(p) = &a.pid_file {
        fs::write(p, pid.as_raw().to_string())
            .with_context(|| format!("--pid-file {}", p.display()))?;
    }
    sup.emit(serde_json::json!({ "event": "start", "pid": pid.as_raw() }));
    let (done, killed_for, peak) = run::watch(&monitor, pid, sup.limits, started_at, kill)?;
    let outcome = Outcome::finished(pid.as_raw(), done, killed_for, peak, started_at.elapsed());
    sup.finish(&outcome)?;
    drop(workdir);
    Ok(outcome.status.clamp(0, 255) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rlimits() {
        assert_eq!(
            parse_rlimit("NOFILE=256").unwrap(),
            ("RLIMIT_NOFILE".into(), 256, 256)
        );
        assert_eq!(
            parse_rlimit("as=1G:2G").unwrap(),
            ("RLIMIT_AS".into(), 1 << 30, 2 << 30)
        );
        assert_eq!(parse_rlimit("CPU=unlimited").unwrap().1, u64::MAX);
        for bad in [
            "NOFILE",
            "NOFILE=",
            "NOFILE=x",
            "BOGUS=1",
            "NOFILE=1:2:3",
            "AS=99999999999G",
        ] {
            assert!(parse_rlimit(bad).is_err(), "{bad}");
        }
    }
}
