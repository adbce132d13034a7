//! Running runsbx from a sealed copy of its own binary.
//!
//! Stops: CVE-2019-5736. A process inside a container opens
//! /proc/<pid>/exe of a runsbx process that has joined the container (the
//! init of `exec`, or `create`'s init before it execs the workload) and
//! writes through it after runsbx exits, replacing the host's runsbx binary
//! for the next root caller. With this, /proc/<pid>/exe of every runsbx
//! process that can meet a container is a file the kernel refuses to write
//! and that leads to nothing writable on the host's disk:
//! - as root, the binary seen through a private, detached, read-only
//!   overlayfs (lower layers only, so writes fail with EROFS; the pages
//!   are the on-disk binary's, shared, so nothing is copied);
//! - otherwise (overlayfs refused: no privilege, an old kernel), a sealed
//!   memfd copy (F_SEAL_WRITE), which costs a copy of the binary.
//!
//! Layer: the runtime binary itself; libcontainer does not protect it.
//! Which commands need it: see `Command::needs_sealed_binary` in the CLI.
//! Checked by: tests/lifecycle.rs
//! (`init_runs_from_a_sealed_copy_when_its_pid_namespace_is_shared`) and
//! tests/security.rs (`cve_2019_5736_exec_runs_from_a_sealed_copy`).

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SEALS: libc::c_int =
    libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;

/// True when the running binary is already a sealed memfd, or the private
/// overlayfs view `reexec_sealed` makes: read-only overlayfs on a mount
/// that no mount namespace of this process lists. Not any read-only
/// overlayfs: one mounted read-only over a writable upper layer (a
/// container's `--read-only` root) can be remounted writable later, and a
/// held /proc/<pid>/exe would then write the binary.
pub fn is_sealed() -> bool {
    let Ok(exe) = File::open("/proc/self/exe") else {
        return false;
    };
    // SAFETY: F_GET_SEALS takes no pointer; the fd is valid for the call.
    let seals = unsafe { libc::fcntl(exe.as_raw_fd(), libc::F_GET_SEALS) };
    (seals >= 0 && seals & SEALS == SEALS) || is_private_overlay(&exe)
}

/// Read-only overlayfs on a mount that no mount namespace of this process
/// lists: the view `overlay_view` makes. `overlay_view` checks its result
/// with this too, so a kernel where it cannot hold (no STATX_MNT_ID before
/// Linux 5.8) gets the memfd copy instead of re-executing forever.
fn is_private_overlay(f: &File) -> bool {
    let overlay_ro = nix::sys::statfs::fstatfs(f).is_ok_and(|st| {
        st.filesystem_type() == nix::sys::statfs::OVERLAYFS_SUPER_MAGIC
            && nix::sys::statvfs::fstatvfs(f)
                .is_ok_and(|v| v.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY))
    });
    overlay_ro && mount_id(f).is_some_and(|id| !mounted(id))
}

/// The mount id of `f` (statx STATX_MNT_ID, Linux 5.8).
fn mount_id(f: &File) -> Option<u64> {
    // SAFETY: statx is plain old data; zeroed is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: an empty path with AT_EMPTY_PATH names the fd; stx is ours.
    let rc = unsafe {
        libc::statx(
            f.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_MNT_ID,
            &mut stx,
        )
    };
    (rc == 0 && stx.stx_mask & libc::STATX_MNT_ID != 0).then_some(stx.stx_mnt_id)
}

/// Whether this process's mount namespace lists mount `id`. Unreadable
/// counts as listed (not sealed): fail towards the re-exec.
fn mounted(id: u64) -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return true;
    };
    text.lines()
        .any(|l| l.split(' ').next().and_then(|n| n.parse::<u64>().ok()) == Some(id))
}

/// Re-executes runsbx from a sealed view of its binary (see the module
/// comment) with the same arguments and environment. Returns only on
/// failure.
pub fn reexec_sealed() -> io::Error {
    match try_reexec() {
        Ok(never) => match never {},
        Err(e) => e,
    }
}

fn sys_ret(rc: libc::c_long) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as libc::c_int)
    }
}

