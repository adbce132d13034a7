//! Bind mounts that root's runsbx makes itself, before libcontainer forks,
//! for a container with a user namespace.
//!
//! Why: libcontainer makes a bundle's mounts in the container's init, after
//! it entered the user namespace, as the container's root: an unprivileged
//! host user (nobody, for a generated bundle). A bind whose source lies
//! under a directory that user may not search (a pyenv Python under /root,
//! mode 0700) fails there with EACCES ("failed to canonicalize"), although
//! root asked for it (runc opens such sources before it enters the user
//! namespace, and makes them). So, for a create by root, each plain bind
//! whose source the container's root cannot reach is made by runsbx as
//! root, in a private mount namespace of the runsbx process, on its mount
//! point inside the bundle's rootfs; the config libcontainer reads (a copy,
//! rootless::ConfigCopy) no longer lists it. libcontainer binds the rootfs
//! recursively and init's mount namespace is a copy of ours, so the
//! container sees it in place; nothing appears on the host (the mounts live
//! in namespaces only runsbx and the container hold) and nothing is left
//! when both are gone. `sandbox` builds its own bundle the same way
//! (premount.rs); this makes a bundle from `gen`, or any other, run alike.
//!
//! Stops nothing more and nothing less than the config's binds would: the
//! same source, destination and flags (read-only or not, and the bind's own
//! nosuid/nodev/noexec); inside the container's user namespace the mounts
//! are locked (they come from a more privileged mount namespace), so the
//! workload cannot unmount them, make a read-only one writable or drop
//! nosuid/nodev. Reaching the mount grants nothing on the files below it:
//! their own modes still apply to the container's uids. Only plain binds
//! qualify (any other option stays with libcontainer, and fails there as
//! before, with its cause: initlog.rs), and only when no mount earlier in
//! the list covers the destination (libcontainer's later mount would hide
//! it). The mount point is resolved with openat2(RESOLVE_IN_ROOT): a
//! symlink in the rootfs cannot aim root's mount outside it; the bind is
//! cloned detached (open_tree), given its flags (mount_setattr) and only
//! then attached on that descriptor (move_mount): a read-only bind is never
//! writable, and nothing is looked up twice. A bind that cannot be made
//! fails the create (closed).
//!
//! Idmapped binds (a mount's `uidMappings`/`gidMappings`, or the `idmap`
//! and `ridmap` options, runc 1.2) are made here too, with or without a
//! user namespace: libcontainer 0.7 makes none. The mapping is taken from
//! a user namespace made for it (a child cloned into a new one, its maps
//! written, its namespace held by descriptor, the child reaped) or the one
//! the container joins, and set on the detached clone before anything else
//! (the kernel maps only a mount never attached). What the bind shows is
//! what the config's author mapped; the rules (bind only, both mappings or
//! neither, nothing but a plain bind listed before it above it) are checked
//! before any state is written (`check_idmaps`). The plain binds listed
//! before an idmapped one are made here too, in order: it may lie in one or
//! take its source from one (then resolved in the rootfs, RESOLVE_IN_ROOT,
//! when it is made: a symlink the image holds cannot aim root's bind at the
//! host).

use crate::spec::facts::{self, NsFact};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use libcontainer::oci_spec::runtime::{LinuxIdMapping, LinuxNamespaceType, Mount, Spec};
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::stat::Mode;

use crate::error::{Result, RuntimeError};

/// One bind runsbx makes: `mounts[index]` of the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreBind {
    pub index: usize,
    /// As spelled in the config, for messages.
    pub source: PathBuf,
    /// The source resolved by root.
    pub real: PathBuf,
    pub destination: PathBuf,
    pub recursive: bool,
    /// The bind's flags: MS_RDONLY plus its own MS_NOSUID, MS_NODEV,
    /// MS_NOEXEC (set as MOUNT_ATTR_* before the bind is attached).
    pub flags: MsFlags,
    pub is_dir: bool,
    /// A source under the rootfs that a bind made before this one puts
    /// there: its path in the rootfs, resolved in it (RESOLVE_IN_ROOT)
    /// when the bind is made, never through a symlink out of it.
    pub in_rootfs: Option<PathBuf>,
    /// An idmapped bind (`uidMappings`/`gidMappings`, `idmap`, `ridmap`).
    pub idmap: Option<IdMap>,
}

