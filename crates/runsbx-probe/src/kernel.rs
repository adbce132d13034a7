//! Kernel attack surface: syscalls a sandbox should not let through.
//!
//! As in bubblewrap's `tests/try-syscall.c`, the [`RAW`] checks pass a bad pointer or fd, so a call that reaches
//! the kernel fails with the errno in its `reached` column (EFAULT, EBADF, ...) and has no effect, while a call a
//! seccomp filter stops gets the filter's errno (or ENOSYS, or SIGSYS). Several syscalls check a capability before
//! looking at their arguments: there the kernel itself answers EPERM when the capability is missing, which a test
//! cannot tell from a filter's EPERM; the table says so.
//!
//! `mount:PATH`, `unshare`, `setns:PATH` and `int80` do the real thing, because their success is what a test wants
//! to see refused.

use std::ffi::CString;

use crate::report::{check_ret, last_errno, Outcome};

/// A pointer no syscall can read from or write to.
const WRONG: libc::c_long = 1;
/// An fd no process has open (above any RLIMIT_NOFILE), for syscalls that give -1 a meaning (io_uring_register
/// since 6.13).
const BADFD: libc::c_long = 0x3fff_ffff;

/// A raw syscall attempt with harmless arguments.
pub struct Raw {
    pub name: &'static str,
    /// What the kernel answers when the call gets through.
    pub reached: &'static str,
    call: fn() -> i64,
}

impl std::fmt::Debug for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Raw({})", self.name)
    }
}

impl PartialEq for Raw {
    fn eq(&self, other: &Raw) -> bool {
        self.name == other.name
    }
}

fn sc(nr: libc::c_long, a: [libc::c_long; 6]) -> i64 {
    // SAFETY: every caller passes arguments the kernel validates (bad pointers fault inside the kernel, never here).
    unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) }
}

macro_rules! raw {
    ($name:literal, $reached:literal, $nr:expr, [$($arg:expr),*]) => {{
        fn call() -> i64 {
            let mut a = [0 as libc::c_long; 6];
            let args: &[libc::c_long] = &[$($arg as libc::c_long),*];
            a[..args.len()].copy_from_slice(args);
            sc($nr, a)
        }
        Raw { name: $name, reached: $reached, call }
    }};
}

