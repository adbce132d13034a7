//! Every cgroup question of the runtime: whether a container needs one,
//! its manager, whether it exists or saw an OOM kill, and signalling,
//! emptying and removing it.

use crate::spec::facts;
use std::fs;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use libcontainer::container::Container;
use nix::sys::signal::Signal;

use crate::error::{Result, RuntimeError};
use crate::spec::Bundle;

/// The cgroup manager of a created container.
pub(crate) fn manager(c: &Container) -> Result<libcgroups::common::AnyCgroupManager> {
    let config = c
        .spec()
        .map_err(|e| RuntimeError::lc(format!("cgroup of {}", c.id()), e))?;
    libcgroups::common::create_cgroup_manager(libcgroups::common::CgroupConfig {
        cgroup_path: config.cgroup_path,
        systemd_cgroup: c.systemd(),
        container_name: c.id().to_string(),
    })
    .map_err(|e| RuntimeError::cgroup(format!("cgroup of {}", c.id()), e))
}

/// Whether the kernel OOM-killed something in the container's memory
/// cgroup.
pub(crate) fn oom_killed(c: &Container) -> bool {
    oom_kills(c) > 0
}

/// How many processes the kernel OOM-killed in the container's memory
/// cgroup (v1 memory.oom_control's or v2 memory.events' `oom_kill`; the
/// larger where both are there); 0 when unreadable.
pub(crate) fn oom_kills(c: &Container) -> u64 {
    let Ok(config) = c.spec() else { return 0 };
    let dirs = Dirs::of(&config.cgroup_path, "memory");
    let v1 = dirs.v1.map(|d| d.join("memory.oom_control"));
    let v2 = dirs.v2.into_iter().map(|d| d.join("memory.events"));
    v1.into_iter()
        .chain(v2)
        .filter_map(|p| fs::read_to_string(p).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| l.strip_prefix("oom_kill ")?.trim().parse::<u64>().ok())
                .collect::<Vec<_>>()
        })
        .max()
        .unwrap_or(0)
}

/// Writes `resources` into the container's cgroup (`update`), through
/// libcgroups as create did. `disable_oom_killer` is the spec's, so an
/// update does not change it behind the container's back.
pub(crate) fn apply_resources(
    c: &Container,
    m: &libcgroups::common::AnyCgroupManager,
    resources: &libcontainer::oci_spec::runtime::LinuxResources,
    disable_oom_killer: bool,
) -> Result<()> {
    use libcgroups::common::{AnyCgroupManager, CgroupManager, ControllerOpt};
    let context = || format!("container {:?}: cgroup", c.id());
    let failed = |err| RuntimeError::Cgroup {
        context: context(),
        err,
    };
    let mut resources = std::borrow::Cow::Borrowed(resources);
    let v1 = matches!(m, AnyCgroupManager::V1(_));
    let v2 = matches!(m, AnyCgroupManager::V2(_));
    if let Some(mut cpu) = resources
        .cpu()
        .clone()
        .filter(|c| v1 || (v2 && c.idle().is_some()))
    {
        let config = c
            .spec()
            .map_err(|e| RuntimeError::lc(format!("container {:?}", c.id()), e))?;
        let dirs = Dirs::of(&config.cgroup_path, "cpu");
        let dir = match v1 {
            true => dirs.v1,
            false => dirs.v2.into_iter().find(|d| d.is_dir()),
        };
        if let Some(dir) = dir {
            if let Some(idle) = cpu.idle() {
                write_idle_first(&dir, idle).map_err(failed)?;
                cpu = without_idle(cpu, idle);
            }
            if v1 {
                write_cpu_pairs_v1(&dir, &cpu).map_err(failed)?;
                cpu = without_cpu_pairs(cpu);
            }
            resources.to_mut().set_cpu(Some(cpu));
        }
    }
    m.apply(&ControllerOpt {
        resources: &resources,
        disable_oom_killer,
        oom_score_adj: None,
        freezer_state: None,
    })
    .map_err(|e| RuntimeError::cgroup(context(), e))
}

/// `cpu.idle`, written before the shares (v2: the weight), which
/// libcgroups writes first: the kernel refuses a shares or weight write
/// with EINVAL while the group is idle (`sched_group_set_shares`), and
/// update writes the container's recorded shares each time, so going back
/// to 0, or setting 1 again, failed. runc's update writes only the values
/// it is given, and its suite's `update cgroup cpu.idle` goes 1, 0, 1 with
/// shares in the config. Idle first makes the group take shares again
/// before they are written.
fn write_idle_first(dir: &Path, idle: i64) -> std::result::Result<(), String> {
    let file = dir.join("cpu.idle");
    fs::write(&file, idle.to_string())
        .map_err(|e| format!("write {idle} to {}: {e}", file.display()))
}