/// The id mapping of an idmapped bind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdMap {
    pub from: MapFrom,
    /// `ridmap`: every mount of an `rbind` is mapped, not only its top one.
    pub recursive: bool,
    /// MS_SHARED, MS_SLAVE, MS_PRIVATE or MS_UNBINDABLE; empty: as cloned.
    /// Set in init (remount.rs): libcontainer's rootfs propagation, applied
    /// after runsbx made the bind, would replace it.
    pub propagation: MsFlags,
}

/// Where an idmapped bind's mapping comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapFrom {
    /// The mount's own mappings, or else those of the container's new user
    /// namespace: the text of /proc/PID/uid_map and gid_map.
    Maps { uid: String, gid: String },
    /// The user namespace the container joins (`idmap` without mappings).
    Joined(PathBuf),
}

/// The id mapping `mounts[index]` asks for; `Ok(None)` for a mount that
/// asks none, `Err` (one line) for one runsbx cannot make. runc 1.2's
/// rules: mappings make a bind idmapped, `idmap`/`ridmap` without
/// mappings take the container's user namespace, `ridmap` maps the
/// submounts of an `rbind` too.
pub fn idmap_of(
    spec: &Spec,
    index: usize,
    m: &Mount,
) -> std::result::Result<Option<IdMap>, String> {
    let opts: &[String] = m.options().as_deref().unwrap_or(&[]);
    let flagged = opts.iter().any(|o| o == "idmap" || o == "ridmap");
    let (uid, gid) = (m.uid_mappings().as_deref(), m.gid_mappings().as_deref());
    if !flagged && uid.is_none() && gid.is_none() {
        return Ok(None);
    }
    let what = format!("mounts[{index}] ({})", m.destination().display());
    if !facts::is_bind(m) {
        return Err(format!("{what}: only a bind mount can be idmapped"));
    }
    let from = match (uid, gid) {
        (Some(uid), Some(gid)) => MapFrom::Maps {
            uid: map_text(uid),
            gid: map_text(gid),
        },
        (None, None) => match facts::namespace(spec, LinuxNamespaceType::User) {
            NsFact::New if !facts::uid_mappings(spec).is_empty() => MapFrom::Maps {
                uid: map_text(facts::uid_mappings(spec)),
                gid: map_text(facts::gid_mappings(spec)),
            },
            NsFact::Joined(path) => MapFrom::Joined(path.to_path_buf()),
            _ => {
                return Err(format!(
                    "{what}: idmap without uidMappings and gidMappings takes the container's \
                     user namespace, and it has none"
                ))
            }
        },
        _ => return Err(format!("{what}: uidMappings and gidMappings go together")),
    };
    let mut propagation = MsFlags::empty();
    for o in opts {
        match o.as_str() {
            "bind" | "rbind" | "idmap" | "ridmap" | "ro" | "rw" | "nosuid" | "nodev" | "noexec"
            | "suid" | "dev" | "exec" => {}
            "shared" | "rshared" => propagation = MsFlags::MS_SHARED,
            "slave" | "rslave" => propagation = MsFlags::MS_SLAVE,
            "private" | "rprivate" => propagation = MsFlags::MS_PRIVATE,
            "unbindable" | "runbindable" => propagation = MsFlags::MS_UNBINDABLE,
            other => {
                return Err(format!(
                    "{what}: option {other:?} is not supported on an idmapped bind"
                ))
            }
        }
    }
    Ok(Some(IdMap {
        from,
        recursive: opts.iter().any(|o| o == "ridmap"),
        propagation,
    }))
}

/// `containerID hostID size` lines, as /proc/PID/uid_map takes them.
fn map_text(maps: &[LinuxIdMapping]) -> String {
    maps.iter()
        .map(|m| format!("{} {} {}\n", m.container_id(), m.host_id(), m.size()))
        .collect()
}

