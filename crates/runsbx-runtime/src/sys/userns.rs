//! User namespaces for rootless runsbx: the "cgroup shim" namespace the
//! runsbx process itself moves into before libcontainer runs, and the
//! host's answers when the kernel refuses one.
//!
//! Why the shim: libcontainer 0.7 picks its cgroup manager from the
//! filesystem at /sys/fs/cgroup. On a v1 or hybrid host that is the v1
//! manager, which writes `cgroup.procs` in every v1 controller and has no
//! rootless tolerance: an ordinary user's create fails with EACCES. Only the
//! v2 manager, which libcontainer marks rootless for a non-root caller,
//! treats EACCES/EROFS as "leave the process where it is". So runsbx moves
//! itself into a user namespace that maps its own uid and gid to themselves
//! (euid stays non-zero: libcontainer still takes its rootless path and
//! writes the container's `0 <uid> 1` map from here, where <uid> is mapped),
//! plus private mount and cgroup namespaces, and mounts a fresh cgroup2 on
//! /sys/fs/cgroup there, read-only: libcontainer then sees a unified host,
//! creates nothing (EROFS) and runs the container without a cgroup. When the
//! caller has a delegated cgroup v2 (delegation.rs), that cgroup is bound
//! there read-write instead, and libcontainer's v2 manager makes the
//! container's cgroup below it.
//!
//! What it gives runsbx: nothing over the host. The namespace maps only the
//! caller's ids, so its capabilities reach only the caller's own objects and
//! namespaces, which the caller could reach anyway. The workload is still a
//! direct child of runsbx in the host pid namespace (its PID is the one
//! reported), and gets its own user namespace below this one.
//!
//! Both functions must run while the process is single-threaded (the kernel
//! refuses a user namespace change otherwise) and after any re-exec (execve
//! by a non-root euid drops the capabilities the namespace gives).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use nix::errno::Errno;
use nix::mount::{mount, MsFlags};
use nix::sched::{setns, unshare, CloneFlags};