/// `cpu` without its idle value (written by `write_idle_first`), and, when
/// the group is now idle, without its shares: an idle group has the
/// kernel's minimum weight whatever they say (the write would fail), and
/// the recorded value is written again once idle goes back to 0 (the
/// kernel resets the group's shares to its default then).
fn without_idle(
    mut cpu: libcontainer::oci_spec::runtime::LinuxCpu,
    idle: i64,
) -> libcontainer::oci_spec::runtime::LinuxCpu {
    cpu.set_idle(None);
    if idle != 0 {
        cpu.set_shares(None);
    }
    cpu
}

/// cgroup v1's CFS period and quota, and RT period and runtime, written in
/// an order the kernel accepts, as runc does: libcgroups writes them in
/// one fixed order, which the kernel refuses (EINVAL) where the values
/// half-changed break a bound (a shorter period with the old quota over the
/// parent's ratio; an RT runtime above the old period). The period first;
/// on EINVAL, the other value, then the period again.
fn write_cpu_pairs_v1(
    dir: &Path,
    cpu: &libcontainer::oci_spec::runtime::LinuxCpu,
) -> std::result::Result<(), String> {
    let nonzero_u = |v: Option<u64>| v.filter(|&v| v != 0).map(|v| v.to_string());
    let nonzero_i = |v: Option<i64>| v.filter(|&v| v != 0).map(|v| v.to_string());
    write_pair(
        dir,
        ("cpu.cfs_period_us", nonzero_u(cpu.period())),
        ("cpu.cfs_quota_us", nonzero_i(cpu.quota())),
    )?;
    write_pair(
        dir,
        ("cpu.rt_period_us", nonzero_u(cpu.realtime_period())),
        ("cpu.rt_runtime_us", nonzero_i(cpu.realtime_runtime())),
    )?;
    // After the quota it must not exceed (and written here: libcgroups only
    // writes the burst when another of its cpu values is set).
    match cpu.burst() {
        Some(b) => fs::write(dir.join("cpu.cfs_burst_us"), b.to_string()).map_err(|e| {
            format!(
                "write {b} to {}: {e}",
                dir.join("cpu.cfs_burst_us").display()
            )
        }),
        None => Ok(()),
    }
}

fn write_pair(
    dir: &Path,
    (period, period_value): (&str, Option<String>),
    (other, other_value): (&str, Option<String>),
) -> std::result::Result<(), String> {
    let write = |file: &str, value: &str| {
        fs::write(dir.join(file), value).map_err(|e| {
            (
                e,
                format!("write {value} to {}: ", dir.join(file).display()),
            )
        })
    };
    let shown = |(e, what): (std::io::Error, String)| format!("{what}{e}");
    let mut retry = None;
    if let Some(v) = &period_value {
        match write(period, v) {
            Ok(()) => {}
            Err((e, _)) if e.raw_os_error() == Some(libc::EINVAL) && other_value.is_some() => {
                retry = Some(v)
            }
            Err(e) => return Err(shown(e)),
        }
    }
    if let Some(v) = &other_value {
        write(other, v).map_err(shown)?;
    }
    if let Some(v) = retry {
        write(period, v).map_err(shown)?;
    }
    Ok(())
}

/// `cpu` without what `write_cpu_pairs_v1` wrote.
fn without_cpu_pairs(
    mut cpu: libcontainer::oci_spec::runtime::LinuxCpu,
) -> libcontainer::oci_spec::runtime::LinuxCpu {
    cpu.set_period(None)
        .set_quota(None)
        .set_burst(None)
        .set_realtime_period(None)
        .set_realtime_runtime(None);
    cpu
}

/// The container's cgroup statistics (`events`), through its manager `m`.
pub(crate) fn stats(
    c: &Container,
    m: &libcgroups::common::AnyCgroupManager,
) -> Result<libcgroups::stats::Stats> {
    use libcgroups::common::CgroupManager;
    m.stats()
        .map_err(|e| RuntimeError::cgroup(format!("container {:?}: cgroup statistics", c.id()), e))
}