/// Refuses an idmapped bind runsbx cannot make: one whose mapping is
/// wrong or missing (`idmap_of`), whose source is missing, or that lies
/// under a mount listed before it (runsbx makes idmapped binds before
/// libcontainer makes the rest, so that mount would hide it).
pub fn check_idmaps(spec: &Spec, bundle_dir: &Path) -> Result<()> {
    let mounts: &[Mount] = spec.mounts().as_deref().unwrap_or(&[]);
    for (index, m) in mounts.iter().enumerate() {
        if idmap_of(spec, index, m)
            .map_err(RuntimeError::Spec)?
            .is_none()
        {
            continue;
        }
        let source = bundle_dir.join(m.source().as_deref().unwrap_or(Path::new("")));
        // One under the rootfs may be made by a bind listed before it.
        let in_rootfs = spec
            .root()
            .as_ref()
            .is_some_and(|r| source.starts_with(bundle_dir.join(r.path())));
        if let (Err(e), false) = (std::fs::canonicalize(&source), in_rootfs) {
            return Err(RuntimeError::Spec(format!(
                "mounts[{index}].source {}: {e}",
                source.display()
            )));
        }
        // Runsbx makes the plain binds before it too (`plan`): under one
        // of those is fine, under anything else libcontainer's later
        // mount would hide it.
        let dest = normalize(m.destination());
        let hides = |(j, e): &(usize, &Mount)| {
            dest.starts_with(normalize(e.destination()))
                && plain_bind_flags(e).is_none()
                && !matches!(idmap_of(spec, *j, e), Ok(Some(_)))
        };
        if let Some((j, _)) = mounts[..index].iter().enumerate().find(hides) {
            return Err(RuntimeError::Spec(format!(
                "mounts[{index}] ({}): an idmapped bind under mounts[{j}] ({}) is not supported: \
                 runsbx makes idmapped binds (and the plain binds before them) before the \
                 other mounts; list it first",
                m.destination().display(),
                mounts[j].destination().display()
            )));
        }
    }
    Ok(())
}

/// The binds of `spec` runsbx must make itself, in the config's order: the
/// idmapped ones (libcontainer 0.7 makes none; checked by `check_idmaps`)
/// and every plain bind listed before one (an idmapped bind may lie in it
/// or take its source from it: runsbx makes them all, in order, before
/// libcontainer makes the rest), and, when the spec has a new user
/// namespace whose root is not host root, the plain binds that root cannot
/// reach.
pub fn plan(spec: &Spec, bundle_dir: &Path) -> Vec<PreBind> {
    let root = container_root(spec);
    let mounts: &[Mount] = spec.mounts().as_deref().unwrap_or(&[]);
    let last_idmap = (0..mounts.len())
        .rev()
        .find(|&i| matches!(idmap_of(spec, i, &mounts[i]), Ok(Some(_))));
    let rootfs = spec.root().as_ref().map(|r| bundle_dir.join(r.path()));
    let mut out: Vec<PreBind> = Vec::new();
    for (index, m) in mounts.iter().enumerate() {
        let idmap = idmap_of(spec, index, m).ok().flatten();
        let before_idmap = last_idmap.is_some_and(|last| index < last);
        let flags = match (&idmap, root.is_some() || before_idmap) {
            (Some(_), _) => bind_flags(m),
            (None, true) => match plain_bind_flags(m) {
                Some(flags) => flags,
                None => continue,
            },
            (None, false) => continue,
        };
        let Some(source) = m.source().as_ref() else {
            continue;
        };
        let source = match source.is_absolute() {
            true => source.clone(),
            false => bundle_dir.join(source),
        };
        let (real, is_dir) = match std::fs::canonicalize(&source) {
            Ok(real) => {
                let is_dir = real.is_dir();
                (Some(real), is_dir)
            }
            // Under the rootfs, where a bind made before it will put it:
            // resolved in the rootfs when it is made (`make_bind`).
            Err(_)
                if (idmap.is_some() || before_idmap)
                    && rootfs.as_ref().is_some_and(|r| source.starts_with(r)) =>
            {
                (None, true)
            }
            // Missing or unresolvable even for root: libcontainer reports it.
            Err(_) => continue,
        };
        if let (None, Some((uid, gid)), false, Some(real)) = (&idmap, root, before_idmap, &real) {
            if reachable(&source, uid, gid) && reachable(real, uid, gid) {
                continue;
            }
        }
        // A mount earlier in the list on the destination or above it is
        // made after ours by libcontainer and would hide it.
        let dest = normalize(m.destination());
        let covered = mounts[..index]
            .iter()
            .enumerate()
            .filter(|(i, _)| !out.iter().any(|p| p.index == *i))
            .any(|(_, earlier)| dest.starts_with(normalize(earlier.destination())));
        if covered {
            continue;
        }
        let recursive = m
            .options()
            .as_ref()
            .is_some_and(|o| o.iter().any(|x| x == "rbind"));
        // Unresolved: under the rootfs (the match above), found there later.
        let in_rootfs = match &real {
            Some(_) => None,
            None => rootfs
                .as_deref()
                .and_then(|r| source.strip_prefix(r).ok())
                .map(Path::to_path_buf),
        };
        out.push(PreBind {
            index,
            real: real.unwrap_or_else(|| source.clone()),
            in_rootfs,
            source,
            is_dir,
            destination: dest,
            recursive,
            flags,
            idmap,
        });
    }
    out
}

