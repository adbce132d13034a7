//! The new mount API (open_tree, mount_setattr, move_mount; Linux 5.12+):
//! a bind whose flags are set before it is attached, to a mount point held
//! by descriptor. Used for the binds runsbx makes itself (prebind.rs,
//! premount.rs): no moment at which a read-only bind is writable, and no second
//! path lookup between bind and remount that a changed rootfs could divert.
//! Also the flags set in init on mounts libcontainer made (remount.rs).

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Sets `attr` and clears `clear` (MOUNT_ATTR_* bits), and sets
/// `propagation` (MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE, or 0 to
/// leave it) on the mount at `path` (not following a final symlink), and
/// with `recursive` on every mount below it. The mount must be in the
/// caller's mount namespace.
pub fn set_attr_at(
    path: &Path,
    (attr, clear, propagation): (u64, u64, u64),
    recursive: bool,
) -> io::Result<()> {
    let path = c_path(path)?;
    let mut flags = libc::AT_SYMLINK_NOFOLLOW;
    if recursive {
        flags |= libc::AT_RECURSIVE;
    }
    let mut a: libc::mount_attr = unsafe_zeroed();
    a.attr_set = attr;
    a.attr_clr = clear;
    a.propagation = propagation;
    mount_setattr_raw(libc::AT_FDCWD, &path, flags as libc::c_uint, &a)
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Whether `path` (a final symlink not followed) is the root of a mount
/// (statx's STATX_ATTR_MOUNT_ROOT, Linux 5.8+).
pub fn is_mount_root(path: &Path) -> io::Result<bool> {
    let path = c_path(path)?;
    // SAFETY: statx with all-zero bytes is a valid value to be overwritten.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `st` is a statx the kernel fills.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            0,
            &mut st,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    if st.stx_attributes_mask & libc::STATX_ATTR_MOUNT_ROOT as u64 == 0 {
        return Err(io::Error::from_raw_os_error(libc::ENOTSUP));
    }
    Ok(st.stx_attributes & libc::STATX_ATTR_MOUNT_ROOT as u64 != 0)
}

/// The MOUNT_ATTR_RDONLY, NOSUID, NODEV and NOEXEC bits the mount at `path`
/// has now (statvfs): the ones a user namespace cannot clear on a mount
/// that came from a more privileged one.
pub fn locked_attr(path: &Path) -> io::Result<u64> {
    use nix::sys::statvfs::FsFlags;
    let st = nix::sys::statvfs::statvfs(path).map_err(io::Error::from)?;
    let flags = st.flags();
    Ok([
        (FsFlags::ST_RDONLY, libc::MOUNT_ATTR_RDONLY),
        (FsFlags::ST_NOSUID, libc::MOUNT_ATTR_NOSUID),
        (FsFlags::ST_NODEV, libc::MOUNT_ATTR_NODEV),
        (FsFlags::ST_NOEXEC, libc::MOUNT_ATTR_NOEXEC),
    ]
    .iter()
    .filter(|(f, _)| flags.contains(*f))
    .fold(0, |acc, (_, a)| acc | a))
}

/// A detached copy of the mount tree at `source` (the whole subtree with
/// `recursive`, as `rbind`; its top mount only otherwise, as `bind`).
fn clone_tree(source: &Path, recursive: bool) -> io::Result<OwnedFd> {
    let path = CString::new(source.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let mut flags = libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC;
    if recursive {
        flags |= libc::AT_RECURSIVE as libc::c_uint;
    }
    // SAFETY: `path` is a NUL-terminated string that outlives the call; the
    // kernel returns a new descriptor or -1, and no memory of ours is written.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor open_tree has just returned, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Sets `attr` (MOUNT_ATTR_* bits) on the top mount of the detached tree.
fn set_attr(tree: &OwnedFd, attr: u64) -> io::Result<()> {
    mount_setattr(
        tree.as_raw_fd(),
        c"",
        libc::AT_EMPTY_PATH as libc::c_uint,
        attr,
    )
}

fn mount_setattr(
    dirfd: libc::c_int,
    path: &CStr,
    flags: libc::c_uint,
    attr: u64,
) -> io::Result<()> {
    let mut a: libc::mount_attr = unsafe_zeroed();
    a.attr_set = attr;
    mount_setattr_raw(dirfd, path, flags, &a)
}

fn mount_setattr_raw(
    dirfd: libc::c_int,
    path: &CStr,
    flags: libc::c_uint,
    a: &libc::mount_attr,
) -> io::Result<()> {
    // SAFETY: `a` and `path` are valid for the call and the size of `a` is
    // passed; the kernel only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags,
            a as *const libc::mount_attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Attaches the detached tree on the mount point `target` (a descriptor,
/// O_PATH is enough).
fn attach(tree: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
    let empty = c"";
    // SAFETY: both descriptors are open for the call and the paths are
    // NUL-terminated empty strings; the kernel writes no memory of ours.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            empty.as_ptr(),
            target.as_raw_fd(),
            empty.as_ptr(),
            libc::MOVE_MOUNT_F_EMPTY_PATH | libc::MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Binds `source` on the mount point `target` with `attr` (MOUNT_ATTR_*):
/// cloned detached, flagged, then attached, so the bind is never without
/// its flags. On failure, the step that failed, in words, and its error.
pub fn bind_at(
    source: &Path,
    target: &OwnedFd,
    recursive: bool,
    attr: u64,
) -> Result<(), (&'static str, io::Error)> {
    let tree = clone_tree(source, recursive).map_err(|e| ("bind", e))?;
    set_attr(&tree, attr).map_err(|e| ("set the bind's flags", e))?;
    attach(&tree, target).map_err(|e| ("attach the bind", e))
}

/// An idmapped bind of `source` on the mount point `target`: cloned
/// detached (`recursive`: the whole subtree, as `rbind`), given the id
/// mapping of the user namespace `userns` (`recursive_idmap`: on every
/// mount of the clone, otherwise on its top one only), then `attr`
/// (MOUNT_ATTR_*) on its top mount, and attached. The kernel takes a
/// mapping only on a mount never attached, hence the order.
pub fn idmapped_bind_at(
    source: &Path,
    target: &OwnedFd,
    (recursive, recursive_idmap): (bool, bool),
    userns: &OwnedFd,
    attr: u64,
) -> Result<(), (&'static str, io::Error)> {
    let tree = clone_tree(source, recursive).map_err(|e| ("bind", e))?;
    let mut a: libc::mount_attr = unsafe_zeroed();
    a.attr_set = libc::MOUNT_ATTR_IDMAP;
    a.userns_fd = userns.as_raw_fd() as u64;
    let mut flags = libc::AT_EMPTY_PATH as libc::c_uint;
    if recursive_idmap {
        flags |= libc::AT_RECURSIVE as libc::c_uint;
    }
    mount_setattr_raw(tree.as_raw_fd(), c"", flags, &a).map_err(|e| ("idmap the bind", e))?;
    set_attr(&tree, attr).map_err(|e| ("set the bind's flags", e))?;
    attach(&tree, target).map_err(|e| ("attach the bind", e))
}

/// A new tmpfs, detached: `data` its `key[=value]` options (`size=64m`,
/// `mode=755`, ...), `attr` its MOUNT_ATTR_* flags. The descriptor is the
/// root of the mount: fill it with `*at` calls, then `attach_tree`.
pub fn new_tmpfs(data: &[(String, Option<String>)], attr: u64) -> io::Result<OwnedFd> {
    const FSOPEN_CLOEXEC: libc::c_uint = 1;
    const FSCONFIG_SET_FLAG: libc::c_uint = 0;
    const FSCONFIG_SET_STRING: libc::c_uint = 1;
    const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
    const FSMOUNT_CLOEXEC: libc::c_uint = 1;
    let check = |rc: libc::c_long| match rc < 0 {
        true => Err(io::Error::last_os_error()),
        false => Ok(()),
    };
    // SAFETY: a NUL-terminated name; the kernel returns a descriptor or -1.
    let fs = unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) };
    check(fs)?;
    // SAFETY: a descriptor fsopen has just returned, owned by no one else.
    let fs = unsafe { OwnedFd::from_raw_fd(fs as libc::c_int) };
    for (key, value) in data {
        let key =
            CString::new(key.as_str()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let value = value
            .as_deref()
            .map(CString::new)
            .transpose()
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let (cmd, v) = match &value {
            Some(v) => (FSCONFIG_SET_STRING, v.as_ptr()),
            None => (FSCONFIG_SET_FLAG, std::ptr::null()),
        };
        // SAFETY: NUL-terminated strings (or null for a flag) that outlive
        // the call; the kernel only reads them.
        check(unsafe {
            libc::syscall(libc::SYS_fsconfig, fs.as_raw_fd(), cmd, key.as_ptr(), v, 0)
        })?;
    }
    // SAFETY: no pointers; the kernel creates the superblock.
    check(unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_char>(),
            0,
        )
    })?;
    // SAFETY: the configured context; the kernel returns a descriptor or -1.
    let mnt = unsafe {
        libc::syscall(
            libc::SYS_fsmount,
            fs.as_raw_fd(),
            FSMOUNT_CLOEXEC,
            attr as libc::c_uint,
        )
    };
    check(mnt)?;
    // SAFETY: a descriptor fsmount has just returned, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(mnt as libc::c_int) })
}

/// Sets `attr` (MOUNT_ATTR_* bits) on the top mount of a detached tree.
pub fn set_tree_attr(tree: &OwnedFd, attr: u64) -> io::Result<()> {
    set_attr(tree, attr)
}

/// Attaches a detached mount (`new_tmpfs`, a clone) on the mount point
/// `target` (a descriptor, O_PATH is enough).
pub fn attach_tree(tree: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
    attach(tree, target)
}

fn unsafe_zeroed() -> libc::mount_attr {
    // SAFETY: mount_attr is four u64 fields, for which all-zero is valid.
    unsafe { std::mem::zeroed() }
}