/// `linux.resources.memory.disableOOMKiller`, which libcontainer 0.7 drops
/// (it writes `memory.oom_control` 0 whenever the spec has memory
/// resources): set to 1 in the v1 memory cgroup init is in, found through
/// /proc/<pid>/cgroup so that any cgroup manager's naming is covered. Called
/// after libcontainer has applied the resources and before the workload runs.
/// cgroup v2 has no such switch (no memory line in /proc/<pid>/cgroup):
/// nothing is written, as runc does there. A v1 memory cgroup that cannot
/// be written fails the create: the spec asked for it.
pub(crate) fn disable_oom_killer(
    spec: &libcontainer::oci_spec::runtime::Spec,
    pid: i32,
) -> Result<()> {
    let wanted = spec
        .linux()
        .as_ref()
        .and_then(|l| l.resources().as_ref())
        .and_then(|r| r.memory().as_ref())
        .and_then(|m| m.disable_oom_killer());
    if wanted != Some(true) {
        return Ok(());
    }
    let field = "linux.resources.memory.disableOOMKiller";
    let own = format!("/proc/{pid}/cgroup");
    let text =
        fs::read_to_string(&own).map_err(|e| RuntimeError::io(format!("{field}: {own}"), e))?;
    let Some(rel) = v1_cgroup_in(&text, "memory") else {
        tracing::debug!("{field}: no v1 memory cgroup (cgroup v2 has no such switch); ignored");
        return Ok(());
    };
    let path = Path::new(libcgroups::common::DEFAULT_CGROUP_ROOT)
        .join("memory")
        .join(rel.trim_start_matches('/'))
        .join("memory.oom_control");
    fs::write(&path, "1")
        .map_err(|e| RuntimeError::io(format!("{field}: write {}", path.display()), e))
}

/// The path of the v1 cgroup of `controller` in the text of a
/// /proc/<pid>/cgroup (`ID:CONTROLLERS:PATH` lines).
fn v1_cgroup_in<'a>(text: &'a str, controller: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then_some(path)
    })
}

pub(crate) fn wait_empty(manager: &libcgroups::common::AnyCgroupManager) {
    use libcgroups::common::CgroupManager;
    // Up to 5 s: the zombie of an init whose runsbx was killed stays in
    // the cgroup until the host's init reaps it, which can take a while
    // (about 2 s on the CI machine).
    for _ in 0..2500 {
        match manager.get_all_pids() {
            Ok(p) if !p.is_empty() => std::thread::sleep(std::time::Duration::from_millis(2)),
            _ => return,
        }
    }
}

/// Whether a container can do without a cgroup, with nothing lost but
/// `pause`/`resume`:
/// - no `linux.resources`: nothing to limit;
/// - its own pid namespace, which is that list: SIGKILL to init ends every
///   process in it, and `ps`/`kill --all` find them through it (pidns.rs);
/// - no `cgroupsPath` (nobody expects a cgroup at a place), no cgroup
///   mount (it would show runsbx's empty cgroup view) and no hook (a hook
///   may look for the container's cgroup);
/// - no device node the container could use, since no device cgroup
///   stands in the way (runc, and runsbx with a cgroup, deny every device
///   but a few): it cannot make one (a user namespace of its own, or no
///   CAP_MKNOD in its bounding set), every bind is `nodev`, and (checked
///   by `create`, `rootfs_nodev`) so is the rootfs's mount. Stops: a
///   malicious image's node for the host's disk opened by the container.
pub fn needs_no_cgroup(spec: &libcontainer::oci_spec::runtime::Spec) -> bool {
    use libcontainer::oci_spec::runtime::LinuxNamespaceType as Ns;
    let Some(linux) = spec.linux() else {
        return false;
    };
    // As libcontainer reads the list (the last pid entry decides): an
    // earlier new-pid entry must not make a joined host pid namespace look
    // like the container's own.
    let own_pid_ns = facts::is_new_namespace(spec, Ns::Pid);
    // Running without a cgroup hides the cgroup filesystems in a private
    // mount namespace of runsbx's; a container with none of its own would
    // be made in that one instead of its caller's.
    let own_mount_ns = facts::is_new_namespace(spec, Ns::Mount);
    let cgroup_mount = spec.mounts().iter().flatten().any(|m| {
        matches!(m.typ().as_deref(), Some("cgroup") | Some("cgroup2"))
            || m.source()
                .as_ref()
                .is_some_and(|s| s.starts_with("/sys/fs/cgroup"))
    });
    // No device cgroup then: no node the container makes or finds may be
    // usable (see below and `rootfs_nodev`).
    let no_mknod = facts::is_new_namespace(spec, Ns::User) || !bounding_has(spec, "CAP_MKNOD");
    let binds_nodev = spec
        .mounts()
        .iter()
        .flatten()
        .filter(|m| facts::is_bind(m))
        .all(|m| {
            let options = m.options().as_deref().unwrap_or_default();
            options.iter().rev().find_map(|o| match o.as_str() {
                "nodev" => Some(true),
                "dev" => Some(false),
                _ => None,
            }) == Some(true)
        });
    own_pid_ns
        && own_mount_ns
        && no_mknod
        && binds_nodev
        && linux.resources().is_none()
        && linux.cgroups_path().is_none()
        && !cgroup_mount
        && spec.hooks().is_none()
}