/// The raw checks, by name. `reached` is the errno a call that got through returns.
pub static RAW: &[Raw] = &[
    // glibc >= 2.34 tries clone3 first for threads; seccomp cannot see its flags, so sandboxes answer ENOSYS.
    raw!("clone3", "EFAULT", libc::SYS_clone3, [WRONG, 88]),
    raw!(
        "ptrace",
        "ESRCH",
        libc::SYS_ptrace,
        [libc::PTRACE_ATTACH, -1]
    ),
    // io_uring can open sockets and files without socket()/open(), past Landlock's TCP rules and seccomp.
    raw!(
        "io-uring-setup",
        "EFAULT (EPERM if kernel.io_uring_disabled)",
        libc::SYS_io_uring_setup,
        [1, WRONG]
    ),
    raw!(
        "io-uring-enter",
        "EBADF",
        libc::SYS_io_uring_enter,
        [-1, 0, 0, 0, 0, 0]
    ),
    raw!(
        "io-uring-register",
        "EBADF",
        libc::SYS_io_uring_register,
        [BADFD, 0, 0, 0]
    ),
    raw!("bpf", "EFAULT", libc::SYS_bpf, [5, WRONG, 8]),
    raw!(
        "perf-event-open",
        "EFAULT",
        libc::SYS_perf_event_open,
        [WRONG, 0, -1, -1, 0]
    ),
    raw!("keyctl", "EFAULT", libc::SYS_keyctl, [1, WRONG]),
    raw!(
        "add-key",
        "EFAULT",
        libc::SYS_add_key,
        [WRONG, WRONG, 0, 0, -2]
    ),
    raw!(
        "request-key",
        "EFAULT",
        libc::SYS_request_key,
        [WRONG, WRONG, 0, 0]
    ),
    // UFFD_USER_MODE_ONLY passes the sysctl gate; bit 1 is not a valid flag.
    raw!("userfaultfd", "EINVAL", libc::SYS_userfaultfd, [1 | 2]),
    raw!(
        "fsopen",
        "EFAULT (EPERM without CAP_SYS_ADMIN)",
        libc::SYS_fsopen,
        [WRONG, 0]
    ),
    raw!("fsconfig", "EBADF", libc::SYS_fsconfig, [BADFD, 6, 0, 0, 0]),
    raw!("fsmount", "EBADF", libc::SYS_fsmount, [-1, 0, 0]),
    raw!("open-tree", "EFAULT", libc::SYS_open_tree, [-1, WRONG, 0]),
    raw!(
        "move-mount",
        "EFAULT (EPERM without CAP_SYS_ADMIN)",
        libc::SYS_move_mount,
        [-1, WRONG, -1, WRONG, 0]
    ),
    raw!(
        "mount-setattr",
        "EFAULT or EBADF",
        libc::SYS_mount_setattr,
        [-1, WRONG, 0, WRONG, 32]
    ),
    raw!(
        "pivot-root",
        "EFAULT (EPERM without CAP_SYS_ADMIN)",
        libc::SYS_pivot_root,
        [WRONG, WRONG]
    ),
    raw!("chroot", "EFAULT", libc::SYS_chroot, [WRONG]),
    raw!("umount", "EFAULT", libc::SYS_umount2, [WRONG, 0]),
    raw!(
        "finit-module",
        "EBADF (EPERM without CAP_SYS_MODULE, ENOSYS without module support)",
        libc::SYS_finit_module,
        [-1, WRONG, 0]
    ),
    raw!(
        "kexec-file-load",
        "EBADF (EPERM without CAP_SYS_BOOT, ENOSYS without KEXEC_FILE)",
        libc::SYS_kexec_file_load,
        [-1, -1, 0, WRONG, 0]
    ),
    // "Shocker": open_by_handle_at walks to any inode of a mounted filesystem.
    raw!(
        "open-by-handle-at",
        "EFAULT or EBADF (EPERM without CAP_DAC_READ_SEARCH)",
        libc::SYS_open_by_handle_at,
        [-1, WRONG, 0]
    ),
    // memfd_create + execveat is exec without a file on disk.
    raw!("memfd-create", "EFAULT", libc::SYS_memfd_create, [WRONG, 0]),
    raw!(
        "execveat",
        "EFAULT",
        libc::SYS_execveat,
        [-1, WRONG, 0, 0, 0]
    ),
    raw!("pidfd-getfd", "EBADF", libc::SYS_pidfd_getfd, [-1, 0, 0]),
    raw!(
        "process-vm-readv",
        "EFAULT or ESRCH",
        libc::SYS_process_vm_readv,
        [-1, WRONG, 1, WRONG, 1, 0]
    ),
    raw!(
        "sethostname",
        "EFAULT (EPERM without CAP_SYS_ADMIN)",
        libc::SYS_sethostname,
        [WRONG, 1]
    ),
    // Bad magic: the kernel refuses before doing anything.
    raw!(
        "reboot",
        "EINVAL (EPERM without CAP_SYS_BOOT)",
        libc::SYS_reboot,
        [0, 0, 0, 0]
    ),
    raw!(
        "iopl",
        "EINVAL (ENOSYS without X86_IOPL_IOPERM)",
        libc::SYS_iopl,
        [4]
    ),
    raw!(
        "acct",
        "EFAULT (EPERM without CAP_SYS_PACCT)",
        libc::SYS_acct,
        [WRONG]
    ),
    // Newer than Linux 6.1 (runsbx's syscall tables once stopped there, and a denial of them vanished).
    raw!("mseal", "EINVAL", libc::SYS_mseal, [0, 0, 1]),
    // libc has no SYS_cachestat yet; 451 on x86_64.
    raw!("cachestat", "EBADF", 451, [-1, WRONG, WRONG, 0]),
    raw!(
        "swapon",
        "EFAULT (EPERM without CAP_SYS_ADMIN)",
        libc::SYS_swapon,
        [WRONG, 0]
    ),
];

pub fn raw(r: &Raw) -> Result<Outcome, Outcome> {
    let ret = (r.call)();
    let e = last_errno();
    if ret < 0 {
        let mut o = Outcome::fail(
            e,
            format!(
                "{}: {}; when it reaches the kernel: {}",
                r.name,
                crate::report::strerror(e),
                r.reached
            ),
        );
        o.ret = ret;
        Err(o)
    } else {
        Ok(Outcome::ok(
            ret,
            format!(
                "{} returned {ret} (harmless arguments should have failed)",
                r.name
            ),
        ))
    }
}

fn cstr(s: &str) -> CString {
    // Words come from argv, which cannot hold NUL.
    CString::new(s).expect("argv has no NUL")
}

/// `mount` with no path: a bad target pointer (EFAULT). With a path: a real tmpfs there, detached right away.
pub fn mount(path: &str) -> Result<Outcome, Outcome> {
    let src = cstr("runsbx-probe");
    let fstype = cstr("tmpfs");
    if path.is_empty() {
        // SAFETY: src and fstype are valid C strings; the bad target pointer faults in the kernel.
        let ret = unsafe {
            libc::mount(
                src.as_ptr(),
                WRONG as *const libc::c_char,
                fstype.as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        check_ret(
            "mount (bad target, EFAULT when it reaches the kernel)",
            ret.into(),
        )?;
        return Ok(Outcome::ok(
            ret.into(),
            "mount with a bad target succeeded?",
        ));
    }
    let target = cstr(path);
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    // SAFETY: valid C strings; data is NULL.
    let ret = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            std::ptr::null(),
        )
    };
    check_ret("mount", ret.into())?;
    // SAFETY: valid C string.
    let un = unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    let detail = if un == 0 {
        format!("mounted tmpfs on {path} and detached it")
    } else {
        format!(
            "mounted tmpfs on {path}; umount failed: {}",
            crate::report::strerror(last_errno())
        )
    };
    Ok(Outcome::ok(ret.into(), detail))
}

