//! Rootless runsbx: what changes when an ordinary user runs it.
//!
//! - Before libcontainer runs, the process moves into the cgroup shim
//!   (sys/userns.rs): its own user namespace mapping the caller to itself,
//!   private mount and cgroup namespaces, a read-only cgroup2 on
//!   /sys/fs/cgroup. libcontainer then runs the container without a cgroup.
//! - Unless the caller has a delegated cgroup v2 (delegation.rs): the shim
//!   then shows that cgroup read-write on /sys/fs/cgroup, and each container
//!   gets a cgroup `runsbx-<id>` below it, recorded in its runsbx.json so
//!   that delete, kill --all, ps and pause show the same cgroup.
//! - A spec that asks for resource limits is refused: without a cgroup they
//!   would silently not hold, with a delegated one unless its controllers
//!   are enabled there ([`check_spec`]).
//! - The container's user namespace must map exactly the caller (one uid,
//!   one gid): the only mapping an unprivileged process may write.
//! - libcontainer forces its systemd cgroup manager (not built in) for a
//!   container with a user namespace and a relative `cgroupsPath` on a
//!   unified host, which the shim makes it see. [`ConfigView`] shows it a
//!   config.json whose `cgroupsPath` is absolute and runsbx's own, through a
//!   bind mount only this process's private mount namespace sees.
//!
//! What does not change: every sandbox layer (namespaces, seccomp, Landlock,
//! no_new_privs, capability drop, env scrub, fd hygiene) is applied by the
//! same code as for root. Timeouts and the RSS ceiling need no cgroup.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libcontainer::oci_spec::runtime::{LinuxIdMapping, LinuxNamespaceType, Spec};
use nix::mount::{mount, umount2, MntFlags, MsFlags};

use crate::delegation::{self, Delegation};
use crate::error::{Result, RuntimeError};
use crate::spec::facts;
use crate::sys::userns::{self, ShimError};

/// Set once the process is in the shim; a rootless create or exec outside
/// it fails closed (libcontainer would otherwise hit the host's cgroups).
static IN_SHIM: OnceLock<()> = OnceLock::new();

static ROOTLESS: OnceLock<bool> = OnceLock::new();

/// Whether runsbx runs as an ordinary user. Decided on the first call, which
/// comes before any shim: `exec` makes runsbx the root of the container's
/// user namespace, where its euid is 0.
pub fn active() -> bool {
    *ROOTLESS.get_or_init(|| !nix::unistd::geteuid().is_root())
}

/// The caller's delegated cgroup, when the shim uses it (set once, by
/// [`enter_shim`]); `None` inside: no delegation, containers get no cgroup.
static DELEGATED: OnceLock<Option<Delegation>> = OnceLock::new();

/// Enters a fresh shim for a new container (create, run, sandbox,
/// selftest): with the caller's delegated cgroup v2 read-write when it has
/// one (delegation.rs), else the read-only cgroup2 of no cgroup at all.
pub fn enter_shim() -> Result<()> {
    active();
    let uid = nix::unistd::geteuid().as_raw();
    let gid = nix::unistd::getegid().as_raw();
    let found = delegation::detect(uid);
    userns::enter(uid, gid, found.as_ref().map(Delegation::dir).as_deref()).map_err(shim_error)?;
    let _ = IN_SHIM.set(());
    match &found {
        Some(d) => tracing::debug!(
            "rootless: using the delegated cgroup {} (controllers: {}); containers get a cgroup below it",
            d.cgroup,
            d.controllers.join(" ")
        ),
        None => tracing::debug!(
            "rootless: running without cgroups (uid {uid} cannot write this host's cgroups); \
             resource limits in a spec are refused"
        ),
    }
    let _ = DELEGATED.set(found);
    Ok(())
}

/// Enters a fresh shim for a command on an existing container (delete,
/// kill --all, ps, pause, resume). `cgroup`: the container's cgroup as its
/// runsbx.json records it, whose parent (the delegated cgroup) the shim
/// then shows read-write on /sys/fs/cgroup, at the paths its create saw.
pub fn enter_shim_for(cgroup: Option<&str>) -> Result<()> {
    active();
    let uid = nix::unistd::geteuid().as_raw();
    let gid = nix::unistd::getegid().as_raw();
    let dir = match cgroup {
        Some(c) => delegation::parent_dir(uid, c)
            .map_err(|e| RuntimeError::Init(format!("rootless: cgroup: {e}")))?,
        None => None,
    };
    userns::enter(uid, gid, dir.as_deref()).map_err(shim_error)?;
    let _ = IN_SHIM.set(());
    let _ = DELEGATED.set(None);
    let _ = CGROUP_GONE.set(cgroup.is_some() && dir.is_none());
    Ok(())
}