/// Whether `cap` is in the process's bounding set (a process without a
/// bounding set keeps every capability).
fn bounding_has(spec: &libcontainer::oci_spec::runtime::Spec, cap: &str) -> bool {
    let Some(caps) = spec
        .process()
        .as_ref()
        .and_then(|p| p.capabilities().as_ref())
    else {
        return true;
    };
    caps.bounding().as_ref().is_none_or(|b| {
        b.iter()
            .any(|c| serde_json::to_value(c).is_ok_and(|v| v == cap))
    })
}

/// The rootfs lies on a `nodev` mount: a device node in it (an image's
/// layers may carry one, /dev/sda with mode 0666) cannot be opened.
pub fn rootfs_nodev(rootfs: &Path) -> bool {
    nix::sys::statvfs::statvfs(rootfs)
        .is_ok_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_NODEV))
}

/// The cgroup-free decision was made on runsbx's own parse of config.json,
/// and libcontainer read the file again. Stops: a config swapped in between
/// (one sharing the host's pid namespace) running without a cgroup, where
/// kill and delete would reach init only and its children would outlive
/// it. Fails closed.
pub(crate) fn verify_cgroup_free(pid: i32) -> Result<()> {
    // PID 1 of its namespace, not merely outside runsbx's: an init that
    // joined an existing namespace (a config.json swapped to name one by
    // path) would leave its children running, uncounted, when it dies.
    if pid <= 0 || !crate::pidns::is_namespace_init(pid)? {
        return Err(RuntimeError::NotNamespaceInit);
    }
    Ok(())
}

pub(crate) fn no_cgroup(id: &str, what: &'static str) -> RuntimeError {
    RuntimeError::NoCgroup {
        id: id.to_string(),
        what,
    }
}

/// Whether a directory of the container's cgroup exists (v2's, or v1's
/// devices one, which libcgroups lists processes from). True when unsure:
/// a systemd path (`slice:prefix:name`) is no directory name.
pub(crate) fn cgroup_exists(c: &Container) -> bool {
    if c.systemd() {
        return true;
    }
    let Ok(config) = c.spec() else { return true };
    let dirs = Dirs::of(&config.cgroup_path, "devices");
    dirs.v1.iter().chain(&dirs.v2).any(|p| p.exists())
}

/// The directories of the cgroup at `path` in every hierarchy that has it
/// (each v1 controller's, and v2's).
fn dirs_in_every_hierarchy(path: &Path) -> Vec<PathBuf> {
    let rel = path.strip_prefix("/").unwrap_or(path);
    let root = Path::new(libcgroups::common::DEFAULT_CGROUP_ROOT);
    fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .chain([root.to_path_buf()])
        .map(|top| top.join(rel))
        .filter(|d| d.is_dir())
        .collect()
}

