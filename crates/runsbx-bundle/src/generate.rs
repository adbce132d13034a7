//! Pure: discovered facts + options -> the sandbox's `config.json`.
//!
//! What the generated bundle enforces, and what it leaves to other layers:
//! - Filesystem: an empty, read-only rootfs; each discovered runtime path
//!   bound read-only (`bind,ro,nosuid,nodev`, not recursive) at its own path,
//!   parents first; the workdir bound read-write (`nosuid,nodev,noexec`) at its
//!   own path, last, so it is visible even inside a read-only parent. No
//!   `/sys`, no `/tmp`, no `/dev/pts`, `/dev/shm` or `/dev/mqueue`. Landlock
//!   (the policy passed in) restricts access again inside the container.
//! - `/dev`: a tmpfs (mode 555: the workload, container root without
//!   CAP_DAC_OVERRIDE, cannot create files there; Landlock denies it too)
//!   with null, zero, full, random, urandom. In a user
//!   namespace nodes cannot be created, so libcontainer bind-mounts the host's
//!   nodes (as runc does rootless); it also always adds `/dev/tty`, which
//!   without a controlling terminal only answers ENXIO.
//! - `/proc`: fresh for the new pid namespace, with runc's masked and
//!   read-only paths. Host processes are not in it. The paths Landlock grants
//!   in it are bound onto themselves ([`readonly_paths`]), so that the grant
//!   outlives the kernel's reclaim of their dentries.
//! - Namespaces: user, pid, network (only loopback, down), mount, ipc, uts,
//!   cgroup. One uid and one gid mapping: container 0 -> the host ids chosen
//!   by [`host_ids`]; the workload runs as container 0 with every capability
//!   set empty and no_new_privs, so exec grants it nothing.
//! - seccomp and Landlock: inserted verbatim from the caller; this module
//!   neither builds nor checks them.
//! - No `linux.resources`: limits beyond rlimits are the runtime's business.

use std::path::{Path, PathBuf};

use oci_spec::runtime::{
    Capabilities, LinuxBuilder, LinuxCapabilitiesBuilder, LinuxDeviceBuilder, LinuxDeviceType,
    LinuxIdMappingBuilder, LinuxNamespaceBuilder, LinuxNamespaceType, LinuxSeccomp, MountBuilder,
    PosixRlimitBuilder, PosixRlimitType, ProcessBuilder, RootBuilder, Spec, SpecBuilder,
    UserBuilder,
};
use runsbx_policy::landlock::LandlockPolicy;
use serde_json::Value;

use crate::config::SandboxConfig;
use crate::discover::Discovery;
use crate::error::BundleError;

pub const OCI_VERSION: &str = "1.0.2";
pub const HOSTNAME: &str = "sandbox";
/// The `root.path` of generated bundles, relative to the bundle directory.
pub const ROOTFS: &str = "rootfs";
/// The host id a root-invoked sandbox runs as when no unprivileged owner is known.
pub const NOBODY: u32 = 65534;

/// The device nodes the workload gets, as (path, major, minor).
pub const DEVICES: &[(&str, i64, i64)] = &[
    ("/dev/null", 1, 3),
    ("/dev/zero", 1, 5),
    ("/dev/full", 1, 7),
    ("/dev/random", 1, 8),
    ("/dev/urandom", 1, 9),
];

/// runc's read-only paths, then the procfs paths the sandbox's Landlock rules
/// name, each bound onto itself so that its dentry (and the inode the rule
/// holds) lasts as long as the container: see
/// [`runsbx_policy::landlock::proc_pins`]. libcontainer makes these binds
/// after pivot_root, in the container's own `/proc`, before the Executor
/// builds the Landlock ruleset. Read-only changes only the errno of a write
/// to those files (EROFS for Landlock's EACCES): Landlock grants no write in
/// `/proc`.
pub fn readonly_paths() -> Vec<String> {
    crate::runc_spec::READONLY_PATHS
        .iter()
        .copied()
        .chain(runsbx_policy::landlock::proc_pins())
        .map(str::to_string)
        .collect()
}