/// Host (uid, gid) of the container's root, when the spec asks for a new
/// user namespace and that root is not host root.
pub fn container_root(spec: &Spec) -> Option<(u32, u32)> {
    let linux = spec.linux().as_ref()?;
    if facts::namespace(spec, LinuxNamespaceType::User) != NsFact::New {
        return None;
    }
    let host = |maps: &Option<Vec<LinuxIdMapping>>| {
        maps.as_ref()?
            .iter()
            .find(|m| m.container_id() == 0 && m.size() > 0)
            .map(|m| m.host_id())
    };
    let uid = host(linux.uid_mappings())?;
    let gid = host(linux.gid_mappings())?;
    (uid != 0).then_some((uid, gid))
}

/// The flags of a plain bind (read-only or not); `None` for anything else
/// (another type, or an option runsbx does not reproduce).
fn plain_bind_flags(m: &Mount) -> Option<MsFlags> {
    let opts: &[String] = m.options().as_deref().unwrap_or(&[]);
    let plain = opts.iter().all(|o| {
        matches!(
            o.as_str(),
            "bind"
                | "rbind"
                | "ro"
                | "rw"
                | "nosuid"
                | "suid"
                | "nodev"
                | "dev"
                | "noexec"
                | "exec"
                | "private"
                | "rprivate"
        )
    });
    (facts::is_bind(m) && plain).then(|| bind_flags(m))
}

/// MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC as a bind's options ask.
fn bind_flags(m: &Mount) -> MsFlags {
    let options = m.options().as_deref().unwrap_or_default();
    let attr = crate::remount::asked_attr(options.iter().map(String::as_str));
    [
        MsFlags::MS_RDONLY,
        MsFlags::MS_NOSUID,
        MsFlags::MS_NODEV,
        MsFlags::MS_NOEXEC,
    ]
    .into_iter()
    .filter(|f| mount_attr(*f) & attr != 0)
    .collect()
}

/// Whether host `uid`:`gid` (with no supplementary group) may search every
/// directory above `path`. Conservative: a false "no" only means runsbx
/// makes a bind libcontainer could have made.
fn reachable(path: &Path, uid: u32, gid: u32) -> bool {
    path.ancestors().skip(1).all(|dir| {
        let Ok(meta) = std::fs::metadata(dir) else {
            return false;
        };
        let mode = meta.mode();
        let bit = if meta.uid() == uid {
            0o100
        } else if meta.gid() == gid {
            0o010
        } else {
            0o001
        };
        mode & bit != 0
    })
}