/// Removes the cgroup of a container whose init this process has reaped,
/// without a cgroup manager (building one scans mountinfo and
/// /proc/self/cgroup once per v1 controller: two thirds of the syscalls of
/// a `run`'s clean-up). Only when every hierarchy's directory holds no
/// process and no sub-cgroup; false, with nothing removed, otherwise, and
/// false if an rmdir fails after that (the manager's delete then finds
/// what is left). A systemd path is no directory name: false.
pub(crate) fn remove_if_empty(c: &Container) -> bool {
    if c.systemd() {
        return false;
    }
    let Ok(config) = c.spec() else { return false };
    let dirs = dirs_in_every_hierarchy(&config.cgroup_path);
    let idle = |dir: &PathBuf| {
        let procs = fs::read_to_string(dir.join("cgroup.procs"));
        let children = fs::read_dir(dir).map(|entries| {
            entries
                .flatten()
                .any(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        });
        matches!((procs, children), (Ok(p), Ok(false)) if p.trim().is_empty())
    };
    if !dirs.iter().all(idle) {
        return false;
    }
    dirs.iter().all(|d| match fs::remove_dir(d) {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    })
}

/// Where `sub` is missing under the container's cgroup at `base`, in a
/// hierarchy that holds that cgroup (but those of `hybrid_roots`, where the
/// process stays in the container's own); `None` when it is everywhere.
pub(crate) fn missing_sub_cgroup(base: &Path, sub: &str) -> Option<PathBuf> {
    let hybrid = hybrid_roots();
    let dirs: Vec<PathBuf> = dirs_in_every_hierarchy(base)
        .into_iter()
        .filter(|d| !hybrid.iter().any(|root| d.starts_with(root)))
        .collect();
    if dirs.is_empty() {
        return Some(base.join(sub));
    }
    dirs.into_iter().map(|d| d.join(sub)).find(|d| !d.is_dir())
}

/// A cgroup v2 host (one cgroup for every controller).
pub(crate) fn is_unified() -> bool {
    matches!(
        libcgroups::common::get_cgroup_setup(),
        Ok(libcgroups::common::CgroupSetup::Unified)
    )
}

/// The hierarchies of a cgroup v1 host that libcgroups' v1 manager never
/// joins: a hybrid host's cgroup2 at `unified/` and systemd's named
/// hierarchy at `systemd/`. runc puts the container's processes there too,
/// at the container's path; so does runsbx (`join_hybrid`, `hybrid_procs`),
/// and its delete removes them (`dirs_in_every_hierarchy` lists them).
fn hybrid_roots() -> Vec<PathBuf> {
    let root = Path::new(libcgroups::common::DEFAULT_CGROUP_ROOT);
    // A cgroup2 root (a v2-only host) has cgroup.procs itself; a v1 host's
    // is a tmpfs of hierarchies. Two stats, not libcgroups' mountinfo scan:
    // this runs on every create and delete.
    if root.join("cgroup.procs").exists() {
        return Vec::new();
    }
    ["unified", "systemd"]
        .iter()
        .map(|name| root.join(name))
        .filter(|d| d.join("cgroup.procs").is_file())
        .collect()
}

/// Puts a created container's init in its cgroup at `cgroup_path` in the
/// `hybrid_roots` hierarchies, made where missing.
pub(crate) fn join_hybrid(cgroup_path: &Path, pid: i32) -> Result<()> {
    let rel = cgroup_path.strip_prefix("/").unwrap_or(cgroup_path);
    for root in hybrid_roots() {
        let dir = root.join(rel);
        let procs = dir.join("cgroup.procs");
        fs::create_dir_all(&dir)
            .and_then(|()| fs::write(&procs, pid.to_string()))
            .map_err(|e| RuntimeError::io(format!("add init to {}", procs.display()), e))?;
    }
    Ok(())
}

/// The `cgroup.procs` of the container's cgroup in the `hybrid_roots`
/// hierarchies that hold it, open for writing: an exec'd process writes
/// itself there before it execs (executor.rs), as init is there.
pub(crate) fn hybrid_procs(cgroup_path: &Path) -> Result<Vec<OwnedFd>> {
    let rel = cgroup_path.strip_prefix("/").unwrap_or(cgroup_path);
    hybrid_roots()
        .into_iter()
        .map(|root| root.join(rel))
        .filter(|dir| dir.is_dir())
        .map(|dir| open_procs(&dir.join("cgroup.procs")))
        .collect()
}

/// Removes a container's cgroups in the `hybrid_roots` hierarchies once
/// its processes are gone (libcgroups removes the v1 controllers' only).
pub(crate) fn remove_hybrid(c: &Container) {
    if let Ok(config) = c.spec() {
        remove_hybrid_at(&config.cgroup_path);
    }
}

fn remove_hybrid_at(cgroup_path: &Path) {
    let rel = cgroup_path.strip_prefix("/").unwrap_or(cgroup_path);
    for root in hybrid_roots() {
        let _ = fs::remove_dir(root.join(rel));
    }
}

/// `exec --cgroup CONTROLLER:PATH` on cgroup v1: the `cgroup.procs` of
/// each named controller's sub-cgroup, open for writing (the exec'd process
/// moves itself there before it execs, after libcontainer put it in the
/// container's cgroup of every controller). Errors as runc's: an unknown
/// controller, a sub-cgroup that does not exist.
pub(crate) fn controller_procs(
    cgroup_path: &Path,
    per_controller: &[(String, String)],
) -> Result<Vec<OwnedFd>> {
    let rel = cgroup_path.strip_prefix("/").unwrap_or(cgroup_path);
    let root = Path::new(libcgroups::common::DEFAULT_CGROUP_ROOT);
    let bad = |ctl: &str, err: String| RuntimeError::Cgroup {
        context: format!("--cgroup {ctl}"),
        err,
    };
    let mut out = Vec::new();
    for (ctl, sub) in per_controller {
        // Stops: the process placed in a cgroup outside the container's
        // (`..`, an absolute path), where its limits, freeze and kill
        // --all would not reach it, by a caller other than the CLI's parser.
        if sub.split('/').any(|p| p == "..") || Path::new(sub).is_absolute() {
            return Err(bad(
                ctl,
                format!("{sub}: not a sub cgroup path (it would leave the container's cgroup)"),
            ));
        }
        // Stops: a controller name that walks out of /sys/fs/cgroup.
        let known = !ctl.contains('/') && ctl != "." && ctl != ".." && root.join(ctl).is_dir();
        if !known || matches!(ctl.as_str(), "unified" | "systemd") {
            return Err(bad(ctl, format!("unknown controller {ctl:?}")));
        }
        let procs = root.join(ctl).join(rel).join(sub).join("cgroup.procs");
        match open_procs(&procs) {
            Ok(fd) => out.push(fd),
            Err(RuntimeError::Io { err, .. }) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(bad(
                    ctl,
                    format!(
                        "adding pid to {}: no such file or directory",
                        procs.display()
                    ),
                ))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

fn open_procs(path: &Path) -> Result<OwnedFd> {
    fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)
        .map(OwnedFd::from)
        .map_err(|e| RuntimeError::io(format!("open {}", path.display()), e))
}

/// Removes the sub-cgroups under a container's cgroup (made for `exec
/// --cgroup`), deepest first, once it is empty: libcgroups removes only
/// the container's own directory, which fails while it has children.
pub(crate) fn remove_sub_cgroups(c: &Container) {
    if c.systemd() {
        return;
    }
    let Ok(config) = c.spec() else { return };
    fn below(dir: &Path) {
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                below(&e.path());
                let _ = fs::remove_dir(e.path());
            }
        }
    }
    for dir in dirs_in_every_hierarchy(&config.cgroup_path) {
        below(&dir);
    }
}

/// Where a cgroup's directories are, for the host's layout as libcgroups
/// detects it (`get_cgroup_setup`): v1's under one controller's mount, v2's
/// under the cgroup2 mount (`unified/` on a hybrid host).
struct Dirs {
    v1: Option<PathBuf>,
    v2: Vec<PathBuf>,
}

impl Dirs {
    fn of(cgroup_path: &Path, controller: &str) -> Self {
        let setup = libcgroups::common::get_cgroup_setup().ok();
        Self::under(setup, cgroup_path, controller)
    }

    /// `of` for a given layout (`None`: unknown).
    fn under(
        setup: Option<libcgroups::common::CgroupSetup>,
        cgroup_path: &Path,
        controller: &str,
    ) -> Self {
        use libcgroups::common::{CgroupSetup, DEFAULT_CGROUP_ROOT};
        let rel = cgroup_path.strip_prefix("/").unwrap_or(cgroup_path);
        let base = Path::new(DEFAULT_CGROUP_ROOT);
        let v1 = Some(base.join(controller).join(rel));
        let hybrid = base.join("unified").join(rel);
        match setup {
            Some(CgroupSetup::Unified) => Self {
                v1: None,
                v2: vec![base.join(rel)],
            },
            Some(CgroupSetup::Legacy) => Self { v1, v2: Vec::new() },
            Some(CgroupSetup::Hybrid) => Self {
                v1,
                v2: vec![hybrid],
            },
            // Layout unknown: every place it could be.
            None => Self {
                v1,
                v2: vec![hybrid, base.join(rel)],
            },
        }
    }
}

/// Freezes the cgroup so nothing forks meanwhile, signals every process,
/// thaws.
pub(crate) fn signal_cgroup(
    id: &str,
    manager: &libcgroups::common::AnyCgroupManager,
    signal: Signal,
) -> Result<()> {
    use libcgroups::common::{CgroupManager, FreezerState};
    let _ = manager.freeze(FreezerState::Frozen);
    let pids = manager.get_all_pids();
    if let Ok(pids) = &pids {
        for pid in pids {
            let _ = nix::sys::signal::kill(*pid, signal);
        }
    }
    let thawed = manager.freeze(FreezerState::Thawed);
    pids.map_err(|e| RuntimeError::cgroup(format!("kill {id}: cgroup"), e))?;
    thawed.map_err(|e| RuntimeError::cgroup(format!("kill {id}: thaw"), e))?;
    Ok(())
}

/// How many times [`kill_cgroup_now`] reads the cgroup's list for pids it
/// has not signalled yet before it falls back to freezing.
const KILL_ROUNDS: usize = 64;

/// SIGKILLs every process of the container's cgroup at once, without
/// freezing it first: for the limits of a foreground run (`--rss-limit`,
/// `--timeout`), which must stop the workload now.
///
/// Why no freeze: a task inside one long call (an `mmap(MAP_POPULATE)` of
/// GiBs) cannot freeze until the call returns, so the old freeze-then-kill
/// let a 256 MiB limit reach 2 GiB while runsbx spun on `freezer.state`. A
/// pending SIGKILL ends such a call at once (the kernel checks for a fatal
/// signal between pages). The freeze was there against a fork race, which
/// kill-then-recheck closes too: a task with SIGKILL pending cannot finish
/// a fork (copy_process fails on a fatal signal), and a child whose fork
/// did finish is in the cgroup before the fork returns, so the next read
/// lists it. A read that lists no pid not yet signalled therefore means
/// every task has been signalled. cgroup v2's `cgroup.kill` does all of it
/// in the kernel where the file exists; the rounds below run anyway, for
/// v1 and hybrid hosts. Not covered: a pid signalled, reaped and reused by
/// a new task of the cgroup between two reads (the reaper is in the
/// cgroup too, and dying); the caller's SIGKILL to init, PID 1 of the pid
/// namespace, ends every task in it regardless.
pub(crate) fn kill_cgroup_now(
    id: &str,
    c: &Container,
    manager: &libcgroups::common::AnyCgroupManager,
) -> Result<()> {
    use libcgroups::common::{CgroupManager, FreezerState};
    if let Ok(config) = c.spec() {
        for dir in Dirs::of(&config.cgroup_path, "devices").v2 {
            // ENOENT before Linux 5.14 or for a cgroup not on v2: the
            // rounds below do it.
            let _ = fs::write(dir.join("cgroup.kill"), "1");
        }
    }
    let mut signalled = std::collections::HashSet::new();
    let mut settled = false;
    for _ in 0..KILL_ROUNDS {
        let pids = manager
            .get_all_pids()
            .map_err(|e| RuntimeError::cgroup(format!("kill {id}: cgroup"), e))?;
        let fresh: Vec<_> = pids.into_iter().filter(|p| signalled.insert(*p)).collect();
        if fresh.is_empty() {
            settled = true;
            break;
        }
        for pid in fresh {
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        }
    }
    if !settled {
        // Still new pids after every round: a fork chain outrunning the
        // reads. The freeze stops it (every task here has a SIGKILL
        // pending, so none is inside a long call for long).
        return signal_cgroup(id, manager, Signal::SIGKILL);
    }
    // A paused container's tasks die only once thawed: one write, no wait.
    manager
        .freeze(FreezerState::Thawed)
        .map_err(|e| RuntimeError::cgroup(format!("kill {id}: thaw"), e))
}

/// The spec's `linux.cgroupsPath`.
pub(crate) fn spec_cgroup_path(spec: &libcontainer::oci_spec::runtime::Spec) -> Option<PathBuf> {
    spec.linux().as_ref().and_then(|l| l.cgroups_path().clone())
}

/// runc's cgroup for a container whose spec names none: the id, at the
/// top of each hierarchy (libcontainer's own default is the literal
/// `:youki:<id>`). `create` shows libcontainer this path (a config view).
pub(crate) fn default_cgroup_path(id: &str) -> PathBuf {
    Path::new("/").join(id)
}

/// The cgroup libcontainer makes for a container of `bundle` created by
/// root (`create` gives one without `cgroupsPath` the default above,
/// except under systemd, where libcontainer's name stays).
pub(crate) fn bundle_cgroup_path(id: &str, bundle: &Bundle, systemd: bool) -> PathBuf {
    match spec_cgroup_path(&bundle.spec) {
        Some(p) => p,
        None if systemd => libcontainer::utils::get_cgroup_path(&None, id),
        None => default_cgroup_path(id),
    }
}

/// Stops: a container joining a cgroup that holds another's processes (a
/// runc container of the same id, another container given the same
/// `cgroupsPath`, one under another --root), which its kill --all and delete
/// would then kill too: runsbx's delete kills whatever its cgroup holds.
/// runc 1.2 refuses it too (1.1 warned). An empty one (left by a killed
/// create) is taken over.
pub(crate) fn check_cgroup_empty(id: &str, path: &Path) -> Result<()> {
    for dir in dirs_in_every_hierarchy(path) {
        if !libcgroups::common::get_all_pids(&dir)
            .unwrap_or_default()
            .is_empty()
        {
            return Err(RuntimeError::Cgroup {
                context: format!("container {id:?}"),
                err: format!(
                    "container's cgroup is not empty: {} already holds processes (another \
                     container's?), which its delete would kill",
                    dir.display()
                ),
            });
        }
    }
    Ok(())
}

/// Stops: a create that never returns. A process moved into a frozen
/// cgroup (or into a new child of one: it inherits the freeze) stops at
/// once, and libcontainer's intermediate process then waits for ever for
/// init, holding the create lock. Refused before anything is made, for
/// the cgroup at `path` or the nearest ancestor that exists, in the v1
/// freezer and in the cgroup v2 hierarchy.
pub(crate) fn check_not_frozen(id: &str, path: &Path) -> Result<()> {
    let rel = path.strip_prefix("/").unwrap_or(path);
    let root = Path::new(libcgroups::common::DEFAULT_CGROUP_ROOT);
    let hierarchies = [
        (root.join("freezer"), "freezer.state"),
        (root.join("unified"), "cgroup.events"),
        (root.to_path_buf(), "cgroup.events"),
    ];
    for (top, file) in hierarchies {
        let Some(dir) = rel.ancestors().map(|a| top.join(a)).find(|d| d.is_dir()) else {
            continue;
        };
        // The root cgroup has neither file, and cannot be frozen.
        let Ok(text) = fs::read_to_string(dir.join(file)) else {
            continue;
        };
        if is_frozen(&text) {
            return Err(RuntimeError::Cgroup {
                context: format!("container {id:?}"),
                err: format!(
                    "container's cgroup unexpectedly frozen: {} is frozen, a container made in \
                     it would never start (thaw it, or choose another linux.cgroupsPath)",
                    dir.display()
                ),
            });
        }
    }
    Ok(())
}

/// A v1 `freezer.state` (FROZEN or FREEZING, also when inherited from a
/// parent) or a v2 `cgroup.events` (`frozen 1`) that says frozen.
fn is_frozen(text: &str) -> bool {
    matches!(text.trim(), "FROZEN" | "FREEZING") || text.lines().any(|l| l.trim() == "frozen 1")
}

/// `linux.resources.unified` on a host whose controllers are on cgroup v1
/// (legacy or hybrid): refused, as runc does, instead of libcgroups' v1
/// manager leaving it out without a word (a limit the bundle asked for that
/// nothing enforces).
pub(crate) fn check_unified_supported(spec: &libcontainer::oci_spec::runtime::Spec) -> Result<()> {
    let asked = crate::spec::facts::resources(spec).is_some_and(|r| r.unified().is_some());
    if !asked {
        return Ok(());
    }
    match libcgroups::common::get_cgroup_setup() {
        Ok(libcgroups::common::CgroupSetup::Unified) => Ok(()),
        _ => Err(RuntimeError::Spec(
            "linux.resources.unified: invalid configuration: cannot use unified on cgroup v1 \
             (this host's controllers are on cgroup v1)"
                .into(),
        )),
    }
}

/// SIGKILLs whatever is in the cgroup at `path` and removes it, reaping
/// the zombies of our own children meanwhile. For what a failed or killed
/// create left: libcontainer's own clean-up misses an init that was forked
/// before the failure (e.g. the pid file could not be written).
pub(crate) fn kill_cgroup_path(id: &str, path: PathBuf) {
    use libcgroups::common::CgroupManager;
    let hybrid = path.clone();
    let Ok(manager) = libcgroups::common::create_cgroup_manager(libcgroups::common::CgroupConfig {
        cgroup_path: path,
        systemd_cgroup: false,
        container_name: id.to_string(),
    }) else {
        return;
    };
    if let Ok(pids) = manager.get_all_pids() {
        for pid in pids {
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        }
    }
    for _ in 0..1000 {
        // A failed init is our child (libcontainer clones it with
        // CLONE_PARENT): until it is reaped, its zombie keeps the cgroup busy.
        // An orphan's (its runsbx was killed) waits for the host's init.
        while let Ok(status) =
            nix::sys::wait::waitpid(None, Some(nix::sys::wait::WaitPidFlag::WNOHANG))
        {
            if status == nix::sys::wait::WaitStatus::StillAlive {
                break;
            }
        }
        if manager.remove().is_ok() {
            remove_hybrid_at(&hybrid);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[cfg(test)]
#[path = "cgroup_tests.rs"]
mod tests;