/// Why the shim could not be made. `Refused` is the kernel (or an LSM)
/// denying the user namespace itself; the rest are failures after it.
#[derive(Debug)]
pub enum ShimError {
    Refused(Errno),
    Step(&'static str, Errno),
}

/// Unshares the shim namespaces and mounts the read-only cgroup2, or, with
/// `delegated` (a host cgroup directory owned by the caller, see
/// delegation.rs), binds that directory read-write on /sys/fs/cgroup.
pub fn enter(uid: u32, gid: u32, delegated: Option<&Path>) -> Result<(), ShimError> {
    unshare(CloneFlags::CLONE_NEWUSER).map_err(ShimError::Refused)?;
    map_self(uid, gid)?;
    private_mounts(delegated)
}

/// Joins the user namespace of `pid` (a container's init), then makes
/// fresh mount and cgroup namespaces in it with the same cgroup2 mount. For
/// `exec`: libcontainer 0.7 joins a container's other namespaces but not its
/// user namespace, so the exec'd process ends up in the user namespace of
/// the runsbx that runs it; only the container's own maps its root (0) to
/// the caller. Joined before libcontainer runs, the exec'd process is the
/// container's root like init, and may enter the container's namespaces.
///
/// Stops: runsbx, while in the container's user namespace, being traced or
/// read by the container's processes (its /proc/<pid>/exe, memory and fds):
/// it is made non-dumpable (the kernel does so on the join only when
/// fs.suid_dumpable is 0), its memory belongs to the host's namespace, and
/// the container's processes lack the capabilities runsbx holds there.
///
/// Returns Ok(false) when `pid`'s user namespace was not created by `uid`
/// (a container of root or another user): nothing is joined.
///
/// `delegated`: as for [`enter`], the cgroup to show read-write.
pub fn join(pid: i32, uid: u32, delegated: Option<&Path>) -> Result<bool, ShimError> {
    let ns = File::open(format!("/proc/{pid}/ns/user"))
        .map_err(|e| ShimError::Step("open the container's user namespace", io_errno(&e)))?;
    // NS_GET_OWNER_UID (linux/nsfs.h): the uid that created the namespace.
    const NS_GET_OWNER_UID: libc::c_ulong = 0xb704;
    let mut owner: libc::uid_t = 0;
    // SAFETY: NS_GET_OWNER_UID writes one uid_t through the pointer, which
    // points at a live local of that type; `ns` is an open nsfs descriptor.
    let rc = unsafe { libc::ioctl(ns.as_raw_fd(), NS_GET_OWNER_UID, &mut owner) };
    if rc < 0 {
        return match Errno::last() {
            // The host's own namespace: not a rootless container.
            Errno::EINVAL => Ok(false),
            e => Err(ShimError::Step(
                "read the owner of the container's user namespace",
                e,
            )),
        };
    }
    if owner != uid {
        return Ok(false);
    }
    // Non-dumpable before the join: no moment in which the container's
    // root could attach to a runsbx inside its user namespace.
    nix::sys::prctl::set_dumpable(false)
        .map_err(|e| ShimError::Step("make runsbx non-dumpable", e))?;
    setns(&ns, CloneFlags::CLONE_NEWUSER)
        .map_err(|e| ShimError::Step("join the container's user namespace", e))?;
    private_mounts(delegated)?;
    Ok(true)
}

/// For `exec` as root: joins the user namespace of `pid` (a container's
/// init) when it is not runsbx's own, and nothing else. Returns whether it
/// joined.
///
/// Stops: a process exec'd into a container with a user namespace running
/// as host root. libcontainer 0.7 joins a container's other namespaces but
/// not its user namespace, so the new process stayed in the host's, where
/// the container's uid 0 is the real root: every file its mounts expose
/// was open to it as root. Joined first, uid 0 is the container's root,
/// mapped as init's is. runsbx keeps host uid 0 for file access (its state
/// dir, the container's cgroup), but holds capabilities only in the
/// container's namespace; it is made non-dumpable so that the container's
/// processes, now in its user namespace, cannot trace it or read its fds.
pub fn join_as_root(pid: i32) -> Result<bool, ShimError> {
    let ns = File::open(format!("/proc/{pid}/ns/user"))
        .map_err(|e| ShimError::Step("open the container's user namespace", io_errno(&e)))?;
    // The namespace that was opened, not a second lookup of the path (the
    // pid could be reused in between).
    let theirs = ns
        .metadata()
        .map_err(|e| ShimError::Step("stat the container's user namespace", io_errno(&e)))?;
    let ours = std::fs::metadata("/proc/self/ns/user")
        .map_err(|e| ShimError::Step("stat runsbx's user namespace", io_errno(&e)))?;
    use std::os::unix::fs::MetadataExt;
    if (theirs.dev(), theirs.ino()) == (ours.dev(), ours.ino()) {
        return Ok(false);
    }
    // Non-dumpable before the join, so there is no moment in which the
    // container's root could attach.
    nix::sys::prctl::set_dumpable(false)
        .map_err(|e| ShimError::Step("make runsbx non-dumpable", e))?;
    setns(&ns, CloneFlags::CLONE_NEWUSER)
        .map_err(|e| ShimError::Step("join the container's user namespace", e))?;
    Ok(true)
}

fn io_errno(e: &std::io::Error) -> Errno {
    Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO))
}

