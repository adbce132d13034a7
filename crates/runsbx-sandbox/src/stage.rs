//! A generated sandbox on disk: a [`SandboxRequest`] prepared into a
//! config.json (discovery and generation in runsbx-bundle, the default
//! seccomp and Landlock policies in runsbx-policy), and materialized as a
//! bundle in a private directory that is removed with it.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use runsbx_bundle::{
    discover, discover_cached, generate, host_ids, make_mountpoints, merge_rlimits, parse_env_flag,
    parse_rlimit_flag, scrub_env, write_bundle, Discovery, GenerateOptions, SandboxConfig,
    SandboxRequest, DEFAULT_PATH, NOBODY, USER_DB,
};
use runsbx_policy::egress;
use runsbx_policy::landlock::LandlockPolicy;
use runsbx_policy::profile::{with_tcp_client, Profile};

use crate::{Result, SandboxError};
use runsbx_runtime::premount;

/// A workdir runsbx made and must remove.
pub struct PrivateDir(pub PathBuf);

impl Drop for PrivateDir {
    fn drop(&mut self) {
        if let Err(e) = premount::remove_tree(&self.0) {
            tracing::warn!("leaving {}: {e}", self.0.display());
        }
    }
}

/// A fresh directory under the temporary directory, owned by `owner` when
/// given. Made 0700 from the start: a workdir holds what the workload
/// wrote, which another local user must not list or read (a file the
/// workload makes 0644 would be readable through a 0755 directory, and a
/// descriptor opened before a later chmod would keep it so).
pub fn private_dir(prefix: &str, owner: Option<(u32, u32)>) -> Result<PrivateDir> {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .permissions(fs::Permissions::from_mode(0o700))
        .tempdir()
        .map_err(|e| SandboxError::step("creating a private directory", e))?
        .keep();
    let guard = PrivateDir(dir);
    if let Some((uid, gid)) = owner {
        nix::unistd::chown(&guard.0, Some(uid.into()), Some(gid.into()))
            .map_err(|e| SandboxError::step(format!("chown {}", guard.0.display()), e))?;
    }
    Ok(guard)
}

/// The container's root is host nobody (or the invoking user): it must be
/// able to reach the rootfs through the bundle dir.
pub fn make_traversable(dir: &Path) -> Result<()> {
    let mut perms = fs::metadata(dir)?.permissions();
    perms.set_mode(perms.mode() | 0o111);
    fs::set_permissions(dir, perms)
        .map_err(|e| SandboxError::step(format!("chmod {}", dir.display()), e))
}

/// A generated config, what discovery found for it, and the private
/// workdir it refers to (kept alive by the caller).
pub struct Prepared {
    pub config: SandboxConfig,
    pub workdir: Option<PrivateDir>,
    pub discovery: Discovery,
}