pub fn unshare(names: &[String]) -> Result<Outcome, Outcome> {
    let flags = names
        .iter()
        .filter_map(|n| crate::spec::namespace_flag(n))
        .fold(0, |a, f| a | f);
    // SAFETY: plain flags.
    let ret = unsafe { libc::unshare(flags) };
    check_ret("unshare", ret.into())?;
    Ok(Outcome::ok(
        ret.into(),
        format!(
            "in new {} namespace(s) for the rest of this run",
            names.join(",")
        ),
    ))
}

pub fn setns(path: &str) -> Result<Outcome, Outcome> {
    if path.is_empty() {
        // SAFETY: a bad fd; the kernel answers EBADF.
        let ret = unsafe { libc::setns(-1, 0) };
        check_ret(
            "setns (fd -1, EBADF when it reaches the kernel)",
            ret.into(),
        )?;
        return Ok(Outcome::ok(ret.into(), "setns(-1) succeeded?"));
    }
    let p = cstr(path);
    // SAFETY: valid C string.
    let fd = check_ret(
        "open",
        unsafe { libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) }.into(),
    )? as i32;
    // SAFETY: fd is ours.
    let ret = unsafe { libc::setns(fd, 0) };
    let r = check_ret("setns", ret.into());
    // SAFETY: fd is ours and closed once.
    unsafe { libc::close(fd) };
    r?;
    Ok(Outcome::ok(
        ret.into(),
        format!("joined the namespace of {path}"),
    ))
}

/// TIOCSTI with a bad pointer: the kernel refuses (EIO when legacy TIOCSTI is off, EPERM for a foreign tty, then
/// EFAULT) before it could push a character, so this never injects input even on a real terminal.
/// `high` sets bit 32 of the request: the kernel only looks at the low 32 bits, so a filter that compares all 64
/// misses it (CVE-2019-10063).
pub fn tiocsti(fd: i32, high: bool) -> Result<Outcome, Outcome> {
    // TIOCSTI is a c_ulong in glibc's libc bindings and a c_int in musl's.
    #[allow(clippy::unnecessary_cast)]
    let req = libc::TIOCSTI as libc::c_ulong as libc::c_long;
    let ret = if high {
        sc(
            libc::SYS_ioctl,
            [fd.into(), req | (1 << 32), WRONG, 0, 0, 0],
        )
    } else {
        sc(libc::SYS_ioctl, [fd.into(), req, WRONG, 0, 0, 0])
    };
    check_ret(
        "ioctl TIOCSTI (bad pointer; EBADF/EIO/EPERM/EFAULT when it reaches the kernel)",
        ret,
    )?;
    Ok(Outcome::ok(
        ret,
        "ioctl TIOCSTI with a bad pointer succeeded?",
    ))
}

/// getpid through the x32 ABI. A sandbox must reject x32 numbers; kernels without CONFIG_X86_X32_ABI answer ENOSYS.
pub fn x32() -> Result<Outcome, Outcome> {
    const X32_SYSCALL_BIT: libc::c_long = 0x4000_0000;
    let ret = sc(X32_SYSCALL_BIT | libc::SYS_getpid, [0; 6]);
    check_ret("x32 getpid (ENOSYS when the kernel has no x32)", ret)?;
    Ok(Outcome::ok(ret, "x32 getpid ran"))
}

/// getpid through the i386 entry (`int 0x80`, eax = 20). A sandbox must reject the foreign audit arch. A kernel
/// without IA32 emulation kills the probe with SIGSEGV here.
pub fn int80() -> Result<Outcome, Outcome> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut ret: i64 = 20; // __NR_getpid on i386
                               // SAFETY: the i386 getpid takes no arguments and touches no memory; the 64-bit kernel clobbers r8-r11.
        unsafe {
            std::arch::asm!("int 0x80", inout("rax") ret, out("r8") _, out("r9") _, out("r10") _, out("r11") _,
                options(nostack));
        }
        // The i386 entry returns a 32-bit value.
        let ret = i64::from(ret as i32);
        if ret < 0 {
            let e = (-ret) as i32;
            let mut o = Outcome::fail(
                e,
                format!("int 0x80 getpid: {}", crate::report::strerror(e)),
            );
            o.ret = ret;
            return Err(o);
        }
        // SAFETY: getpid has no preconditions.
        let pid = i64::from(unsafe { libc::getpid() });
        Ok(Outcome::ok(
            ret,
            format!("int 0x80 getpid ran (returned {ret}, getpid() = {pid})"),
        ))
    }
    #[cfg(not(target_arch = "x86_64"))]
    Err(Outcome::refused("int80: x86_64 only"))
}

pub fn landlock_abi() -> Result<Outcome, Outcome> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_long = 1;
    let ret = sc(
        libc::SYS_landlock_create_ruleset,
        [0, 0, LANDLOCK_CREATE_RULESET_VERSION, 0, 0, 0],
    );
    check_ret("landlock_create_ruleset", ret)?;
    Ok(Outcome::ok(ret, format!("Landlock ABI {ret}")))
}