/// The one mapping an unprivileged process may write for itself: its own
/// ids to themselves. setgroups must be denied first (the kernel requires
/// it for an unprivileged gid_map; it stops dropping a group that guards a
/// file by "setgroups([])").
fn map_self(uid: u32, gid: u32) -> Result<(), ShimError> {
    let write = |path: &str, text: String, what: &'static str| {
        std::fs::write(path, text).map_err(|e| ShimError::Step(what, io_errno(&e)))
    };
    write(
        "/proc/self/setgroups",
        "deny".into(),
        "write /proc/self/setgroups",
    )?;
    write(
        "/proc/self/uid_map",
        format!("{uid} {uid} 1"),
        "write /proc/self/uid_map",
    )?;
    write(
        "/proc/self/gid_map",
        format!("{gid} {gid} 1"),
        "write /proc/self/gid_map",
    )
}

fn private_mounts(delegated: Option<&Path>) -> Result<(), ShimError> {
    unshare(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWCGROUP)
        .map_err(|e| ShimError::Step("unshare mount and cgroup namespaces", e))?;
    // Nothing mounted from here on may propagate back to the host.
    mount::<str, str, str, str>(None, "/", None, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None)
        .map_err(|e| ShimError::Step("make / private", e))?;
    if let Some(dir) = delegated {
        // A bind of the delegated cgroup itself, not a fresh cgroup2 mount
        // (whose root would be this process's cgroup): `delete`, `kill`
        // and `pause` run from any cgroup of the caller's and must see the
        // container's cgroup at the same path as the `create` that made
        // it. Nothing above the delegated cgroup is reachable through it,
        // and the kernel still checks every write against the files'
        // owners (the caller's own, verified just before).
        return mount::<Path, str, str, str>(
            Some(dir),
            "/sys/fs/cgroup",
            None,
            MsFlags::MS_BIND,
            None,
        )
        .map_err(|e| ShimError::Step("bind the delegated cgroup on /sys/fs/cgroup", e));
    }
    // Read-only: libcontainer's v2 manager then gets EROFS for every
    // mkdir/write and, marked rootless, leaves the process in place. A
    // writable mount could let it create cgroups in a subtree the caller
    // happens to own, which runsbx neither tracks nor removes.
    mount::<str, Path, str, str>(
        Some("cgroup2"),
        Path::new("/sys/fs/cgroup"),
        Some("cgroup2"),
        MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None,
    )
    .map_err(|e| ShimError::Step("mount a read-only cgroup2 on /sys/fs/cgroup", e))
}

/// A user namespace with the given `uid_map` and `gid_map` (the text of
/// /proc/PID/uid_map, one `inside outside count` line each), held by the
/// returned descriptor and by nothing else: the process made to own it is
/// killed and reaped before this returns. For idmapped mounts
/// (MOUNT_ATTR_IDMAP takes the mapping from a user namespace). Root only:
/// writing an arbitrary map needs CAP_SETUID/CAP_SETGID over the parent
/// namespace.
pub fn with_maps(uid_map: &str, gid_map: &str) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are new descriptors owned by no one else.
    let (read_end, write_end) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    // clone(CLONE_NEWUSER) with no stack behaves as fork: the child starts
    // in the new namespace, with no moment in the parent's.
    // SAFETY: the child only calls close(2), read(2) and _exit(2), all
    // async-signal-safe, so a copy of a multi-threaded parent is safe to run.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_NEWUSER | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        let mut b = [0u8; 1];
        // SAFETY: the child closes its copy of the write end, waits for the
        // parent to close its own (EOF), then ends.
        unsafe {
            libc::close(write_end.as_raw_fd());
            libc::read(read_end.as_raw_fd(), b.as_mut_ptr().cast(), 1);
            libc::_exit(0);
        }
    }
    let pid = pid as i32;
    drop(read_end);
    let result = (|| {
        for (file, map) in [("uid_map", uid_map), ("gid_map", gid_map)] {
            std::fs::OpenOptions::new()
                .write(true)
                .open(format!("/proc/{pid}/{file}"))?
                .write_all(map.as_bytes())?;
        }
        let ns = File::open(format!("/proc/{pid}/ns/user"))?;
        Ok(std::os::fd::OwnedFd::from(ns))
    })();
    drop(write_end);
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
    result
}