/// Set by [`enter_shim_for`]: the container's delegated cgroup is gone
/// with its parent, and the shim shows the read-only view instead.
static CGROUP_GONE: OnceLock<bool> = OnceLock::new();

pub fn cgroup_gone() -> bool {
    CGROUP_GONE.get().copied().unwrap_or(false)
}

/// The delegated cgroup new containers go below, if any.
pub fn delegated() -> Option<&'static Delegation> {
    DELEGATED.get().and_then(Option::as_ref)
}

/// For `exec`: joins the user namespace of the container whose init is
/// `pid` (see sys::userns::join), with the same cgroup2 mount. `cgroup`:
/// the container's delegated cgroup (its runsbx.json). The new process
/// joins it when this runsbx runs in that cgroup's parent, the delegated
/// cgroup: the kernel lets a process in a cgroup namespace move processes
/// only below the namespace's root, which is where runsbx stands. From
/// elsewhere it stays in the caller's cgroup (init's pid namespace still
/// holds it: SIGKILL to init ends it).
pub fn join_shim(pid: i32, cgroup: Option<&str>) -> Result<()> {
    active();
    let uid = nix::unistd::geteuid().as_raw();
    let here = cgroup
        .and_then(|c| delegation::detect(uid).filter(|d| delegation::parent_of(c) == d.cgroup));
    if cgroup.is_some() && here.is_none() {
        tracing::debug!(
            "rootless: exec from outside the container's delegated cgroup; the new process stays in runsbx's cgroup"
        );
    }
    match userns::join(pid, uid, here.as_ref().map(Delegation::dir).as_deref()).map_err(shim_error)? {
        true => {
            let _ = IN_SHIM.set(());
            let _ = DELEGATED.set(here);
            Ok(())
        }
        false => Err(RuntimeError::Init(format!(
            "rootless: the container's user namespace was not made by a rootless runsbx of uid {uid}; \
             exec it as the user that created it"
        ))),
    }
}

/// For `exec` as root: see sys::userns::join_as_root. Fails closed: the
/// process must not run outside the container's user namespace.
pub fn join_as_root(pid: i32) -> Result<()> {
    userns::join_as_root(pid).map(|_| ()).map_err(|e| {
        let (what, errno) = match e {
            ShimError::Refused(n) => ("join the container's user namespace", n),
            ShimError::Step(w, n) => (w, n),
        };
        RuntimeError::Init(format!("exec: {what}: {}; not running", errno.desc()))
    })
}

/// Whether this runsbx runs in its shim's user namespace.
pub fn in_shim() -> bool {
    IN_SHIM.get().is_some()
}

pub fn require_shim() -> Result<()> {
    match in_shim() {
        true => Ok(()),
        false => Err(RuntimeError::Init(
            "rootless: not in runsbx's user namespace (internal error); not running".into(),
        )),
    }
}

fn shim_error(e: ShimError) -> RuntimeError {
    match e {
        ShimError::Refused(errno) => RuntimeError::Init(refusal(errno, &HostSettings::read())),
        // Any later failure is most likely an LSM taking the namespace's
        // capabilities away (AppArmor's restriction lets the unshare pass).
        ShimError::Step(what, errno) => {
            let host = HostSettings::read();
            let hint = if host.apparmor_restrict == Some(1) {
                format!("; {}", APPARMOR_HINT)
            } else {
                String::new()
            };
            RuntimeError::Init(format!(
                "rootless: user namespace: {what}: {}{hint}",
                errno.desc()
            ))
        }
    }
}

const APPARMOR_HINT: &str = "AppArmor restricts unprivileged user namespaces \
     (kernel.apparmor_restrict_unprivileged_userns=1): an administrator can allow runsbx with an \
     AppArmor profile granting `userns,` for its path, or set the sysctl to 0";