/// Limits set unless the caller overrides them: no core dumps (they would land
/// in the workdir with the process's memory), and a modest fd table.
pub const DEFAULT_RLIMITS: &[(&str, u64, u64)] =
    &[("RLIMIT_CORE", 0, 0), ("RLIMIT_NOFILE", 1024, 1024)];

const RLIMIT_NAMES: &[&str] = &[
    "RLIMIT_AS",
    "RLIMIT_CORE",
    "RLIMIT_CPU",
    "RLIMIT_DATA",
    "RLIMIT_FSIZE",
    "RLIMIT_LOCKS",
    "RLIMIT_MEMLOCK",
    "RLIMIT_MSGQUEUE",
    "RLIMIT_NICE",
    "RLIMIT_NOFILE",
    "RLIMIT_NPROC",
    "RLIMIT_RSS",
    "RLIMIT_RTPRIO",
    "RLIMIT_RTTIME",
    "RLIMIT_SIGPENDING",
    "RLIMIT_STACK",
];

/// Everything `generate` needs besides the discovered paths.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// The read-write directory, absolute; bound at the same path inside and
    /// used as cwd, HOME and TMPDIR.
    pub workdir: PathBuf,
    /// Already scrubbed (see [`crate::scrub_env`]), in order.
    pub env: Vec<(String, String)>,
    /// Host (uid, gid) that container root maps to (see [`host_ids`]).
    pub host_ids: (u32, u32),
    /// (name, soft, hard); merged over [`DEFAULT_RLIMITS`] by [`merge_rlimits`].
    pub rlimits: Vec<(String, u64, u64)>,
    /// `linux.seccomp`, inserted verbatim.
    pub seccomp: Option<LinuxSeccomp>,
    /// `process.landlock`, inserted verbatim.
    pub landlock: Option<LandlockPolicy>,
    /// `false`: a new, empty network namespace. `true`: the host's network.
    pub net: bool,
}

/// The ids container root maps to on the host.
///
/// - Invoked by a non-root user: that user's own ids (the only single mapping
///   an unprivileged user may write).
/// - Invoked by root: never host root. The workdir's owner when that is not
///   root, so what the workload writes belongs to whoever owns the workdir
///   (and root can use it anyway). A root-owned workdir is refused: running
///   as nobody could not write there, and chowning the caller's directory
///   behind its back is not ours to do. A private workdir made by runsbx
///   itself should be created owned by [`NOBODY`].
pub fn host_ids(
    invoker: (u32, u32),
    workdir: &Path,
    workdir_owner: (u32, u32),
) -> Result<(u32, u32), BundleError> {
    if invoker.0 != 0 {
        return Ok(invoker);
    }
    // A workdir group of 0 would make the workload's group host root.
    let owned = match workdir_owner {
        (0, 0) => "owned by root".to_string(),
        (0, g) => format!("owned by root (uid 0, gid {g})"),
        (u, 0) => format!("owned by uid {u} but group root (gid 0)"),
        _ => return Ok(workdir_owner),
    };
    Err(BundleError::Workdir {
        path: workdir.to_path_buf(),
        reason: format!(
            "{owned}, and the workload never runs as host root; \
             give it to an unprivileged user (e.g. chown {NOBODY}:{NOBODY}) or omit --workdir"
        ),
    })
}

/// Refuses a workdir that would expose or make writable what must stay
/// read-only: `/`, a relative path, a directory that is, or contains, one of
/// the read-only runtime paths (checked both as spelled and resolved). A
/// workdir *inside* a read-only directory is allowed: its bind is mounted
/// last, on top.
///
/// Stops: a workdir of `/usr` or `$HOME/.pyenv` that would let the workload
/// rewrite the interpreter or libraries it (and later sandboxes) run.
pub fn validate_workdir(workdir: &Path, ro_paths: &[PathBuf]) -> Result<(), BundleError> {
    let bad = |reason: String| BundleError::Workdir {
        path: workdir.to_path_buf(),
        reason,
    };
    if !workdir.is_absolute() {
        return Err(bad("must be an absolute path".into()));
    }
    let real = std::fs::canonicalize(workdir).map_err(|e| bad(e.to_string()))?;
    if real == Path::new("/") || workdir == Path::new("/") {
        return Err(bad(
            "refusing the root directory as the writable workdir".into()
        ));
    }
    if !real.is_dir() {
        return Err(bad("not a directory".into()));
    }
    for ro in ro_paths {
        let ro_real = std::fs::canonicalize(ro).unwrap_or_else(|_| ro.clone());
        if ro.starts_with(workdir) || ro_real.starts_with(&real) {
            return Err(bad(format!(
                "contains the read-only runtime path {}; choose a directory that holds no runtime files",
                ro.display()
            )));
        }
    }
    Ok(())
}