/// The generated config for `req`; `cache`: discovery's cache directory.
pub fn prepare(req: &SandboxRequest, cache: Option<&Path>) -> Result<Prepared> {
    // Before discovery, which writes its cache in the state root.
    if let (Some(w), Some(root)) = (&req.workdir, &req.state_root) {
        if w.is_absolute() {
            outside_state_root(w, root)?;
        }
    }
    let path_env = std::env::var("PATH").unwrap_or_else(|_| DEFAULT_PATH.to_string());
    let found = match cache {
        Some(dir) => {
            let cwd =
                std::env::current_dir().map_err(|e| SandboxError::step("current directory", e))?;
            discover_cached(&req.command, &path_env, &req.ro, &cwd, dir)?
        }
        None => discover(&req.command, &path_env, &req.ro)?,
    };

    let invoker = (
        nix::unistd::getuid().as_raw(),
        nix::unistd::getgid().as_raw(),
    );
    let (workdir, private) = match &req.workdir {
        Some(w) => {
            if !w.is_absolute() {
                return Err(SandboxError::Message(format!(
                    "--workdir {}: must be an absolute path",
                    w.display()
                )));
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
    let meta = fs::metadata(&workdir)
        .map_err(|e| SandboxError::step(format!("--workdir {}", workdir.display()), e))?;
    let ids = host_ids(invoker, &workdir, (meta.uid(), meta.gid()))?;

    let mut explicit = match req.proxy {
        true => egress::proxy_env(),
        false => Vec::new(),
    };
    for e in &req.env {
        explicit.push(parse_env_flag(e)?);
    }
    let env = scrub_env(std::env::vars(), &explicit, &workdir);
    let rlimits = merge_rlimits(
        &req.rlimits
            .iter()
            .map(|r| parse_rlimit_flag(r))
            .collect::<std::result::Result<Vec<_>, _>>()?,
    )?;
    // Readable: the runtime paths and the user database write_bundle puts in the rootfs.
    let readable: Vec<PathBuf> = (found.ro_paths.iter().cloned())
        .chain(USER_DB.iter().map(PathBuf::from))
        .collect();
    let landlock = LandlockPolicy::sandbox(&readable, std::slice::from_ref(&workdir))
        .only_execute(&found.exec_paths());
    let landlock = match req.profile {
        Profile::Default | Profile::ForkServer => landlock,
        Profile::Jupyter => landlock.list_proc(),
    };
    let (landlock, seccomp) = match req.proxy {
        true => (
            landlock.connect_port(egress::PROXY_PORT),
            with_tcp_client(req.profile.seccomp()),
        ),
        false => (landlock, req.profile.seccomp()),
    };
    let options = GenerateOptions {
        workdir,
        env,
        host_ids: ids,
        rlimits,
        seccomp: Some(seccomp),
        landlock: Some(landlock),
        net: false,
    };
    let mut config = generate(&found, &options)?;
    if req.profile == Profile::ForkServer {
        // Stops: a session seeing the others in /proc. They share the fork
        // server's pid namespace; each is in a Landlock domain of its own,
        // which refuses ptrace access across domains, and `ptraceable`
        // hides every process the reader could not ptrace.
        config.add_proc_option("hidepid=ptraceable");
    }
    Ok(Prepared {
        config,
        workdir: private,
        discovery: found,
    })
}

/// Stops: discovery cache poisoning. The workload may write all of its
/// workdir; if that held runsbx's state root (or lay inside it), it could
/// rewrite `.discovery/*.json` (rootless, it runs as the caller's uid, so
/// the cache's owner check cannot tell) and make a later sandbox bind a
/// file of the caller's, or tamper with container state. Both paths are
/// compared resolved, so a symlink or `..` does not hide the overlap.
fn outside_state_root(workdir: &Path, root: &Path) -> Result<()> {
    let resolve = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (w, r) = (resolve(workdir), resolve(root));
    if w.starts_with(&r) || r.starts_with(&w) {
        return Err(SandboxError::Message(format!(
            "--workdir {}: overlaps runsbx's state root {}; the workload could rewrite runsbx's state",
            workdir.display(),
            root.display()
        )));
    }
    Ok(())
}

/// `--memory` / `--pids-limit`: cgroup limits in linux.resources.
pub fn add_resources(
    config: &mut SandboxConfig,
    memory: Option<&str>,
    pids: Option<i64>,
) -> Result<()> {
    if let Some(m) = memory {
        let bytes = runsbx_runtime::guard::parse_size(m)
            .and_then(|b| i64::try_from(b).ok())
            .ok_or_else(|| SandboxError::Message(format!("--memory {m:?}: not a size")))?;
        config.limit_memory(bytes)?;
    }
    if let Some(n) = pids {
        if n < 1 {
            return Err(SandboxError::Message(format!(
                "--pids-limit {n}: must be at least 1"
            )));
        }
        config.limit_pids(n)?;
    }
    Ok(())
}

/// A generated bundle on disk, with the read-only binds made for it.
pub struct Materialized {
    // Field order is drop order: detach the tmpfs (and the binds in it),
    // then remove the now empty directory.
    _scratch: Option<premount::Scratch>,
    pub dir: PrivateDir,
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

/// Writes `config` as a bundle in a private directory. As root, the
/// bundle lives on a tmpfs in runsbx's own mount namespace and its
/// read-only binds are made by runsbx (see premount.rs): the workload's
/// unprivileged root could not reach sources under /root.
pub fn materialize(mut config: SandboxConfig) -> Result<Materialized> {
    let bundle = private_dir("runsbx-bundle-", None)?;
    make_traversable(&bundle.0)?;
    if !nix::unistd::geteuid().is_root() {
        write_bundle(&bundle.0, &config)?;
        return Ok(Materialized::plain(bundle));
    }
    let scratch = premount::scratch(&bundle.0)?;
    readonly_devices()?;
    let premounted = config.take_mounts(runsbx_runtime::spec::facts::is_readonly_bind);
    write_bundle(&bundle.0, &config)?;
    let rootfs = bundle.0.join("rootfs");
    make_mountpoints(&rootfs, &premounted).map_err(SandboxError::Message)?;
    let paths: Vec<PathBuf> = premounted
        .iter()
        .filter_map(|m| m.source().clone())
        .collect();
    premount::bind_readonly(&rootfs, &paths)?;
    Ok(Materialized {
        _scratch: Some(scratch),
        dir: bundle,
    })
}

/// Stops: the workload rewriting the host device nodes' times
/// (`utimensat(fd, NULL)` needs only write permission, and the nodes are
/// world-writable). libcontainer bind-mounts the host's nodes into the
/// container after every config mount, so no config mount can cover them;
/// instead each node is bound read-only onto itself in runsbx's private
/// mount namespace (made by `premount::scratch`, a slave of the host's:
/// nothing propagates back), and libcontainer's bind copies the read-only
/// flag. Opening, reading and writing a character device are unaffected by
/// a read-only mount; changing its inode is refused with EROFS. Not
/// `nodev`: the node must stay usable.
fn readonly_devices() -> Result<()> {
    use nix::mount::{mount, MsFlags};
    for (path, _, _) in runsbx_bundle::generate::DEVICES {
        let fail = |what: &str, e| SandboxError::step(format!("{what} {path}"), e);
        mount::<str, str, str, str>(Some(path), path, None, MsFlags::MS_BIND, None)
            .map_err(|e| fail("bind", e))?;
        let ro = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID;
        mount::<str, str, str, str>(None, path, None, ro, None)
            .map_err(|e| fail("remount read-only", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(v: serde_json::Value) -> SandboxConfig {
        let mut v = v;
        v["ociVersion"] = "1.0.2".into();
        SandboxConfig::new(serde_json::from_value(v).unwrap(), None)
    }

    #[test]
    fn readonly_binds_are_taken_and_the_rest_kept_in_order() {
        let mut config = config(json!({"mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/usr", "type": "bind", "source": "/usr", "options": ["bind", "ro"]},
            {"destination": "/w", "type": "bind", "source": "/w", "options": ["bind", "rw"]},
            {"destination": "/lib", "type": "bind", "source": "/lib", "options": ["ro", "nosuid"]},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["ro"]},
        ]}));
        let taken = config.take_mounts(runsbx_runtime::spec::facts::is_readonly_bind);
        let sources: Vec<_> = taken.iter().map(|m| m.source().clone().unwrap()).collect();
        assert_eq!(sources, [PathBuf::from("/usr"), PathBuf::from("/lib")]);
        let left: Vec<_> = config.mounts().iter().map(|m| m.destination()).collect();
        assert_eq!(
            left,
            [Path::new("/proc"), Path::new("/w"), Path::new("/dev")]
        );
    }

    #[test]
    fn resources_are_checked_and_set() {
        let mut c = config(json!({"linux": {}}));
        add_resources(&mut c, Some("64M"), Some(2)).unwrap();
        assert_eq!(
            c.to_json().unwrap()["linux"]["resources"],
            json!({"memory": {"limit": 64 << 20, "swap": 64 << 20}, "pids": {"limit": 2}})
        );
        let e = |m, p| {
            let mut c = config(json!({}));
            add_resources(&mut c, m, p).unwrap_err().to_string()
        };
        assert_eq!(e(Some("0"), None), r#"--memory "0": not a size"#);
        assert_eq!(e(Some("lots"), None), r#"--memory "lots": not a size"#);
        assert_eq!(e(None, Some(0)), "--pids-limit 0: must be at least 1");
    }

    #[test]
    fn a_relative_workdir_is_refused_by_name() {
        let req = SandboxRequest {
            command: vec!["/bin/true".into()],
            workdir: Some("w".into()),
            ..Default::default()
        };
        let e = prepare(&req, None).err().unwrap().to_string();
        assert_eq!(e, "--workdir w: must be an absolute path");
    }

    #[test]
    fn a_workdir_overlapping_the_state_root_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("runsbx-1000");
        fs::create_dir_all(root.join(".discovery")).unwrap();
        let want = |w: &Path| {
            format!(
                "--workdir {}: overlaps runsbx's state root {}; the workload could rewrite runsbx's state",
                w.display(),
                root.display()
            )
        };
        let refused = |w: &Path| {
            let e = outside_state_root(w, &root).unwrap_err().to_string();
            assert_eq!(e, want(w));
        };
        refused(&root);
        refused(&root.join(".discovery"));
        refused(t.path());
        refused(&root.join(".discovery/../.discovery"));
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&root, &link).unwrap();
        refused(&link);
        let beside = t.path().join("runsbx-1000-work");
        fs::create_dir(&beside).unwrap();
        outside_state_root(&beside, &root).unwrap();

        // prepare checks it for an explicit workdir.
        let req = SandboxRequest {
            command: vec!["/bin/true".into()],
            workdir: Some(root.clone()),
            state_root: Some(root.clone()),
            ..Default::default()
        };
        let e = prepare(&req, None).err().unwrap().to_string();
        assert_eq!(e, want(&root));
    }
}