/// The host settings that decide whether an ordinary user may have a user
/// namespace. `None`: the file does not exist on this kernel.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct HostSettings {
    pub max_user_namespaces: Option<u64>,
    pub unprivileged_userns_clone: Option<u64>,
    pub apparmor_restrict: Option<u64>,
}

impl HostSettings {
    pub fn read() -> Self {
        let read = |p: &str| {
            fs::read_to_string(p)
                .ok()
                .and_then(|t| t.trim().parse().ok())
        };
        Self {
            max_user_namespaces: read("/proc/sys/user/max_user_namespaces"),
            unprivileged_userns_clone: read("/proc/sys/kernel/unprivileged_userns_clone"),
            apparmor_restrict: read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        }
    }
}

/// One line: what refused the user namespace, and how an administrator
/// allows it. Pure, for tests.
pub fn refusal(errno: nix::errno::Errno, host: &HostSettings) -> String {
    let head = format!(
        "rootless: the kernel refused a user namespace ({})",
        errno.desc()
    );
    let why = if host.max_user_namespaces == Some(0) {
        "user.max_user_namespaces is 0 here; an administrator allows them with \
         `sysctl -w user.max_user_namespaces=15000`"
            .to_string()
    } else if host.unprivileged_userns_clone == Some(0) {
        "kernel.unprivileged_userns_clone is 0 here; an administrator allows them with \
         `sysctl -w kernel.unprivileged_userns_clone=1`"
            .to_string()
    } else if errno == nix::errno::Errno::ENOSPC {
        "the user.max_user_namespaces limit is reached (for this user or an enclosing namespace)"
            .to_string()
    } else if host.apparmor_restrict == Some(1) {
        APPARMOR_HINT.to_string()
    } else if errno == nix::errno::Errno::EINVAL {
        "the process is multithreaded (internal error)".to_string()
    } else {
        "a seccomp filter or security module forbids it (a container runtime's default \
         profile does, for one)"
            .to_string()
    };
    format!(
        "{head}: {why}. Without a user namespace, `runsbx sandbox --no-userns` runs with \
         Landlock, seccomp and no_new_privs only (weaker; see docs/rootless.md)"
    )
}

/// Refuses what rootless runsbx cannot do, naming it: resource limits (no
/// cgroup to hold them, or, with a `delegated` cgroup, no controller for
/// them), user namespace mappings other than the caller's, and a
/// process.user that namespace does not map.
pub fn check_spec(spec: &Spec, uid: u32, gid: u32, delegated: Option<&Delegation>) -> Result<()> {
    let limits = facts::requested_limits(spec);
    if let (Some(d), false) = (delegated, limits.is_empty()) {
        // Stops: a limit written to a cgroup whose controller is off, which
        // would fail late (after the cgroup and init exist) or not at all.
        delegation::check_limits(d, &limits).map_err(RuntimeError::Spec)?;
    } else if !limits.is_empty() {
        let limits: Vec<&str> = limits.iter().map(|(w, _)| *w).collect();
        // Stops: a container that the spec says cannot use more than N
        // bytes or processes running without any such limit.
        return Err(RuntimeError::Spec(format!(
            "linux.resources asks for {}: rootless runsbx runs without cgroups \
             (uid {uid} cannot write this host's cgroups), so the limits would not hold; \
             remove them (--timeout and --rss-limit need no cgroup) or run as root",
            limits.join(", ")
        )));
    }
    // Stops: processes a rootless workload forks outliving kill --all,
    // delete and --timeout. Without a cgroup those reach init only, and only
    // a pid namespace of its own makes SIGKILL to init end every process.
    if !facts::is_new_namespace(spec, LinuxNamespaceType::Pid) {
        return Err(RuntimeError::Spec(
            "linux.namespaces has no new pid namespace: rootless runsbx needs one, since without a \
             cgroup only init's pid namespace holds the container's processes \
             (`runsbx spec --rootless` writes a config that has it)"
                .into(),
        ));
    }
    let userns = facts::is_new_namespace(spec, LinuxNamespaceType::User);
    if !userns {
        return Err(RuntimeError::Spec(
            "linux.namespaces has no new user namespace: an ordinary user needs one \
             (`runsbx spec --rootless` writes a config that has it)"
                .into(),
        ));
    }
    let one = |maps: &[LinuxIdMapping], id: u32, field: &str| -> Result<()> {
        match maps {
            [m] if m.host_id() == id && m.size() == 1 => Ok(()),
            _ => Err(RuntimeError::Spec(format!(
                "linux.{field}: rootless runsbx maps exactly one id, the caller's \
                 ({{\"containerID\": 0, \"hostID\": {id}, \"size\": 1}}); \
                 ranges from /etc/subuid (newuidmap) are not supported"
            ))),
        }
    };
    one(facts::uid_mappings(spec), uid, "uidMappings")?;
    one(facts::gid_mappings(spec), gid, "gidMappings")?;
    if let Some(p) = spec.process() {
        let user = p.user();
        check_mapped(spec, user.uid(), Some(user.gid()), "process.user")?;
    }
    Ok(())
}