/// Parses an rlimit name as given to `--rlimit` (`NOFILE`, `nofile` or
/// `RLIMIT_NOFILE`) into the OCI spelling.
pub fn rlimit_name(name: &str) -> Result<String, BundleError> {
    let up = name.to_ascii_uppercase();
    let full = if up.starts_with("RLIMIT_") {
        up
    } else {
        format!("RLIMIT_{up}")
    };
    if RLIMIT_NAMES.contains(&full.as_str()) {
        Ok(full)
    } else {
        Err(BundleError::Rlimit {
            name: name.to_string(),
            reason: "unknown resource".into(),
        })
    }
}

/// [`DEFAULT_RLIMITS`] with `overrides` applied (a later entry for the same
/// resource wins), sorted by name. Refuses unknown names and soft > hard.
pub fn merge_rlimits(
    overrides: &[(String, u64, u64)],
) -> Result<Vec<(String, u64, u64)>, BundleError> {
    let mut m: std::collections::BTreeMap<String, (u64, u64)> = DEFAULT_RLIMITS
        .iter()
        .map(|(n, s, h)| (n.to_string(), (*s, *h)))
        .collect();
    for (n, s, h) in overrides {
        let full = rlimit_name(n)?;
        if s > h {
            return Err(BundleError::Rlimit {
                name: n.clone(),
                reason: format!("soft limit {s} is above hard limit {h}"),
            });
        }
        m.insert(full, (*s, *h));
    }
    Ok(m.into_iter().map(|(n, (s, h))| (n, s, h)).collect())
}

/// The full config for running `d` under `o`, with `o`'s seccomp profile
/// and Landlock policy inserted verbatim.
pub fn generate(d: &Discovery, o: &GenerateOptions) -> Result<SandboxConfig, BundleError> {
    let mut spec = spec(d, o)?;
    if let Some(linux) = spec.linux_mut() {
        linux.set_seccomp(o.seccomp.clone());
    }
    Ok(SandboxConfig::new(spec, o.landlock.clone()))
}

pub(crate) fn bad_spec(reason: String) -> BundleError {
    BundleError::Bundle {
        path: PathBuf::from("config.json"),
        reason,
    }
}