/// The running binary through a new overlayfs whose layers are its
/// directory and /dev (overlayfs needs two lower layers to mount without
/// an upper one, and they must not contain each other; the binary's
/// directory is the top layer, so it wins the name). The mount is never
/// attached anywhere: only the returned descriptor reaches it.
fn overlay_view() -> io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let path = std::fs::read_link("/proc/self/exe")?;
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    // overlayfs splits lowerdir at ':' and unescapes '\\'.
    let dir = dir.as_os_str().as_bytes();
    if dir.iter().any(|b| matches!(b, b':' | b'\\' | b',')) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut lower = dir.to_vec();
    lower.extend_from_slice(b":/dev");
    let lower = CString::new(lower)?;
    // SAFETY: plain syscalls on C strings that outlive each call; every
    // descriptor returned is owned right away.
    let fs = unsafe {
        OwnedFd::from_raw_fd(sys_ret(libc::syscall(
            libc::SYS_fsopen,
            c"overlay".as_ptr(),
            1, /* FSOPEN_CLOEXEC */
        ))?)
    };
    let fsconfig = |cmd: libc::c_int, key: Option<&CStr>, value: Option<&CStr>| {
        let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
        // SAFETY: as above; the strings (or nulls) are valid for the call.
        sys_ret(unsafe {
            libc::syscall(
                libc::SYS_fsconfig,
                fs.as_raw_fd(),
                cmd,
                ptr(key),
                ptr(value),
                0,
            )
        })
    };
    const SET_STRING: libc::c_int = 1;
    const CMD_CREATE: libc::c_int = 6;
    fsconfig(SET_STRING, Some(c"lowerdir"), Some(&lower))?;
    // Layers on two filesystems would turn xino on, and log about it.
    let _ = fsconfig(SET_STRING, Some(c"xino"), Some(c"off"));
    fsconfig(CMD_CREATE, None, None)?;
    // SAFETY: FSMOUNT_CLOEXEC = 1; MOUNT_ATTR_RDONLY | NOSUID | NODEV = 7.
    let mnt = unsafe {
        OwnedFd::from_raw_fd(sys_ret(libc::syscall(
            libc::SYS_fsmount,
            fs.as_raw_fd(),
            1,
            7,
        ))?)
    };
    let name = CString::new(name.as_bytes())?;
    // SAFETY: name outlives the call; the result is owned right away.
    let exe = unsafe {
        OwnedFd::from_raw_fd(sys_ret(
            libc::openat(
                mnt.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
            .into(),
        )?)
    };
    // The same file as the one running, not one put in its place since
    // (an upgrade). With xino off, overlayfs keeps a lower file's inode
    // number and times (not its device); a kernel that remaps them makes
    // this fall back to the copy.
    let view = File::from(exe.try_clone()?);
    if !is_private_overlay(&view) {
        return Err(io::Error::from_raw_os_error(libc::ENOTSUP));
    }
    let (a, b) = (std::fs::metadata("/proc/self/exe")?, view.metadata()?);
    let id = |m: &std::fs::Metadata| {
        (
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        )
    };
    if id(&a) != id(&b) {
        return Err(io::Error::from_raw_os_error(libc::ESTALE));
    }
    Ok(exe)
}

/// A sealed memfd copy of the running binary.
fn memfd_copy() -> io::Result<OwnedFd> {
    let mut exe = File::open("/proc/self/exe")?;
    let mut copy = File::from(memfd()?);
    io::copy(&mut exe, &mut copy)?;
    // SAFETY: F_ADD_SEALS takes an integer; the fd is valid.
    if unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_ADD_SEALS, SEALS) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(copy.into())
}

fn memfd() -> io::Result<OwnedFd> {
    let name = c"runsbx";
    let base = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // MFD_EXEC (Linux 6.3) keeps the copy executable where
    // vm.memfd_noexec would otherwise default it to non-executable.
    for flags in [base | libc::MFD_EXEC, base] {
        // SAFETY: name is a valid C string; the call returns a new fd or -1.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
        if fd >= 0 {
            // SAFETY: the kernel just returned this descriptor to us alone.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINVAL) {
            return Err(err);
        }
    }
    Err(io::Error::from_raw_os_error(libc::EINVAL))
}

fn try_reexec() -> io::Result<std::convert::Infallible> {
    // A security module may refuse to execute from the detached mount:
    // then the copy.
    if let Ok(view) = overlay_view() {
        let _ = exec_fd(&view);
    }
    exec_fd(&memfd_copy()?)
}

/// execveat(2) of `fd` with this process's arguments and environment.
fn exec_fd(fd: &OwnedFd) -> io::Result<std::convert::Infallible> {
    let args: Vec<CString> = std::env::args_os()
        .map(|a| CString::new(a.into_encoded_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let env: Vec<CString> = std::env::vars_os()
        .map(|(k, v)| {
            let mut kv = k.into_encoded_bytes();
            kv.push(b'=');
            kv.extend(v.into_encoded_bytes());
            CString::new(kv)
        })
        .collect::<Result<_, _>>()
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let argv: Vec<*const libc::c_char> = args
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: Vec<*const libc::c_char> = env
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let empty: &CStr = c"";
    // SAFETY: argv and envp are NULL-terminated arrays of valid C strings
    // that outlive the call; execveat only returns on failure.
    unsafe {
        libc::syscall(
            libc::SYS_execveat,
            fd.as_raw_fd(),
            empty.as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
            libc::AT_EMPTY_PATH,
        );
    }
    Err(io::Error::last_os_error())
}