/// `exec --user`: only ids the container's user namespace maps exist in
/// it; the kernel's EINVAL would come back as a bare "failed syscall".
pub fn check_exec_user(spec: &Spec, user: Option<(u32, Option<u32>)>) -> Result<()> {
    match user {
        Some((uid, gid)) => check_mapped(spec, uid, gid, "--user"),
        None => Ok(()),
    }
}

fn check_mapped(spec: &Spec, uid: u32, gid: Option<u32>, what: &str) -> Result<()> {
    if !facts::maps_id(facts::uid_mappings(spec), uid) {
        return Err(RuntimeError::Spec(format!(
            "{what} {uid}: the container's user namespace does not map uid {uid} (rootless: only its root, the caller)"
        )));
    }
    if let Some(gid) = gid {
        if !facts::maps_id(facts::gid_mappings(spec), gid) {
            return Err(RuntimeError::Spec(format!(
                "{what} {uid}:{gid}: the container's user namespace does not map gid {gid} (rootless: only its root group, the caller's)"
            )));
        }
    }
    Ok(())
}

/// The bundle's config.json as libcontainer must see it rootless:
/// `linux.cgroupsPath` replaced by an absolute path of runsbx's own (see the
/// module doc). Bound over the real file in this process's private mount
/// namespace; removed on drop. Nobody else sees it, and the file on disk is
/// never written.
pub struct ConfigView {
    target: PathBuf,
    copy: PathBuf,
}

impl ConfigView {
    pub fn bind(
        bundle_dir: &Path,
        raw: &serde_json::Value,
        state_root: &Path,
        id: &str,
    ) -> Result<Self> {
        require_shim()?;
        let mut raw = raw.clone();
        let path = match delegated() {
            Some(_) => delegation::shim_path(id),
            None => cgroup_path(id),
        };
        raw["linux"]["cgroupsPath"] = serde_json::Value::String(path);
        Self::over(bundle_dir, &raw, state_root, id)
    }

    /// Shows libcontainer `raw` as the bundle's config.json, through a bind
    /// that must be made in a private mount namespace of this process (the
    /// shim, or the one of prebind.rs). The copy is named so that
    /// `remove_stale_reports` removes it when its process died half-way.
    pub fn over(
        bundle_dir: &Path,
        raw: &serde_json::Value,
        state_root: &Path,
        id: &str,
    ) -> Result<Self> {
        let copy = state_root.join(format!(".{id}.{}.config.json", std::process::id()));
        let text = serde_json::to_vec(raw).map_err(|e| RuntimeError::Spec(e.to_string()))?;
        fs::write(&copy, text)
            .map_err(|e| RuntimeError::io(format!("write {}", copy.display()), e))?;
        let target = bundle_dir.join("config.json");
        let view = Self { target, copy };
        mount::<Path, Path, str, str>(Some(&view.copy), &view.target, None, MsFlags::MS_BIND, None)
            .map_err(|e| {
                RuntimeError::sys(
                    format!("bind config view over {}", view.target.display()),
                    e,
                )
            })?;
        Ok(view)
    }
}

impl Drop for ConfigView {
    fn drop(&mut self) {
        let _ = umount2(&self.target, MntFlags::MNT_DETACH);
        let _ = fs::remove_file(&self.copy);
    }
}