/// The typed part of [`generate`]'s config. oci_spec's builders start from
/// its `Default`s (runc's example spec), so every field the config does not
/// carry is cleared explicitly.
fn spec(d: &Discovery, o: &GenerateOptions) -> Result<Spec, BundleError> {
    validate_workdir(&o.workdir, &d.ro_paths)?;
    let built = |e: oci_spec::OciSpecError| bad_spec(e.to_string());
    let rlimits =
        merge_rlimits(&o.rlimits)?
            .into_iter()
            .map(|(t, soft, hard)| {
                let typ: PosixRlimitType = serde_json::from_value(Value::String(t.clone()))
                    .map_err(|_| BundleError::Rlimit {
                        name: t,
                        reason: "unknown resource".into(),
                    })?;
                PosixRlimitBuilder::default()
                    .typ(typ)
                    .soft(soft)
                    .hard(hard)
                    .build()
                    .map_err(built)
            })
            .collect::<Result<Vec<_>, _>>()?;
    let env: Vec<String> = o.env.iter().map(|(k, v)| format!("{k}={v}")).collect();

    let mount = |dest: &Path, typ: &str, source: &Path, options: &[&str]| {
        MountBuilder::default()
            .destination(dest)
            .typ(typ)
            .source(source)
            .options(options.iter().map(|o| o.to_string()).collect::<Vec<_>>())
            .build()
            .map_err(built)
    };
    let mut mounts = vec![
        mount(
            Path::new("/proc"),
            "proc",
            Path::new("proc"),
            &["nosuid", "noexec", "nodev"],
        )?,
        mount(
            Path::new("/dev"),
            "tmpfs",
            Path::new("tmpfs"),
            &["nosuid", "noexec", "strictatime", "mode=555", "size=64k"],
        )?,
    ];
    for p in &d.ro_paths {
        mounts.push(mount(p, "bind", p, &["bind", "ro", "nosuid", "nodev"])?);
    }
    mounts.push(mount(
        &o.workdir,
        "bind",
        &o.workdir,
        &["bind", "rw", "nosuid", "nodev", "noexec"],
    )?);

    let devices = DEVICES
        .iter()
        .map(|(path, major, minor)| {
            LinuxDeviceBuilder::default()
                .path(*path)
                .typ(LinuxDeviceType::C)
                .major(*major)
                .minor(*minor)
                .file_mode(0o666u32)
                .uid(0u32)
                .gid(0u32)
                .build()
                .map_err(built)
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut kinds = vec![LinuxNamespaceType::User, LinuxNamespaceType::Pid];
    if !o.net {
        kinds.push(LinuxNamespaceType::Network);
    }
    kinds.extend([
        LinuxNamespaceType::Mount,
        LinuxNamespaceType::Ipc,
        LinuxNamespaceType::Uts,
        LinuxNamespaceType::Cgroup,
    ]);
    let namespaces = kinds
        .into_iter()
        .map(|typ| {
            LinuxNamespaceBuilder::default()
                .typ(typ)
                .build()
                .map_err(built)
        })
        .collect::<Result<Vec<_>, _>>()?;

    let none = Capabilities::new();
    let capabilities = LinuxCapabilitiesBuilder::default()
        .bounding(none.clone())
        .effective(none.clone())
        .inheritable(none.clone())
        .permitted(none.clone())
        .ambient(none)
        .build()
        .map_err(built)?;
    let user = UserBuilder::default()
        .uid(0u32)
        .gid(0u32)
        .build()
        .map_err(built)?;
    let mut process = ProcessBuilder::default()
        .terminal(false)
        .user(user)
        .args(d.args.clone())
        .env(env)
        .cwd(&o.workdir)
        .capabilities(capabilities)
        .rlimits(rlimits)
        .no_new_privileges(true)
        .build()
        .map_err(built)?;
    process.set_console_size(None);

    let id_map = |host: u32| {
        LinuxIdMappingBuilder::default()
            .container_id(0u32)
            .host_id(host)
            .size(1u32)
            .build()
            .map_err(built)
    };
    let mut linux = LinuxBuilder::default()
        .uid_mappings(vec![id_map(o.host_ids.0)?])
        .gid_mappings(vec![id_map(o.host_ids.1)?])
        .namespaces(namespaces)
        .devices(devices)
        // runc's defaults (`runc spec`), less `/sys/firmware`: there is no `/sys`.
        .masked_paths(
            crate::runc_spec::MASKED_PATHS
                .iter()
                .filter(|p| !p.starts_with("/sys/"))
                .map(|p| p.to_string())
                .collect::<Vec<_>>(),
        )
        .readonly_paths(readonly_paths())
        .build()
        .map_err(built)?;
    linux.set_resources(None);

    let root = RootBuilder::default()
        .path(ROOTFS)
        .readonly(true)
        .build()
        .map_err(built)?;
    let mut spec = SpecBuilder::default()
        .version(OCI_VERSION)
        .root(root)
        .process(process)
        .hostname(HOSTNAME)
        .mounts(mounts)
        .linux(linux)
        .build()
        .map_err(built)?;
    spec.set_annotations(None);
    Ok(spec)
}

#[cfg(test)]
#[path = "generate_tests.rs"]
mod tests;