/// `/a/./b/` -> `/a/b` (lexically; `..` is refused by validation before).
fn normalize(p: &Path) -> PathBuf {
    p.components()
        .filter(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        .collect()
}

/// Moves runsbx into a private mount namespace (nothing propagates back to
/// the host) and makes `binds` under `rootfs`. Mount points that do not
/// exist are created, owned by the container's root, as libcontainer would.
pub fn apply(
    rootfs: &Path,
    binds: &[PreBind],
    copies: &[crate::copyup::CopyUp],
    owner: (u32, u32),
) -> Result<()> {
    unshare(CloneFlags::CLONE_NEWNS)
        .map_err(|e| RuntimeError::sys("unshare mount namespace", e))?;
    mount::<str, str, str, str>(None, "/", None, MsFlags::MS_REC | MsFlags::MS_SLAVE, None)
        .map_err(|e| RuntimeError::sys("make / a slave mount", e))?;
    let root = open_dir(rootfs)?;
    // In the config's order: a bind under a tmpfs made here goes in it.
    let mut order: Vec<usize> = binds.iter().map(|b| b.index).collect();
    order.extend(copies.iter().map(|c| c.index));
    order.sort_unstable();
    for index in order {
        if let Some(c) = copies.iter().find(|c| c.index == index) {
            crate::copyup::apply(&root, c, owner)?;
        }
        if let Some(b) = binds.iter().find(|b| b.index == index) {
            make_bind(&root, b, owner)?;
        }
    }
    Ok(())
}

fn make_bind(root: &OwnedFd, b: &PreBind, owner: (u32, u32)) -> Result<()> {
    {
        let ctx = |what: &str| {
            format!(
                "mounts[{}] (bind {} on {}): {what}",
                b.index,
                b.source.display(),
                b.destination.display()
            )
        };
        // A source a bind made before this one put in the rootfs: found
        // in the rootfs, as if it were `/` (the descriptor's magic link is
        // the path open_tree is given).
        let held = match &b.in_rootfs {
            Some(rel) => Some(
                in_root(root, rel, OFlag::empty())
                    .map_err(|e| errno(ctx("source in the rootfs"), e))?,
            ),
            None => None,
        };
        let (real, is_dir) = match &held {
            Some(fd) => {
                let st = nix::sys::stat::fstat(fd.as_raw_fd())
                    .map_err(|e| errno(ctx("source in the rootfs"), e))?;
                let is_dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
                (
                    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd())),
                    is_dir,
                )
            }
            None => (b.real.clone(), b.is_dir),
        };
        let rel = b.destination.strip_prefix("/").unwrap_or(&b.destination);
        let target = mountpoint(root, rel, is_dir, owner).map_err(|e| match e {
            // mkdir of a name that is there but did not resolve.
            nix::errno::Errno::EEXIST => errno(
                ctx("mount point in the rootfs: a symlink on the way leads nowhere inside it"),
                e,
            ),
            e => errno(ctx("mount point in the rootfs"), e),
        })?;
        // The bind is made detached, given its flags, then attached on the
        // mount point already resolved: a read-only one is never writable, and no second
        // lookup could land the remount on another mount.
        let made = match &b.idmap {
            None => crate::sys::mountapi::bind_at(&real, &target, b.recursive, mount_attr(b.flags)),
            Some(idmap) => {
                let userns = idmap_userns(&idmap.from)
                    .map_err(|e| io_errno(ctx("user namespace of the id mapping"), e))?;
                crate::sys::mountapi::idmapped_bind_at(
                    &real,
                    &target,
                    (b.recursive, idmap.recursive),
                    &userns,
                    mount_attr(b.flags),
                )
            }
        };
        made.map_err(|(step, e)| match step {
            "bind" => io_errno(ctx("bind (made by runsbx as root)"), e),
            step => io_errno(ctx(step), e),
        })?;
    }
    Ok(())
}

/// A descriptor of the user namespace whose mapping an idmapped bind takes.
fn idmap_userns(from: &MapFrom) -> std::io::Result<OwnedFd> {
    match from {
        MapFrom::Maps { uid, gid } => crate::sys::userns::with_maps(uid, gid),
        MapFrom::Joined(path) => std::fs::File::open(path).map(OwnedFd::from),
    }
}

/// The one error line of a failed bind: which mount, which step, the errno.
fn errno(context: String, e: nix::Error) -> RuntimeError {
    RuntimeError::Mount { context, err: e }
}