/// The cgroup path libcontainer is given rootless without a delegated
/// cgroup. It is never created (the shim's cgroup2 is read-only); it only has to be absolute, and not name a
/// cgroup that exists, so that libcontainer's clean-up finds nothing.
pub fn cgroup_path(id: &str) -> String {
    format!("/runsbx-rootless/{id}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::errno::Errno;

    fn spec(linux: serde_json::Value) -> Spec {
        serde_json::from_value(serde_json::json!({
            "ociVersion": "1.0.2",
            "root": {"path": "rootfs"},
            "linux": linux,
        }))
        .unwrap()
    }

    fn userns_linux(extra: serde_json::Value) -> serde_json::Value {
        let mut l = serde_json::json!({
            "namespaces": [{"type": "user"}, {"type": "pid"}, {"type": "mount"}],
            "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}],
            "gidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}],
        });
        for (k, v) in extra.as_object().unwrap() {
            l[k] = v.clone();
        }
        l
    }

    #[test]
    fn accepts_the_callers_single_mapping() {
        check_spec(&spec(userns_linux(serde_json::json!({}))), 1000, 1000, None).unwrap();
        // Device rules need no cgroup rootless.
        let devices =
            serde_json::json!({"resources": {"devices": [{"allow": false, "access": "rwm"}]}});
        check_spec(&spec(userns_linux(devices)), 1000, 1000, None).unwrap();
    }

    #[test]
    fn refuses_limits_naming_them() {
        let r =
            serde_json::json!({"resources": {"memory": {"limit": 1048576}, "pids": {"limit": 5}}});
        let err = check_spec(&spec(userns_linux(r)), 1000, 1000, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("memory limits, a pids limit"), "{err}");
        assert!(err.contains("without cgroups"), "{err}");
        let r = serde_json::json!({"resources": {"cpu": {"quota": 1000}}});
        let err = check_spec(&spec(userns_linux(r)), 1000, 1000, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("cpu limits"), "{err}");
    }

    #[test]
    fn refuses_other_mappings() {
        let other =
            serde_json::json!({"uidMappings": [{"containerID": 0, "hostID": 0, "size": 1}]});
        assert!(check_spec(&spec(userns_linux(other)), 1000, 1000, None).is_err());
        let range =
            serde_json::json!({"gidMappings": [{"containerID": 0, "hostID": 1000, "size": 65536}]});
        assert!(check_spec(&spec(userns_linux(range)), 1000, 1000, None).is_err());
        let mut as_1000 = spec(userns_linux(serde_json::json!({})));
        as_1000.set_process(Some(
            serde_json::from_value(
                serde_json::json!({"user": {"uid": 1000, "gid": 0}, "cwd": "/"}),
            )
            .unwrap(),
        ));
        let err = check_spec(&as_1000, 1000, 1000, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("process.user 1000"), "{err}");
        let none = spec(serde_json::json!({"namespaces": [{"type": "pid"}, {"type": "mount"}]}));
        assert!(check_spec(&none, 1000, 1000, None)
            .unwrap_err()
            .to_string()
            .contains("user namespace"));
        let shared_pid =
            spec(serde_json::json!({"namespaces": [{"type": "user"}, {"type": "mount"}]}));
        assert!(check_spec(&shared_pid, 1000, 1000, None)
            .unwrap_err()
            .to_string()
            .contains("no new pid namespace"));
    }

    #[test]
    fn exec_user_must_be_mapped() {
        let s = spec(userns_linux(serde_json::json!({})));
        check_exec_user(&s, None).unwrap();
        check_exec_user(&s, Some((0, Some(0)))).unwrap();
        let err = check_exec_user(&s, Some((5, None)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not map uid 5"), "{err}");
        assert!(check_exec_user(&s, Some((0, Some(1)))).is_err());
    }

    #[test]
    fn refusal_names_the_setting() {
        let zero = HostSettings {
            max_user_namespaces: Some(0),
            ..Default::default()
        };
        let msg = refusal(Errno::ENOSPC, &zero);
        assert!(msg.contains("user.max_user_namespaces is 0"), "{msg}");
        assert!(msg.contains("--no-userns"), "{msg}");
        let clone = HostSettings {
            max_user_namespaces: Some(100),
            unprivileged_userns_clone: Some(0),
            ..Default::default()
        };
        assert!(refusal(Errno::EPERM, &clone).contains("kernel.unprivileged_userns_clone=1"));
        let aa = HostSettings {
            max_user_namespaces: Some(100),
            apparmor_restrict: Some(1),
            ..Default::default()
        };
        assert!(refusal(Errno::EACCES, &aa).contains("AppArmor"));
        assert!(!refusal(Errno::EPERM, &HostSettings::default()).contains('\n'));
    }
}