fn io_errno(context: String, e: std::io::Error) -> RuntimeError {
    match e.raw_os_error() {
        Some(n) => errno(context, nix::errno::Errno::from_raw(n)),
        None => RuntimeError::io(context, e),
    }
}

/// MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC as MOUNT_ATTR_* bits.
pub(crate) fn mount_attr(flags: MsFlags) -> u64 {
    [
        (MsFlags::MS_RDONLY, libc::MOUNT_ATTR_RDONLY),
        (MsFlags::MS_NOSUID, libc::MOUNT_ATTR_NOSUID),
        (MsFlags::MS_NODEV, libc::MOUNT_ATTR_NODEV),
        (MsFlags::MS_NOEXEC, libc::MOUNT_ATTR_NOEXEC),
    ]
    .iter()
    .filter(|(f, _)| flags.contains(*f))
    .map(|(_, a)| a)
    .fold(0, |acc, a| acc | a)
}

fn open_dir(path: &Path) -> Result<OwnedFd> {
    let fd = nix::fcntl::open(
        path,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| RuntimeError::sys(format!("open rootfs {}", path.display()), e))?;
    Ok(crate::sys::fds::own(fd))
}

/// `rel` under `root`, resolved as if `root` were `/` (symlinks in the
/// rootfs stay in it), without magic links, as an O_PATH descriptor.
pub(crate) fn in_root(root: &OwnedFd, rel: &Path, extra: OFlag) -> nix::Result<OwnedFd> {
    let rel = match rel.as_os_str().is_empty() {
        true => Path::new("."),
        false => rel,
    };
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_CLOEXEC | extra)
        .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    openat2(root.as_raw_fd(), rel, how).map(crate::sys::fds::own)
}

/// The mount point `rel` under `root`, created when missing (directories
/// 0755, a file 0644 for a file bind), owned by `owner`.
pub(crate) fn mountpoint(
    root: &OwnedFd,
    rel: &Path,
    is_dir: bool,
    owner: (u32, u32),
) -> nix::Result<OwnedFd> {
    let mut at = PathBuf::new();
    let count = rel.components().count();
    for (i, c) in rel.components().enumerate() {
        let last = i + 1 == count;
        let parent = in_root(root, &at, OFlag::O_DIRECTORY)?;
        at.push(c);
        match in_root(root, &at, OFlag::empty()) {
            Ok(fd) => {
                if last {
                    return Ok(fd);
                }
                continue;
            }
            Err(nix::errno::Errno::ENOENT) => {}
            Err(e) => return Err(e),
        }
        let name = c.as_os_str();
        if last && !is_dir {
            let fd = nix::fcntl::openat(
                Some(parent.as_raw_fd()),
                name,
                OFlag::O_CREAT
                    | OFlag::O_EXCL
                    | OFlag::O_WRONLY
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_CLOEXEC,
                Mode::from_bits_truncate(0o644),
            )?;
            drop(crate::sys::fds::own(fd));
        } else {
            nix::sys::stat::mkdirat(
                Some(parent.as_raw_fd()),
                name,
                Mode::from_bits_truncate(0o755),
            )?;
        }
        nix::unistd::fchownat(
            Some(parent.as_raw_fd()),
            name,
            Some(owner.0.into()),
            Some(owner.1.into()),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )?;
        if last {
            return in_root(root, &at, OFlag::empty());
        }
    }
    // An empty destination is the rootfs itself.
    in_root(root, Path::new(""), OFlag::empty())
}

/// The config libcontainer is shown: `raw` without the mounts runsbx made
/// (`made`: their indexes).
pub fn without(raw: &serde_json::Value, made: &[usize]) -> serde_json::Value {
    let mut raw = raw.clone();
    if let Some(mounts) = raw["mounts"].as_array_mut() {
        let mut i = 0;
        mounts.retain(|_| {
            let keep = !made.contains(&i);
            i += 1;
            keep
        });
    }
    raw
}

#[cfg(test)]
#[path = "prebind_tests.rs"]
mod tests;
